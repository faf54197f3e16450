//===- Optim.cpp - device twins of the optimizer updates ------------------===//
//
// pfrt_cuda_k_sgd and pfrt_cuda_k_adam (one thread per element, the CPU's
// float32 arithmetic: OptimBodies.h) and their multi-tensor forms, which
// cut the tensor tables into launches of at most kMultiTensors tensors,
// each block a chunk of one tensor. lr and step are device scalars read at
// run time, so a replayed graph sees the current values; Adam's step < 1
// with bias correction is found on the device (the error record).
//
//===----------------------------------------------------------------------===//

#include "OptimBodies.h"
#include "Twin.h"

#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

using namespace pfrt;
using namespace pfrt::kern;
using namespace pfrt::twin;
using pfrt::dev::DeviceError;

namespace {

/// A multi-tensor update's tables (pfrt_k_sgd_multi's arguments) cut into
/// launches of at most kMultiTensors tensors (and 2^31 - 1 blocks): each
/// full table goes to `launchTable(table, blocks)`. Empty tensors are
/// skipped; `needed(k)` says whether pointer k may not be NULL.
template <int P, class Needed, class LaunchTable>
void multiUpdate(const char *fn, void *const *ptrs, const int64_t *n,
                 const int8_t *clear, int64_t count,
                 const char *const (&names)[P], Needed needed,
                 LaunchTable launchTable) {
  checkMultiTableArgs(fn, ptrs, n, count);
  constexpr int64_t kMaxBlocks = (int64_t(1) << 31) - 1;
  dev::MultiTable<P> t{};
  int used = 0;
  int64_t blocks = 0;
  auto flush = [&] {
    if (!used)
      return;
    t.count = used;
    t.firstBlock[used] = blocks;
    launchTable(t, blocks);
    t = dev::MultiTable<P>{};
    used = 0;
    blocks = 0;
  };
  for (int64_t i = 0; i < count; ++i) {
    checkSize(fn, "n", n[i]);
    if (n[i] == 0)
      continue;
    for (int k = 0; k < P; ++k)
      if (needed(k))
        checkPtr(fn, names[k], ptrs[P * i + k], n[i]);
    int64_t nb = (n[i] + dev::kMultiChunk - 1) / dev::kMultiChunk;
    if (nb > kMaxBlocks)
      fatal("%s: tensor %lld has %lld elements, more than one launch takes", fn,
            (long long)i, (long long)n[i]);
    if (used == dev::kMultiTensors || blocks + nb > kMaxBlocks)
      flush();
    for (int k = 0; k < P; ++k)
      t.ptr[used][k] = static_cast<float *>(ptrs[P * i + k]);
    t.n[used] = n[i];
    t.firstBlock[used] = blocks;
    if (clear && clear[i])
      t.clear |= uint64_t(1) << used;
    blocks += nb;
    ++used;
  }
  flush();
}

} // namespace

extern "C" {

void pfrt_cuda_k_sgd(const float *p, const float *g, const float *lr,
                     const float *buf, const float *step, float *new_p,
                     float *new_buf, int64_t n, double momentum,
                     double dampening, double weight_decay, int32_t nesterov) {
  const char *fn = "pfrt_cuda_k_sgd";
  checkSgdArgs(fn, p, g, lr, step, new_p, new_buf, n, momentum, dampening,
               nesterov);
  // Whether this is the first step is only known on the device, so buf
  // must be given even then (its contents are ignored at step 1).
  if (momentum != 0.0)
    checkPtr(fn, "buf", buf, n);
  dev::SgdParams q =
      dev::makeSgdParams(momentum, dampening, weight_decay, nesterov);
  void *args[] = {&p, &g, &lr, &buf, &step, &new_p, &new_buf, &q, &n};
  launch(kSgd, n, args, fn);
}

void pfrt_cuda_k_adam(const float *p, const float *g, const float *m,
                      const float *v, const float *lr, const float *step,
                      float *new_p, float *new_m, float *new_v, int64_t n,
                      double beta1, double beta2, double eps,
                      double weight_decay, int32_t decoupled,
                      int32_t bias_correction) {
  const char *fn = "pfrt_cuda_k_adam";
  checkAdamArgs(fn, p, g, m, v, lr, step, new_p, new_m, new_v, n);
  DeviceError *err = n > 0 ? kernels(fn).err : nullptr;
  void *args[] = {&p,         &g,
                  &m,         &v,
                  &lr,        &step,
                  &new_p,     &new_m,
                  &new_v,     &n,
                  &beta1,     &beta2,
                  &eps,       &weight_decay,
                  &decoupled, &bias_correction,
                  &err};
  launch(kAdam, n, args, fn);
}

void pfrt_cuda_k_sgd_multi(void *const *ptrs, const int64_t *n,
                           const int8_t *clear_grad, int64_t count,
                           const float *lr, const float *step, double momentum,
                           double dampening, double weight_decay,
                           int32_t nesterov) {
  const char *fn = "pfrt_cuda_k_sgd_multi";
  checkSgdScalars(fn, lr, step, momentum, dampening, nesterov);
  dev::SgdParams q =
      dev::makeSgdParams(momentum, dampening, weight_decay, nesterov);
  // p, g, new_p always; buf and new_buf with momentum (buf even at step 1,
  // as pfrt_cuda_k_sgd).
  static const char *const kNames[] = {"p", "g", "buf", "new_p", "new_buf"};
  multiUpdate<5>(
      fn, ptrs, n, clear_grad, count, kNames,
      [&](int k) { return momentum != 0.0 || (k != 2 && k != 4); },
      [&](dev::MultiTable<5> &t, int64_t blocks) {
        void *args[] = {&t, &lr, &step, &q};
        launchBlocks(kSgdMulti, blocks, args, fn);
      });
}

void pfrt_cuda_k_adam_multi(void *const *ptrs, const int64_t *n,
                            const int8_t *clear_grad, int64_t count,
                            const float *lr, const float *step, double beta1,
                            double beta2, double eps, double weight_decay,
                            int32_t decoupled, int32_t bias_correction) {
  const char *fn = "pfrt_cuda_k_adam_multi";
  checkPtr(fn, "lr", lr, 1);
  checkPtr(fn, "step", step, 1);
  static const char *const kNames[] = {"p",     "g",     "m",    "v",
                                       "new_p", "new_m", "new_v"};
  DeviceError *err = count > 0 ? kernels(fn).err : nullptr;
  multiUpdate<7>(
      fn, ptrs, n, clear_grad, count, kNames, [](int) { return true; },
      [&](dev::MultiTable<7> &t, int64_t blocks) {
        void *args[] = {
            &t,   &lr,           &step,      &beta1,           &beta2,
            &eps, &weight_decay, &decoupled, &bias_correction, &err};
        launchBlocks(kAdamMulti, blocks, args, fn);
      });
}

} // extern "C"
