//===- Tensor.cpp - device twins of the layout kernels and dropout --------===//
//
// pfrt_cuda_k_transpose, pfrt_cuda_k_broadcast and pfrt_cuda_copy_box (one
// thread per output element, a strided copy of its bits) and
// pfrt_cuda_k_dropout (the CPU's mask, drawn on the device from the same
// Philox stream): the CPU kernels' checks, then TensorBodies.h's bodies.
//
//===----------------------------------------------------------------------===//

#include "../Graph.h"
#include "TensorBodies.h"
#include "Twin.h"

#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

using namespace pfrt;
using namespace pfrt::kern;
using namespace pfrt::twin;

const int64_t *pfrt::twin::dataStepSlot(const char *fn, bool draws,
                                        int64_t *step) {
  *step = currentDataStep();
  if (!draws || !cuda::streamCapturing())
    return nullptr;
  Module &mod = kernels(fn);
  static bool registered = false;
  if (!registered) {
    int64_t *host = mod.dataStepHost;
    beforeEachReplay([host] { *host = currentDataStep(); });
    registered = true;
  }
  *mod.dataStepHost = *step;
  pfrt_cuda_h2d(mod.dataStep, mod.dataStepHost, sizeof(int64_t));
  return mod.dataStep;
}

extern "C" {

void pfrt_cuda_k_transpose(const float *x, float *y, int64_t rank,
                           const int64_t *shape, const int64_t *perm) {
  const char *fn = "pfrt_cuda_k_transpose";
  int64_t total = checkTransposeArgs(fn, x, y, rank, shape, perm);
  if (total == 0)
    return;
  dev::TransposePlan plan;
  dev::makeTransposePlan(rank, shape, perm, &plan);
  void *args[] = {&x, &y, &plan};
  launch(kTranspose, plan.total, args, fn);
}

void pfrt_cuda_k_broadcast(const void *x, void *y, int64_t rank,
                           const int64_t *in_shape, const int64_t *out_shape,
                           int64_t elem_bytes) {
  const char *fn = "pfrt_cuda_k_broadcast";
  int64_t total =
      checkBroadcastArgs(fn, x, y, rank, in_shape, out_shape, elem_bytes);
  if (total == 0)
    return;
  dev::BoxMap m;
  dev::makeBroadcastMap(rank, in_shape, out_shape, &m);
  int32_t es = int32_t(elem_bytes);
  void *args[] = {&x, &y, &m, &es};
  launch(kCopyElems, m.total, args, fn);
}

int pfrt_cuda_copy_box(const void *src, const int64_t *src_shape,
                       const int64_t *src_offset, void *dst,
                       const int64_t *dst_shape, const int64_t *dst_offset,
                       const int64_t *sizes, int64_t ndim, int32_t dtype) {
  const char *fn = "pfrt_cuda_copy_box";
  int64_t es;
  if (checkCopyBoxArgs(fn, src, src_shape, src_offset, dst, dst_shape,
                       dst_offset, sizes, ndim, dtype, &es) == 0)
    return 0;
  dev::BoxMap m;
  dev::makeCopyBoxMap(ndim, src_shape, src_offset, dst_shape, dst_offset, sizes,
                      &m);
  int32_t es32 = int32_t(es);
  void *args[] = {&src, &dst, &m, &es32};
  launch(kCopyElems, m.total, args, fn);
  return 0;
}

/// The mask of pfrt_k_dropout, drawn on the device from the same Philox
/// stream (the uniform initialiser at each element's logical index, on the
/// sub-stream of the data step and micro-batch): the same bits. The data
/// step is read when the kernel runs (dataStepSlot).
int pfrt_cuda_k_dropout(const float *x, float *y, int64_t n, double p,
                        uint64_t seed, uint64_t stream, int64_t microbatch,
                        int64_t rank_ndim, const int64_t *logical_shape,
                        const int64_t *offset, const int64_t *shape) {
  const char *fn = "pfrt_cuda_k_dropout";
  checkDropoutArgs(fn, x, y, n, p, rank_ndim, logical_shape, offset, shape);
  if (n == 0)
    return 0;
  dev::DropoutParams q;
  q.seed = seed;
  q.stream = stream;
  q.microbatch = microbatch;
  q.scale = p < 1.0 ? float(1.0 / (1.0 - p)) : 0.0f;
  q.threshold = float(p);
  dev::BoxMap m;
  dev::makeShardMap(rank_ndim, logical_shape, offset, shape, &m);
  int64_t step;
  const int64_t *slot = dataStepSlot(fn, /*draws=*/true, &step);
  void *args[] = {&x, &y, &q, &m, &slot, &step};
  launch(kDropout, n, args, fn);
  return 0;
}

} // extern "C"
