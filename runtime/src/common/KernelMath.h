//===- KernelMath.h - the math of the CPU kernels and their twins -*- C++
//-*-===//
//
// The per-element and per-row arithmetic that a CPU kernel (src/cpu) and
// its device twin's body (src/cuda/kernels/*Bodies.h) both compute: written
// once, plain C++ that nvcc reads too (Kernels.cu), so the CPU, the
// emulation and the host build of the bodies run the very same operations
// and give the same bits (-ffp-contract=off here, --fmad=false under nvcc).
// The numerics contract (docs/Design.md) would let the GPU differ within
// tolerance; sharing the code keeps it exact wherever the order matches.
//
// Every function is PFRT_HD_INLINE: __host__ __device__ under nvcc, and
// always inlined on the host, because the CPU kernels' multiversioned loops
// (KernelUtil.h, PFRT_MULTIVERSION) must compile what they call for each
// clone's ISA.
//
// Not installed; nothing here is part of the ABI.
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_COMMON_KERNELMATH_H
#define PFRT_SRC_COMMON_KERNELMATH_H

#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define PFRT_HD __host__ __device__
#define PFRT_HD_INLINE __host__ __device__ __forceinline__
#else
#define PFRT_HD
#if defined(__GNUC__) || defined(__clang__)
#define PFRT_HD_INLINE inline __attribute__((always_inline))
#else
#define PFRT_HD_INLINE inline
#endif
#endif

namespace pfrt {
namespace kern {

/// v's bits as a To of the same size (the exponent tricks of expClamped and
/// expFloat; NaN and -inf constants).
template <typename To, typename From> PFRT_HD_INLINE To bitCast(From v) {
  static_assert(sizeof(To) == sizeof(From), "bitCast between sizes");
  To r;
  memcpy(&r, &v, sizeof(To));
  return r;
}

//===----------------------------------------------------------------------===//
// Exponentials (softmax, the cross-entropies, the activations)
//===----------------------------------------------------------------------===//

/// exp(x) in float64 for x in about [-700, 700], branch-free so that loops
/// calling it vectorize. x = k ln2 + r, |r| <= ln2/2, exp(r) by its Taylor
/// polynomial to r^11 (relative error < 1e-14), times 2^k built from the
/// exponent bits. Arguments below -700 are clamped (their share of any sum
/// that also holds exp(0) = 1 is below 1e-300); NaN stays NaN.
PFRT_HD_INLINE double expClamped(double x) {
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
  uint64_t sbits = (bitCast<uint64_t>(t) + 1023) << 52;
  return p * bitCast<double>(sbits);
}

/// exp(x) in float32 for the exact GELU, branch-free: x = k ln2 + r with
/// |r| <= ln2/2 (Cody-Waite, ln2 in two parts), exp(r) by its Taylor
/// polynomial to r^7 (truncation below 1e-8 relative), times 2^k from the
/// exponent bits. x is clamped to [-87, 88] (exp(-87) ~ 1.6e-38 is the
/// smallest normal neighbourhood; GELU's uses stay far above).
PFRT_HD_INLINE float expFloat(float x) {
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
  int32_t k = bitCast<int32_t>(t); // the low mantissa bits hold k + 2^22
  uint32_t sbits = uint32_t(k + 127 - 0x4B400000) << 23;
  return p * bitCast<float>(sbits);
}

/// Phi(x), the standard normal CDF, in float32: 0.5 erfc(-x / sqrt 2) by
/// Numerical Recipes' Chebyshev fit of erfc (fractional error below
/// 1.2e-7), whose exponent -a^2 + p is formed in float; where that rounding
/// matters (|a| large) erfc itself is below e^-9, so Phi's absolute error
/// stays near 1e-8 (checked against NumPy's erf by
/// runtime/test/check_kernels.py).
PFRT_HD_INLINE float phiFloat(float x) {
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
PFRT_HD_INLINE double tanhFast(double u) {
  u = u > 350.0 ? 350.0 : (u < -350.0 ? -350.0 : u);
  return 1.0 - 2.0 / (expClamped(2.0 * u) + 1.0);
}

//===----------------------------------------------------------------------===//
// Activations (pfrt_k_activation's kinds, pfrt.h)
//===----------------------------------------------------------------------===//

/// The exact GELU in float32 (its erf and exp are the whole cost; float32
/// lanes are twice as many and the polynomials shorter): f = x Phi(x).
PFRT_HD_INLINE float geluExact(float x) { return x * phiFloat(x); }

/// f'(x) dy of the exact GELU: (Phi(x) + x phi(x)) dy.
PFRT_HD_INLINE float geluExactGrad(float x, float dy) {
  float pdf = 0.398942280f * expFloat(-0.5f * x * x);
  return (phiFloat(x) + x * pdf) * dy;
}

/// f(x) and f'(x) of activation `Kind` 1 (tanh GELU), 2 (tanh) or 3
/// (sigmoid), in double, branch-free (the CPU's loops vectorize); *df is
/// set only for Grad.
template <int Kind, bool Grad>
PFRT_HD_INLINE void activation(double x, double *f, double *df) {
  constexpr double kSqrt2OverPi = 0.79788456080286535588;
  static_assert(Kind != 0, "the exact GELU is geluExact (float32)");
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

/// Activation `Kind`'s output for x: f(x) in float32, or f'(x) dy when
/// Grad (kind 0 in float32, the others in float64).
template <int Kind, bool Grad>
PFRT_HD_INLINE float activationOut(float x, float dy) {
  if constexpr (Kind == 0)
    return Grad ? geluExactGrad(x, dy) : geluExact(x);
  else {
    double f, df;
    activation<Kind, Grad>(double(x), &f, &df);
    if constexpr (Grad)
      return static_cast<float>(df * dy);
    else
      return static_cast<float>(f);
  }
}

//===----------------------------------------------------------------------===//
// Walks and rows
//===----------------------------------------------------------------------===//

/// One step of the odometer idx[0..last] (the last dim fastest) over the
/// extents ext, moving *off by str[d] for each step of dim d. False when it
/// wraps around: every index has been visited.
PFRT_HD_INLINE bool nextIndex(int64_t *idx, const int64_t *ext,
                              const int64_t *str, int64_t last, int64_t *off) {
  for (int64_t d = last; d >= 0; --d) {
    *off += str[d];
    if (++idx[d] < ext[d])
      return true;
    *off -= str[d] * ext[d];
    idx[d] = 0;
  }
  return false;
}

/// max over x[0..n), n >= 1, by 8 running maxima combined in order (NaN
/// handling is left to the caller's sums).
PFRT_HD_INLINE float rowMax(const float *__restrict__ x, int64_t n) {
  float m[8];
  for (float &v : m)
    v = x[0];
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

/// A batch norm run's sums: s1 = sum(x - k), s2 = sum((x - k)^2) and, for
/// WithDy, t1 = sum(dy), t2 = sum(dy (x - k)) (0 otherwise).
struct NormRunSums {
  double s1, s2, t1, t2;
};

/// The sums of one run of len values of one channel, shifted by k (the
/// channel's first value): 4 accumulators, the tail in the first, combined
/// as (0 + 2) + (1 + 3).
template <bool WithDy>
PFRT_HD_INLINE NormRunSums normRunSums(const float *__restrict__ x,
                                       const float *__restrict__ dy,
                                       int64_t len, double k) {
  double a1[4] = {0, 0, 0, 0}, a2[4] = {0, 0, 0, 0};
  double b1[4] = {0, 0, 0, 0}, b2[4] = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 4 <= len; i += 4)
    for (int j = 0; j < 4; ++j) {
      double d = double(x[i + j]) - k;
      a1[j] += d;
      a2[j] += d * d;
      if (WithDy) {
        double g = double(dy[i + j]);
        b1[j] += g;
        b2[j] += g * d;
      }
    }
  for (; i < len; ++i) {
    double d = double(x[i]) - k;
    a1[0] += d;
    a2[0] += d * d;
    if (WithDy) {
      double g = double(dy[i]);
      b1[0] += g;
      b2[0] += g * d;
    }
  }
  NormRunSums s;
  s.s1 = (a1[0] + a1[2]) + (a1[1] + a1[3]);
  s.s2 = (a2[0] + a2[2]) + (a2[1] + a2[3]);
  s.t1 = WithDy ? (b1[0] + b1[2]) + (b1[1] + b1[3]) : 0.0;
  s.t2 = WithDy ? (b2[0] + b2[2]) + (b2[1] + b2[3]) : 0.0;
  return s;
}

//===----------------------------------------------------------------------===//
// Philox4x32-10 (pfrt.h's initialisers, dropout's masks)
//===----------------------------------------------------------------------===//

struct PhiloxBlock {
  uint32_t x[4];
};

/// Philox4x32-10's block for counter (c0, c1, c2, c3) under key (k0, k1).
PFRT_HD_INLINE PhiloxBlock philox(uint32_t c0, uint32_t c1, uint32_t c2,
                                  uint32_t c3, uint32_t k0, uint32_t k1) {
  for (int r = 0; r < 10; ++r) {
    if (r) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    uint64_t p0 = uint64_t(0xD2511F53u) * c0;
    uint64_t p1 = uint64_t(0xCD9E8D57u) * c2;
    uint32_t n0 = uint32_t(p1 >> 32) ^ c1 ^ k0;
    uint32_t n2 = uint32_t(p0 >> 32) ^ c3 ^ k1;
    c1 = uint32_t(p1);
    c3 = uint32_t(p0);
    c0 = n0;
    c2 = n2;
  }
  return {{c0, c1, c2, c3}};
}

/// The block of logical element i of (seed, stream): counter (i, stream),
/// key seed, each as two 32-bit words, low first.
PFRT_HD_INLINE PhiloxBlock philoxAt(uint64_t seed, uint64_t stream, int64_t i) {
  uint64_t u = uint64_t(i);
  return philox(uint32_t(u), uint32_t(u >> 32), uint32_t(stream),
                uint32_t(stream >> 32), uint32_t(seed), uint32_t(seed >> 32));
}

/// A word as a float64 in (0, 1): (x + 0.5) 2^-32.
PFRT_HD_INLINE double unitOpen(uint32_t x) {
  return (double(x) + 0.5) * 0x1p-32;
}

/// The uniform initialiser's value in [low, high) of a block.
PFRT_HD_INLINE float uniformValue(const PhiloxBlock &b, double low,
                                  double high) {
  double span = high - low;
  return float(low + span * unitOpen(b.x[0]));
}

} // namespace kern
} // namespace pfrt

#endif // PFRT_SRC_COMMON_KERNELMATH_H
