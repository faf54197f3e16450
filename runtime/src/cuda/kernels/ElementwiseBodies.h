//===- ElementwiseBodies.h - element-wise ops -------------------*- C++ -*-===//
//
// Not installed; nothing here is part of the ABI. Part of the CUDA kernels'
// bodies (DeviceBodies.h says how they are written and checked).
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_CUDA_KERNELS_ELEMENTWISEBODIES_H
#define PFRT_SRC_CUDA_KERNELS_ELEMENTWISEBODIES_H

#include "../../common/LogicalMath.h"
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

/// y[i] = mask[i] != 0 ? v : x[i], the mask of maskDtype (a PFRT_DTYPE_*).
/// v = float(value), rounded once on the host.
PFRT_HD inline void maskedFillAt(const float *x, const void *mask, float *y,
                                 int32_t maskDtype, float v, int64_t i) {
  y[i] = logical::maskSetAt(mask, maskDtype, i) ? v : x[i];
}

//===----------------------------------------------------------------------===//
// Activations (activation / activationLoop0 in src/cpu/Elementwise.cpp)
//===----------------------------------------------------------------------===//

/// out[i] = f(x[i]) (dy NULL) or f'(x[i]) dy[i] for activation `kind`
/// (0 exact GELU in float32, 1 tanh GELU, 2 tanh, 3 sigmoid in float64):
/// the CPU's activationOut (common/KernelMath.h). out may be x or dy (one
/// thread reads element i before writing it).
PFRT_HD inline void activationAt(int32_t kind, const float *x, const float *dy,
                                 float *out, int64_t i) {
  const float v = x[i];
  if (!dy) {
    out[i] = kind == 0   ? activationOut<0, false>(v, 0.0f)
             : kind == 1 ? activationOut<1, false>(v, 0.0f)
             : kind == 2 ? activationOut<2, false>(v, 0.0f)
                         : activationOut<3, false>(v, 0.0f);
    return;
  }
  const float g = dy[i];
  out[i] = kind == 0   ? activationOut<0, true>(v, g)
           : kind == 1 ? activationOut<1, true>(v, g)
           : kind == 2 ? activationOut<2, true>(v, g)
                       : activationOut<3, true>(v, g);
}

} // namespace dev
} // namespace pfrt

#endif // PFRT_SRC_CUDA_KERNELS_ELEMENTWISEBODIES_H
