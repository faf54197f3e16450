//===- Kernels.cpp - Element-wise, reduction, layout, matmul, loss --------===//
//
// The CPU kernels of pfrt.h that are not convolution, pooling, batch norm or
// optimizer updates, plus the scratch memory and checks shared by all of
// them.
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"
#include "pfrt/pfrt.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

using namespace pfrt;
using namespace pfrt::kern;

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

namespace pfrt {
namespace kern {

void checkSize(const char *fn, const char *what, int64_t v) {
  if (v < 0)
    fatal("%s: %s = %lld is negative", fn, what, (long long)v);
}

void checkPtr(const char *fn, const char *what, const void *p, int64_t n) {
  if (!p && n > 0)
    fatal("%s: %s is NULL", fn, what);
}

int64_t mulChecked(const char *fn, int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    fatal("%s: size %lld * %lld overflows int64", fn, (long long)a,
          (long long)b);
  return r;
}

int64_t checkTransposeArgs(const char *fn, const void *x, const void *y,
                           int64_t rank, const int64_t *shape,
                           const int64_t *perm) {
  if (rank < 0 || rank > kMaxRank)
    fatal("%s: rank %lld is outside [0, %lld]", fn, (long long)rank,
          (long long)kMaxRank);
  checkPtr(fn, "shape", shape, rank);
  checkPtr(fn, "perm", perm, rank);
  bool seen[kMaxRank] = {false};
  int64_t total = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (shape[d] < 0)
      fatal("%s: shape %s has a negative dimension", fn,
            shapeToString(rank, shape).c_str());
    total = mulChecked(fn, total, shape[d]);
    if (perm[d] < 0 || perm[d] >= rank || seen[perm[d]])
      fatal("%s: perm %s is not a permutation of 0..%lld", fn,
            shapeToString(rank, perm).c_str(), (long long)rank - 1);
    seen[perm[d]] = true;
  }
  checkPtr(fn, "x", x, total);
  checkPtr(fn, "y", y, total);
  return total;
}

void checkEmbeddingArgs(const char *fn, const int64_t *ids, int64_t n,
                        int64_t v, int64_t d, int64_t row0, int64_t vocab) {
  checkSize(fn, "n", n);
  checkSize(fn, "v", vocab);
  checkSize(fn, "d", d);
  checkPtr(fn, "ids", ids, n);
  if (row0 < 0 || v < 0 || row0 > vocab - v)
    fatal("%s: rows [%lld, %lld) are not rows of a vocabulary of %lld", fn,
          (long long)row0, (long long)(row0 + v), (long long)vocab);
}

void checkAdamArgs(const char *fn, const void *p, const void *g, const void *m,
                   const void *v, const void *lr, const void *step,
                   const void *new_p, const void *new_m, const void *new_v,
                   int64_t n) {
  checkSize(fn, "n", n);
  checkPtr(fn, "p", p, n);
  checkPtr(fn, "g", g, n);
  checkPtr(fn, "m", m, n);
  checkPtr(fn, "v", v, n);
  checkPtr(fn, "new_p", new_p, n);
  checkPtr(fn, "new_m", new_m, n);
  checkPtr(fn, "new_v", new_v, n);
  checkPtr(fn, "lr", lr, 1);
  checkPtr(fn, "step", step, 1);
}

namespace {
constexpr int kSlots = 4;
struct Slot {
  void *ptr = nullptr;
  int64_t bytes = 0;
};
Slot gSlots[kSlots];
} // namespace

void *scratch(int slot, int64_t bytes) {
  if (slot < 0 || slot >= kSlots)
    fatal("internal: scratch slot %d out of range", slot);
  Slot &s = gSlots[slot];
  if (bytes <= s.bytes && s.ptr)
    return s.ptr;
  // Grow geometrically so a sequence of growing requests stays cheap.
  int64_t want = bytes > 2 * s.bytes ? bytes : 2 * s.bytes;
  if (want < 4096)
    want = 4096;
  want = (want + 63) / 64 * 64;
  std::free(s.ptr);
  s.ptr = std::aligned_alloc(64, size_t(want));
  if (!s.ptr)
    fatal("out of memory: kernel scratch of %lld bytes", (long long)want);
  s.bytes = want;
  return s.ptr;
}

} // namespace kern
} // namespace pfrt

namespace {

/// exp(x) in float64 for x in about [-700, 700], branch-free so that loops
/// calling it vectorize. x = k ln2 + r, |r| <= ln2/2, exp(r) by its Taylor
/// polynomial to r^11 (relative error < 1e-14), times 2^k built from the
/// exponent bits. Arguments below -700 are clamped (their share of any sum
/// that also holds exp(0) = 1 is below 1e-300); NaN stays NaN.
PFRT_ALWAYS_INLINE double expClamped(double x) {
  x = x < -700.0 ? -700.0 : x;
  const double shifter = 6755399441055744.0; // 0x1.8p52: rounds to integer
  double t = x * 1.4426950408889634 + shifter;
  double kf = t - shifter;
  double r = (x - kf * 0.6931471803691238) - kf * 1.9082149292705877e-10;
  double p = 2.505210838544172e-08; // 1/11!
  p = p * r + 2.755731922398589e-07;
  p = p * r + 2.7557319223985893e-06;
  p = p * r + 2.48015873015873e-05;
  p = p * r + 1.984126984126984e-04;
  p = p * r + 1.3888888888888889e-03;
  p = p * r + 8.333333333333333e-03;
  p = p * r + 4.1666666666666664e-02;
  p = p * r + 1.6666666666666666e-01;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  // The low mantissa bits of t hold k + 2^51; (bits + 1023) << 52 keeps
  // exactly k + 1023 in the exponent field.
  uint64_t bits;
  std::memcpy(&bits, &t, 8);
  uint64_t sbits = (bits + 1023) << 52;
  double scale;
  std::memcpy(&scale, &sbits, 8);
  return p * scale;
}

/// max over x[0..n), n >= 1 (NaN handling is left to the caller's sums).
PFRT_ALWAYS_INLINE float rowMax(const float *PFRT_RESTRICT x, int64_t n) {
  float m[8];
  for (int j = 0; j < 8; ++j)
    m[j] = x[0];
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j)
      m[j] = x[i + j] > m[j] ? x[i + j] : m[j];
  float r = m[0];
  for (int j = 1; j < 8; ++j)
    r = m[j] > r ? m[j] : r;
  for (; i < n; ++i)
    r = x[i] > r ? x[i] : r;
  return r;
}

/// One softmax row: returns mx = max(x) and the float64 sum of
/// e[i] = exp(x[i] - mx), which it stores.
PFRT_ALWAYS_INLINE double softmaxRowBody(const float *PFRT_RESTRICT x,
                                         int64_t n, double *PFRT_RESTRICT e,
                                         double *mxOut) {
  const double mx = double(rowMax(x, n));
  PFRT_INTERLEAVE
  for (int64_t i = 0; i < n; ++i)
    e[i] = expClamped(double(x[i]) - mx);
  // 32 interleaved lanes combined by a warp's shuffle tree: the GPU's
  // order (cuda/DeviceBodies.h softmaxRowSum), so both give the same bits.
  // Lanes j, j + 8, j + 16, j + 24 are the four vectors' lane j.
  V8d lanes[4] = {{0, 0, 0, 0, 0, 0, 0, 0},
                  {0, 0, 0, 0, 0, 0, 0, 0},
                  {0, 0, 0, 0, 0, 0, 0, 0},
                  {0, 0, 0, 0, 0, 0, 0, 0}};
  int64_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int v = 0; v < 4; ++v) {
      V8d ev;
      std::memcpy(&ev, e + i + 8 * v, sizeof(ev));
      lanes[v] += ev;
    }
  double acc[32];
  std::memcpy(acc, lanes, sizeof(acc));
  for (int j = 0; i + j < n; ++j)
    acc[j] += e[i + j];
  for (int off = 16; off >= 1; off /= 2)
    for (int j = 0; j < off; ++j)
      acc[j] += acc[j + off];
  *mxOut = mx;
  return acc[0];
}

PFRT_MULTIVERSION double softmaxRow(const float *PFRT_RESTRICT x, int64_t n,
                                    double *PFRT_RESTRICT e, double *mxOut) {
  return softmaxRowBody(x, n, e, mxOut);
}

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
PFRT_MULTIVERSION void softmaxMaskedRowsI64(
    const float *PFRT_RESTRICT x, const int64_t *PFRT_RESTRICT mask,
    int64_t maskRows, float f, float v, float *PFRT_RESTRICT y, int64_t rows,
    int64_t n, int32_t log, float *PFRT_RESTRICT t, double *PFRT_RESTRICT e) {
  softmaxMaskedRowsOf(x, mask, maskRows, f, v, y, rows, n, log, t, e);
}
PFRT_MULTIVERSION void softmaxMaskedRowsF32(
    const float *PFRT_RESTRICT x, const float *PFRT_RESTRICT mask,
    int64_t maskRows, float f, float v, float *PFRT_RESTRICT y, int64_t rows,
    int64_t n, int32_t log, float *PFRT_RESTRICT t, double *PFRT_RESTRICT e) {
  softmaxMaskedRowsOf(x, mask, maskRows, f, v, y, rows, n, log, t, e);
}

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
    // Odometer over dims 0..r-2.
    for (int64_t d = r - 2; d >= 0; --d) {
      out += ostr[d];
      if (++idx[d] < ext[d])
        break;
      out -= ostr[d] * ext[d];
      idx[d] = 0;
    }
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

void checkLabel(const char *fn, const int64_t *labels, int64_t r, int64_t c) {
  int64_t l = labels[r];
  if (l < 0 || l >= c)
    fatal("%s: label %lld at row %lld is outside [0, %lld)", fn, (long long)l,
          (long long)r, (long long)c);
}

} // namespace

extern "C" {

//===----------------------------------------------------------------------===//
// Element-wise
//===----------------------------------------------------------------------===//

void pfrt_k_relu(const float *x, float *y, int64_t n) {
  const char *fn = "pfrt_k_relu";
  checkSize(fn, "n", n);
  checkPtr(fn, "x", x, n);
  checkPtr(fn, "y", y, n);
  PFRT_IVDEP
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i];
    y[i] = v < 0.0f ? 0.0f : v;
  }
}

} // extern "C"

namespace {
/// exp(x) in float32 for the exact GELU, branch-free: x = k ln2 + r with
/// |r| <= ln2/2 (Cody-Waite, ln2 in two parts), exp(r) by its Taylor
/// polynomial to r^7 (truncation below 1e-8 relative), times 2^k from the
/// exponent bits. x is clamped to [-87, 88] (exp(-87) ~ 1.6e-38 is the
/// smallest normal neighbourhood; GELU's uses stay far above).
PFRT_ALWAYS_INLINE float expFloat(float x) {
  x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
  const float shifter = 12582912.0f; // 0x1.8p23: rounds to integer
  float t = x * 1.44269504f + shifter;
  float kf = t - shifter;
  float r = (x - kf * 0.693145751953125f) - kf * 1.42860677e-06f;
  float p = 1.98412698e-04f; // 1/7!
  p = p * r + 1.38888889e-03f;
  p = p * r + 8.33333333e-03f;
  p = p * r + 4.16666667e-02f;
  p = p * r + 1.66666667e-01f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  int32_t k;
  std::memcpy(&k, &t, 4); // the low mantissa bits of t hold k + 2^22
  uint32_t sbits = uint32_t(k + 127 - 0x4B400000) << 23;
  float scale;
  std::memcpy(&scale, &sbits, 4);
  return p * scale;
}

/// Phi(x), the standard normal CDF, in float32: 0.5 erfc(-x / sqrt 2) by
/// Numerical Recipes' Chebyshev fit of erfc (fractional error below
/// 1.2e-7), whose
/// exponent -a^2 + p is formed in float; where that rounding matters
/// (|a| large) erfc itself is below e^-9, so Phi's absolute error stays
/// near 1e-8 (checked against NumPy's erf by runtime/test/check_kernels.py).
PFRT_ALWAYS_INLINE float phiFloat(float x) {
  float a = x * -0.707106781f;
  float s = a < 0.0f ? -a : a;
  float t = 1.0f / (1.0f + 0.5f * s);
  float p = 0.17087277f;
  p = p * t - 0.82215223f;
  p = p * t + 1.48851587f;
  p = p * t - 1.13520398f;
  p = p * t + 0.27886807f;
  p = p * t - 0.18628806f;
  p = p * t + 0.09678418f;
  p = p * t + 0.37409196f;
  p = p * t + 1.00002368f;
  p = p * t - 1.26551223f;
  float r = t * expFloat(-s * s + p); // erfc(|a|)
  return 0.5f * (a < 0.0f ? 2.0f - r : r);
}

/// tanh(u) = 1 - 2 / (exp(2u) + 1), |u| clamped to 350 (tanh is +-1 there).
PFRT_ALWAYS_INLINE double tanhFast(double u) {
  u = u > 350.0 ? 350.0 : (u < -350.0 ? -350.0 : u);
  return 1.0 - 2.0 / (expClamped(2.0 * u) + 1.0);
}

/// f(x) and f'(x) of activation `Kind` (pfrt.h), in double, branch-free
/// (the kernels' loops vectorize).
template <int Kind, bool Grad>
PFRT_ALWAYS_INLINE void activation(double x, double *f, double *df) {
  constexpr double kSqrt2OverPi = 0.79788456080286535588;
  static_assert(Kind != 0, "the exact GELU is activationLoop0 (float32)");
  if constexpr (Kind == 1) {
    // x (1 + tanh(u)) / 2, u = sqrt(2/pi) (x + 0.044715 x^3)
    double u = kSqrt2OverPi * (x + 0.044715 * x * x * x);
    double t = tanhFast(u);
    *f = 0.5 * x * (1.0 + t);
    if constexpr (Grad)
      *df = 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * kSqrt2OverPi *
                                  (1.0 + 3 * 0.044715 * x * x);
  } else if constexpr (Kind == 2) {
    double t = tanhFast(x);
    *f = t;
    if constexpr (Grad)
      *df = 1.0 - t * t;
  } else {
    double e = expClamped(x < -700.0 ? 700.0 : -x);
    double sg = 1.0 / (1.0 + e);
    *f = sg;
    if constexpr (Grad)
      *df = sg * (1.0 - sg);
  }
}

// One loop per kind (target_clones takes no templates), the forward's
// apart from the gradient's so that it computes f alone.
#define PFRT_ACTIVATION_LOOP(KIND)                                             \
  PFRT_MULTIVERSION void activationLoop##KIND(                                 \
      const float *PFRT_RESTRICT x, const float *PFRT_RESTRICT dy,             \
      float *PFRT_RESTRICT out, int64_t n) {                                   \
    if (!dy) {                                                                 \
      PFRT_INTERLEAVE                                                          \
      for (int64_t i = 0; i < n; ++i) {                                        \
        double f, df;                                                          \
        activation<KIND, false>(x[i], &f, &df);                                \
        out[i] = static_cast<float>(f);                                        \
      }                                                                        \
      return;                                                                  \
    }                                                                          \
    PFRT_INTERLEAVE                                                            \
    for (int64_t i = 0; i < n; ++i) {                                          \
      double f, df;                                                            \
      activation<KIND, true>(x[i], &f, &df);                                   \
      out[i] = static_cast<float>(df * dy[i]);                                 \
    }                                                                          \
  }
// The exact GELU in float32 (its erf and exp are the whole cost; float32
// lanes are twice as many and the polynomials shorter): f = x Phi(x),
// f' = Phi(x) + x phi(x).
PFRT_MULTIVERSION void activationLoop0(const float *PFRT_RESTRICT x,
                                       const float *PFRT_RESTRICT dy,
                                       float *PFRT_RESTRICT out, int64_t n) {
  if (!dy) {
    PFRT_INTERLEAVE
    for (int64_t i = 0; i < n; ++i)
      out[i] = x[i] * phiFloat(x[i]);
    return;
  }
  PFRT_INTERLEAVE
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i];
    float pdf = 0.398942280f * expFloat(-0.5f * v * v);
    out[i] = (phiFloat(v) + v * pdf) * dy[i];
  }
}
PFRT_ACTIVATION_LOOP(1)
PFRT_ACTIVATION_LOOP(2)
PFRT_ACTIVATION_LOOP(3)
#undef PFRT_ACTIVATION_LOOP

/// out = f(x) (dy null) or f'(x) dy. The loops take restrict pointers, so an
/// in-place call (out == x or dy) goes through a copy of its inputs, in
/// blocks; other calls run on the arrays directly.
void activationKernel(int32_t kind, const float *x, const float *dy, float *out,
                      int64_t n) {
  auto run = [kind](const float *xs, const float *d, float *o, int64_t m) {
    switch (kind) {
    case 0:
      activationLoop0(xs, d, o, m);
      break;
    case 1:
      activationLoop1(xs, d, o, m);
      break;
    case 2:
      activationLoop2(xs, d, o, m);
      break;
    default:
      activationLoop3(xs, d, o, m);
      break;
    }
  };
  if (out != x && out != dy) {
    run(x, dy, out, n);
    return;
  }
  constexpr int64_t kBlock = 4096;
  float xs[kBlock], ds[kBlock];
  for (int64_t at = 0; at < n; at += kBlock) {
    int64_t m = n - at < kBlock ? n - at : kBlock;
    std::memcpy(xs, x + at, size_t(m) * sizeof(float));
    if (dy)
      std::memcpy(ds, dy + at, size_t(m) * sizeof(float));
    run(xs, dy ? ds : nullptr, out + at, m);
  }
}

void checkActivation(const char *fn, int32_t kind) {
  if (kind < 0 || kind > 3)
    fatal("%s: kind %d is not one of 0 (gelu), 1 (gelu_tanh), 2 (tanh), 3 "
          "(sigmoid)",
          fn, kind);
}
} // namespace

extern "C" {

void pfrt_k_activation(int32_t kind, const float *x, float *y, int64_t n) {
  const char *fn = "pfrt_k_activation";
  checkActivation(fn, kind);
  checkSize(fn, "n", n);
  checkPtr(fn, "x", x, n);
  checkPtr(fn, "y", y, n);
  activationKernel(kind, x, nullptr, y, n);
}

void pfrt_k_activation_grad(int32_t kind, const float *x, const float *dy,
                            float *dx, int64_t n) {
  const char *fn = "pfrt_k_activation_grad";
  checkActivation(fn, kind);
  checkSize(fn, "n", n);
  checkPtr(fn, "x", x, n);
  checkPtr(fn, "dy", dy, n);
  checkPtr(fn, "dx", dx, n);
  activationKernel(kind, x, dy, dx, n);
}

namespace {
/// The ids' values: a CPU kernel reads them here (its twin on the device).
void checkEmbeddingIds(const char *fn, const int64_t *ids, int64_t n,
                       int64_t vocab) {
  for (int64_t i = 0; i < n; ++i)
    if (ids[i] < 0 || ids[i] >= vocab)
      fatal("%s: id %lld at position %lld is outside [0, %lld)", fn,
            (long long)ids[i], (long long)i, (long long)vocab);
}
} // namespace

} // extern "C"

namespace {
/// The lookup of the ids in rows [row0, row0 + v) of a [vocab, d] table
/// (zeros for the other ids), and its gradient; the whole table is row0 = 0,
/// v = vocab.
void embeddingRows(const char *fn, const float *table, const int64_t *ids,
                   float *y, int64_t n, int64_t v, int64_t d, int64_t row0,
                   int64_t vocab) {
  checkEmbeddingArgs(fn, ids, n, v, d, row0, vocab);
  checkEmbeddingIds(fn, ids, n, vocab);
  checkPtr(fn, "table", table, mulChecked(fn, v, d));
  checkPtr(fn, "y", y, mulChecked(fn, n, d));
  for (int64_t i = 0; i < n; ++i) {
    int64_t row = ids[i] - row0;
    if (row >= 0 && row < v)
      std::memcpy(y + i * d, table + row * d, size_t(d) * sizeof(float));
    else
      std::memset(y + i * d, 0, size_t(d) * sizeof(float));
  }
}

void embeddingGradRows(const char *fn, const int64_t *ids, const float *dy,
                       float *dtable, int64_t n, int64_t v, int64_t d,
                       int64_t row0, int64_t vocab) {
  checkEmbeddingArgs(fn, ids, n, v, d, row0, vocab);
  checkEmbeddingIds(fn, ids, n, vocab);
  checkPtr(fn, "dy", dy, mulChecked(fn, n, d));
  checkPtr(fn, "dtable", dtable, mulChecked(fn, v, d));
  std::memset(dtable, 0, size_t(v * d) * sizeof(float));
  for (int64_t i = 0; i < n; ++i) {
    int64_t row = ids[i] - row0;
    if (row < 0 || row >= v)
      continue;
    float *out = dtable + row * d;
    const float *g = dy + i * d;
    for (int64_t k = 0; k < d; ++k)
      out[k] += g[k];
  }
}
} // namespace

extern "C" {

void pfrt_k_embedding(const float *table, const int64_t *ids, float *y,
                      int64_t n, int64_t v, int64_t d) {
  embeddingRows("pfrt_k_embedding", table, ids, y, n, v, d, 0, v);
}

void pfrt_k_embedding_grad(const int64_t *ids, const float *dy, float *dtable,
                           int64_t n, int64_t v, int64_t d) {
  embeddingGradRows("pfrt_k_embedding_grad", ids, dy, dtable, n, v, d, 0, v);
}

void pfrt_k_embedding_rows(const float *table, const int64_t *ids, float *y,
                           int64_t n, int64_t v, int64_t d, int64_t row0,
                           int64_t vocab) {
  embeddingRows("pfrt_k_embedding_rows", table, ids, y, n, v, d, row0, vocab);
}

void pfrt_k_embedding_grad_rows(const int64_t *ids, const float *dy,
                                float *dtable, int64_t n, int64_t v, int64_t d,
                                int64_t row0, int64_t vocab) {
  embeddingGradRows("pfrt_k_embedding_grad_rows", ids, dy, dtable, n, v, d,
                    row0, vocab);
}

namespace {
/// Mean and 1/sqrt(var + eps) of one row, in double (sums with a fixed
/// pattern of 8 accumulators: vectorized, the same bits at any width).
PFRT_ALWAYS_INLINE void rowStats(const float *PFRT_RESTRICT x, int64_t c,
                                 double eps, double &mean, double &invstd) {
  mean = sumF64(x, c) / double(c);
  V8d acc = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t k = 0;
  for (; k + 8 <= c; k += 8) {
    V8d d = PFRT_LOAD8(x + k) - mean;
    acc += d * d;
  }
  double tail = 0;
  for (; k < c; ++k)
    tail += (double(x[k]) - mean) * (double(x[k]) - mean);
  double var = sum8(acc) + tail;
  invstd = 1.0 / std::sqrt(var / double(c) + eps);
}

PFRT_MULTIVERSION void layerNormRows(const float *PFRT_RESTRICT x,
                                     const float *PFRT_RESTRICT gamma,
                                     const float *PFRT_RESTRICT beta,
                                     float *PFRT_RESTRICT y, int64_t rows,
                                     int64_t c, double eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * c;
    float *yr = y + r * c;
    double mean, invstd;
    rowStats(xr, c, eps, mean, invstd);
    for (int64_t k = 0; k < c; ++k)
      yr[k] = static_cast<float>((double(xr[k]) - mean) * invstd * gamma[k] +
                                 beta[k]);
  }
}

PFRT_MULTIVERSION void layerNormGradRows(const float *PFRT_RESTRICT x,
                                         const float *PFRT_RESTRICT gamma,
                                         const float *PFRT_RESTRICT dy,
                                         float *PFRT_RESTRICT dx, int64_t rows,
                                         int64_t c, double eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * c, *dyr = dy + r * c;
    double mean, invstd;
    rowStats(xr, c, eps, mean, invstd);
    V8d aG = {0, 0, 0, 0, 0, 0, 0, 0}, aGX = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t k = 0;
    for (; k + 8 <= c; k += 8) {
      // gamma is float: the float64 product of two widened floats.
      V8d g = PFRT_LOAD8(dyr + k) * PFRT_LOAD8(gamma + k);
      aG += g;
      aGX += g * ((PFRT_LOAD8(xr + k) - mean) * invstd);
    }
    double tG = 0, tGX = 0;
    for (; k < c; ++k) {
      double g = double(dyr[k]) * gamma[k];
      tG += g;
      tGX += g * ((double(xr[k]) - mean) * invstd);
    }
    double sumG = sum8(aG) + tG;
    double sumGX = sum8(aGX) + tGX;
    const double scale = invstd / double(c);
    for (int64_t kk = 0; kk < c; ++kk) {
      double g = double(dyr[kk]) * gamma[kk];
      double xhat = (double(xr[kk]) - mean) * invstd;
      dx[r * c + kk] =
          static_cast<float>(scale * (double(c) * g - sumG - xhat * sumGX));
    }
  }
}

PFRT_MULTIVERSION void layerNormParamRows(const float *PFRT_RESTRICT x,
                                          const float *PFRT_RESTRICT dy,
                                          double *PFRT_RESTRICT g,
                                          double *PFRT_RESTRICT bsum,
                                          int64_t rows, int64_t c, double eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * c, *dyr = dy + r * c;
    double mean, invstd;
    rowStats(xr, c, eps, mean, invstd);
    for (int64_t k = 0; k < c; ++k) {
      double d = dyr[k];
      g[k] += d * ((double(xr[k]) - mean) * invstd);
      bsum[k] += d;
    }
  }
}

void checkLayerNorm(const char *fn, int64_t rows, int64_t c, double eps) {
  checkSize(fn, "rows", rows);
  checkSize(fn, "c", c);
  if (c < 1 || !(eps > 0.0))
    fatal("%s: c = %lld must be >= 1 and eps = %g > 0", fn, (long long)c, eps);
}
} // namespace

void pfrt_k_layer_norm(const float *x, const float *gamma, const float *beta,
                       float *y, int64_t rows, int64_t c, double eps) {
  const char *fn = "pfrt_k_layer_norm";
  checkLayerNorm(fn, rows, c, eps);
  int64_t n = mulChecked(fn, rows, c);
  checkPtr(fn, "x", x, n);
  checkPtr(fn, "y", y, n);
  checkPtr(fn, "gamma", gamma, c);
  checkPtr(fn, "beta", beta, c);
  layerNormRows(x, gamma, beta, y, rows, c, eps);
}

void pfrt_k_layer_norm_grad_input(const float *x, const float *gamma,
                                  const float *dy, float *dx, int64_t rows,
                                  int64_t c, double eps) {
  const char *fn = "pfrt_k_layer_norm_grad_input";
  checkLayerNorm(fn, rows, c, eps);
  int64_t n = mulChecked(fn, rows, c);
  checkPtr(fn, "x", x, n);
  checkPtr(fn, "dy", dy, n);
  checkPtr(fn, "dx", dx, n);
  checkPtr(fn, "gamma", gamma, c);
  layerNormGradRows(x, gamma, dy, dx, rows, c, eps);
}

void pfrt_k_layer_norm_grad_params(const float *x, const float *dy,
                                   float *dgamma, float *dbeta, int64_t rows,
                                   int64_t c, double eps) {
  const char *fn = "pfrt_k_layer_norm_grad_params";
  checkLayerNorm(fn, rows, c, eps);
  int64_t n = mulChecked(fn, rows, c);
  checkPtr(fn, "x", x, n);
  checkPtr(fn, "dy", dy, n);
  checkPtr(fn, "dgamma", dgamma, c);
  checkPtr(fn, "dbeta", dbeta, c);
  std::vector<double> g(size_t(c), 0.0), bsum(size_t(c), 0.0);
  layerNormParamRows(x, dy, g.data(), bsum.data(), rows, c, eps);
  for (int64_t k = 0; k < c; ++k) {
    dgamma[k] = static_cast<float>(g[size_t(k)]);
    dbeta[k] = static_cast<float>(bsum[size_t(k)]);
  }
}

void pfrt_k_softmax(const float *x, float *y, int64_t outer, int64_t n,
                    int64_t inner, int32_t log) {
  const char *fn = "pfrt_k_softmax";
  checkSize(fn, "outer", outer);
  checkSize(fn, "n", n);
  checkSize(fn, "inner", inner);
  int64_t total = mulChecked(fn, mulChecked(fn, outer, n), inner);
  checkPtr(fn, "x", x, total);
  checkPtr(fn, "y", y, total);
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

namespace {
/// Softmax (log-softmax) gradient rows: dx = y (dy - s), s = sum(dy y)
/// (dx = dy - exp(y) s, s = sum(dy)), s in float64 over 8 lanes (element
/// k + j to lane j, combined as sum8), as DeviceBodies.h's
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

void pfrt_k_softmax_grad(const float *y, const float *dy, float *dx,
                         int64_t outer, int64_t n, int64_t inner, int32_t log) {
  const char *fn = "pfrt_k_softmax_grad";
  checkSize(fn, "outer", outer);
  checkSize(fn, "n", n);
  checkSize(fn, "inner", inner);
  int64_t total = mulChecked(fn, mulChecked(fn, outer, n), inner);
  checkPtr(fn, "y", y, total);
  checkPtr(fn, "dy", dy, total);
  checkPtr(fn, "dx", dx, total);
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

void pfrt_k_softmax_masked(const float *x, const void *mask, int32_t mask_i64,
                           int64_t mask_rows, double scale, double fill,
                           float *y, int64_t rows, int64_t n, int32_t log) {
  const char *fn = "pfrt_k_softmax_masked";
  checkSize(fn, "rows", rows);
  checkSize(fn, "n", n);
  int64_t total = mulChecked(fn, rows, n);
  checkPtr(fn, "x", x, total);
  checkPtr(fn, "y", y, total);
  if (total == 0)
    return;
  if (mask) {
    if (mask_rows < 1 || rows % mask_rows != 0)
      fatal("%s: mask_rows %lld must be positive and divide rows %lld", fn,
            (long long)mask_rows, (long long)rows);
    checkPtr(fn, "mask", mask, mulChecked(fn, mask_rows, n));
  }
  float *t = scratchOf<float>(1, n);
  double *e = scratchOf<double>(0, n);
  if (mask && !mask_i64)
    softmaxMaskedRowsF32(x, static_cast<const float *>(mask), mask_rows,
                         float(scale), float(fill), y, rows, n, log, t, e);
  else
    softmaxMaskedRowsI64(x, static_cast<const int64_t *>(mask), mask_rows,
                         float(scale), float(fill), y, rows, n, log, t, e);
}

void pfrt_k_softmax_grad_scaled(const float *y, const float *dy, float *dx,
                                int64_t rows, int64_t n, int32_t log,
                                double scale) {
  const char *fn = "pfrt_k_softmax_grad_scaled";
  checkSize(fn, "rows", rows);
  checkSize(fn, "n", n);
  int64_t total = mulChecked(fn, rows, n);
  checkPtr(fn, "y", y, total);
  checkPtr(fn, "dy", dy, total);
  checkPtr(fn, "dx", dx, total);
  softmaxGradRowsScaled(y, dy, dx, rows, n, log, float(scale));
}

void pfrt_k_mul(const float *a, const float *b, float *out, int64_t n) {
  const char *fn = "pfrt_k_mul";
  checkSize(fn, "n", n);
  checkPtr(fn, "a", a, n);
  checkPtr(fn, "b", b, n);
  checkPtr(fn, "out", out, n);
  PFRT_IVDEP
  for (int64_t i = 0; i < n; ++i)
    out[i] = a[i] * b[i];
}

void pfrt_k_relu_grad(const float *y, const float *dy, float *dx, int64_t n) {
  const char *fn = "pfrt_k_relu_grad";
  checkSize(fn, "n", n);
  checkPtr(fn, "y", y, n);
  checkPtr(fn, "dy", dy, n);
  checkPtr(fn, "dx", dx, n);
  // Load dy unconditionally: a load under the condition would be
  // vectorized as a masked gather or not at all (and branch on random data).
  PFRT_IVDEP
  for (int64_t i = 0; i < n; ++i) {
    float g = dy[i];
    dx[i] = y[i] > 0.0f ? g : 0.0f;
  }
}

void pfrt_k_add(const float *a, const float *b, float *out, int64_t n) {
  const char *fn = "pfrt_k_add";
  checkSize(fn, "n", n);
  checkPtr(fn, "a", a, n);
  checkPtr(fn, "b", b, n);
  checkPtr(fn, "out", out, n);
  PFRT_IVDEP
  for (int64_t i = 0; i < n; ++i)
    out[i] = a[i] + b[i];
}

void pfrt_k_scale(const float *x, float *y, int64_t n, double s) {
  const char *fn = "pfrt_k_scale";
  checkSize(fn, "n", n);
  checkPtr(fn, "x", x, n);
  checkPtr(fn, "y", y, n);
  const float f = float(s);
  PFRT_IVDEP
  for (int64_t i = 0; i < n; ++i)
    y[i] = x[i] * f;
}

void pfrt_k_copy(const float *x, float *y, int64_t n) {
  const char *fn = "pfrt_k_copy";
  checkSize(fn, "n", n);
  checkPtr(fn, "x", x, n);
  checkPtr(fn, "y", y, n);
  if (n > 0 && x != y)
    std::memcpy(y, x, size_t(n) * sizeof(float));
}

void pfrt_k_fill(float *y, int64_t n, double v) {
  const char *fn = "pfrt_k_fill";
  checkSize(fn, "n", n);
  checkPtr(fn, "y", y, n);
  const float f = float(v);
  for (int64_t i = 0; i < n; ++i)
    y[i] = f;
}

} // extern "C"
namespace {
/// y = x + b (broadcast over [outer, c, inner]), then relu if Relu.
template <bool Relu>
void biasAdd(const char *fn, const float *x, const float *b, float *y,
             int64_t outer, int64_t c, int64_t inner);
} // namespace
extern "C" {

void pfrt_k_bias_add(const float *x, const float *b, float *y, int64_t outer,
                     int64_t c, int64_t inner) {
  biasAdd<false>("pfrt_k_bias_add", x, b, y, outer, c, inner);
}

void pfrt_k_bias_add_relu(const float *x, const float *b, float *y,
                          int64_t outer, int64_t c, int64_t inner) {
  biasAdd<true>("pfrt_k_bias_add_relu", x, b, y, outer, c, inner);
}
} // extern "C"

namespace {
template <bool Relu>
void biasAdd(const char *fn, const float *x, const float *b, float *y,
             int64_t outer, int64_t c, int64_t inner) {
  checkSize(fn, "outer", outer);
  checkSize(fn, "c", c);
  checkSize(fn, "inner", inner);
  int64_t total = mulChecked(fn, mulChecked(fn, outer, c), inner);
  checkPtr(fn, "x", x, total);
  checkPtr(fn, "y", y, total);
  checkPtr(fn, "b", b, total > 0 ? c : 0);
  if (total == 0)
    return;
  if (inner == 1) {
    for (int64_t o = 0; o < outer; ++o) {
      const float *xr = x + o * c;
      float *yr = y + o * c;
      PFRT_IVDEP
      for (int64_t j = 0; j < c; ++j) {
        float v = xr[j] + b[j];
        yr[j] = Relu ? (v < 0.0f ? 0.0f : v) : v;
      }
    }
    return;
  }
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < c; ++j) {
      const float *xr = x + (o * c + j) * inner;
      float *yr = y + (o * c + j) * inner;
      const float bj = b[j];
      PFRT_IVDEP
      for (int64_t i = 0; i < inner; ++i) {
        float v = xr[i] + bj;
        yr[i] = Relu ? (v < 0.0f ? 0.0f : v) : v;
      }
    }
}
} // namespace
extern "C" {

//===----------------------------------------------------------------------===//
// reduce_sum
//===----------------------------------------------------------------------===//

void pfrt_k_reduce_sum(const float *x, float *y, int64_t rank,
                       const int64_t *shape, const int8_t *reduce) {
  const char *fn = "pfrt_k_reduce_sum";
  if (rank < 0 || rank > kMaxRank)
    fatal("%s: rank %lld is outside [0, %lld]", fn, (long long)rank,
          (long long)kMaxRank);
  checkPtr(fn, "shape", shape, rank);
  checkPtr(fn, "reduce", reduce, rank);
  int64_t total = 1, outTotal = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (shape[d] < 0)
      fatal("%s: shape %s has a negative dimension", fn,
            shapeToString(rank, shape).c_str());
    total = mulChecked(fn, total, shape[d]);
    if (!reduce[d])
      outTotal = mulChecked(fn, outTotal, shape[d]);
  }
  checkPtr(fn, "x", x, total);
  checkPtr(fn, "y", y, outTotal);
  if (outTotal == 0)
    return;
  if (total == 0) { // every output sums an empty extent
    std::memset(y, 0, size_t(outTotal) * sizeof(float));
    return;
  }
  // Drop unit dimensions and merge neighbours with the same flag: the
  // remaining dims alternate kept/reduced.
  int64_t ext[kMaxRank];
  bool red[kMaxRank];
  int64_t r = 0;
  for (int64_t d = 0; d < rank; ++d) {
    if (shape[d] == 1)
      continue;
    bool rd = reduce[d] != 0;
    if (r > 0 && red[r - 1] == rd) {
      ext[r - 1] *= shape[d];
    } else {
      ext[r] = shape[d];
      red[r] = rd;
      ++r;
    }
  }
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

//===----------------------------------------------------------------------===//
// transpose
//===----------------------------------------------------------------------===//

void pfrt_k_transpose(const float *x, float *y, int64_t rank,
                      const int64_t *shape, const int64_t *perm) {
  const char *fn = "pfrt_k_transpose";
  int64_t total = checkTransposeArgs(fn, x, y, rank, shape, perm);
  if (total == 0)
    return;
  // Renumber the non-unit input dims, then merge input dims d, d+1 that
  // stay adjacent (in that order) in the output.
  int64_t newId[kMaxRank];
  int64_t e[kMaxRank]; // input extents after dropping unit dims
  int64_t q = 0;
  for (int64_t d = 0; d < rank; ++d) {
    if (shape[d] == 1) {
      newId[d] = -1;
    } else {
      newId[d] = q;
      e[q++] = shape[d];
    }
  }
  int64_t p[kMaxRank]; // output dim j = input dim p[j]
  int64_t pq = 0;
  for (int64_t j = 0; j < rank; ++j)
    if (newId[perm[j]] >= 0)
      p[pq++] = newId[perm[j]];
  // group[d] = id of the merged input dim that input dim d belongs to.
  int64_t group[kMaxRank], ge[kMaxRank];
  int64_t g = -1;
  for (int64_t j = 0; j < q; ++j) {
    bool join = j > 0 && p[j] == p[j - 1] + 1;
    if (!join)
      ++g, ge[g] = 1;
    group[p[j]] = g; // g numbers groups in OUTPUT order for now
    ge[g] *= e[p[j]];
  }
  int64_t r = g + 1;
  if (r <= 1) {
    std::memcpy(y, x, size_t(total) * sizeof(float));
    return;
  }
  // Input order of the groups: a group's first input dim decides.
  int64_t inOrder[kMaxRank], nIn = 0;
  for (int64_t d = 0; d < q; ++d)
    if (d == 0 || group[d] != group[d - 1])
      inOrder[nIn++] = group[d];
  int64_t istrOfGroup[kMaxRank];
  int64_t st = 1;
  for (int64_t k = r - 1; k >= 0; --k) {
    istrOfGroup[inOrder[k]] = st;
    st *= ge[inOrder[k]];
  }
  // Output dim j is group j: extent ge[j], output stride ostr[j], input
  // stride istr[j].
  int64_t ostr[kMaxRank], istr[kMaxRank];
  st = 1;
  for (int64_t j = r - 1; j >= 0; --j) {
    ostr[j] = st;
    st *= ge[j];
    istr[j] = istrOfGroup[j];
  }
  if (istr[r - 1] == 1) {
    // The innermost dim stays innermost: copy contiguous rows.
    const int64_t len = ge[r - 1];
    int64_t idx[kMaxRank] = {0};
    int64_t xo = 0;
    for (int64_t yo = 0; yo < total; yo += len) {
      std::memcpy(y + yo, x + xo, size_t(len) * sizeof(float));
      for (int64_t d = r - 2; d >= 0; --d) {
        xo += istr[d];
        if (++idx[d] < ge[d])
          break;
        xo -= istr[d] * ge[d];
        idx[d] = 0;
      }
    }
    return;
  }
  // Tiled 2-D transpose between output dim a = r-1 (strided in x) and the
  // output dim b that holds the input's innermost dim (strided in y).
  const int64_t a = r - 1;
  int64_t b = 0;
  while (istr[b] != 1)
    ++b;
  const int64_t na = ge[a], nb = ge[b];
  const int64_t sa = istr[a], sb = ostr[b];
  constexpr int64_t T = 32;
  int64_t idx[kMaxRank] = {0};
  int64_t xo = 0, yo = 0;
  for (;;) {
    for (int64_t i0 = 0; i0 < nb; i0 += T) {
      int64_t i1 = i0 + T < nb ? i0 + T : nb;
      for (int64_t j0 = 0; j0 < na; j0 += T) {
        int64_t j1 = j0 + T < na ? j0 + T : na;
        for (int64_t i = i0; i < i1; ++i) {
          float *PFRT_RESTRICT yr = y + yo + i * sb;
          const float *PFRT_RESTRICT xr = x + xo + i;
          for (int64_t j = j0; j < j1; ++j)
            yr[j] = xr[j * sa];
        }
      }
    }
    // Odometer over the output dims other than a and b.
    int64_t d = r - 2;
    for (; d >= 0; --d) {
      if (d == b)
        continue;
      xo += istr[d];
      yo += ostr[d];
      if (++idx[d] < ge[d])
        break;
      xo -= istr[d] * ge[d];
      yo -= ostr[d] * ge[d];
      idx[d] = 0;
    }
    if (d < 0)
      break;
  }
}

//===----------------------------------------------------------------------===//
// matmul
//===----------------------------------------------------------------------===//

namespace {
/// C = op(A) op(B) + beta C for beta in {0, 1}.
void matmulBeta(const char *fn, const float *a, const float *b, float *c,
                int64_t batch, int64_t batch_b, int64_t m, int64_t n, int64_t k,
                int32_t ta, int32_t tb, float beta) {
  checkSize(fn, "batch", batch);
  checkSize(fn, "m", m);
  checkSize(fn, "n", n);
  checkSize(fn, "k", k);
  if (batch_b != batch && batch_b != 1)
    fatal("%s: batch_b = %lld must be 1 or batch = %lld", fn,
          (long long)batch_b, (long long)batch);
  int64_t aSize = mulChecked(fn, m, k), bSize = mulChecked(fn, k, n),
          cSize = mulChecked(fn, m, n);
  checkPtr(fn, "a", a, mulChecked(fn, batch, aSize));
  checkPtr(fn, "b", b, mulChecked(fn, batch_b, bSize));
  checkPtr(fn, "c", c, mulChecked(fn, batch, cSize));
  if (batch == 0 || cSize == 0)
    return;
  const int64_t lda = ta ? m : k, ldb = tb ? k : n;
  if (k == 0) {
    if (beta == 0.0f)
      std::memset(c, 0, size_t(batch * cSize) * sizeof(float));
    return;
  }
  // A shared B and untransposed A: the batch folds into M (one GEMM).
  if (batch_b == 1 && !ta && batch > 1 && batch * m <= INT_MAX) {
    pfrt_sgemm(0, tb, batch * m, n, k, 1.0f, a, lda, b, ldb, beta, c, n);
    return;
  }
  for (int64_t i = 0; i < batch; ++i)
    pfrt_sgemm(ta, tb, m, n, k, 1.0f, a + i * aSize, lda,
               b + (batch_b == 1 ? 0 : i * bSize), ldb, beta, c + i * cSize, n);
}
} // namespace

void pfrt_k_matmul(const float *a, const float *b, float *c, int64_t batch,
                   int64_t batch_b, int64_t m, int64_t n, int64_t k, int32_t ta,
                   int32_t tb) {
  matmulBeta("pfrt_k_matmul", a, b, c, batch, batch_b, m, n, k, ta, tb, 0.0f);
}

void pfrt_k_matmul_acc(const float *a, const float *b, float *c, int64_t batch,
                       int64_t batch_b, int64_t m, int64_t n, int64_t k,
                       int32_t ta, int32_t tb) {
  matmulBeta("pfrt_k_matmul_acc", a, b, c, batch, batch_b, m, n, k, ta, tb,
             1.0f);
}

void pfrt_k_matmul_bias(const float *a, const float *b, const float *bias,
                        float *c, int64_t batch, int64_t batch_b, int64_t m,
                        int64_t n, int64_t k, int32_t ta, int32_t tb) {
  const char *fn = "pfrt_k_matmul_bias";
  checkSize(fn, "batch", batch);
  checkSize(fn, "m", m);
  checkSize(fn, "n", n);
  int64_t rows = mulChecked(fn, batch, m);
  checkPtr(fn, "bias", bias, n);
  checkPtr(fn, "c", c, mulChecked(fn, rows, n));
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(c + r * n, bias, size_t(n) * sizeof(float));
  matmulBeta(fn, a, b, c, batch, batch_b, m, n, k, ta, tb, 1.0f);
}

void pfrt_k_matmul_bgrad(const float *a, const float *b, float *c, float *dbias,
                         int64_t m, int64_t n, int64_t k, int32_t accumulate) {
  // The bias gradient first, as the CPU lowering orders a Linear's
  // reduce_sum and its weight-gradient GEMM.
  const int64_t shape[2] = {k, m};
  const int8_t rows[2] = {1, 0};
  pfrt_k_reduce_sum(a, dbias, 2, shape, rows);
  if (accumulate)
    pfrt_k_matmul_acc(a, b, c, 1, 1, m, n, k, 1, 0);
  else
    pfrt_k_matmul(a, b, c, 1, 1, m, n, k, 1, 0);
}

void pfrt_k_matmul_bias_relu(const float *a, const float *b, const float *bias,
                             float *c, int64_t batch, int64_t batch_b,
                             int64_t m, int64_t n, int64_t k, int32_t ta,
                             int32_t tb) {
  pfrt_k_matmul_bias(a, b, bias, c, batch, batch_b, m, n, k, ta, tb);
  pfrt_k_relu(c, c, batch * m * n);
}

void pfrt_k_matmul_strided(const float *a, const float *b, float *c,
                           int64_t rank, const int64_t *batch_shape,
                           const int64_t *a_strides, const int64_t *b_strides,
                           const int64_t *c_strides, int64_t m, int64_t n,
                           int64_t k) {
  const char *fn = "pfrt_k_matmul_strided";
  if (rank < 0 || rank > 8)
    fatal("%s: rank %lld is not in [0, 8]", fn, (long long)rank);
  checkSize(fn, "m", m);
  checkSize(fn, "n", n);
  checkSize(fn, "k", k);
  checkPtr(fn, "a_strides", a_strides, rank + 2);
  checkPtr(fn, "b_strides", b_strides, rank + 2);
  checkPtr(fn, "c_strides", c_strides, rank + 2);
  checkPtr(fn, "batch_shape", batch_shape, rank);
  int64_t batch = 1;
  for (int64_t d = 0; d < rank; ++d) {
    checkSize(fn, "batch_shape", batch_shape[d]);
    batch = mulChecked(fn, batch, batch_shape[d]);
  }
  for (int64_t d = 0; d < rank + 2; ++d)
    if (a_strides[d] < 0 || b_strides[d] < 0 || c_strides[d] < 0)
      fatal("%s: negative stride at axis %lld", fn, (long long)d);
  // Each matrix as (transposed?, leading dimension) for pfrt_sgemm.
  auto layout = [&](const char *what, const int64_t *s, int64_t rows,
                    int64_t cols, int32_t *trans, int64_t *ld) {
    int64_t rs = s[rank], cs = s[rank + 1];
    if (cs == 1 || cols <= 1) {
      *trans = 0;
      *ld = rows <= 1 ? std::max<int64_t>(cols, 1) : rs;
      if (*ld < cols)
        fatal("%s: %s's rows overlap (row stride %lld < %lld columns)", fn,
              what, (long long)*ld, (long long)cols);
    } else if (rs == 1 || rows <= 1) {
      *trans = 1;
      *ld = cols <= 1 ? std::max<int64_t>(rows, 1) : cs;
      if (*ld < rows)
        fatal("%s: %s's columns overlap (column stride %lld < %lld rows)", fn,
              what, (long long)*ld, (long long)rows);
    } else {
      fatal("%s: %s's matrix strides (%lld, %lld) have no unit stride", fn,
            what, (long long)rs, (long long)cs);
    }
  };
  int32_t ta, tb, tc;
  int64_t lda, ldb, ldc;
  layout("a", a_strides, m, k, &ta, &lda);
  layout("b", b_strides, k, n, &tb, &ldb);
  layout("c", c_strides, m, n, &tc, &ldc);
  if (batch == 0 || m == 0 || n == 0)
    return;
  checkPtr(fn, "a", a, m * k);
  checkPtr(fn, "b", b, k * n);
  checkPtr(fn, "c", c, m * n);
  int64_t index[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int64_t i = 0; i < batch; ++i) {
    int64_t ao = 0, bo = 0, co = 0;
    for (int64_t d = 0; d < rank; ++d) {
      ao += index[d] * a_strides[d];
      bo += index[d] * b_strides[d];
      co += index[d] * c_strides[d];
    }
    if (k == 0) {
      for (int64_t r = 0; r < (tc ? n : m); ++r)
        std::memset(c + co + r * ldc, 0, size_t(tc ? m : n) * sizeof(float));
    } else if (!tc) {
      pfrt_sgemm(ta, tb, m, n, k, 1.0f, a + ao, lda, b + bo, ldb, 0.0f, c + co,
                 ldc);
    } else { // C column-major: C^T = op(B)^T op(A)^T, row-major
      pfrt_sgemm(!tb, !ta, n, m, k, 1.0f, b + bo, ldb, a + ao, lda, 0.0f,
                 c + co, ldc);
    }
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++index[d] < batch_shape[d])
        break;
      index[d] = 0;
    }
  }
}

//===----------------------------------------------------------------------===//
// Softmax cross-entropy
//===----------------------------------------------------------------------===//

} // extern "C"

namespace {
/// The mean cross-entropy over the rows whose label is not `ignore` (all
/// rows when !hasIgnore), and its gradient; ignored rows get zeros.
void xentForward(const char *fn, const float *logits, const int64_t *labels,
                 float *loss, int64_t n, int64_t c, bool hasIgnore,
                 int64_t ignore, bool mean = true) {
  if (n < 1 || c < 1)
    fatal("%s: n = %lld and c = %lld must be >= 1", fn, (long long)n,
          (long long)c);
  checkPtr(fn, "logits", logits, mulChecked(fn, n, c));
  checkPtr(fn, "labels", labels, n);
  checkPtr(fn, "loss", loss, 1);
  double *e = scratchOf<double>(0, c);
  double total = 0;
  int64_t count = 0;
  for (int64_t r = 0; r < n; ++r) {
    if (hasIgnore && labels[r] == ignore)
      continue;
    checkLabel(fn, labels, r, c);
    const float *x = logits + r * c;
    double mx;
    double s = softmaxRow(x, c, e, &mx);
    total += (std::log(s) + mx) - double(x[labels[r]]);
    ++count;
  }
  // Every row ignored: 0 / 0, NaN (as torch's mean reduction gives).
  loss[0] = mean ? float(total / double(count)) : float(total);
}

void xentBackward(const char *fn, const float *logits, const int64_t *labels,
                  const float *dloss, float *dlogits, int64_t n, int64_t c,
                  bool hasIgnore, int64_t ignore, bool mean = true) {
  if (n < 1 || c < 1)
    fatal("%s: n = %lld and c = %lld must be >= 1", fn, (long long)n,
          (long long)c);
  checkPtr(fn, "logits", logits, mulChecked(fn, n, c));
  checkPtr(fn, "labels", labels, n);
  checkPtr(fn, "dloss", dloss, 1);
  checkPtr(fn, "dlogits", dlogits, n * c);
  int64_t count = 0;
  for (int64_t r = 0; r < n; ++r)
    count += !(hasIgnore && labels[r] == ignore);
  double *e = scratchOf<double>(0, c);
  const double scale =
      mean ? double(dloss[0]) / double(count) : double(dloss[0]);
  for (int64_t r = 0; r < n; ++r) {
    float *PFRT_RESTRICT d = dlogits + r * c;
    if (hasIgnore && labels[r] == ignore) {
      for (int64_t i = 0; i < c; ++i)
        d[i] = 0.0f;
      continue;
    }
    checkLabel(fn, labels, r, c);
    const float *x = logits + r * c;
    double mx;
    double f = scale / softmaxRow(x, c, e, &mx);
    for (int64_t i = 0; i < c; ++i)
      d[i] = float(e[i] * f);
    int64_t l = labels[r];
    d[l] = float(e[l] * f - scale);
  }
}
} // namespace

extern "C" {

void pfrt_k_softmax_xent(const float *logits, const int64_t *labels,
                         float *loss, int64_t n, int64_t c) {
  xentForward("pfrt_k_softmax_xent", logits, labels, loss, n, c, false, 0);
}

void pfrt_k_softmax_xent_grad(const float *logits, const int64_t *labels,
                              const float *dloss, float *dlogits, int64_t n,
                              int64_t c) {
  xentBackward("pfrt_k_softmax_xent_grad", logits, labels, dloss, dlogits, n, c,
               false, 0);
}

void pfrt_k_softmax_xent_ignore(const float *logits, const int64_t *labels,
                                float *loss, int64_t n, int64_t c,
                                int64_t ignore_index) {
  xentForward("pfrt_k_softmax_xent_ignore", logits, labels, loss, n, c, true,
              ignore_index);
}

void pfrt_k_softmax_xent_grad_ignore(const float *logits, const int64_t *labels,
                                     const float *dloss, float *dlogits,
                                     int64_t n, int64_t c,
                                     int64_t ignore_index) {
  xentBackward("pfrt_k_softmax_xent_grad_ignore", logits, labels, dloss,
               dlogits, n, c, true, ignore_index);
}

void pfrt_k_softmax_xent_sum(const float *logits, const int64_t *labels,
                             float *loss, int64_t n, int64_t c,
                             int64_t ignore_index) {
  xentForward("pfrt_k_softmax_xent_sum", logits, labels, loss, n, c, true,
              ignore_index, /*mean=*/false);
}

void pfrt_k_softmax_xent_grad_sum(const float *logits, const int64_t *labels,
                                  const float *dloss, float *dlogits, int64_t n,
                                  int64_t c, int64_t ignore_index) {
  xentBackward("pfrt_k_softmax_xent_grad_sum", logits, labels, dloss, dlogits,
               n, c, true, ignore_index, /*mean=*/false);
}

void pfrt_k_count_kept(const int64_t *labels, float *count, int64_t n,
                       int64_t ignore_index) {
  const char *fn = "pfrt_k_count_kept";
  checkSize(fn, "n", n);
  checkPtr(fn, "labels", labels, n);
  checkPtr(fn, "count", count, 1);
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i)
    kept += labels[i] != ignore_index;
  count[0] = float(kept);
}

} // extern "C"
