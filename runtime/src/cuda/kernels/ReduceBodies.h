//===- ReduceBodies.h - reduce_sum ------------------------------*- C++ -*-===//
//
// Not installed; nothing here is part of the ABI. Part of the CUDA kernels'
// bodies (DeviceBodies.h says how they are written and checked).
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_CUDA_KERNELS_REDUCEBODIES_H
#define PFRT_SRC_CUDA_KERNELS_REDUCEBODIES_H

#include "../../common/ReduceOrder.h"
#include "CommonBodies.h"

namespace pfrt {
namespace dev {

//===----------------------------------------------------------------------===//
// reduce_sum (pfrt_k_reduce_sum, src/cpu/Reduce.cpp)
//===----------------------------------------------------------------------===//

/// The CPU kernel's coalesced view of x: unit dims dropped, neighbours with
/// the same flag merged, so the `r` dims alternate kept/reduced. Passed to
/// the kernel by value.
struct ReducePlan {
  int32_t r = 0;
  int32_t lastReduced = 0;
  int64_t nKept = 0, nRed = 0;
  int64_t outTotal = 0;
  // Kept dims (in order): extent and stride in x.
  int64_t keptExt[kMaxDims] = {0};
  int64_t keptStr[kMaxDims] = {0};
  // Reduced dims (in order): extent and stride in x.
  int64_t redExt[kMaxDims] = {0};
  int64_t redStr[kMaxDims] = {0};
  // How the GPU twin splits the sum (makeReducePlan), parts > 0: first
  // `parts` partial sums of each output (float64), then the outputs, each
  // adding its parts in order (reducePartsSumAt). chunk > 0: the column
  // case (nRed == 1, the last dim kept) in chunks of `chunk` rows
  // (reduceColumnChunk, the CPU's order too); chunk == 0: the last dim
  // reduced with reduced dims outside it, a part per contiguous run of
  // the last dim (the terms the CPU adds in that order).
  int64_t parts = 0;
  int64_t chunk = 0;
};

/// The most outputs for which the runs are split (more outputs keep the
/// GPU busy as they are) and the most partial sums (32 MiB of float64).
constexpr int64_t kReduceSplitOutputs = int64_t(1) << 17;
constexpr int64_t kReduceMaxParts = int64_t(1) << 22;

/// What pfrt_k_reduce_sum does for a shape (host side, shared by the
/// kernel's wrapper and the test). rank, shape and reduce have been checked.
enum ReduceKind {
  kReduceNothing = 0, // no output element
  kReduceZeros = 1,   // x is empty: every output is 0
  kReduceCopy = 2,    // nothing is summed: y = x
  kReduceSum = 3,     // reduceSumAt for each output element
};
inline ReduceKind makeReducePlan(int64_t rank, const int64_t *shape,
                                 const int8_t *reduce, ReducePlan *p) {
  int64_t total = 1, outTotal = 1;
  for (int64_t d = 0; d < rank; ++d) {
    total *= shape[d];
    if (!reduce[d])
      outTotal *= shape[d];
  }
  p->outTotal = outTotal;
  if (outTotal == 0)
    return kReduceNothing;
  if (total == 0)
    return kReduceZeros;
  int64_t ext[kMaxDims];
  bool red[kMaxDims];
  const int64_t r = kern::mergeReduceDims(rank, shape, reduce, ext, red);
  if (r == 0 || (r == 1 && !red[0]))
    return kReduceCopy;
  p->r = int32_t(r);
  p->lastReduced = red[r - 1];
  int64_t stride = 1;
  int64_t strides[kMaxDims];
  for (int64_t d = r - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= ext[d];
  }
  p->nKept = p->nRed = 0;
  for (int64_t d = 0; d < r; ++d) {
    if (red[d]) {
      p->redExt[p->nRed] = ext[d];
      p->redStr[p->nRed++] = strides[d];
    } else {
      p->keptExt[p->nKept] = ext[d];
      p->keptStr[p->nKept++] = strides[d];
    }
  }
  p->parts = p->chunk = 0;
  if (!p->lastReduced && p->nRed == 1) {
    p->chunk = kern::reduceColumnChunk(p->redExt[0], outTotal);
    if (p->chunk > 0)
      p->parts = (p->redExt[0] + p->chunk - 1) / p->chunk;
  } else if (p->lastReduced && p->nRed > 1 && outTotal < kReduceSplitOutputs) {
    int64_t runs = 1;
    for (int64_t d = 0; d + 1 < p->nRed; ++d)
      runs *= p->redExt[d];
    if (runs <= kReduceMaxParts / outTotal)
      p->parts = runs;
  }
  return kReduceSum;
}

/// Where output o's reduced extent starts in x.
PFRT_HD inline int64_t reduceBase(const ReducePlan &p, int64_t o) {
  int64_t base = 0, rest = o;
  for (int64_t d = p.nKept - 1; d >= 0; --d) {
    int64_t e = p.keptExt[d];
    base += (rest % e) * p.keptStr[d];
    rest /= e;
  }
  return base;
}

/// The column case (nRed == 1, the last dim kept) in chunks of p.chunk
/// rows (reduceColumnChunk, the CPU kernel's order): item i is chunk
/// i / outTotal of output i % outTotal, its float64 sum into part[i].
PFRT_HD inline void reduceColumnPartAt(const float *x, double *part,
                                       const ReducePlan &p, int64_t i) {
  const int64_t g = i / p.outTotal, o = i % p.outTotal, chunk = p.chunk;
  const int64_t rows = p.redExt[0], stride = p.redStr[0];
  const int64_t r1 = (g + 1) * chunk < rows ? (g + 1) * chunk : rows;
  const float *col = x + reduceBase(p, o);
  double acc = 0;
  for (int64_t r = g * chunk; r < r1; ++r)
    acc += double(col[r * stride]);
  part[i] = acc;
}

/// The last dim reduced with reduced dims outside it: item i is run
/// j = i / outTotal of output o = i % outTotal (the runs in memory order:
/// an odometer over the outer reduced dims), its sumF64 into part[i],
/// the term the CPU kernel adds for it.
PFRT_HD inline void reduceRunPartAt(const float *x, double *part,
                                    const ReducePlan &p, int64_t i) {
  const int64_t o = i % p.outTotal;
  int64_t j = i / p.outTotal, off = reduceBase(p, o);
  for (int64_t d = p.nRed - 2; d >= 0; --d) {
    const int64_t e = p.redExt[d];
    off += (j % e) * p.redStr[d];
    j /= e;
  }
  part[i] = sumF64(x + off, p.redExt[p.nRed - 1]);
}

/// y[o] = output o's `parts` partial sums added in order, from 0.
PFRT_HD inline void reducePartsSumAt(const double *part, float *y,
                                     int64_t outTotal, int64_t parts,
                                     int64_t o) {
  double acc = 0;
  for (int64_t g = 0; g < parts; ++g)
    acc += part[g * outTotal + o];
  y[o] = float(acc);
}

/// y[o] = the float64 sum over o's reduced extent, in the CPU kernel's
/// order: x is walked in memory order, and when the last dim is reduced each
/// contiguous run of it is summed with sumF64 before it is added.
PFRT_HD inline void reduceSumAt(const float *x, float *y, const ReducePlan &p,
                                int64_t o) {
  int64_t base = reduceBase(p, o);
  // The reduced dims walked as an odometer; with the last dim reduced its
  // run (stride 1) is one sumF64.
  int64_t nOuter = p.lastReduced ? p.nRed - 1 : p.nRed;
  int64_t len = p.lastReduced ? p.redExt[p.nRed - 1] : 1;
  int64_t idx[kMaxDims];
  for (int64_t d = 0; d < nOuter; ++d)
    idx[d] = 0;
  double acc = 0;
  int64_t off = base;
  for (;;) {
    if (p.lastReduced)
      acc += sumF64(x + off, len);
    else
      acc += double(x[off]);
    if (!kern::nextIndex(idx, p.redExt, p.redStr, nOuter - 1, &off))
      break;
  }
  y[o] = float(acc);
}

} // namespace dev
} // namespace pfrt

#endif // PFRT_SRC_CUDA_KERNELS_REDUCEBODIES_H
