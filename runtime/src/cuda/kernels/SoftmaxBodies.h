//===- SoftmaxBodies.h - softmax rows and lines -----------------*- C++ -*-===//
//
// Not installed; nothing here is part of the ABI. Part of the CUDA kernels'
// bodies (DeviceBodies.h says how they are written and checked).
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_CUDA_KERNELS_SOFTMAXBODIES_H
#define PFRT_SRC_CUDA_KERNELS_SOFTMAXBODIES_H

#include "CommonBodies.h"

namespace pfrt {
namespace dev {

//===----------------------------------------------------------------------===//
// Softmax rows (KernelUtil.h's softmaxRowBody, src/cpu/Softmax.cpp)
//===----------------------------------------------------------------------===//

/// A softmax row's sum of exponentials is summed in kRowLanes interleaved
/// lanes (lane j: elements j, j + kRowLanes, ... in order), combined by the
/// tree a warp's shuffles make (combineLanes): one warp sums a row on the
/// device (Kernels.cu), one thread elsewhere, with the same bits.
constexpr int kRowLanes = 32;

/// Lanes combined: for off = 16, 8, 4, 2, 1, lane j < off adds lane j + off
/// (as `v += __shfl_down_sync(~0u, v, off)`); returns lane 0's sum.
PFRT_HD inline double combineLanes(double *acc) {
  for (int off = kRowLanes / 2; off >= 1; off /= 2)
    for (int j = 0; j < off; ++j)
      acc[j] += acc[j + off];
  return acc[0];
}

/// Lane `lane`'s share of the sum of exp(x[i] - m).
PFRT_HD inline double softmaxLaneSum(const float *x, int64_t n, double m,
                                     int lane) {
  double acc = 0;
  for (int64_t i = lane; i < n; i += kRowLanes)
    acc += expClamped(double(x[i]) - m);
  return acc;
}

/// The CPU's softmaxRow without the stored exponentials: returns the float64
/// sum of exp(x[i] - max) (kRowLanes lanes) and the max in *mx.
PFRT_HD inline double softmaxRowSum(const float *x, int64_t n, double *mx) {
  const double m = double(rowMax(x, n));
  double acc[kRowLanes];
  for (int j = 0; j < kRowLanes; ++j)
    acc[j] = softmaxLaneSum(x, n, m, j);
  *mx = m;
  return combineLanes(acc);
}

/// Softmax (log-softmax when lg) of line j of [outer, n, inner]: the line
/// (o, i) = (j / inner, j % inner), n elements inner apart. inner == 1 is
/// the CPU's row pass (rowMax, softmaxRow's 32 lanes, e * (1 / sum));
/// otherwise its strided pass (max from -inf, a sequential sum, exp / sum).
PFRT_HD inline void softmaxLineAt(const float *x, float *y, int64_t n,
                                  int64_t inner, int32_t lg, int64_t j) {
  if (inner == 1) {
    const float *xs = x + j * n;
    float *ys = y + j * n;
    double m;
    double sum = softmaxRowSum(xs, n, &m);
    double logSum = log(sum), inv = 1.0 / sum;
    for (int64_t k = 0; k < n; ++k)
      ys[k] = float(lg ? (double(xs[k]) - m) - logSum
                       : expClamped(double(xs[k]) - m) * inv);
    return;
  }
  int64_t o = j / inner, i = j - o * inner;
  const float *xs = x + o * n * inner + i;
  float *ys = y + o * n * inner + i;
  double m = bitCast<double>(0xfff0000000000000ull), sum = 0.0;
  for (int64_t k = 0; k < n; ++k) {
    double v = double(xs[k * inner]);
    m = m < v ? v : m; // std::max(m, v)
  }
  for (int64_t k = 0; k < n; ++k)
    sum += expClamped(double(xs[k * inner]) - m);
  double logSum = log(sum);
  for (int64_t k = 0; k < n; ++k) {
    double z = double(xs[k * inner]) - m;
    ys[k * inner] = float(lg ? z - logSum : expClamped(z) / sum);
  }
}

/// The gradient of softmaxLineAt from its output y: softmax
/// dx = y (dy - sum(dy y)), log-softmax dx = dy - exp(y) sum(dy); the sum
/// in float64 as the CPU kernel: over 8 lanes for rows (inner == 1,
/// softmaxGradRows), sequential for strided lines.
PFRT_HD inline void softmaxGradLineAt(const float *y, const float *dy,
                                      float *dx, int64_t n, int64_t inner,
                                      int32_t lg, int64_t j) {
  int64_t o = j / inner, i = j - o * inner;
  int64_t base = o * n * inner + i;
  double s = 0.0;
  if (inner == 1) {
    double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t k = 0;
    for (; k + 8 <= n; k += 8)
      for (int l = 0; l < 8; ++l)
        acc[l] +=
            double(dy[base + k + l]) * (lg ? 1.0 : double(y[base + k + l]));
    double tail = 0;
    for (; k < n; ++k)
      tail += double(dy[base + k]) * (lg ? 1.0 : double(y[base + k]));
    s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) +
        ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail;
  } else {
    for (int64_t k = 0; k < n; ++k)
      s += double(dy[base + k * inner]) *
           (lg ? 1.0 : double(y[base + k * inner]));
  }
  for (int64_t k = 0; k < n; ++k) {
    double yk = y[base + k * inner], g = dy[base + k * inner];
    dx[base + k * inner] = float(lg ? g - exp(yk) * s : yk * (g - s));
  }
}

} // namespace dev
} // namespace pfrt

#endif // PFRT_SRC_CUDA_KERNELS_SOFTMAXBODIES_H
