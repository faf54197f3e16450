//===- Elementwise.cpp - element-wise kernels and activations -------------===//
//
// The CPU kernels of pf's element-wise ops: ReLU and its gradient, add,
// sub, mul, div, scale, copy, fill, masked fill, the bias adds, and the
// activations (GELU, tanh-GELU, tanh, sigmoid) with their gradients.
// Every loop is safe for exact in-place use (out == an input), hence
// PFRT_IVDEP instead of restrict. The argument checks are
// common/KernelArgs.h's, shared with the device twins.
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"
#include "pfrt/pfrt.h"

#include <cstring>

using namespace pfrt;
using namespace pfrt::kern;

//===----------------------------------------------------------------------===//
// Arithmetic
//===----------------------------------------------------------------------===//

extern "C" {

void pfrt_k_relu(const float *x, float *y, int64_t n) {
  checkElementwiseArgs("pfrt_k_relu", n, {{"x", x}, {"y", y}});
  PFRT_IVDEP
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i];
    y[i] = v < 0.0f ? 0.0f : v;
  }
}

void pfrt_k_relu_grad(const float *y, const float *dy, float *dx, int64_t n) {
  checkElementwiseArgs("pfrt_k_relu_grad", n,
                       {{"y", y}, {"dy", dy}, {"dx", dx}});
  // Load dy unconditionally: a load under the condition would be
  // vectorized as a masked gather or not at all (and branch on random data).
  PFRT_IVDEP
  for (int64_t i = 0; i < n; ++i) {
    float g = dy[i];
    dx[i] = y[i] > 0.0f ? g : 0.0f;
  }
}

void pfrt_k_add(const float *a, const float *b, float *out, int64_t n) {
  checkElementwiseArgs("pfrt_k_add", n, {{"a", a}, {"b", b}, {"out", out}});
  PFRT_IVDEP
  for (int64_t i = 0; i < n; ++i)
    out[i] = a[i] + b[i];
}

void pfrt_k_sub(const float *a, const float *b, float *out, int64_t n) {
  checkElementwiseArgs("pfrt_k_sub", n, {{"a", a}, {"b", b}, {"out", out}});
  PFRT_IVDEP
  for (int64_t i = 0; i < n; ++i)
    out[i] = a[i] - b[i];
}

void pfrt_k_mul(const float *a, const float *b, float *out, int64_t n) {
  checkElementwiseArgs("pfrt_k_mul", n, {{"a", a}, {"b", b}, {"out", out}});
  PFRT_IVDEP
  for (int64_t i = 0; i < n; ++i)
    out[i] = a[i] * b[i];
}

void pfrt_k_div(const float *a, const float *b, float *out, int64_t n) {
  checkElementwiseArgs("pfrt_k_div", n, {{"a", a}, {"b", b}, {"out", out}});
  PFRT_IVDEP
  for (int64_t i = 0; i < n; ++i)
    out[i] = a[i] / b[i];
}

void pfrt_k_scale(const float *x, float *y, int64_t n, double s) {
  checkElementwiseArgs("pfrt_k_scale", n, {{"x", x}, {"y", y}});
  const float f = float(s);
  PFRT_IVDEP
  for (int64_t i = 0; i < n; ++i)
    y[i] = x[i] * f;
}

void pfrt_k_copy(const float *x, float *y, int64_t n) {
  checkElementwiseArgs("pfrt_k_copy", n, {{"x", x}, {"y", y}});
  if (n > 0 && x != y)
    std::memcpy(y, x, size_t(n) * sizeof(float));
}

void pfrt_k_fill(float *y, int64_t n, double v) {
  checkElementwiseArgs("pfrt_k_fill", n, {{"y", y}});
  const float f = float(v);
  for (int64_t i = 0; i < n; ++i)
    y[i] = f;
}

void pfrt_k_masked_fill(const float *x, const void *mask, float *y, int64_t n,
                        int32_t mask_i64, double value) {
  checkElementwiseArgs("pfrt_k_masked_fill", n,
                       {{"x", x}, {"mask", mask}, {"y", y}});
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

} // extern "C"

namespace {
/// y = x + b (broadcast over [outer, c, inner]), then relu if Relu.
template <bool Relu>
void biasAdd(const char *fn, const float *x, const float *b, float *y,
             int64_t outer, int64_t c, int64_t inner) {
  int64_t total = checkBiasAddArgs(fn, x, b, y, outer, c, inner);
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

void pfrt_k_bias_add(const float *x, const float *b, float *y, int64_t outer,
                     int64_t c, int64_t inner) {
  biasAdd<false>("pfrt_k_bias_add", x, b, y, outer, c, inner);
}

void pfrt_k_bias_add_relu(const float *x, const float *b, float *y,
                          int64_t outer, int64_t c, int64_t inner) {
  biasAdd<true>("pfrt_k_bias_add_relu", x, b, y, outer, c, inner);
}

} // extern "C"

//===----------------------------------------------------------------------===//
// Activations
//===----------------------------------------------------------------------===//

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
} // namespace

extern "C" {

void pfrt_k_activation(int32_t kind, const float *x, float *y, int64_t n) {
  checkActivationArgs("pfrt_k_activation", kind, x, nullptr, y, n, false);
  activationKernel(kind, x, nullptr, y, n);
}

void pfrt_k_activation_grad(int32_t kind, const float *x, const float *dy,
                            float *dx, int64_t n) {
  checkActivationArgs("pfrt_k_activation_grad", kind, x, dy, dx, n, true);
  activationKernel(kind, x, dy, dx, n);
}

} // extern "C"
