//===- ElementwiseBodies.h - element-wise ops -------------------*- C++ -*-===//
//
// Not installed; nothing here is part of the ABI. Part of the CUDA kernels'
// bodies (DeviceBodies.h says how they are written and checked).
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_CUDA_KERNELS_ELEMENTWISEBODIES_H
#define PFRT_SRC_CUDA_KERNELS_ELEMENTWISEBODIES_H

#include "CommonBodies.h"

namespace pfrt {
namespace dev {

//===----------------------------------------------------------------------===//
// Arithmetic (src/cpu/Elementwise.cpp)
//===----------------------------------------------------------------------===//

PFRT_HD inline void reluAt(const float *x, float *y, int64_t i) {
  float v = x[i];
  y[i] = v < 0.0f ? 0.0f : v;
}

PFRT_HD inline void reluGradAt(const float *y, const float *dy, float *dx,
                               int64_t i) {
  float g = dy[i];
  dx[i] = y[i] > 0.0f ? g : 0.0f;
}

PFRT_HD inline void addAt(const float *a, const float *b, float *out,
                          int64_t i) {
  out[i] = a[i] + b[i];
}

PFRT_HD inline void mulAt(const float *a, const float *b, float *out,
                          int64_t i) {
  out[i] = a[i] * b[i];
}

/// f = float(s), rounded once on the host as the CPU kernel does.
PFRT_HD inline void scaleAt(const float *x, float *y, float f, int64_t i) {
  y[i] = x[i] * f;
}

PFRT_HD inline void copyAt(const float *x, float *y, int64_t i) { y[i] = x[i]; }

/// f = float(v).
PFRT_HD inline void fillAt(float *y, float f, int64_t i) { y[i] = f; }

/// x ~ big + small for the 3xTF32 GEMM: big is x rounded to TF32 (10
/// mantissa bits, to nearest; toward zero where rounding would overflow),
/// small is x - big (exact in float32) rounded to TF32 too, so the tensor
/// cores' own conversion changes neither (|x - big - small| <= 2^-22 |x|).
/// Inf and NaN go whole to big, small 0 (a product of an infinite operand
/// then meets 0 * Inf: NaN where float32 gives Inf).
PFRT_HD inline void splitTF32At(const float *x, float *big, float *small,
                                int64_t i) {
  float v = x[i];
  uint32_t bits;
  memcpy(&bits, &v, 4);
  if ((bits & 0x7f800000u) == 0x7f800000u) {
    big[i] = v;
    small[i] = 0.0f;
    return;
  }
  uint32_t rounded = (bits + 0x1000u) & ~0x1fffu;
  if ((rounded & 0x7f800000u) == 0x7f800000u)
    rounded = bits & ~0x1fffu;
  float b;
  memcpy(&b, &rounded, 4);
  big[i] = b;
  float r = v - b;
  uint32_t rbits;
  memcpy(&rbits, &r, 4);
  rbits = (rbits + 0x1000u) & ~0x1fffu; // |r| is far from overflowing
  memcpy(&r, &rbits, 4);
  small[i] = r;
}

/// y = x + b[channel] over [outer, c, inner] (then ReLU when relu != 0).
PFRT_HD inline void biasAddAt(const float *x, const float *b, float *y,
                              int64_t c, int64_t inner, int32_t relu,
                              int64_t i) {
  int64_t j = (i / inner) % c;
  float v = x[i] + b[j];
  y[i] = relu ? (v < 0.0f ? 0.0f : v) : v;
}

/// C = the bias row, before a GEMM accumulates into it (k == 0 GEMMs).
PFRT_HD inline void biasRowsAt(const float *bias, float *c, int64_t n,
                               int64_t i) {
  c[i] = bias[i % n];
}

PFRT_HD inline void subAt(const float *a, const float *b, float *out,
                          int64_t i) {
  out[i] = a[i] - b[i];
}

PFRT_HD inline void divAt(const float *a, const float *b, float *out,
                          int64_t i) {
  out[i] = a[i] / b[i];
}

/// y[i] = mask[i] != 0 ? v : x[i]; the mask is int64 when maskI64, else
/// float. v = float(value), rounded once on the host.
PFRT_HD inline void maskedFillAt(const float *x, const void *mask, float *y,
                                 int32_t maskI64, float v, int64_t i) {
  bool set = maskI64 ? static_cast<const int64_t *>(mask)[i] != 0
                     : static_cast<const float *>(mask)[i] != 0;
  y[i] = set ? v : x[i];
}

//===----------------------------------------------------------------------===//
// Activations (activation / activationLoop0 in src/cpu/Elementwise.cpp)
//===----------------------------------------------------------------------===//

/// The CPU's expFloat: exp(x) in float32, Cody-Waite and a Taylor
/// polynomial, 2^k from the exponent bits.
PFRT_HD inline float expFloat(float x) {
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
  int32_t k = bitsOfFloat(t); // the low mantissa bits of t hold k + 2^22
  uint32_t sbits = uint32_t(k + 127 - 0x4B400000) << 23;
  return p * floatOfBits(sbits);
}

/// The CPU's phiFloat: the standard normal CDF in float32 (Numerical
/// Recipes' erfc fit).
PFRT_HD inline float phiFloat(float x) {
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

/// The CPU's tanhFast: 1 - 2 / (exp(2u) + 1), |u| clamped to 350.
PFRT_HD inline double tanhFast(double u) {
  u = u > 350.0 ? 350.0 : (u < -350.0 ? -350.0 : u);
  return 1.0 - 2.0 / (expClamped(2.0 * u) + 1.0);
}

/// out[i] = f(x[i]) (dy NULL) or f'(x[i]) dy[i] for activation `kind`
/// (0 exact GELU in float32, 1 tanh GELU, 2 tanh, 3 sigmoid in float64):
/// the CPU's expressions, operation for operation. No libm call: every
/// exponential is expFloat or expClamped. out may be x or dy (one thread
/// reads element i before writing it).
PFRT_HD inline void activationAt(int32_t kind, const float *x, const float *dy,
                                 float *out, int64_t i) {
  if (kind == 0) {
    if (!dy) {
      out[i] = x[i] * phiFloat(x[i]);
      return;
    }
    float v = x[i];
    float pdf = 0.398942280f * expFloat(-0.5f * v * v);
    out[i] = (phiFloat(v) + v * pdf) * dy[i];
    return;
  }
  const double kSqrt2OverPi = 0.79788456080286535588;
  const double xd = x[i];
  double f, df = 0.0;
  if (kind == 1) {
    double u = kSqrt2OverPi * (xd + 0.044715 * xd * xd * xd);
    double t = tanhFast(u);
    f = 0.5 * xd * (1.0 + t);
    if (dy)
      df = 0.5 * (1.0 + t) + 0.5 * xd * (1.0 - t * t) * kSqrt2OverPi *
                                 (1.0 + 3 * 0.044715 * xd * xd);
  } else if (kind == 2) {
    double t = tanhFast(xd);
    f = t;
    if (dy)
      df = 1.0 - t * t;
  } else {
    double e = expClamped(xd < -700.0 ? 700.0 : -xd);
    double sg = 1.0 / (1.0 + e);
    f = sg;
    if (dy)
      df = sg * (1.0 - sg);
  }
  out[i] = dy ? static_cast<float>(df * dy[i]) : static_cast<float>(f);
}

} // namespace dev
} // namespace pfrt

#endif // PFRT_SRC_CUDA_KERNELS_ELEMENTWISEBODIES_H
