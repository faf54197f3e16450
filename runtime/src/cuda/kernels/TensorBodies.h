//===- TensorBodies.h - layout, copies, dropout -----------------*- C++ -*-===//
//
// Not installed; nothing here is part of the ABI. Part of the CUDA kernels'
// bodies (DeviceBodies.h says how they are written and checked).
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_CUDA_KERNELS_TENSORBODIES_H
#define PFRT_SRC_CUDA_KERNELS_TENSORBODIES_H

#include "CommonBodies.h"

namespace pfrt {
namespace dev {

//===----------------------------------------------------------------------===//
// transpose (pfrt_k_transpose, src/cpu/Tensor.cpp)
//===----------------------------------------------------------------------===//

/// y's dims with unit dims dropped and neighbours merged where they are
/// contiguous in x too: extent and stride in x of each, outermost first.
/// Passed to the kernel by value.
struct TransposePlan {
  int32_t r = 0;
  int64_t total = 0;
  int64_t ext[kMaxDims] = {0};
  int64_t istr[kMaxDims] = {0};
};

/// rank, shape and perm have been checked (perm is a permutation).
inline void makeTransposePlan(int64_t rank, const int64_t *shape,
                              const int64_t *perm, TransposePlan *p) {
  int64_t xstr[kMaxDims];
  int64_t s = 1;
  p->total = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    xstr[d] = s;
    s *= shape[d];
    p->total *= shape[d];
  }
  int32_t r = 0;
  for (int64_t j = 0; j < rank; ++j) {
    int64_t e = shape[perm[j]], st = xstr[perm[j]];
    if (e == 1)
      continue;
    if (r > 0 && p->istr[r - 1] == st * e) {
      // The previous output dim steps over exactly this one in x.
      p->ext[r - 1] *= e;
      p->istr[r - 1] = st;
      continue;
    }
    p->ext[r] = e;
    p->istr[r] = st;
    ++r;
  }
  p->r = r;
}

/// y[o] = the element of x it is a copy of.
PFRT_HD inline void transposeAt(const float *x, float *y,
                                const TransposePlan &p, int64_t o) {
  int64_t off = 0, rest = o;
  for (int32_t d = p.r - 1; d >= 0; --d) {
    off += (rest % p.ext[d]) * p.istr[d];
    rest /= p.ext[d];
  }
  y[o] = x[off];
}

//===----------------------------------------------------------------------===//
// Strided element copies: broadcast (src/cpu/Tensor.cpp), pfrt_copy_box
// (src/mpi/Boxing.cpp)
//===----------------------------------------------------------------------===//

/// Element o of a box of extents ext[0..r) (row-major) is element
/// sBase + sum(i_d sstr[d]) of the source and dBase + sum(i_d dstr[d]) of
/// the destination. Passed to the kernels by value.
struct BoxMap {
  int32_t r = 0;
  int64_t total = 0;
  int64_t sBase = 0, dBase = 0;
  int64_t ext[kMaxDims] = {0};
  int64_t sstr[kMaxDims] = {0};
  int64_t dstr[kMaxDims] = {0};
};

PFRT_HD inline void boxOffsets(const BoxMap &m, int64_t o, int64_t *s,
                               int64_t *d) {
  int64_t so = m.sBase, dof = m.dBase, rest = o;
  for (int32_t k = m.r - 1; k >= 0; --k) {
    int64_t i = rest % m.ext[k];
    rest /= m.ext[k];
    so += i * m.sstr[k];
    dof += i * m.dstr[k];
  }
  *s = so;
  *d = dof;
}

/// Copies element o of the box (1-, 2-, 4- or 8-byte elements, their
/// bits).
PFRT_HD inline void copyElemAt(const void *src, void *dst, const BoxMap &m,
                               int32_t es, int64_t o) {
  int64_t s, d;
  boxOffsets(m, o, &s, &d);
  if (es == 8)
    static_cast<uint64_t *>(dst)[d] = static_cast<const uint64_t *>(src)[s];
  else if (es == 4)
    static_cast<uint32_t *>(dst)[d] = static_cast<const uint32_t *>(src)[s];
  else if (es == 2)
    static_cast<uint16_t *>(dst)[d] = static_cast<const uint16_t *>(src)[s];
  else
    static_cast<uint8_t *>(dst)[d] = static_cast<const uint8_t *>(src)[s];
}

/// pfrt_k_broadcast's map (shapes checked): y = out_shape contiguous, x
/// read with stride 0 on the repeated axes.
inline void makeBroadcastMap(int64_t rank, const int64_t *inShape,
                             const int64_t *outShape, BoxMap *m) {
  int64_t s = 1, t = 1;
  m->r = int32_t(rank);
  m->total = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    m->ext[d] = outShape[d];
    m->sstr[d] = inShape[d] == 1 && outShape[d] != 1 ? 0 : s;
    m->dstr[d] = t;
    s *= inShape[d];
    t *= outShape[d];
    m->total *= outShape[d];
  }
}

/// pfrt_copy_box's map (arguments checked; offsets NULL = zeros).
inline void makeCopyBoxMap(int64_t ndim, const int64_t *srcShape,
                           const int64_t *srcOffset, const int64_t *dstShape,
                           const int64_t *dstOffset, const int64_t *sizes,
                           BoxMap *m) {
  int64_t ss = 1, ds = 1;
  m->r = int32_t(ndim);
  m->total = 1;
  for (int64_t d = ndim - 1; d >= 0; --d) {
    m->ext[d] = sizes[d];
    m->sstr[d] = ss;
    m->dstr[d] = ds;
    m->sBase += (srcOffset ? srcOffset[d] : 0) * ss;
    m->dBase += (dstOffset ? dstOffset[d] : 0) * ds;
    ss *= srcShape[d];
    ds *= dstShape[d];
    m->total *= sizes[d];
  }
}

//===----------------------------------------------------------------------===//
// Boxing's block copies (the boxing twins on the device, cuda/DeviceBoxing.cpp)
//===----------------------------------------------------------------------===//

/// A grid [a, b, c] of `unit`-byte words: word (i, j, k) goes from word
/// sBase + i sA + j sB + k of the source to word dBase + i dA + j dB + k of
/// the destination. Boxing's repacks around a collective ([outer, n, chunk]
/// to [n, outer, chunk] and back) and its slices (one block of each row, or
/// a block into each row) are such grids. Passed to the kernel by value.
struct BlockCopy {
  int64_t a = 0, b = 0, c = 0;
  int64_t sA = 0, sB = 0, sBase = 0;
  int64_t dA = 0, dB = 0, dBase = 0;
  int32_t unit = 1; // bytes a word: 8, 4, 2 or 1
};

/// Copies word o (row-major over [a, b, c]) of the grid, its bits.
PFRT_HD inline void copyBlockWordAt(const void *src, void *dst,
                                    const BlockCopy &p, int64_t o) {
  int64_t k = o % p.c, rest = o / p.c;
  int64_t j = rest % p.b, i = rest / p.b;
  int64_t s = p.sBase + i * p.sA + j * p.sB + k;
  int64_t d = p.dBase + i * p.dA + j * p.dB + k;
  if (p.unit == 8)
    static_cast<uint64_t *>(dst)[d] = static_cast<const uint64_t *>(src)[s];
  else if (p.unit == 4)
    static_cast<uint32_t *>(dst)[d] = static_cast<const uint32_t *>(src)[s];
  else if (p.unit == 2)
    static_cast<uint16_t *>(dst)[d] = static_cast<const uint16_t *>(src)[s];
  else
    static_cast<uint8_t *>(dst)[d] = static_cast<const uint8_t *>(src)[s];
}

//===----------------------------------------------------------------------===//
// Dropout (pfrt_k_dropout in src/common/Inputs.cpp; Philox4x32-10 and the
// uniform initialiser of src/common/Random.cpp)
//===----------------------------------------------------------------------===//

/// pfrt_stream_for_step: FNV-1a over the step's 8 bytes.
PFRT_HD inline uint64_t streamForStep(uint64_t stream, uint64_t step) {
  uint64_t h = stream;
  for (int j = 0; j < 8; ++j)
    h = (h ^ ((step >> (8 * j)) & 0xff)) * 0x100000001b3ull;
  return h;
}

/// The uniform initialiser's value in [0, 1) at logical index li of
/// (seed, stream): float(0 + 1 * (x0 + 0.5) 2^-32).
PFRT_HD inline float uniformAt(uint64_t seed, uint64_t stream, int64_t li) {
  return kern::uniformValue(kern::philoxAt(seed, stream, li), 0.0, 1.0);
}

/// What a dropout call fixes on the host; the step is read at run time.
struct DropoutParams {
  uint64_t seed = 0, stream = 0;
  int64_t microbatch = 0;
  float scale = 0.0f, threshold = 0.0f; // float(1 / (1 - p)) or 0, float(p)
};

/// The sub-stream of a step and micro-batch (pfrt_k_dropout's).
PFRT_HD inline uint64_t dropoutStream(const DropoutParams &q, int64_t step) {
  return streamForStep(streamForStep(q.stream, uint64_t(step)),
                       uint64_t(q.microbatch));
}

/// The shard's map to logical indices: local element o (row-major over the
/// shard's shape) is logical element sBase + sum(i_d sstr[d]); dBase and
/// dstr are unused.
inline void makeShardMap(int64_t ndim, const int64_t *logical,
                         const int64_t *offset, const int64_t *shape,
                         BoxMap *m) {
  int64_t ls = 1;
  m->r = int32_t(ndim);
  m->total = 1;
  for (int64_t d = ndim - 1; d >= 0; --d) {
    m->ext[d] = shape ? shape[d] : logical[d];
    m->sstr[d] = ls;
    m->dstr[d] = 0;
    m->sBase += (offset ? offset[d] : 0) * ls;
    ls *= logical[d];
    m->total *= m->ext[d];
  }
}

/// y[i] = u >= threshold ? x[i] * scale : 0, u the uniform value at the
/// element's logical index on the step's sub-stream.
PFRT_HD inline void dropoutAt(const float *x, float *y, const DropoutParams &q,
                              const BoxMap &m, uint64_t sub, int64_t i) {
  int64_t li, unused;
  boxOffsets(m, i, &li, &unused);
  float u = uniformAt(q.seed, sub, li);
  y[i] = u >= q.threshold ? x[i] * q.scale : 0.0f;
}

} // namespace dev
} // namespace pfrt

#endif // PFRT_SRC_CUDA_KERNELS_TENSORBODIES_H
