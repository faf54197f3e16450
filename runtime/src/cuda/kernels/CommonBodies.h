//===- CommonBodies.h - shared by every body --------------------*- C++ -*-===//
//
// Not installed; nothing here is part of the ABI. Part of the CUDA kernels'
// bodies (DeviceBodies.h says how they are written and checked).
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_CUDA_KERNELS_COMMONBODIES_H
#define PFRT_SRC_CUDA_KERNELS_COMMONBODIES_H

#include "../../common/KernelMath.h"

#include <math.h>
#include <stdint.h>

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
  // A kept row's label outside [0, classes) (the whole row's classes):
  kErrVocabXentLabel = 12,     // pfrt_cuda_softmax_xent_vocab
  kErrVocabXentGradLabel = 13, // pfrt_cuda_softmax_xent_vocab_grad
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

/// The math the bodies share with the CPU kernels (common/KernelMath.h).
using kern::activationOut;
using kern::bitCast;
using kern::expClamped;
using kern::normRunSums;
using kern::NormRunSums;
using kern::rowMax;

/// -infinity as a float (the max pools' starting value).
PFRT_HD inline float negInf() { return bitCast<float>(0xff800000u); }

} // namespace dev
} // namespace pfrt

#endif // PFRT_SRC_CUDA_KERNELS_COMMONBODIES_H
