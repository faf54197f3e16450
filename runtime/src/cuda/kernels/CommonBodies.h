//===- CommonBodies.h - shared by every body --------------------*- C++ -*-===//
//
// Not installed; nothing here is part of the ABI. Part of the CUDA kernels'
// bodies (DeviceBodies.h says how they are written and checked).
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_CUDA_KERNELS_COMMONBODIES_H
#define PFRT_SRC_CUDA_KERNELS_COMMONBODIES_H

#include <math.h>
#include <stdint.h>
#ifndef __CUDA_ARCH__
#include <string.h>
#endif

#ifdef __CUDACC__
#define PFRT_HD __host__ __device__
#else
#define PFRT_HD
#endif

namespace pfrt {
namespace dev {

/// Largest tensor rank (pfrt.h; kMaxRank in src/common/Internal.h).
constexpr int kMaxDims = 32;
/// Threads per block of every kernel.
constexpr int kBlock = 256;

//===----------------------------------------------------------------------===//
// Errors the kernels cannot raise themselves
//===----------------------------------------------------------------------===//

/// A device-side error record (one, in device memory): the first error a
/// kernel finds is written by a single thread (the kernels that check are
/// single-threaded or let one thread check), and pfrt_cuda_report_loss /
/// pfrt_cuda_report_output / pfrt_cuda_finalize turn it into a fatal error.
enum : int32_t {
  kErrNone = 0,
  kErrXentLabel = 1,     // pfrt_cuda_k_softmax_xent: label outside [0, c)
  kErrXentGradLabel = 2, // pfrt_cuda_k_softmax_xent_grad: the same
  kErrAdamStep = 3,      // pfrt_cuda_k_adam: step < 1 with bias correction
  // An id outside [0, vocab) (row = its position, bound = vocab):
  kErrEmbeddingId = 4,         // pfrt_cuda_k_embedding
  kErrEmbeddingGradId = 5,     // pfrt_cuda_k_embedding_grad
  kErrEmbeddingRowsId = 6,     // pfrt_cuda_k_embedding_rows
  kErrEmbeddingGradRowsId = 7, // pfrt_cuda_k_embedding_grad_rows
  // A kept row's label outside [0, c):
  kErrXentIgnoreLabel = 8,     // pfrt_cuda_k_softmax_xent_ignore
  kErrXentGradIgnoreLabel = 9, // pfrt_cuda_k_softmax_xent_grad_ignore
  kErrXentSumLabel = 10,       // pfrt_cuda_k_softmax_xent_sum
  kErrXentGradSumLabel = 11,   // pfrt_cuda_k_softmax_xent_grad_sum
};
struct DeviceError {
  int32_t code;
  int32_t pad;
  int64_t row;   // the row of the bad label
  int64_t value; // the label
  int64_t bound; // c
  double real;   // the step of kErrAdamStep
};

/// Records an error unless one is already recorded (first error wins).
PFRT_HD inline void raiseError(DeviceError *err, int32_t code, int64_t row,
                               int64_t value, int64_t bound, double real) {
  if (err->code != kErrNone)
    return;
  err->row = row;
  err->value = value;
  err->bound = bound;
  err->real = real;
  err->code = code;
}

//===----------------------------------------------------------------------===//
// float64 sums (src/cpu/KernelUtil.h)
//===----------------------------------------------------------------------===//

/// sum(x[0..n)) in float64 with sumF64's 8 accumulators and its final
/// combination order.
PFRT_HD inline double sumF64(const float *x, int64_t n) {
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j)
      acc[j] += double(x[i + j]);
  double tail = 0;
  for (; i < n; ++i)
    tail += double(x[i]);
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) +
         ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail;
}

//===----------------------------------------------------------------------===//
// Bit casts (the exponent tricks of expClamped and expFloat)
//===----------------------------------------------------------------------===//

PFRT_HD inline uint64_t bitsOf(double v) {
#ifdef __CUDA_ARCH__
  return uint64_t(__double_as_longlong(v));
#else
  uint64_t b;
  memcpy(&b, &v, 8);
  return b;
#endif
}

PFRT_HD inline double doubleOf(uint64_t b) {
#ifdef __CUDA_ARCH__
  return __longlong_as_double((long long)b);
#else
  double v;
  memcpy(&v, &b, 8);
  return v;
#endif
}

PFRT_HD inline int32_t bitsOfFloat(float v) {
#ifdef __CUDA_ARCH__
  return __float_as_int(v);
#else
  int32_t b;
  memcpy(&b, &v, 4);
  return b;
#endif
}

PFRT_HD inline float floatOfBits(uint32_t b) {
#ifdef __CUDA_ARCH__
  return __int_as_float(int(b));
#else
  float v;
  memcpy(&v, &b, 4);
  return v;
#endif
}

/// -infinity as a float (the max pools' starting value).
PFRT_HD inline float negInf() { return floatOfBits(0xff800000u); }

//===----------------------------------------------------------------------===//
// exp in float64 (src/cpu/KernelUtil.h)
//===----------------------------------------------------------------------===//

/// The CPU's expClamped, operation for operation.
PFRT_HD inline double expClamped(double x) {
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
  uint64_t sbits = (bitsOf(t) + 1023) << 52;
  return p * doubleOf(sbits);
}

} // namespace dev
} // namespace pfrt

#endif // PFRT_SRC_CUDA_KERNELS_COMMONBODIES_H
