//===- Xent.cpp - softmax cross-entropy losses and their gradients --------===//
//
// The mean cross-entropy over rows of logits (pfrt_k_softmax_xent), with
// ignore_index (mean of the kept rows) or summed, their gradients, and the
// count of kept rows. Each row's softmax sums run in float64 in the device
// twin's order (KernelUtil.h's softmaxRowBody).
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"
#include "pfrt/pfrt.h"

#include <cmath>

using namespace pfrt;
using namespace pfrt::kern;

namespace {

/// A row's max and sum of exponentials (softmaxRowBody), built for each
/// ISA (KernelUtil.h: PFRT_MULTIVERSION).
PFRT_MULTIVERSION double softmaxRow(const float *PFRT_RESTRICT x, int64_t n,
                                    double *PFRT_RESTRICT e, double *mxOut) {
  return softmaxRowBody(x, n, e, mxOut);
}

/// The labels' values: the CPU kernels read them (the twins on the
/// device).
void checkLabel(const char *fn, const int64_t *labels, int64_t r, int64_t c) {
  int64_t l = labels[r];
  if (l < 0 || l >= c)
    fatal("%s: label %lld at row %lld is outside [0, %lld)", fn, (long long)l,
          (long long)r, (long long)c);
}

/// The mean cross-entropy over the rows whose label is not `ignore` (all
/// rows when !hasIgnore), and its gradient; ignored rows get zeros.
void xentForward(const char *fn, const float *logits, const int64_t *labels,
                 float *loss, int64_t n, int64_t c, bool hasIgnore,
                 int64_t ignore, bool mean = true) {
  checkXentForwardArgs(fn, logits, labels, loss, n, c);
  double *e = scratchOf<double>(0, c);
  double total = 0;
  int64_t count = 0;
  for (int64_t r = 0; r < n; ++r) {
    if (hasIgnore && labels[r] == ignore)
      continue;
    checkLabel(fn, labels, r, c);
    const float *x = logits + r * c;
    double mx;
    double s = softmaxRow(x, c, e, &mx);
    total += (std::log(s) + mx) - double(x[labels[r]]);
    ++count;
  }
  // Every row ignored: 0 / 0, NaN (as torch's mean reduction gives).
  loss[0] = mean ? float(total / double(count)) : float(total);
}

void xentBackward(const char *fn, const float *logits, const int64_t *labels,
                  const float *dloss, float *dlogits, int64_t n, int64_t c,
                  bool hasIgnore, int64_t ignore, bool mean = true) {
  checkXentBackwardArgs(fn, logits, labels, dloss, dlogits, n, c);
  int64_t count = 0;
  for (int64_t r = 0; r < n; ++r)
    count += !(hasIgnore && labels[r] == ignore);
  double *e = scratchOf<double>(0, c);
  const double scale =
      mean ? double(dloss[0]) / double(count) : double(dloss[0]);
  for (int64_t r = 0; r < n; ++r) {
    float *PFRT_RESTRICT d = dlogits + r * c;
    if (hasIgnore && labels[r] == ignore) {
      for (int64_t i = 0; i < c; ++i)
        d[i] = 0.0f;
      continue;
    }
    checkLabel(fn, labels, r, c);
    const float *x = logits + r * c;
    double mx;
    double f = scale / softmaxRow(x, c, e, &mx);
    for (int64_t i = 0; i < c; ++i)
      d[i] = float(e[i] * f);
    int64_t l = labels[r];
    d[l] = float(e[l] * f - scale);
  }
}
} // namespace

extern "C" {

void pfrt_k_softmax_xent(const float *logits, const int64_t *labels,
                         float *loss, int64_t n, int64_t c) {
  xentForward("pfrt_k_softmax_xent", logits, labels, loss, n, c, false, 0);
}

void pfrt_k_softmax_xent_grad(const float *logits, const int64_t *labels,
                              const float *dloss, float *dlogits, int64_t n,
                              int64_t c) {
  xentBackward("pfrt_k_softmax_xent_grad", logits, labels, dloss, dlogits, n, c,
               false, 0);
}

void pfrt_k_softmax_xent_ignore(const float *logits, const int64_t *labels,
                                float *loss, int64_t n, int64_t c,
                                int64_t ignore_index) {
  xentForward("pfrt_k_softmax_xent_ignore", logits, labels, loss, n, c, true,
              ignore_index);
}

void pfrt_k_softmax_xent_grad_ignore(const float *logits, const int64_t *labels,
                                     const float *dloss, float *dlogits,
                                     int64_t n, int64_t c,
                                     int64_t ignore_index) {
  xentBackward("pfrt_k_softmax_xent_grad_ignore", logits, labels, dloss,
               dlogits, n, c, true, ignore_index);
}

void pfrt_k_softmax_xent_sum(const float *logits, const int64_t *labels,
                             float *loss, int64_t n, int64_t c,
                             int64_t ignore_index) {
  xentForward("pfrt_k_softmax_xent_sum", logits, labels, loss, n, c, true,
              ignore_index, /*mean=*/false);
}

void pfrt_k_softmax_xent_grad_sum(const float *logits, const int64_t *labels,
                                  const float *dloss, float *dlogits, int64_t n,
                                  int64_t c, int64_t ignore_index) {
  xentBackward("pfrt_k_softmax_xent_grad_sum", logits, labels, dloss, dlogits,
               n, c, true, ignore_index, /*mean=*/false);
}

void pfrt_k_count_kept(const int64_t *labels, float *count, int64_t n,
                       int64_t ignore_index) {
  checkCountKeptArgs("pfrt_k_count_kept", labels, count, n);
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i)
    kept += labels[i] != ignore_index;
  count[0] = float(kept);
}

} // extern "C"
