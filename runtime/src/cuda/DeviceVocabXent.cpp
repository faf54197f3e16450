//===- DeviceVocabXent.cpp - the vocabulary cross-entropy on the device ---===//
//
// The device twins of pfrt_softmax_xent_vocab and its gradient (the
// classes of each row split over a group of ranks, Megatron's
// vocabulary-parallel cross-entropy) where NCCL serves the group (every
// member has a GPU of its own: nccl::useNccl). The host row's steps, on
// the compute stream (capturable; nothing waits):
//   forward   pfrt_cuda_vxent_max (one warp a row) -> ncclAllReduce max of
//             n floats -> pfrt_cuda_vxent_sums (each row's float64 sum of
//             exp(x - max) and the label's logit where this block holds
//             it) -> ncclAllReduce sum of 2n doubles -> pfrt_cuda_vxent_loss
//             (one thread, rows in order);
//   gradient  the same max and n sums, pfrt_cuda_vxent_scale (one thread),
//             pfrt_cuda_vxent_grad (one thread an element).
// The all-reduces move what the host row's MPI calls move (4n and 16n
// bytes forward, 4n and 8n backward), so the communication counters of a
// GPU rank equal a CPU rank's, over NCCL instead of MPI.
//
// Bits: the kernels run XentBodies.h's bodies, which the host row runs
// too. The max is exact whatever the order (NaN aside), so the loss and
// gradient equal the host row's wherever NCCL's float64 sum of the rows'
// statistics equals MPI's: always on two ranks (a + b), in the emulation
// always (its NCCL is the host row's MPI_Allreduce); on more real GPUs
// within float64 rounding, i.e. float32's result to the bit almost always.
// CUDA's log may differ from the host libm's in the last float64 bit.
//
// A label outside [0, classes) on a kept row is data: found by the loss
// or scale kernel and recorded in the device error record (Module.h), fatal
// at the next report as the other cross-entropies' are. Where NCCL does not
// serve the group, or the host row rejects the arguments (its error then),
// the call is host-staged (StagedBoxing.cpp) and the step not captured.
//
//===----------------------------------------------------------------------===//

#include "StagedComm.h"

#include "../common/Internal.h"
#include "Module.h"
#include "NcclComm.h"
#include "kernels/SoftmaxBodies.h"
#include "kernels/Twin.h"
#include "kernels/XentBodies.h"
#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

#include <climits>
#include <cstdint>

using namespace pfrt;

namespace {

/// Whether the host row accepts the sizes and buffers (it checks the group
/// itself, and useNccl does); the labels are the device's to check.
bool argsOk(const float *logits, const int64_t *labels, const void *out,
            int64_t n, int64_t c, int64_t offset, int64_t classes,
            int64_t mode) {
  int64_t elems, end;
  return logits && labels && out && n >= 1 && c >= 1 && offset >= 0 &&
         !__builtin_add_overflow(offset, c, &end) && classes >= end &&
         n <= INT32_MAX / 2 && mode >= 0 && mode <= 2 &&
         !__builtin_mul_overflow(n, c, &elems) &&
         elems <= INT64_MAX / int64_t(sizeof(float));
}

/// One call's scratch: the rows' max (n floats) and sums (`sums` doubles),
/// and the gradient's scale.
struct Stats {
  float *rowMax;
  double *sums, *scale;
  Stats(int64_t n, int64_t sums, const char *fn) {
    twin::ScratchLayout l;
    const int64_t maxAt = l.add(n * int64_t(sizeof(float)));
    const int64_t sumsAt = l.add(sums * int64_t(sizeof(double)));
    const int64_t scaleAt = l.add(int64_t(sizeof(double)));
    void *base = twin::scratch(l.bytes, fn);
    rowMax = twin::scratchAt<float>(base, maxAt);
    this->sums = twin::scratchAt<double>(base, sumsAt);
    scale = twin::scratchAt<double>(base, scaleAt);
  }
};

/// The group's row statistics: max (all-reduced), then the sums of
/// exponentials (and with `target` the label logits), all-reduced.
void rowStats(const float *logits, const int64_t *labels, Stats &s,
              dev::VocabXent p, int32_t target, const int64_t *ranks,
              int64_t nranks, const char *fn) {
  const int64_t threads = p.n * dev::kRowLanes;
  void *maxArgs[] = {&logits, &s.rowMax, &p};
  twin::launch(twin::kVxentMax, threads, maxArgs, fn);
  nccl::allReduceMaxF32(s.rowMax, p.n, ranks, nranks, fn);
  void *sumArgs[] = {&logits, &labels, &s.rowMax, &s.sums, &p, &target};
  twin::launch(twin::kVxentSums, threads, sumArgs, fn);
  nccl::allReduceSumF64(s.sums, target ? 2 * p.n : p.n, ranks, nranks, fn);
}

} // namespace

extern "C" {

int pfrt_cuda_softmax_xent_vocab(const float *logits, const int64_t *labels,
                                 float *loss, int64_t n, int64_t c,
                                 int64_t offset, int64_t classes,
                                 int64_t ignoreIndex, int64_t mode,
                                 const int64_t *ranks, int64_t nranks) {
  const char *fn = "pfrt_cuda_softmax_xent_vocab";
  if (!argsOk(logits, labels, loss, n, c, offset, classes, mode) ||
      !nccl::useNccl(ranks, nranks, "pfrt_softmax_xent_vocab"))
    return staged::softmaxXentVocab(logits, labels, loss, n, c, offset, classes,
                                    ignoreIndex, mode, ranks, nranks);
  dev::VocabXent p = {n,
                      c,
                      offset,
                      classes,
                      ignoreIndex,
                      int32_t(mode),
                      dev::kErrVocabXentLabel};
  Stats s(n, 2 * n, fn);
  rowStats(logits, labels, s, p, /*target=*/1, ranks, nranks, fn);
  dev::DeviceError *err = twin::kernels(fn).err;
  void *args[] = {&labels, &s.rowMax, &s.sums, &loss, &p, &err};
  twin::launchSingle(twin::kVxentLoss, args, fn);
  return 0;
}

int pfrt_cuda_softmax_xent_vocab_grad(const float *logits,
                                      const int64_t *labels, const float *dloss,
                                      float *dlogits, int64_t n, int64_t c,
                                      int64_t offset, int64_t classes,
                                      int64_t ignoreIndex, int64_t mode,
                                      const int64_t *ranks, int64_t nranks) {
  const char *fn = "pfrt_cuda_softmax_xent_vocab_grad";
  if (!argsOk(logits, labels, dlogits, n, c, offset, classes, mode) || !dloss ||
      !nccl::useNccl(ranks, nranks, "pfrt_softmax_xent_vocab_grad"))
    return staged::softmaxXentVocabGrad(logits, labels, dloss, dlogits, n, c,
                                        offset, classes, ignoreIndex, mode,
                                        ranks, nranks);
  dev::VocabXent p = {n,
                      c,
                      offset,
                      classes,
                      ignoreIndex,
                      int32_t(mode),
                      dev::kErrVocabXentGradLabel};
  Stats s(n, n, fn);
  rowStats(logits, labels, s, p, /*target=*/0, ranks, nranks, fn);
  dev::DeviceError *err = twin::kernels(fn).err;
  void *scaleArgs[] = {&labels, &dloss, &s.scale, &p, &err};
  twin::launchSingle(twin::kVxentScale, scaleArgs, fn);
  void *gradArgs[] = {&logits,  &labels,  &s.rowMax, &s.sums,
                      &s.scale, &dlogits, &p};
  twin::launch(twin::kVxentGrad, n * c, gradArgs, fn);
  return 0;
}

} // extern "C"
