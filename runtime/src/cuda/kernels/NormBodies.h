//===- NormBodies.h - batch and layer norm ----------------------*- C++ -*-===//
//
// Not installed; nothing here is part of the ABI. Part of the CUDA kernels'
// bodies (DeviceBodies.h says how they are written and checked).
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_CUDA_KERNELS_NORMBODIES_H
#define PFRT_SRC_CUDA_KERNELS_NORMBODIES_H

#include "CommonBodies.h"

namespace pfrt {
namespace dev {

//===----------------------------------------------------------------------===//
// Batch norm (src/cpu/Norm.cpp)
//===----------------------------------------------------------------------===//

/// Per-channel coefficients of the element-wise passes, in device scratch
/// (4 doubles a channel): y = (x - mean) a + b, or
/// dx = a ((dy - mdy) - (x - mean) k2).
enum : int { kBnMean = 0, kBnA = 1, kBnB = 2, kBnMdy = 2, kBnK2 = 3 };

/// Sums of one run of hw values (row r, channel j: q = r*c + j) as the
/// CPU forms them (normRunSums, common/KernelMath.h: shift k = the
/// channel's first value), before they are added to the channel's
/// totals: runs[4q + 0..3] = sum(x - k), sum((x - k)^2), sum(dy),
/// sum(dy (x - k)) (the last two only when dy != NULL). Used for hw > 1.
PFRT_HD inline void bnRunSumsAt(const float *x, const float *dy, double *runs,
                                int64_t c, int64_t hw, int64_t q) {
  const int64_t j = q % c;
  const double k = double(x[j * hw]);
  const float *xr = x + q * hw;
  const float *gr = dy ? dy + q * hw : nullptr;
  const NormRunSums rs = gr ? normRunSums<true>(xr, gr, hw, k)
                            : normRunSums<false>(xr, nullptr, hw, k);
  runs[4 * q] = rs.s1;
  runs[4 * q + 1] = rs.s2;
  runs[4 * q + 2] = rs.t1;
  runs[4 * q + 3] = rs.t2;
}

/// Channel j's statistics (computeStats): the runs' sums added in row
/// order (hw > 1), or the values themselves (hw == 1, one accumulator per
/// sum as the CPU's row-wise loop), then the mean, biased variance,
/// 1/sqrt(var + eps) and, with dy, t1 = sum(dy) and
/// t2 = sum(dy (x - mean)).
struct BnStats {
  double mean, var, invstd, t1, t2;
};
PFRT_HD inline BnStats bnStats(const float *x, const float *dy,
                               const double *runs, int64_t n, int64_t c,
                               int64_t hw, double eps, int64_t j) {
  const double k = double(x[j * hw]);
  double s1 = 0.0, s2 = 0.0, t1 = 0.0, t2 = 0.0;
  if (hw == 1) {
    for (int64_t r = 0; r < n; ++r) {
      double dd = double(x[r * c + j]) - k;
      s1 += dd;
      s2 += dd * dd;
      if (dy) {
        double g = double(dy[r * c + j]);
        t1 += g;
        t2 += g * dd;
      }
    }
  } else {
    for (int64_t r = 0; r < n; ++r) {
      const double *q = runs + 4 * (r * c + j);
      s1 += q[0];
      s2 += q[1];
      if (dy) {
        t1 += q[2];
        t2 += q[3];
      }
    }
  }
  const double m = double(n * hw);
  double dd = s1 / m;
  double var = (s2 - s1 * dd) / m;
  var = var > 0.0 ? var : 0.0;
  BnStats s;
  s.mean = k + dd;
  s.var = var;
  s.invstd = 1.0 / sqrt(var + eps);
  s.t1 = t1;
  s.t2 = dy ? t2 - dd * t1 : t2;
  return s;
}

/// pfrt_k_batch_norm per channel: the coefficients of y and the running
/// statistics (new_mean / new_var may be rmean / rvar: read first).
PFRT_HD inline void bnTrainChannelAt(const float *x, const double *runs,
                                     const float *gamma, const float *beta,
                                     const float *rmean, const float *rvar,
                                     float *newMean, float *newVar, double *co,
                                     int64_t n, int64_t c, int64_t hw,
                                     double eps, double momentum, int64_t j) {
  BnStats s = bnStats(x, nullptr, runs, n, c, hw, eps, j);
  co[4 * j + kBnMean] = s.mean;
  co[4 * j + kBnA] = (gamma ? double(gamma[j]) : 1.0) * s.invstd;
  co[4 * j + kBnB] = beta ? double(beta[j]) : 0.0;
  const double m = double(n * hw), mom = momentum;
  if (newMean)
    newMean[j] = float((1.0 - mom) * double(rmean[j]) + mom * s.mean);
  if (newVar)
    newVar[j] =
        float((1.0 - mom) * double(rvar[j]) + mom * (s.var * m / (m - 1.0)));
}

/// pfrt_k_batch_norm_eval per channel: the running statistics' coefficients.
PFRT_HD inline void bnEvalChannelAt(const float *gamma, const float *beta,
                                    const float *rmean, const float *rvar,
                                    double *co, double eps, int64_t j) {
  co[4 * j + kBnMean] = double(rmean[j]);
  co[4 * j + kBnA] =
      (gamma ? double(gamma[j]) : 1.0) / sqrt(double(rvar[j]) + eps);
  co[4 * j + kBnB] = beta ? double(beta[j]) : 0.0;
}

/// pfrt_k_batch_norm_grad_input per channel: a = gamma invstd,
/// mdy = sum(dy)/M, k2 = sum(dy (x - mean)) invstd^2 / M.
PFRT_HD inline void bnGradInputChannelAt(const float *x, const float *dy,
                                         const double *runs, const float *gamma,
                                         double *co, int64_t n, int64_t c,
                                         int64_t hw, double eps, int64_t j) {
  BnStats s = bnStats(x, dy, runs, n, c, hw, eps, j);
  const double m = double(n * hw), is = s.invstd;
  co[4 * j + kBnMean] = s.mean;
  co[4 * j + kBnA] = (gamma ? double(gamma[j]) : 1.0) * is;
  co[4 * j + kBnMdy] = s.t1 / m;
  co[4 * j + kBnK2] = s.t2 * is * is / m;
}

/// pfrt_k_batch_norm_grad_params per channel.
PFRT_HD inline void bnGradParamsChannelAt(const float *x, const float *dy,
                                          const double *runs, float *dgamma,
                                          float *dbeta, int64_t n, int64_t c,
                                          int64_t hw, double eps, int64_t j) {
  BnStats s = bnStats(x, dy, runs, n, c, hw, eps, j);
  dgamma[j] = float(s.t2 * s.invstd);
  dbeta[j] = float(s.t1);
}

/// y[i] = (x - mean) a + b in float64, rounded once (affine).
PFRT_HD inline void bnAffineAt(const float *x, float *y, const double *co,
                               int64_t c, int64_t hw, int64_t i) {
  const double *q = co + 4 * ((i / hw) % c);
  y[i] = float((double(x[i]) - q[kBnMean]) * q[kBnA] + q[kBnB]);
}

/// dx[i] = a ((dy - mdy) - (x - mean) k2) in float64 (gradInputOut).
PFRT_HD inline void bnGradInputAt(const float *x, const float *dy, float *dx,
                                  const double *co, int64_t c, int64_t hw,
                                  int64_t i) {
  const double *q = co + 4 * ((i / hw) % c);
  dx[i] = float(q[kBnA] * ((double(dy[i]) - q[kBnMdy]) -
                           (double(x[i]) - q[kBnMean]) * q[kBnK2]));
}

//===----------------------------------------------------------------------===//
// Layer norm (src/cpu/Norm.cpp)
//===----------------------------------------------------------------------===//

/// Row r's mean and 1 / sqrt(var + eps) into stats[2r], stats[2r + 1]: the
/// CPU's rowStats (sumF64 for the mean, 8 accumulators for the variance).
PFRT_HD inline void lnRowStatsAt(const float *x, double *stats, int64_t c,
                                 double eps, int64_t r) {
  const float *xr = x + r * c;
  double mean = sumF64(xr, c) / double(c);
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t k = 0;
  for (; k + 8 <= c; k += 8)
    for (int j = 0; j < 8; ++j) {
      double d = double(xr[k + j]) - mean;
      acc[j] += d * d;
    }
  double tail = 0;
  for (; k < c; ++k)
    tail += (double(xr[k]) - mean) * (double(xr[k]) - mean);
  double var = ((acc[0] + acc[4]) + (acc[1] + acc[5])) +
               ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail;
  stats[2 * r] = mean;
  stats[2 * r + 1] = 1.0 / sqrt(var / double(c) + eps);
}

/// y[i] = (x - mean) invstd gamma + beta for element i of [rows, c].
PFRT_HD inline void lnAffineAt(const float *x, const float *gamma,
                               const float *beta, float *y, const double *stats,
                               int64_t c, int64_t i) {
  int64_t r = i / c, k = i - r * c;
  y[i] = float((double(x[i]) - stats[2 * r]) * stats[2 * r + 1] * gamma[k] +
               beta[k]);
}

/// Row r of the input gradient: the CPU's layerNormGradRows (8 accumulators
/// for sum(g) and sum(g xhat), g = dy gamma).
PFRT_HD inline void lnGradInputRowAt(const float *x, const float *gamma,
                                     const float *dy, float *dx,
                                     const double *stats, int64_t c,
                                     int64_t r) {
  const float *xr = x + r * c, *dyr = dy + r * c;
  const double mean = stats[2 * r], invstd = stats[2 * r + 1];
  double aG[8] = {0, 0, 0, 0, 0, 0, 0, 0}, aGX[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t k = 0;
  for (; k + 8 <= c; k += 8)
    for (int j = 0; j < 8; ++j) {
      double g = double(dyr[k + j]) * gamma[k + j];
      aG[j] += g;
      aGX[j] += g * ((double(xr[k + j]) - mean) * invstd);
    }
  double tG = 0, tGX = 0;
  for (; k < c; ++k) {
    double g = double(dyr[k]) * gamma[k];
    tG += g;
    tGX += g * ((double(xr[k]) - mean) * invstd);
  }
  double sumG = ((aG[0] + aG[4]) + (aG[1] + aG[5])) +
                ((aG[2] + aG[6]) + (aG[3] + aG[7])) + tG;
  double sumGX = ((aGX[0] + aGX[4]) + (aGX[1] + aGX[5])) +
                 ((aGX[2] + aGX[6]) + (aGX[3] + aGX[7])) + tGX;
  const double scale = invstd / double(c);
  for (int64_t kk = 0; kk < c; ++kk) {
    double g = double(dyr[kk]) * gamma[kk];
    double xhat = (double(xr[kk]) - mean) * invstd;
    dx[r * c + kk] = float(scale * (double(c) * g - sumG - xhat * sumGX));
  }
}

/// Column k of dgamma and dbeta: the sums over rows in row order, in
/// float64 (layerNormParamRows).
PFRT_HD inline void lnGradParamsColAt(const float *x, const float *dy,
                                      const double *stats, float *dgamma,
                                      float *dbeta, int64_t rows, int64_t c,
                                      int64_t k) {
  double g = 0.0, b = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    double d = dy[r * c + k];
    g += d * ((double(x[r * c + k]) - stats[2 * r]) * stats[2 * r + 1]);
    b += d;
  }
  dgamma[k] = float(g);
  dbeta[k] = float(b);
}

} // namespace dev
} // namespace pfrt

#endif // PFRT_SRC_CUDA_KERNELS_NORMBODIES_H
