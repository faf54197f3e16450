//===- Boxing.cpp - SBP layout changes of local tensors -------------------===//
//
// The boxing helpers of pfrt.h: all_gather, reduce_scatter (f32, or bf16/f16
// summed in their type) and all_to_all along a tensor axis, built on the
// group collectives of Collectives.cpp (same communicator cache, chunking
// and traces), plus the local slice and sub-box copy. A collective moves
// whole contiguous blocks, so an axis that is not the outermost one needs a
// local repack around it: the tensor is viewed as [outer, n, chunk] (outer
// = the dimensions before the axis) and copied to or from [n, outer,
// chunk], one memcpy per chunk.
//
//===----------------------------------------------------------------------===//

#include "../common/Internal.h"
#include "../common/KernelArgs.h"
#include "MpiInternal.h"
#include "pfrt/pfrt.h"

#include <cstring>
#include <memory>
#include <utility>

using namespace pfrt;

namespace {

/// Bytes per element of a dtype; fatal for an unknown one.
int64_t elemSizeOf(int32_t dtype, const char *fn) {
  return kern::checkDtype(fn, "dtype", dtype);
}

MPI_Datatype mpiTypeOf(int32_t dtype) {
  switch (dtype) {
  case PFRT_DTYPE_I64:
    return MPI_INT64_T;
  case PFRT_DTYPE_I32:
    return MPI_INT32_T;
  case PFRT_DTYPE_BOOL:
    return MPI_UINT8_T;
  case PFRT_DTYPE_BF16:
  case PFRT_DTYPE_F16: // moved, never reduced
    return MPI_UINT16_T;
  }
  return MPI_FLOAT;
}

/// Checks rank and shape (what names the shape argument); returns the
/// element count, fatal if it or its size in bytes overflows int64.
int64_t checkShape(int64_t ndim, const int64_t *shape, const char *what,
                   int64_t elemSize, const char *fn) {
  if (ndim < 0 || ndim > kMaxRank)
    fatal("%s: tensor rank %lld is outside [0, %lld]", fn, (long long)ndim,
          (long long)kMaxRank);
  if (ndim > 0 && !shape)
    fatal("%s: %s is NULL for a rank-%lld tensor", fn, what, (long long)ndim);
  int64_t elems = 1, bytes;
  for (int64_t d = 0; d < ndim; ++d) {
    if (shape[d] < 0)
      fatal("%s: %s %s has a negative dimension", fn, what,
            shapeToString(ndim, shape).c_str());
    if (__builtin_mul_overflow(elems, shape[d], &elems))
      fatal("%s: element count of %s %s overflows int64", fn, what,
            shapeToString(ndim, shape).c_str());
  }
  if (__builtin_mul_overflow(elems, elemSize, &bytes))
    fatal("%s: byte size of %s %s overflows int64", fn, what,
          shapeToString(ndim, shape).c_str());
  return elems;
}

/// Fatal unless 0 <= axis < ndim (what names the argument).
void checkAxis(int64_t axis, int64_t ndim, const char *what, const char *fn) {
  if (ndim < 1)
    fatal("%s: needs a tensor of rank >= 1 for %s, got a scalar", fn, what);
  if (axis < 0 || axis >= ndim)
    fatal("%s: %s %lld is outside [0, %lld)", fn, what, (long long)axis,
          (long long)ndim);
}

/// Fatal unless in_shape[axis] splits into n equal blocks (what names n).
void checkDivisible(int64_t ndim, const int64_t *shape, int64_t axis, int64_t n,
                    const char *what, const char *fn) {
  if (shape[axis] % n != 0)
    fatal("%s: in_shape %s: dimension %lld (%lld) is not divisible by %s "
          "%lld",
          fn, shapeToString(ndim, shape).c_str(), (long long)axis,
          (long long)shape[axis], what, (long long)n);
}

void checkBuf(const void *p, int64_t elems, const char *what, const char *fn) {
  if (!p && elems > 0)
    fatal("%s: %s is NULL for a tensor of %lld elements", fn, what,
          (long long)elems);
}

/// Fatal if the byte ranges [a, a+na) and [b, b+nb) share memory.
void checkNoOverlap(const void *a, int64_t na, const void *b, int64_t nb,
                    const char *what, const char *fn) {
  if (na == 0 || nb == 0)
    return;
  const char *ca = (const char *)a, *cb = (const char *)b;
  if (ca < cb + nb && cb < ca + na)
    fatal("%s: %s overlap", fn, what);
}

/// The in and out tensors of a one-input layout change: non-NULL where they
/// have elements, and apart.
void checkInOut(const void *in, int64_t inElems, const void *out,
                int64_t outElems, int64_t es, const char *fn) {
  checkBuf(in, inElems, "in", fn);
  checkBuf(out, outElems, "out", fn);
  checkNoOverlap(in, inElems * es, out, outElems * es, "in and out", fn);
}

/// out is one of the n blocks in splits into along axis (n is `what`):
/// checks both and returns out's element count.
int64_t checkOneBlock(const void *in, const void *out, int64_t ndim,
                      const int64_t *inShape, int64_t elems, int64_t axis,
                      int64_t n, const char *what, int64_t es, const char *fn) {
  checkDivisible(ndim, inShape, axis, n, what, fn);
  int64_t outElems = elems / n;
  checkInOut(in, elems, out, outElems, es, fn);
  return outElems;
}

/// Product of shape[lo..hi) (no overflow: only called on non-empty tensors,
/// whose every partial product is at most the element count).
int64_t prod(const int64_t *shape, int64_t lo, int64_t hi) {
  int64_t p = 1;
  for (int64_t d = lo; d < hi; ++d)
    p *= shape[d];
  return p;
}

/// rows times: copies `bytes` bytes from src to dst, then advances src by
/// srcStride and dst by dstStride bytes.
void copyRows(char *dst, int64_t dstStride, const char *src, int64_t srcStride,
              int64_t rows, int64_t bytes) {
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(dst + r * dstStride, src + r * srcStride, size_t(bytes));
}

/// [outer, n, chunk] -> [n, outer, chunk] (chunkBytes bytes per chunk).
void packBlocks(char *dst, const char *src, int64_t outer, int64_t n,
                int64_t chunkBytes) {
  for (int64_t q = 0; q < n; ++q)
    copyRows(dst + q * outer * chunkBytes, chunkBytes, src + q * chunkBytes,
             n * chunkBytes, outer, chunkBytes);
}

/// [n, outer, chunk] -> [outer, n, chunk]: the inverse of packBlocks.
void unpackBlocks(char *dst, const char *src, int64_t outer, int64_t n,
                  int64_t chunkBytes) {
  for (int64_t p = 0; p < n; ++p)
    copyRows(dst + p * chunkBytes, n * chunkBytes, src + p * outer * chunkBytes,
             chunkBytes, outer, chunkBytes);
}

/// An uninitialised scratch buffer (the packed copy of a tensor).
std::unique_ptr<char[]> scratch(int64_t bytes) {
  return std::unique_ptr<char[]>(new char[size_t(bytes)]);
}

/// Runs collective(recv) for out viewed as [outer, n, blockBytes], where
/// block p arrives at [:, p, :]: straight into out when outer or n is 1, else
/// contiguous in scratch memory, then unpacked into place.
template <typename Collective>
void intoBlocks(void *out, int64_t outer, int64_t n, int64_t blockBytes,
                Collective collective) {
  if (outer == 1 || n == 1) {
    collective((char *)out);
    return;
  }
  std::unique_ptr<char[]> tmp = scratch(outer * n * blockBytes);
  collective(tmp.get());
  unpackBlocks((char *)out, tmp.get(), outer, n, blockBytes);
}

/// pfrt_box_reduce_scatter of `dtype` elements (f32, bf16 or f16: the
/// sum's type, reduceTypeOf), naming fn.
int boxReduceScatter(const void *in, void *out, int32_t dtype, int64_t ndim,
                     const int64_t *inShape, int64_t axis, const int64_t *ranks,
                     int64_t n, const char *fn) {
  groupPosition(ranks, n, fn);
  const int64_t es = reduceTypeOf(dtype, fn).elemSize;
  int64_t elems = checkShape(ndim, inShape, "in_shape", es, fn);
  checkAxis(axis, ndim, "axis", fn);
  int64_t outElems = checkOneBlock(in, out, ndim, inShape, elems, axis, n,
                                   "the group size", es, fn);
  if (elems == 0)
    return 0;
  // in viewed as [outer, n, chunk]; block q = [:, q, :] goes to position q.
  int64_t outer = prod(inShape, 0, axis);
  std::unique_ptr<char[]> packed;
  const void *send = in;
  if (outer > 1 && n > 1) {
    packed = scratch(elems * es);
    packBlocks(packed.get(), (const char *)in, outer, n, outElems / outer * es);
    send = packed.get();
  }
  reduceScatterSum(send, out, outElems, dtype, ranks, n, fn,
                   "box_reduce_scatter");
  return 0;
}

} // namespace

extern "C" {

namespace {
/// n times in_shape's `elems` elements (a gathered or padded tensor), fatal
/// when it or its bytes overflow.
int64_t nTimes(int64_t elems, int64_t n, int64_t es, int64_t ndim,
               const int64_t *in_shape, const char *fn) {
  int64_t outElems, outBytes;
  if (__builtin_mul_overflow(elems, n, &outElems) ||
      __builtin_mul_overflow(outElems, es, &outBytes))
    fatal("%s: %lld times the size of in_shape %s overflows", fn, (long long)n,
          shapeToString(ndim, in_shape).c_str());
  return outElems;
}
} // namespace

int pfrt_box_all_gather(const void *in, void *out, int32_t dtype, int64_t ndim,
                        const int64_t *in_shape, int64_t axis,
                        const int64_t *ranks, int64_t n) {
  const char *fn = "pfrt_box_all_gather";
  groupPosition(ranks, n, fn);
  int64_t es = elemSizeOf(dtype, fn);
  int64_t elems = checkShape(ndim, in_shape, "in_shape", es, fn);
  checkAxis(axis, ndim, "axis", fn);
  int64_t outElems = nTimes(elems, n, es, ndim, in_shape, fn);
  checkInOut(in, elems, out, outElems, es, fn);
  if (elems == 0)
    return 0;
  // out viewed as [outer, n, inner]: member p's block lands at [o, p, :].
  int64_t outer = prod(in_shape, 0, axis);
  intoBlocks(out, outer, n, elems / outer * es, [&](char *recv) {
    allGather(in, recv, elems, mpiTypeOf(dtype), es, ranks, n, fn,
              "box_all_gather");
  });
  return 0;
}

int pfrt_box_reduce_scatter(const float *in, float *out, int64_t ndim,
                            const int64_t *in_shape, int64_t axis,
                            const int64_t *ranks, int64_t n) {
  return boxReduceScatter(in, out, PFRT_DTYPE_F32, ndim, in_shape, axis, ranks,
                          n, "pfrt_box_reduce_scatter");
}

int pfrt_box_reduce_scatter_dtype(const void *in, void *out, int32_t dtype,
                                  int64_t ndim, const int64_t *inShape,
                                  int64_t axis, const int64_t *ranks,
                                  int64_t n) {
  return boxReduceScatter(in, out, dtype, ndim, inShape, axis, ranks, n,
                          "pfrt_box_reduce_scatter_dtype");
}

int pfrt_box_all_to_all(const void *in, void *out, int32_t dtype, int64_t ndim,
                        const int64_t *in_shape, int64_t split_axis,
                        int64_t concat_axis, const int64_t *ranks, int64_t n) {
  const char *fn = "pfrt_box_all_to_all";
  groupPosition(ranks, n, fn);
  int64_t es = elemSizeOf(dtype, fn);
  int64_t elems = checkShape(ndim, in_shape, "in_shape", es, fn);
  checkAxis(split_axis, ndim, "split_axis", fn);
  checkAxis(concat_axis, ndim, "concat_axis", fn);
  if (split_axis == concat_axis)
    fatal("%s: split_axis and concat_axis are both %lld", fn,
          (long long)split_axis);
  checkDivisible(ndim, in_shape, split_axis, n, "the group size", fn);
  checkInOut(in, elems, out, elems, es, fn);
  if (elems == 0)
    return 0;
  int64_t count = elems / n; // one block, sent to or received from a peer
  // Send: in viewed as [outerS, n, chunkS] along split_axis.
  int64_t outerS = prod(in_shape, 0, split_axis);
  std::unique_ptr<char[]> sendTmp;
  const char *send = (const char *)in;
  if (outerS > 1 && n > 1) {
    sendTmp = scratch(elems * es);
    packBlocks(sendTmp.get(), send, outerS, n, count / outerS * es);
    send = sendTmp.get();
  }
  // Receive: each block has in_shape with [split_axis] / n; out viewed as
  // [outerC, n, innerC] along concat_axis takes block p at [:, p, :].
  int64_t outerC = 1;
  for (int64_t d = 0; d < concat_axis; ++d)
    outerC *= d == split_axis ? in_shape[d] / n : in_shape[d];
  intoBlocks(out, outerC, n, count / outerC * es, [&](char *recv) {
    allToAll(send, recv, count, mpiTypeOf(dtype), es, ranks, n, fn,
             "box_all_to_all");
  });
  return 0;
}

namespace {
/// The arguments of pfrt_box_slice and pfrt_box_unslice but the buffers:
/// returns the element size and in's element count.
std::pair<int64_t, int64_t> checkBlockArgs(int32_t dtype, int64_t ndim,
                                           const int64_t *in_shape,
                                           int64_t axis, int64_t index,
                                           int64_t n, const char *fn) {
  int64_t es = elemSizeOf(dtype, fn);
  int64_t elems = checkShape(ndim, in_shape, "in_shape", es, fn);
  checkAxis(axis, ndim, "axis", fn);
  if (n < 1)
    fatal("%s: block count n = %lld is not positive", fn, (long long)n);
  if (index < 0 || index >= n)
    fatal("%s: index %lld is outside [0, %lld)", fn, (long long)index,
          (long long)n);
  return {es, elems};
}
} // namespace

int pfrt_box_slice(const void *in, void *out, int32_t dtype, int64_t ndim,
                   const int64_t *in_shape, int64_t axis, int64_t index,
                   int64_t n) {
  const char *fn = "pfrt_box_slice";
  auto [es, elems] = checkBlockArgs(dtype, ndim, in_shape, axis, index, n, fn);
  int64_t outElems = checkOneBlock(in, out, ndim, in_shape, elems, axis, n,
                                   "the block count", es, fn);
  if (outElems == 0)
    return 0;
  // in viewed as [outer, n, chunk]; out = [:, index, :].
  int64_t outer = prod(in_shape, 0, axis);
  int64_t chunkBytes = outElems / outer * es;
  copyRows((char *)out, chunkBytes, (const char *)in + index * chunkBytes,
           n * chunkBytes, outer, chunkBytes);
  return 0;
}

int pfrt_box_unslice(const void *in, void *out, int32_t dtype, int64_t ndim,
                     const int64_t *in_shape, int64_t axis, int64_t index,
                     int64_t n) {
  const char *fn = "pfrt_box_unslice";
  auto [es, elems] = checkBlockArgs(dtype, ndim, in_shape, axis, index, n, fn);
  int64_t outElems = nTimes(elems, n, es, ndim, in_shape, fn);
  checkInOut(in, elems, out, outElems, es, fn);
  if (outElems == 0)
    return 0;
  // out viewed as [outer, n, chunk]: zeros, and in at [:, index, :].
  std::memset(out, 0, size_t(outElems * es));
  int64_t outer = prod(in_shape, 0, axis);
  int64_t chunkBytes = elems / outer * es;
  copyRows((char *)out + index * chunkBytes, n * chunkBytes, (const char *)in,
           chunkBytes, outer, chunkBytes);
  return 0;
}

} // extern "C"

int64_t pfrt::kern::checkCopyBoxArgs(const char *fn, const void *src,
                                     const int64_t *src_shape,
                                     const int64_t *src_offset, const void *dst,
                                     const int64_t *dst_shape,
                                     const int64_t *dst_offset,
                                     const int64_t *sizes, int64_t ndim,
                                     int32_t dtype, int64_t *esOut) {
  int64_t es = elemSizeOf(dtype, fn);
  int64_t srcElems = checkShape(ndim, src_shape, "src_shape", es, fn);
  int64_t dstElems = checkShape(ndim, dst_shape, "dst_shape", es, fn);
  int64_t boxElems = checkShape(ndim, sizes, "sizes", es, fn);
  struct Side {
    const char *name;
    const int64_t *shape, *offset;
  };
  for (const Side &s :
       {Side{"src", src_shape, src_offset}, Side{"dst", dst_shape, dst_offset}})
    for (int64_t d = 0; d < ndim; ++d) {
      int64_t o = s.offset ? s.offset[d] : 0;
      if (o < 0 || o > s.shape[d] - sizes[d])
        fatal("%s: box at %s_offset %s with sizes %s does not fit in "
              "%s_shape %s (dimension %lld)",
              fn, s.name,
              s.offset ? shapeToString(ndim, s.offset).c_str() : "(0, ...)",
              shapeToString(ndim, sizes).c_str(), s.name,
              shapeToString(ndim, s.shape).c_str(), (long long)d);
    }
  *esOut = es;
  if (boxElems == 0)
    return 0;
  checkBuf(src, srcElems, "src", fn);
  checkBuf(dst, dstElems, "dst", fn);
  // The byte spans from each box's first element to its last.
  int64_t sBase = 0, dBase = 0, sSpan = 1, dSpan = 1;
  for (int64_t d = ndim - 1, ss = 1, ds = 1; d >= 0; --d) {
    sBase += (src_offset ? src_offset[d] : 0) * ss;
    dBase += (dst_offset ? dst_offset[d] : 0) * ds;
    sSpan += (sizes[d] - 1) * ss;
    dSpan += (sizes[d] - 1) * ds;
    ss *= src_shape[d];
    ds *= dst_shape[d];
  }
  checkNoOverlap((const char *)src + sBase * es, sSpan * es,
                 (const char *)dst + dBase * es, dSpan * es,
                 "source and destination boxes", fn);
  return boxElems;
}

extern "C" {

int pfrt_copy_box(const void *src, const int64_t *src_shape,
                  const int64_t *src_offset, void *dst,
                  const int64_t *dst_shape, const int64_t *dst_offset,
                  const int64_t *sizes, int64_t ndim, int32_t dtype) {
  const char *fn = "pfrt_copy_box";
  int64_t es;
  if (kern::checkCopyBoxArgs(fn, src, src_shape, src_offset, dst, dst_shape,
                             dst_offset, sizes, ndim, dtype, &es) == 0)
    return 0;

  // Row-major strides (elements), the box's first element in each tensor
  // and the span from its first to its last element.
  int64_t sStride[kMaxRank], dStride[kMaxRank];
  int64_t sBase = 0, dBase = 0;
  for (int64_t d = ndim - 1, ss = 1, ds = 1; d >= 0; --d) {
    sStride[d] = ss;
    dStride[d] = ds;
    sBase += (src_offset ? src_offset[d] : 0) * ss;
    dBase += (dst_offset ? dst_offset[d] : 0) * ds;
    ss *= src_shape[d];
    ds *= dst_shape[d];
  }
  const char *sp = (const char *)src + sBase * es;
  char *dp = (char *)dst + dBase * es;

  // Trailing dimensions that the box covers fully in both tensors fold into
  // one contiguous run, together with the innermost partial dimension k.
  int64_t k = ndim - 1;
  int64_t run = 1;
  while (k >= 0 && sizes[k] == src_shape[k] && sizes[k] == dst_shape[k])
    run *= sizes[k--];
  if (k >= 0)
    run *= sizes[k];
  size_t runBytes = size_t(run * es);
  // Odometer over dimensions 0..k-1.
  int64_t idx[kMaxRank] = {0};
  for (;;) {
    std::memcpy(dp, sp, runBytes);
    int64_t d = k - 1;
    while (d >= 0 && ++idx[d] == sizes[d]) {
      sp -= (sizes[d] - 1) * sStride[d] * es;
      dp -= (sizes[d] - 1) * dStride[d] * es;
      idx[d--] = 0;
    }
    if (d < 0)
      return 0;
    sp += sStride[d] * es;
    dp += dStride[d] * es;
  }
}

} // extern "C"
