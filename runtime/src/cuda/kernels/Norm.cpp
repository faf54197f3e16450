//===- Norm.cpp - device twins of batch norm and layer norm ---------------===//
//
// Batch norm: a channel's statistics are summed by one thread in the CPU's
// order and precision (float64; for hw > 1 each (row, channel) run of hw
// values is first summed by its own thread with the CPU's 4 accumulators),
// then one thread per element applies the per-channel coefficients.
// Correctness first: the per-channel loop over the rows is serial.
//
// Layer norm: each row's statistics by one thread (scratch), then one
// thread per element, per row or per column (NormBodies.h).
//
//===----------------------------------------------------------------------===//

#include "NormBodies.h"
#include "Twin.h"

#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

using namespace pfrt;
using namespace pfrt::kern;
using namespace pfrt::twin;

namespace {

/// Scratch for a batch norm: the per-run sums (hw > 1) and the
/// per-channel coefficients; enqueues the run sums.
struct BnScratch {
  double *runs = nullptr, *co = nullptr;
};
BnScratch bnScratch(const char *fn, const float *x, const float *dy, int64_t n,
                    int64_t c, int64_t hw) {
  ScratchLayout l;
  int64_t nruns = hw > 1 ? n * c : 0;
  int64_t runsAt = l.add(nruns * 4 * int64_t(sizeof(double)));
  int64_t coAt = l.add(c * 4 * int64_t(sizeof(double)));
  void *base = scratch(l.bytes, fn);
  BnScratch s;
  s.runs = scratchAt<double>(base, runsAt);
  s.co = scratchAt<double>(base, coAt);
  if (nruns > 0) {
    double *runs = s.runs;
    void *args[] = {&x, &dy, &runs, &c, &hw, &nruns};
    launch(kBnRuns, nruns, args, fn);
  }
  return s;
}

/// Each row's mean and inverse standard deviation (2 doubles a row) in
/// scratch; rows > 0.
const double *lnStats(const char *fn, const float *x, int64_t rows, int64_t c,
                      double eps) {
  double *stats = static_cast<double *>(scratch(mulChecked(fn, rows, 16), fn));
  void *args[] = {&x, &stats, &c, &eps, &rows};
  launch(kLnStats, rows, args, fn);
  return stats;
}

} // namespace

extern "C" {

void pfrt_cuda_k_batch_norm(const float *x, const float *gamma,
                            const float *beta, const float *rmean,
                            const float *rvar, float *y, float *new_mean,
                            float *new_var, int64_t n, int64_t c, int64_t hw,
                            double eps, double momentum) {
  const char *fn = "pfrt_cuda_k_batch_norm";
  checkBatchNormArgs(fn, x, n, c, hw, eps, {{"y", y}}, {});
  checkBatchNormRunning(fn, rmean, rvar, new_mean, new_var);
  if (c == 0)
    return;
  BnScratch s = bnScratch(fn, x, nullptr, n, c, hw);
  double *runs = s.runs, *co = s.co;
  void *args1[] = {&x,       &runs, &gamma, &beta, &rmean, &rvar, &new_mean,
                   &new_var, &co,   &n,     &c,    &hw,    &eps,  &momentum};
  launch(kBnTrainChannels, c, args1, fn);
  int64_t total = n * c * hw;
  void *args2[] = {&x, &y, &co, &c, &hw, &total};
  launch(kBnAffine, total, args2, fn);
}

void pfrt_cuda_k_batch_norm_eval(const float *x, const float *gamma,
                                 const float *beta, const float *rmean,
                                 const float *rvar, float *y, int64_t n,
                                 int64_t c, int64_t hw, double eps) {
  const char *fn = "pfrt_cuda_k_batch_norm_eval";
  checkBatchNormArgs(fn, x, n, c, hw, eps, {{"y", y}},
                     {{"rmean", rmean}, {"rvar", rvar}});
  if (c == 0)
    return;
  double *co =
      static_cast<double *>(scratch(c * 4 * int64_t(sizeof(double)), fn));
  void *args1[] = {&gamma, &beta, &rmean, &rvar, &co, &c, &eps};
  launch(kBnEvalChannels, c, args1, fn);
  int64_t total = n * c * hw;
  void *args2[] = {&x, &y, &co, &c, &hw, &total};
  launch(kBnAffine, total, args2, fn);
}

void pfrt_cuda_k_batch_norm_grad_input(const float *x, const float *gamma,
                                       const float *dy, float *dx, int64_t n,
                                       int64_t c, int64_t hw, double eps) {
  const char *fn = "pfrt_cuda_k_batch_norm_grad_input";
  checkBatchNormArgs(fn, x, n, c, hw, eps, {{"dy", dy}, {"dx", dx}}, {});
  if (c == 0)
    return;
  BnScratch s = bnScratch(fn, x, dy, n, c, hw);
  double *runs = s.runs, *co = s.co;
  void *args1[] = {&x, &dy, &runs, &gamma, &co, &n, &c, &hw, &eps};
  launch(kBnGradInputChannels, c, args1, fn);
  int64_t total = n * c * hw;
  void *args2[] = {&x, &dy, &dx, &co, &c, &hw, &total};
  launch(kBnGradInput, total, args2, fn);
}

void pfrt_cuda_k_batch_norm_grad_params(const float *x, const float *dy,
                                        float *dgamma, float *dbeta, int64_t n,
                                        int64_t c, int64_t hw, double eps) {
  const char *fn = "pfrt_cuda_k_batch_norm_grad_params";
  checkBatchNormArgs(fn, x, n, c, hw, eps, {{"dy", dy}},
                     {{"dgamma", dgamma}, {"dbeta", dbeta}});
  if (c == 0)
    return;
  BnScratch s = bnScratch(fn, x, dy, n, c, hw);
  double *runs = s.runs;
  void *args[] = {&x, &dy, &runs, &dgamma, &dbeta, &n, &c, &hw, &eps};
  launch(kBnGradParamsChannels, c, args, fn);
}

void pfrt_cuda_k_layer_norm(const float *x, const float *gamma,
                            const float *beta, float *y, int64_t rows,
                            int64_t c, double eps) {
  const char *fn = "pfrt_cuda_k_layer_norm";
  int64_t n = checkLayerNormArgs(fn, rows, c, eps, {{"x", x}, {"y", y}},
                                 {{"gamma", gamma}, {"beta", beta}});
  if (n == 0)
    return;
  const double *stats = lnStats(fn, x, rows, c, eps);
  void *args[] = {&x, &gamma, &beta, &y, &stats, &c, &n};
  launch(kLnAffine, n, args, fn);
}

void pfrt_cuda_k_layer_norm_grad_input(const float *x, const float *gamma,
                                       const float *dy, float *dx, int64_t rows,
                                       int64_t c, double eps) {
  const char *fn = "pfrt_cuda_k_layer_norm_grad_input";
  int64_t n = checkLayerNormArgs(
      fn, rows, c, eps, {{"x", x}, {"dy", dy}, {"dx", dx}}, {{"gamma", gamma}});
  if (n == 0)
    return;
  const double *stats = lnStats(fn, x, rows, c, eps);
  void *args[] = {&x, &gamma, &dy, &dx, &stats, &c, &rows};
  launch(kLnGradInput, rows, args, fn);
}

void pfrt_cuda_k_layer_norm_grad_params(const float *x, const float *dy,
                                        float *dgamma, float *dbeta,
                                        int64_t rows, int64_t c, double eps) {
  const char *fn = "pfrt_cuda_k_layer_norm_grad_params";
  checkLayerNormArgs(fn, rows, c, eps, {{"x", x}, {"dy", dy}},
                     {{"dgamma", dgamma}, {"dbeta", dbeta}});
  const double *stats = nullptr;
  if (rows > 0)
    stats = lnStats(fn, x, rows, c, eps);
  // rows == 0: every column's sums are empty, 0 (stats unread).
  void *args[] = {&x, &dy, &stats, &dgamma, &dbeta, &rows, &c};
  launch(kLnGradParams, c, args, fn);
}

} // extern "C"
