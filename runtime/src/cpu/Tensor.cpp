//===- Tensor.cpp - sub, div, broadcast, masked fill ----------------------===//
//
// The CPU kernels of pf.sub, pf.div, pf.broadcast_to and pf.masked_fill
// (slices, pads and concatenation are pfrt_copy_box).
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"
#include "pfrt/pfrt.h"

#include <cstring>

using namespace pfrt;
using namespace pfrt::kern;

namespace {
void checkBinary(const char *fn, const float *a, const float *b,
                 const float *out, int64_t n) {
  checkSize(fn, "n", n);
  checkPtr(fn, "a", a, n);
  checkPtr(fn, "b", b, n);
  checkPtr(fn, "out", out, n);
}
} // namespace

void pfrt_k_sub(const float *a, const float *b, float *out, int64_t n) {
  checkBinary("pfrt_k_sub", a, b, out, n);
  PFRT_IVDEP
  for (int64_t i = 0; i < n; ++i)
    out[i] = a[i] - b[i];
}

void pfrt_k_div(const float *a, const float *b, float *out, int64_t n) {
  checkBinary("pfrt_k_div", a, b, out, n);
  PFRT_IVDEP
  for (int64_t i = 0; i < n; ++i)
    out[i] = a[i] / b[i];
}

int64_t pfrt::kern::checkBroadcastArgs(const char *fn, const void *x,
                                       const void *y, int64_t rank,
                                       const int64_t *in_shape,
                                       const int64_t *out_shape,
                                       int64_t elem_bytes) {
  if (rank < 0 || rank > kMaxRank)
    fatal("%s: rank %lld is outside [0, %lld]", fn, (long long)rank,
          (long long)kMaxRank);
  if (elem_bytes != 4 && elem_bytes != 8)
    fatal("%s: element size %lld is not 4 or 8", fn, (long long)elem_bytes);
  checkPtr(fn, "in_shape", in_shape, rank);
  checkPtr(fn, "out_shape", out_shape, rank);
  int64_t total = 1, inTotal = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (out_shape[d] < 0 || (in_shape[d] != out_shape[d] && in_shape[d] != 1))
      fatal("%s: cannot broadcast %s to %s", fn,
            shapeToString(rank, in_shape).c_str(),
            shapeToString(rank, out_shape).c_str());
    total = mulChecked(fn, total, out_shape[d]);
    inTotal = mulChecked(fn, inTotal, in_shape[d]);
  }
  checkPtr(fn, "x", x, inTotal);
  checkPtr(fn, "y", y, total);
  return total;
}

void pfrt_k_broadcast(const void *x, void *y, int64_t rank,
                      const int64_t *in_shape, const int64_t *out_shape,
                      int64_t elem_bytes) {
  const char *fn = "pfrt_k_broadcast";
  int64_t total =
      checkBroadcastArgs(fn, x, y, rank, in_shape, out_shape, elem_bytes);
  if (total == 0)
    return;
  // Input strides, 0 on repeated axes; the innermost run of equal extents
  // is copied as one block.
  int64_t stride[kMaxRank], s = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    stride[d] = in_shape[d] == 1 && out_shape[d] != 1 ? 0 : s;
    s *= in_shape[d];
  }
  int64_t inner = 1, split = rank;
  while (split > 0 && in_shape[split - 1] == out_shape[split - 1]) {
    --split;
    inner *= out_shape[split];
  }
  const char *src = static_cast<const char *>(x);
  char *dst = static_cast<char *>(y);
  int64_t blocks = total / inner, blockBytes = inner * elem_bytes;
  int64_t idx[kMaxRank] = {0};
  for (int64_t blk = 0; blk < blocks; ++blk) {
    int64_t off = 0;
    for (int64_t d = 0; d < split; ++d)
      off += idx[d] * stride[d];
    const char *from = src + off * elem_bytes;
    char *to = dst + blk * blockBytes;
    std::memcpy(to, from, size_t(blockBytes));
    for (int64_t d = split - 1; d >= 0; --d) {
      if (++idx[d] < out_shape[d])
        break;
      idx[d] = 0;
    }
  }
}

void pfrt_k_masked_fill(const float *x, const void *mask, float *y, int64_t n,
                        int32_t mask_i64, double value) {
  const char *fn = "pfrt_k_masked_fill";
  checkSize(fn, "n", n);
  checkPtr(fn, "x", x, n);
  checkPtr(fn, "mask", mask, n);
  checkPtr(fn, "y", y, n);
  float v = static_cast<float>(value);
  auto fill = [&](auto *m) {
    PFRT_IVDEP
    for (int64_t i = 0; i < n; ++i)
      y[i] = m[i] != 0 ? v : x[i];
  };
  if (mask_i64)
    fill(static_cast<const int64_t *>(mask));
  else
    fill(static_cast<const float *>(mask));
}
