//===- Softmax.cpp - softmax, log-softmax and their gradients -------------===//
//
// pfrt_k_softmax(_grad) over any axis of [outer, n, inner], and the fused
// attention rows (pfrt_k_softmax_masked, pfrt_k_softmax_grad_scaled). A
// row's sum of exponentials runs in float64 over 32 interleaved lanes
// combined as a warp's shuffle tree, the device twin's order
// (KernelUtil.h's softmaxRowBody), so both give the same bits.
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"
#include "pfrt/pfrt.h"

#include <algorithm>
#include <cmath>

using namespace pfrt;
using namespace pfrt::kern;

namespace {

/// Rows of the fused attention softmax (pfrt_k_softmax_masked): each row as
/// pfrt_k_scale, pfrt_k_masked_fill (mask row r % maskRows; no mask when
/// null) and pfrt_k_softmax's row pass compute it, t and e a row of
/// scratch.
template <typename M>
PFRT_ALWAYS_INLINE void
softmaxMaskedRowsOf(const float *PFRT_RESTRICT x, const M *PFRT_RESTRICT mask,
                    int64_t maskRows, float f, float v, float *PFRT_RESTRICT y,
                    int64_t rows, int64_t n, int32_t log,
                    float *PFRT_RESTRICT t, double *PFRT_RESTRICT e) {
  for (int64_t r = 0; r < rows; ++r) {
    const float *xs = x + r * n;
    if (mask) {
      const M *m = mask + (r % maskRows) * n;
      for (int64_t k = 0; k < n; ++k)
        t[k] = m[k] != 0 ? v : xs[k] * f;
    } else {
      for (int64_t k = 0; k < n; ++k)
        t[k] = xs[k] * f;
    }
    double mx;
    double sum = softmaxRowBody(t, n, e, &mx);
    float *ys = y + r * n;
    if (log) {
      double logSum = std::log(sum);
      for (int64_t k = 0; k < n; ++k)
        ys[k] = static_cast<float>((double(t[k]) - mx) - logSum);
    } else {
      double inv = 1.0 / sum;
      for (int64_t k = 0; k < n; ++k)
        ys[k] = static_cast<float>(e[k] * inv);
    }
  }
}
/// softmaxMaskedRowsOf for a mask of element type M, one multiversioned
/// function each.
#define PFRT_SOFTMAX_MASKED_ROWS(NAME, M)                                      \
  PFRT_MULTIVERSION void NAME(                                                 \
      const float *PFRT_RESTRICT x, const M *PFRT_RESTRICT mask,               \
      int64_t maskRows, float f, float v, float *PFRT_RESTRICT y,              \
      int64_t rows, int64_t n, int32_t log, float *PFRT_RESTRICT t,            \
      double *PFRT_RESTRICT e) {                                               \
    softmaxMaskedRowsOf(x, mask, maskRows, f, v, y, rows, n, log, t, e);       \
  }
PFRT_SOFTMAX_MASKED_ROWS(softmaxMaskedRowsI64, int64_t)
PFRT_SOFTMAX_MASKED_ROWS(softmaxMaskedRowsF32, float)
PFRT_SOFTMAX_MASKED_ROWS(softmaxMaskedRowsI32, int32_t)
PFRT_SOFTMAX_MASKED_ROWS(softmaxMaskedRowsBool, uint8_t)
#undef PFRT_SOFTMAX_MASKED_ROWS

/// Softmax (log-softmax) gradient rows: dx = y (dy - s), s = sum(dy y)
/// (dx = dy - exp(y) s, s = sum(dy)), s in float64 over 8 lanes (element
/// k + j to lane j, combined as sum8), as cuda/kernels/SoftmaxBodies.h's
/// softmaxGradLineAt.
/// With `scaled`, each result times f after its rounding (as pfrt_k_scale
/// would multiply it); a constant after inlining.
PFRT_ALWAYS_INLINE void softmaxGradRowsOf(const float *PFRT_RESTRICT y,
                                          const float *PFRT_RESTRICT dy,
                                          float *PFRT_RESTRICT dx, int64_t rows,
                                          int64_t n, int32_t log, bool scaled,
                                          float f) {
  for (int64_t r = 0; r < rows; ++r) {
    const float *yr = y + r * n, *dyr = dy + r * n;
    V8d acc = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t k = 0;
    if (log)
      for (; k + 8 <= n; k += 8)
        acc += PFRT_LOAD8(dyr + k);
    else
      for (; k + 8 <= n; k += 8)
        acc += PFRT_LOAD8(dyr + k) * PFRT_LOAD8(yr + k);
    double tail = 0;
    for (; k < n; ++k)
      tail += double(dyr[k]) * (log ? 1.0 : double(yr[k]));
    double s = sum8(acc) + tail;
    float *out = dx + r * n;
    if (log)
      for (int64_t kk = 0; kk < n; ++kk) {
        float o =
            static_cast<float>(double(dyr[kk]) - std::exp(double(yr[kk])) * s);
        out[kk] = scaled ? o * f : o;
      }
    else
      for (int64_t kk = 0; kk < n; ++kk) {
        float o = static_cast<float>(double(yr[kk]) * (double(dyr[kk]) - s));
        out[kk] = scaled ? o * f : o;
      }
  }
}
PFRT_MULTIVERSION void softmaxGradRows(const float *PFRT_RESTRICT y,
                                       const float *PFRT_RESTRICT dy,
                                       float *PFRT_RESTRICT dx, int64_t rows,
                                       int64_t n, int32_t log) {
  softmaxGradRowsOf(y, dy, dx, rows, n, log, false, 1.0f);
}
PFRT_MULTIVERSION void softmaxGradRowsScaled(const float *PFRT_RESTRICT y,
                                             const float *PFRT_RESTRICT dy,
                                             float *PFRT_RESTRICT dx,
                                             int64_t rows, int64_t n,
                                             int32_t log, float f) {
  softmaxGradRowsOf(y, dy, dx, rows, n, log, true, f);
}

} // namespace

extern "C" {

void pfrt_k_softmax(const float *x, float *y, int64_t outer, int64_t n,
                    int64_t inner, int32_t log) {
  int64_t total =
      checkSoftmaxArgs("pfrt_k_softmax", outer, n, inner, {{"x", x}, {"y", y}});
  if (total == 0)
    return;
  if (inner == 1) { // rows: the fused kernel's rows without scale or mask
    // (x * 1.0f is x, bit for bit)
    softmaxMaskedRowsI64(x, nullptr, 1, 1.0f, 0.0f, y, outer, n, log,
                         scratchOf<float>(1, n), scratchOf<double>(0, n));
    return;
  }
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const float *xs = x + o * n * inner + i;
      float *ys = y + o * n * inner + i;
      double m = -INFINITY, sum = 0.0;
      for (int64_t k = 0; k < n; ++k)
        m = std::max(m, double(xs[k * inner]));
      for (int64_t k = 0; k < n; ++k)
        sum += expClamped(double(xs[k * inner]) - m);
      double logSum = std::log(sum);
      for (int64_t k = 0; k < n; ++k) {
        double z = double(xs[k * inner]) - m;
        ys[k * inner] =
            static_cast<float>(log ? z - logSum : expClamped(z) / sum);
      }
    }
}

void pfrt_k_softmax_grad(const float *y, const float *dy, float *dx,
                         int64_t outer, int64_t n, int64_t inner, int32_t log) {
  checkSoftmaxArgs("pfrt_k_softmax_grad", outer, n, inner,
                   {{"y", y}, {"dy", dy}, {"dx", dx}});
  if (inner == 1) { // rows: the sum in 8 lanes (the device twin's order)
    softmaxGradRows(y, dy, dx, outer, n, log);
    return;
  }
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t base = o * n * inner + i;
      double s = 0.0;
      for (int64_t k = 0; k < n; ++k)
        s += double(dy[base + k * inner]) *
             (log ? 1.0 : double(y[base + k * inner]));
      for (int64_t k = 0; k < n; ++k) {
        double yk = y[base + k * inner], g = dy[base + k * inner];
        dx[base + k * inner] =
            static_cast<float>(log ? g - std::exp(yk) * s : yk * (g - s));
      }
    }
}

void pfrt_k_softmax_masked(const float *x, const void *mask, int32_t maskDtype,
                           int64_t mask_rows, double scale, double fill,
                           float *y, int64_t rows, int64_t n, int32_t log) {
  const char *fn = "pfrt_k_softmax_masked";
  if (checkSoftmaxRowsArgs(fn, rows, n, {{"x", x}, {"y", y}}) == 0)
    return;
  if (mask) {
    if (mask_rows < 1 || rows % mask_rows != 0)
      fatal("%s: mask_rows %lld must be positive and divide rows %lld", fn,
            (long long)mask_rows, (long long)rows);
    checkPtr(fn, "mask", mask, mulChecked(fn, mask_rows, n));
    checkDtype(fn, "maskDtype", maskDtype);
    if (maskDtype == PFRT_DTYPE_BF16 || maskDtype == PFRT_DTYPE_F16)
      fatal("%s: a bf16 or f16 mask is not supported (pf-widen-low-precision "
            "widens it to f32)",
            fn);
  }
  float *t = scratchOf<float>(1, n);
  double *e = scratchOf<double>(0, n);
  float f = float(scale), v = float(fill);
  switch (mask ? maskDtype : PFRT_DTYPE_I64) {
  case PFRT_DTYPE_F32:
    return softmaxMaskedRowsF32(x, static_cast<const float *>(mask), mask_rows,
                                f, v, y, rows, n, log, t, e);
  case PFRT_DTYPE_I64: // (also no mask at all)
    return softmaxMaskedRowsI64(x, static_cast<const int64_t *>(mask),
                                mask_rows, f, v, y, rows, n, log, t, e);
  case PFRT_DTYPE_I32:
    return softmaxMaskedRowsI32(x, static_cast<const int32_t *>(mask),
                                mask_rows, f, v, y, rows, n, log, t, e);
  default:
    return softmaxMaskedRowsBool(x, static_cast<const uint8_t *>(mask),
                                 mask_rows, f, v, y, rows, n, log, t, e);
  }
}

void pfrt_k_softmax_grad_scaled(const float *y, const float *dy, float *dx,
                                int64_t rows, int64_t n, int32_t log,
                                double scale) {
  const char *fn = "pfrt_k_softmax_grad_scaled";
  checkSoftmaxRowsArgs(fn, rows, n, {{"y", y}, {"dy", dy}, {"dx", dx}});
  softmaxGradRowsScaled(y, dy, dx, rows, n, log, float(scale));
}

} // extern "C"
