//===- Norm.cpp - Batch and layer normalisation ---------------------------===//
//
// Batch norm (training and eval mode, and the gradients). Statistics come
// from one pass in float64 over shifted data (shift k = the channel's first
// value, so the sums stay well conditioned even when |mean| >> std):
//   s1 = sum(x - k), s2 = sum((x - k)^2), t1 = sum(dy), t2 = sum(dy (x - k))
//   mean = k + s1/M, var = (s2 - s1^2/M) / M,
//   sum(dy (x - mean)) = t2 - (s1/M) t1.
// The per-element formulas are evaluated in float64 and rounded once.
// x is [N, C, HW]; HW == 1 (2-D input) walks rows and vectorizes over C.
//
// Layer norm over the last dimension of [rows, c], at the end.
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"
#include "pfrt/pfrt.h"

#include <cmath>
#include <vector>

using namespace pfrt;
using namespace pfrt::kern;

namespace {

/// Per-channel float64 work arrays, all of length C.
struct Stats {
  double *k, *s1, *s2, *t1, *t2, *mean, *invstd;
};

/// Fills the sums (and t1, t2 when dy != NULL), mean and invstd of s.
template <bool WithDy>
PFRT_ALWAYS_INLINE void computeStats(const Stats &s, const float *x,
                                     const float *dy, int64_t n, int64_t c,
                                     int64_t hw, double eps) {
  for (int64_t j = 0; j < c; ++j) {
    s.k[j] = double(x[j * hw]);
    s.s1[j] = s.s2[j] = s.t1[j] = s.t2[j] = 0.0;
  }
  if (hw == 1) {
    double *PFRT_RESTRICT k = s.k, *PFRT_RESTRICT s1 = s.s1,
                          *PFRT_RESTRICT s2 = s.s2, *PFRT_RESTRICT t1 = s.t1,
                          *PFRT_RESTRICT t2 = s.t2;
    for (int64_t r = 0; r < n; ++r) {
      const float *PFRT_RESTRICT xr = x + r * c;
      const float *PFRT_RESTRICT gr = WithDy ? dy + r * c : nullptr;
      for (int64_t j = 0; j < c; ++j) {
        double d = double(xr[j]) - k[j];
        s1[j] += d;
        s2[j] += d * d;
        if (WithDy) {
          double g = double(gr[j]);
          t1[j] += g;
          t2[j] += g * d;
        }
      }
    }
  } else {
    for (int64_t r = 0; r < n; ++r)
      for (int64_t j = 0; j < c; ++j) {
        int64_t off = (r * c + j) * hw;
        NormRunSums rs = normRunSums<WithDy>(
            x + off, WithDy ? dy + off : nullptr, hw, s.k[j]);
        s.s1[j] += rs.s1;
        s.s2[j] += rs.s2;
        if (WithDy) {
          s.t1[j] += rs.t1;
          s.t2[j] += rs.t2;
        }
      }
  }
  const double m = double(n * hw);
  for (int64_t j = 0; j < c; ++j) {
    double d = s.s1[j] / m;
    double var = (s.s2[j] - s.s1[j] * d) / m;
    var = var > 0.0 ? var : 0.0;
    s.mean[j] = s.k[j] + d;
    s.s2[j] = var; // s2 now holds the biased variance
    s.invstd[j] = 1.0 / std::sqrt(var + eps);
    if (WithDy)
      s.t2[j] -= d * s.t1[j]; // t2 now holds sum(dy (x - mean))
  }
}

PFRT_MULTIVERSION void statsX(const Stats &s, const float *x, int64_t n,
                              int64_t c, int64_t hw, double eps) {
  computeStats<false>(s, x, nullptr, n, c, hw, eps);
}

PFRT_MULTIVERSION void statsXDy(const Stats &s, const float *x, const float *dy,
                                int64_t n, int64_t c, int64_t hw, double eps) {
  computeStats<true>(s, x, dy, n, c, hw, eps);
}

Stats makeStats(int64_t c) {
  double *buf = scratchOf<double>(0, 7 * c);
  return Stats{buf,         buf + c,     buf + 2 * c, buf + 3 * c,
               buf + 4 * c, buf + 5 * c, buf + 6 * c};
}

/// out = (x - m[j]) * a[j] + b[j] per channel, in float64.
PFRT_MULTIVERSION void affine(const float *x, float *out, int64_t n, int64_t c,
                              int64_t hw, const double *m, const double *a,
                              const double *b) {
  if (hw == 1) {
    for (int64_t r = 0; r < n; ++r) {
      const float *PFRT_RESTRICT xr = x + r * c;
      float *PFRT_RESTRICT yr = out + r * c;
      for (int64_t j = 0; j < c; ++j)
        yr[j] = float((double(xr[j]) - m[j]) * a[j] + b[j]);
    }
    return;
  }
  for (int64_t r = 0; r < n; ++r)
    for (int64_t j = 0; j < c; ++j) {
      const float *PFRT_RESTRICT xr = x + (r * c + j) * hw;
      float *PFRT_RESTRICT yr = out + (r * c + j) * hw;
      const double mj = m[j], aj = a[j], bj = b[j];
      for (int64_t i = 0; i < hw; ++i)
        yr[i] = float((double(xr[i]) - mj) * aj + bj);
    }
}

/// dx = a[j] ((dy - mdy[j]) - (x - mean[j]) k2[j]) per channel, float64.
PFRT_MULTIVERSION void gradInputOut(const float *x, const float *dy, float *dx,
                                    int64_t n, int64_t c, int64_t hw,
                                    const double *a, const double *mdy,
                                    const double *k2, const double *mean) {
  if (hw == 1) {
    for (int64_t r = 0; r < n; ++r) {
      const float *PFRT_RESTRICT xr = x + r * c;
      const float *PFRT_RESTRICT gr = dy + r * c;
      float *PFRT_RESTRICT dr = dx + r * c;
      for (int64_t j = 0; j < c; ++j)
        dr[j] = float(a[j] * ((double(gr[j]) - mdy[j]) -
                              (double(xr[j]) - mean[j]) * k2[j]));
    }
    return;
  }
  for (int64_t r = 0; r < n; ++r)
    for (int64_t j = 0; j < c; ++j) {
      int64_t off = (r * c + j) * hw;
      const float *PFRT_RESTRICT xr = x + off;
      const float *PFRT_RESTRICT gr = dy + off;
      float *PFRT_RESTRICT dr = dx + off;
      const double aj = a[j], mdyj = mdy[j], k2j = k2[j], mj = mean[j];
      for (int64_t i = 0; i < hw; ++i)
        dr[i] =
            float(aj * ((double(gr[i]) - mdyj) - (double(xr[i]) - mj) * k2j));
    }
}

} // namespace

extern "C" {

void pfrt_k_batch_norm_eval(const float *x, const float *gamma,
                            const float *beta, const float *rmean,
                            const float *rvar, float *y, int64_t n, int64_t c,
                            int64_t hw, double eps) {
  // Eval mode needs the running statistics (train mode may run without).
  checkBatchNormArgs("pfrt_k_batch_norm_eval", x, n, c, hw, eps, {{"y", y}},
                     {{"rmean", rmean}, {"rvar", rvar}});
  if (c == 0)
    return;
  Stats s = makeStats(c);
  for (int64_t j = 0; j < c; ++j) {
    s.mean[j] = double(rmean[j]);
    s.k[j] =
        (gamma ? double(gamma[j]) : 1.0) / std::sqrt(double(rvar[j]) + eps);
    s.s1[j] = beta ? double(beta[j]) : 0.0;
  }
  affine(x, y, n, c, hw, s.mean, s.k, s.s1);
}

void pfrt_k_batch_norm(const float *x, const float *gamma, const float *beta,
                       const float *rmean, const float *rvar, float *y,
                       float *new_mean, float *new_var, int64_t n, int64_t c,
                       int64_t hw, double eps, double momentum) {
  const char *fn = "pfrt_k_batch_norm";
  checkBatchNormArgs(fn, x, n, c, hw, eps, {{"y", y}}, {});
  checkBatchNormRunning(fn, rmean, rvar, new_mean, new_var);
  if (c == 0)
    return;
  Stats s = makeStats(c);
  statsX(s, x, n, c, hw, eps);
  // a = gamma * invstd and b = beta overwrite k and s1 (no longer needed).
  double *a = s.k, *b = s.s1;
  for (int64_t j = 0; j < c; ++j) {
    a[j] = (gamma ? double(gamma[j]) : 1.0) * s.invstd[j];
    b[j] = beta ? double(beta[j]) : 0.0;
  }
  affine(x, y, n, c, hw, s.mean, a, b);
  const double m = double(n * hw), mom = momentum;
  for (int64_t j = 0; j < c; ++j) {
    if (new_mean)
      new_mean[j] = float((1.0 - mom) * double(rmean[j]) + mom * s.mean[j]);
    if (new_var)
      new_var[j] = float((1.0 - mom) * double(rvar[j]) +
                         mom * (s.s2[j] * m / (m - 1.0)));
  }
}

void pfrt_k_batch_norm_grad_input(const float *x, const float *gamma,
                                  const float *dy, float *dx, int64_t n,
                                  int64_t c, int64_t hw, double eps) {
  checkBatchNormArgs("pfrt_k_batch_norm_grad_input", x, n, c, hw, eps,
                     {{"dy", dy}, {"dx", dx}}, {});
  if (c == 0)
    return;
  Stats s = makeStats(c);
  statsXDy(s, x, dy, n, c, hw, eps);
  // dx = a (dy - mdy - (x - mean) k2) with a = gamma invstd,
  // mdy = sum(dy)/M, k2 = sum(dy (x - mean)) invstd^2 / M.
  const double m = double(n * hw);
  double *a = s.k, *mdy = s.s1, *k2 = s.s2;
  for (int64_t j = 0; j < c; ++j) {
    double is = s.invstd[j];
    a[j] = (gamma ? double(gamma[j]) : 1.0) * is;
    mdy[j] = s.t1[j] / m;
    k2[j] = s.t2[j] * is * is / m;
  }
  gradInputOut(x, dy, dx, n, c, hw, a, mdy, k2, s.mean);
}

void pfrt_k_batch_norm_grad_params(const float *x, const float *dy,
                                   float *dgamma, float *dbeta, int64_t n,
                                   int64_t c, int64_t hw, double eps) {
  checkBatchNormArgs("pfrt_k_batch_norm_grad_params", x, n, c, hw, eps,
                     {{"dy", dy}}, {{"dgamma", dgamma}, {"dbeta", dbeta}});
  if (c == 0)
    return;
  Stats s = makeStats(c);
  statsXDy(s, x, dy, n, c, hw, eps);
  for (int64_t j = 0; j < c; ++j) {
    dgamma[j] = float(s.t2[j] * s.invstd[j]);
    dbeta[j] = float(s.t1[j]);
  }
}

} // extern "C"

//===----------------------------------------------------------------------===//
// Layer norm: each row's mean and variance in float64 (8 accumulators),
// then the per-element formulas in float64, rounded once.
//===----------------------------------------------------------------------===//

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

} // namespace

extern "C" {

void pfrt_k_layer_norm(const float *x, const float *gamma, const float *beta,
                       float *y, int64_t rows, int64_t c, double eps) {
  checkLayerNormArgs("pfrt_k_layer_norm", rows, c, eps, {{"x", x}, {"y", y}},
                     {{"gamma", gamma}, {"beta", beta}});
  layerNormRows(x, gamma, beta, y, rows, c, eps);
}

void pfrt_k_layer_norm_grad_input(const float *x, const float *gamma,
                                  const float *dy, float *dx, int64_t rows,
                                  int64_t c, double eps) {
  checkLayerNormArgs("pfrt_k_layer_norm_grad_input", rows, c, eps,
                     {{"x", x}, {"dy", dy}, {"dx", dx}}, {{"gamma", gamma}});
  layerNormGradRows(x, gamma, dy, dx, rows, c, eps);
}

void pfrt_k_layer_norm_grad_params(const float *x, const float *dy,
                                   float *dgamma, float *dbeta, int64_t rows,
                                   int64_t c, double eps) {
  checkLayerNormArgs("pfrt_k_layer_norm_grad_params", rows, c, eps,
                     {{"x", x}, {"dy", dy}},
                     {{"dgamma", dgamma}, {"dbeta", dbeta}});
  std::vector<double> g(size_t(c), 0.0), bsum(size_t(c), 0.0);
  layerNormParamRows(x, dy, g.data(), bsum.data(), rows, c, eps);
  for (int64_t k = 0; k < c; ++k) {
    dgamma[k] = static_cast<float>(g[size_t(k)]);
    dbeta[k] = static_cast<float>(bsum[size_t(k)]);
  }
}

} // extern "C"
