//===- Xent.cpp - device twins of the softmax cross-entropies -------------===//
//
// pfrt_cuda_k_softmax_xent and its gradient, with ignore_index (mean of the
// kept rows) or summed, and the count of kept rows: the CPU kernels'
// checks, each row's softmax sums by one warp in the CPU's order, then the
// loss by one thread in row order (XentBodies.h). An out-of-range label is
// data: found on the device and recorded in the error record (Module.h).
//
//===----------------------------------------------------------------------===//

#include "Twin.h"
#include "XentBodies.h"

#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

using namespace pfrt;
using namespace pfrt::kern;
using namespace pfrt::twin;
using pfrt::dev::DeviceError;

namespace {

/// The cross-entropy twins with ignore_index (mean of the kept rows, or
/// the sum when !mean).
void xentIgnore(const char *fn, int32_t code, const float *logits,
                const int64_t *labels, float *loss, int64_t n, int64_t c,
                int64_t ignore, int32_t mean) {
  checkXentForwardArgs(fn, logits, labels, loss, n, c);
  double *rows = static_cast<double *>(scratch(n * 8, fn));
  void *args1[] = {&logits, &labels, &rows, &n, &c, &ignore};
  launch(kXentRowsIgnore, mulChecked(fn, n, dev::kRowLanes), args1, fn);
  DeviceError *err = kernels(fn).err;
  void *args2[] = {&rows, &labels, &loss, &n, &c, &ignore, &mean, &code, &err};
  launchSingle(kXentTotalIgnore, args2, fn);
}

void xentGradIgnore(const char *fn, int32_t code, const float *logits,
                    const int64_t *labels, const float *dloss, float *dlogits,
                    int64_t n, int64_t c, int64_t ignore, int32_t mean) {
  int64_t total =
      checkXentBackwardArgs(fn, logits, labels, dloss, dlogits, n, c);
  ScratchLayout l;
  const int64_t statsAt = l.add(mulChecked(fn, n, 16));
  const int64_t scaleAt = l.add(int64_t(sizeof(double)));
  void *base = scratch(l.bytes, fn);
  double *stats = scratchAt<double>(base, statsAt),
         *scale = scratchAt<double>(base, scaleAt);
  DeviceError *err = kernels(fn).err;
  void *args1[] = {&labels, &dloss, &scale, &n,  &c,
                   &ignore, &mean,  &code,  &err};
  launchSingle(kXentGradScale, args1, fn);
  void *args2[] = {&logits, &stats, &n, &c};
  launch(kXentStats, mulChecked(fn, n, dev::kRowLanes), args2, fn);
  void *args3[] = {&logits,  &labels, &scale,  &stats,
                   &dlogits, &c,      &ignore, &total};
  launch(kXentGradIgnore, total, args3, fn);
}

} // namespace

extern "C" {

void pfrt_cuda_k_softmax_xent(const float *logits, const int64_t *labels,
                              float *loss, int64_t n, int64_t c) {
  const char *fn = "pfrt_cuda_k_softmax_xent";
  checkXentForwardArgs(fn, logits, labels, loss, n, c);
  double *rows = static_cast<double *>(scratch(n * 8, fn));
  void *args1[] = {&logits, &labels, &rows, &n, &c};
  launch(kXentRows, mulChecked(fn, n, dev::kRowLanes), args1, fn);
  DeviceError *err = kernels(fn).err;
  void *args2[] = {&rows, &labels, &loss, &n, &c, &err};
  launchBlock(kXentTotal, args2, fn);
}

void pfrt_cuda_k_softmax_xent_grad(const float *logits, const int64_t *labels,
                                   const float *dloss, float *dlogits,
                                   int64_t n, int64_t c) {
  const char *fn = "pfrt_cuda_k_softmax_xent_grad";
  int64_t total =
      checkXentBackwardArgs(fn, logits, labels, dloss, dlogits, n, c);
  double *stats = static_cast<double *>(scratch(mulChecked(fn, n, 16), fn));
  DeviceError *err = kernels(fn).err;
  void *args1[] = {&labels, &n, &c, &err};
  launchBlock(kXentCheckLabels, args1, fn);
  void *args2[] = {&logits, &stats, &n, &c};
  launch(kXentStats, mulChecked(fn, n, dev::kRowLanes), args2, fn);
  void *args3[] = {&logits, &labels, &dloss, &stats, &dlogits, &n, &c, &total};
  launch(kXentGrad, total, args3, fn);
}

void pfrt_cuda_k_softmax_xent_ignore(const float *logits, const int64_t *labels,
                                     float *loss, int64_t n, int64_t c,
                                     int64_t ignore_index) {
  xentIgnore("pfrt_cuda_k_softmax_xent_ignore", dev::kErrXentIgnoreLabel,
             logits, labels, loss, n, c, ignore_index, 1);
}

void pfrt_cuda_k_softmax_xent_grad_ignore(const float *logits,
                                          const int64_t *labels,
                                          const float *dloss, float *dlogits,
                                          int64_t n, int64_t c,
                                          int64_t ignore_index) {
  xentGradIgnore("pfrt_cuda_k_softmax_xent_grad_ignore",
                 dev::kErrXentGradIgnoreLabel, logits, labels, dloss, dlogits,
                 n, c, ignore_index, 1);
}

void pfrt_cuda_k_softmax_xent_sum(const float *logits, const int64_t *labels,
                                  float *loss, int64_t n, int64_t c,
                                  int64_t ignore_index) {
  xentIgnore("pfrt_cuda_k_softmax_xent_sum", dev::kErrXentSumLabel, logits,
             labels, loss, n, c, ignore_index, 0);
}

void pfrt_cuda_k_softmax_xent_grad_sum(const float *logits,
                                       const int64_t *labels,
                                       const float *dloss, float *dlogits,
                                       int64_t n, int64_t c,
                                       int64_t ignore_index) {
  xentGradIgnore("pfrt_cuda_k_softmax_xent_grad_sum", dev::kErrXentGradSumLabel,
                 logits, labels, dloss, dlogits, n, c, ignore_index, 0);
}

void pfrt_cuda_k_count_kept(const int64_t *labels, float *count, int64_t n,
                            int64_t ignore_index) {
  const char *fn = "pfrt_cuda_k_count_kept";
  checkCountKeptArgs(fn, labels, count, n);
  void *args[] = {&labels, &count, &n, &ignore_index};
  launchSingle(kCountKept, args, fn);
}

} // extern "C"
