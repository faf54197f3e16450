//===- StagedBoxing.cpp - GPU ranks' boxing rows through the host ---------===//
//
// The boxing rows (all-gather, reduce-scatter and all-to-all along an
// axis, slices) host-staged, for DeviceBoxing.cpp's twins where NCCL does
// not serve the group (ranks that share a GPU) or the arguments are
// rejected (the host row's error), and the vocabulary-parallel
// cross-entropy on the same terms for DeviceVocabXent.cpp's twins: each
// buffer the host row reads is copied to the host, the row runs there (its
// checks and bits are the CPU's), and what it writes is copied back. A step
// calling them is not captured.
//
//===----------------------------------------------------------------------===//

#include "StagedComm.h"

#include "../common/Internal.h"
#include "../common/LogicalMath.h"
#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

#include <climits>
#include <cstdint>

using namespace pfrt;
using namespace pfrt::staged;

namespace {

/// The byte size of a tensor of `ndim` dimensions `shape` and `es`-byte
/// elements, or -1 where the host rows reject the shape (a bad rank, NULL,
/// a negative dimension, an overflow) or the dtype (es < 0).
int64_t tensorBytes(int64_t ndim, const int64_t *shape, int64_t es) {
  if (es < 0 || ndim < 0 || ndim > kMaxRank || (ndim > 0 && !shape))
    return -1;
  int64_t elems = 1, bytes;
  for (int64_t d = 0; d < ndim; ++d)
    if (shape[d] < 0 || __builtin_mul_overflow(elems, shape[d], &elems))
      return -1;
  return __builtin_mul_overflow(elems, es, &bytes) ? -1 : bytes;
}

/// `bytes` times n (a gathered or unsliced tensor), or -1 for a bad n or an
/// overflow (both rejected by the host rows).
int64_t timesN(int64_t bytes, int64_t n) {
  int64_t out;
  if (bytes < 0 || n < 1 || __builtin_mul_overflow(bytes, n, &out))
    return -1;
  return out;
}

/// One of the n blocks of inShape along axis: `bytes` / n, or -1 where the
/// host rows reject the axis or the split.
int64_t oneBlock(int64_t bytes, int64_t ndim, const int64_t *shape,
                 int64_t axis, int64_t n) {
  if (bytes < 0 || n < 1 || axis < 0 || axis >= ndim || shape[axis] % n != 0)
    return -1;
  return bytes / n;
}

/// Runs a boxing row on host copies of in (`inBytes`) and out (`outBytes`);
/// a size of -1 (arguments the host row rejects) stages nothing, and the
/// host row, called on the device addresses, fails with its own error
/// before touching them.
template <typename Row>
int stagedBoxing(const void *in, int64_t inBytes, void *out, int64_t outBytes,
                 Row row) {
  if (inBytes < 0 || outBytes < 0)
    return row(in, out);
  HostStage stage;
  size_t i = stage.add(in, inBytes, /*read=*/true, /*written=*/false);
  size_t o = stage.add(out, outBytes, /*read=*/false, /*written=*/true);
  stage.toHost();
  int rc = row(stage.host(i), stage.host(o));
  stage.toDevice();
  return rc;
}

/// Enters `fn` and stages a boxing row along `axis` whose out is n times
/// in (`gather`: all-gather, unslice) or one of in's n blocks along the axis
/// (reduce-scatter, slice); in holds `es`-byte elements.
template <typename Row>
int stagedAlongAxis(const char *fn, const void *in, void *out, int64_t es,
                    int64_t ndim, const int64_t *inShape, int64_t axis,
                    int64_t n, bool gather, Row row) {
  enter(fn);
  int64_t inBytes = tensorBytes(ndim, inShape, es);
  int64_t outBytes =
      gather ? timesN(inBytes, n) : oneBlock(inBytes, ndim, inShape, axis, n);
  return stagedBoxing(in, inBytes, out, outBytes, row);
}

/// n * c floats of logits, or -1 where the vocabulary cross-entropy rejects
/// the sizes (n < 1, c < 1, more rows than one all-reduce takes) or they
/// overflow.
int64_t logitsBytes(int64_t n, int64_t c) {
  int64_t elems, bytes;
  if (n < 1 || c < 1 || n > INT32_MAX / 2 ||
      __builtin_mul_overflow(n, c, &elems) ||
      __builtin_mul_overflow(elems, int64_t(sizeof(float)), &bytes))
    return -1;
  return bytes;
}

} // namespace

namespace pfrt {
namespace staged {

int boxAllGather(const void *in, void *out, int32_t dtype, int64_t ndim,
                 const int64_t *inShape, int64_t axis, const int64_t *ranks,
                 int64_t n) {
  return stagedAlongAxis("pfrt_cuda_box_all_gather", in, out,
                         logical::dtypeBytes(dtype), ndim, inShape, axis, n,
                         /*gather=*/true, [&](const void *hin, void *hout) {
                           return pfrt_box_all_gather(hin, hout, dtype, ndim,
                                                      inShape, axis, ranks, n);
                         });
}

int boxReduceScatter(const float *in, float *out, int64_t ndim,
                     const int64_t *inShape, int64_t axis, const int64_t *ranks,
                     int64_t n) {
  return stagedAlongAxis(
      "pfrt_cuda_box_reduce_scatter", in, out, int64_t(sizeof(float)), ndim,
      inShape, axis, n, /*gather=*/false, [&](const void *hin, void *hout) {
        return pfrt_box_reduce_scatter(static_cast<const float *>(hin),
                                       static_cast<float *>(hout), ndim,
                                       inShape, axis, ranks, n);
      });
}

// bf16/f16: staged as the f32 row is, summed by the host row in that type;
// a dtype the host row does not sum stages nothing (it fails first).
int boxReduceScatterDtype(const void *in, void *out, int32_t dtype,
                          int64_t ndim, const int64_t *inShape, int64_t axis,
                          const int64_t *ranks, int64_t n) {
  if (dtype == PFRT_DTYPE_F32)
    return boxReduceScatter(static_cast<const float *>(in),
                            static_cast<float *>(out), ndim, inShape, axis,
                            ranks, n);
  bool half = dtype == PFRT_DTYPE_BF16 || dtype == PFRT_DTYPE_F16;
  return stagedAlongAxis("pfrt_cuda_box_reduce_scatter_dtype", in, out,
                         half ? 2 : -1, ndim, inShape, axis, n,
                         /*gather=*/false, [&](const void *hin, void *hout) {
                           return pfrt_box_reduce_scatter_dtype(
                               hin, hout, dtype, ndim, inShape, axis, ranks, n);
                         });
}

int boxAllToAll(const void *in, void *out, int32_t dtype, int64_t ndim,
                const int64_t *inShape, int64_t splitAxis, int64_t concatAxis,
                const int64_t *ranks, int64_t n) {
  enter("pfrt_cuda_box_all_to_all");
  int64_t bytes = tensorBytes(ndim, inShape, logical::dtypeBytes(dtype));
  // out has in's size; a split the host row rejects stages nothing.
  int64_t outBytes =
      oneBlock(bytes, ndim, inShape, splitAxis, n) < 0 ? -1 : bytes;
  return stagedBoxing(
      in, bytes, out, outBytes, [&](const void *hin, void *hout) {
        return pfrt_box_all_to_all(hin, hout, dtype, ndim, inShape, splitAxis,
                                   concatAxis, ranks, n);
      });
}

// Broadcast and reduce of any dtype (summed: f32, bf16, f16): the buffers
// this rank's side of the host row reads, copied to the host, what it
// writes copied back; a count the host row rejects stages nothing.
int broadcastDtype(void *buf, int64_t count, int32_t dtype, int64_t root,
                   const int64_t *ranks, int64_t n) {
  enter("pfrt_cuda_broadcast_dtype");
  int64_t es = logical::dtypeBytes(dtype);
  if (es < 0 || count < 0 || count > (int64_t(1) << 56))
    return pfrt_broadcast_dtype(buf, count, dtype, root, ranks, n);
  bool isRoot = pfrt_rank() == root;
  HostStage stage;
  size_t b = stage.add(buf, count * es, /*read=*/isRoot, /*written=*/!isRoot);
  stage.toHost();
  int rc = pfrt_broadcast_dtype(stage.host(b), count, dtype, root, ranks, n);
  stage.toDevice();
  return rc;
}

int reduceSumDtype(const void *in, void *out, int64_t count, int32_t dtype,
                   int64_t root, const int64_t *ranks, int64_t n) {
  enter("pfrt_cuda_reduce_sum_dtype");
  bool summed = dtype == PFRT_DTYPE_F32 || dtype == PFRT_DTYPE_BF16 ||
                dtype == PFRT_DTYPE_F16;
  if (!summed || count < 0 || count > (int64_t(1) << 56))
    return pfrt_reduce_sum_dtype(in, out, count, dtype, root, ranks, n);
  int64_t bytes = count * logical::dtypeBytes(dtype);
  bool isRoot = pfrt_rank() == root && out;
  HostStage stage;
  size_t i = stage.add(in, bytes, /*read=*/true, /*written=*/false);
  size_t o = isRoot ? stage.add(out, bytes, false, true) : 0;
  stage.toHost();
  int rc = pfrt_reduce_sum_dtype(stage.host(i), isRoot ? stage.host(o) : out,
                                 count, dtype, root, ranks, n);
  stage.toDevice();
  return rc;
}

// Local (no MPI), staged like the collectives so that the host row's
// checks and bits are the CPU's: DeviceBoxing.cpp calls these only for
// arguments the host row rejects, and the error is the host row's.
int boxSlice(const void *in, void *out, int32_t dtype, int64_t ndim,
             const int64_t *inShape, int64_t axis, int64_t index, int64_t n) {
  return stagedAlongAxis(
      "pfrt_cuda_box_slice", in, out, logical::dtypeBytes(dtype), ndim, inShape,
      axis, n, /*gather=*/false, [&](const void *hin, void *hout) {
        return pfrt_box_slice(hin, hout, dtype, ndim, inShape, axis, index, n);
      });
}

int boxUnslice(const void *in, void *out, int32_t dtype, int64_t ndim,
               const int64_t *inShape, int64_t axis, int64_t index, int64_t n) {
  return stagedAlongAxis("pfrt_cuda_box_unslice", in, out,
                         logical::dtypeBytes(dtype), ndim, inShape, axis, n,
                         /*gather=*/true, [&](const void *hin, void *hout) {
                           return pfrt_box_unslice(hin, hout, dtype, ndim,
                                                   inShape, axis, index, n);
                         });
}

} // namespace staged
} // namespace pfrt

namespace pfrt {
namespace staged {

// The whole loss on the host: the CPU's row statistics, all-reduces and
// float64 sums, so every layout gives the CPU's bits.
int softmaxXentVocab(const float *logits, const int64_t *labels, float *loss,
                     int64_t n, int64_t c, int64_t offset, int64_t classes,
                     int64_t ignoreIndex, int64_t mode, const int64_t *ranks,
                     int64_t nranks) {
  enter("pfrt_cuda_softmax_xent_vocab");
  int64_t bytes = logitsBytes(n, c);
  if (bytes < 0) // fatal: the host row names the sizes
    return pfrt_softmax_xent_vocab(logits, labels, loss, n, c, offset, classes,
                                   ignoreIndex, mode, ranks, nranks);
  HostStage stage;
  size_t x = stage.add(logits, bytes, true, false);
  size_t l = stage.add(labels, n * int64_t(sizeof(int64_t)), true, false);
  size_t o = stage.add(loss, int64_t(sizeof(float)), false, true);
  stage.toHost();
  int rc = pfrt_softmax_xent_vocab(stage.host<float>(x), stage.host<int64_t>(l),
                                   stage.host<float>(o), n, c, offset, classes,
                                   ignoreIndex, mode, ranks, nranks);
  stage.toDevice();
  return rc;
}

int softmaxXentVocabGrad(const float *logits, const int64_t *labels,
                         const float *dloss, float *dlogits, int64_t n,
                         int64_t c, int64_t offset, int64_t classes,
                         int64_t ignoreIndex, int64_t mode,
                         const int64_t *ranks, int64_t nranks) {
  enter("pfrt_cuda_softmax_xent_vocab_grad");
  int64_t bytes = logitsBytes(n, c);
  if (bytes < 0)
    return pfrt_softmax_xent_vocab_grad(logits, labels, dloss, dlogits, n, c,
                                        offset, classes, ignoreIndex, mode,
                                        ranks, nranks);
  HostStage stage;
  size_t x = stage.add(logits, bytes, true, false);
  size_t l = stage.add(labels, n * int64_t(sizeof(int64_t)), true, false);
  size_t d = stage.add(dloss, int64_t(sizeof(float)), true, false);
  size_t o = stage.add(dlogits, bytes, false, true);
  stage.toHost();
  int rc = pfrt_softmax_xent_vocab_grad(
      stage.host<float>(x), stage.host<int64_t>(l), stage.host<float>(d),
      stage.host<float>(o), n, c, offset, classes, ignoreIndex, mode, ranks,
      nranks);
  stage.toDevice();
  return rc;
}

} // namespace staged
} // namespace pfrt
