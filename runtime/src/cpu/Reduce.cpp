//===- Reduce.cpp - reduce_sum over any set of dimensions -----------------===//
//
// pfrt_k_reduce_sum: the shape is coalesced (unit dimensions dropped,
// neighbours with the same flag merged) and summed in float64 in a fixed
// order: rows by sumF64, the column case in chunks (ReduceOrder.h), which
// the device twin repeats.
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"
#include "pfrt/pfrt.h"

#include <algorithm>
#include <cstring>

using namespace pfrt;
using namespace pfrt::kern;

namespace {

/// The summing loop of reduce_sum over coalesced dims ext[0..r) (see
/// there): acc[out] += row sums (last dim reduced) or rows (last dim kept).
PFRT_MULTIVERSION void reduceRows(const float *PFRT_RESTRICT x,
                                  double *PFRT_RESTRICT acc, int64_t total,
                                  int64_t r, const int64_t *ext,
                                  const int64_t *ostr, bool lastReduced) {
  const int64_t len = ext[r - 1];
  int64_t idx[kMaxRank] = {0};
  int64_t out = 0;
  for (int64_t xo = 0; xo < total; xo += len) {
    if (lastReduced)
      acc[out] += sumF64(x + xo, len);
    else
      accumulateRow(acc + out, x + xo, len);
    nextIndex(idx, ext, ostr, r - 2, &out); // over dims 0..r-2
  }
}

/// reduce_sum's column case: x is [outer, rows, c], acc[k * c + j] +=
/// the sums of chunks of `chunk` rows (each from 0 in `part`, c float64s),
/// in order (reduceColumnChunk).
PFRT_MULTIVERSION void reduceColumnChunks(const float *PFRT_RESTRICT x,
                                          double *PFRT_RESTRICT acc,
                                          int64_t outer, int64_t rows,
                                          int64_t c, int64_t chunk,
                                          double *PFRT_RESTRICT part) {
  for (int64_t k = 0; k < outer; ++k)
    for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
      std::memset(part, 0, size_t(c) * sizeof(double));
      const int64_t r1 = std::min(rows, r0 + chunk);
      for (int64_t row = r0; row < r1; ++row)
        accumulateRow(part, x + (k * rows + row) * c, c);
      for (int64_t j = 0; j < c; ++j)
        acc[k * c + j] += part[j];
    }
}

} // namespace

extern "C" {

void pfrt_k_reduce_sum(const float *x, float *y, int64_t rank,
                       const int64_t *shape, const int8_t *reduce) {
  const ReduceSizes sizes =
      checkReduceSumArgs("pfrt_k_reduce_sum", x, y, rank, shape, reduce);
  const int64_t total = sizes.total, outTotal = sizes.outTotal;
  if (outTotal == 0)
    return;
  if (total == 0) { // every output sums an empty extent
    std::memset(y, 0, size_t(outTotal) * sizeof(float));
    return;
  }
  // The merged dims alternate kept/reduced (ReduceOrder.h).
  int64_t ext[kMaxRank];
  bool red[kMaxRank];
  const int64_t r = mergeReduceDims(rank, shape, reduce, ext, red);
  if (r == 0 || (r == 1 && !red[0])) { // nothing to sum
    std::memcpy(y, x, size_t(total) * sizeof(float));
    return;
  }
  if (r == 1) { // everything reduced
    y[0] = float(sumF64(x, total));
    return;
  }
  double *acc = scratchOf<double>(0, outTotal);
  std::memset(acc, 0, size_t(outTotal) * sizeof(double));
  // The column case ([K,] R reduced, C kept) in reduceColumnChunk's order.
  const int64_t chunk = !red[r - 1] && (r == 2 || r == 3)
                            ? reduceColumnChunk(ext[r - 2], outTotal)
                            : 0;
  if (chunk > 0) {
    reduceColumnChunks(x, acc, r == 3 ? ext[0] : 1, ext[r - 2], ext[r - 1],
                       chunk, scratchOf<double>(1, ext[r - 1]));
  } else {
    // Output strides of the kept dims (reduced dims contribute 0).
    int64_t ostr[kMaxRank];
    int64_t st = 1;
    for (int64_t d = r - 1; d >= 0; --d) {
      ostr[d] = red[d] ? 0 : st;
      if (!red[d])
        st *= ext[d];
    }
    reduceRows(x, acc, total, r, ext, ostr, red[r - 1]);
  }
  for (int64_t i = 0; i < outTotal; ++i)
    y[i] = float(acc[i]);
}

} // extern "C"
