//===- XentBodies.h - cross-entropies ---------------------------*- C++ -*-===//
//
// Not installed; nothing here is part of the ABI. Part of the CUDA kernels'
// bodies (DeviceBodies.h says how they are written and checked).
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_CUDA_KERNELS_XENTBODIES_H
#define PFRT_SRC_CUDA_KERNELS_XENTBODIES_H

#include "CommonBodies.h"
#include "SoftmaxBodies.h"

namespace pfrt {
namespace dev {

//===----------------------------------------------------------------------===//
// Softmax cross-entropy (xentForward / xentBackward in src/cpu/Xent.cpp)
//===----------------------------------------------------------------------===//

PFRT_HD inline bool labelOk(int64_t l, int64_t c) { return l >= 0 && l < c; }

/// Row r's cross-entropy (log(sum) + max) - x[label] into rowLoss[r]; a row
/// whose label is out of range gets NaN (the single-threaded sum reports it).
PFRT_HD inline void xentRowLossAt(const float *logits, const int64_t *labels,
                                  double *rowLoss, int64_t c, int64_t r) {
  int64_t l = labels[r];
  if (!labelOk(l, c)) {
    rowLoss[r] = bitCast<double>(0x7ff8000000000000ull);
    return;
  }
  const float *x = logits + r * c;
  double mx;
  double s = softmaxRowSum(x, c, &mx);
  rowLoss[r] = (log(s) + mx) - double(x[l]);
}

/// loss[0] = the mean of the n row losses, summed in row order as the CPU
/// does; the first row (in order) with an out-of-range label is recorded.
/// One thread.
PFRT_HD inline void xentTotal(const double *rowLoss, const int64_t *labels,
                              float *loss, int64_t n, int64_t c,
                              DeviceError *err) {
  double total = 0;
  for (int64_t r = 0; r < n; ++r) {
    if (!labelOk(labels[r], c)) {
      raiseError(err, kErrXentLabel, r, labels[r], c, 0.0);
      break;
    }
    total += rowLoss[r];
  }
  loss[0] = float(total / double(n));
}

/// The first row (in order) with an out-of-range label, for the gradient.
/// One thread.
PFRT_HD inline void xentCheckLabels(const int64_t *labels, int64_t n, int64_t c,
                                    int32_t code, DeviceError *err) {
  for (int64_t r = 0; r < n; ++r)
    if (!labelOk(labels[r], c)) {
      raiseError(err, code, r, labels[r], c, 0.0);
      return;
    }
}

/// Row r's max and float64 sum of exponentials, stats[2r] and stats[2r+1].
PFRT_HD inline void xentRowStatsAt(const float *logits, double *stats,
                                   int64_t c, int64_t r) {
  double mx;
  double s = softmaxRowSum(logits + r * c, c, &mx);
  stats[2 * r] = mx;
  stats[2 * r + 1] = s;
}

/// dlogits[i] = (softmax - onehot(label)) * dloss / n for element i of
/// [n, c], from the row's stats (xentBackward's arithmetic).
PFRT_HD inline void xentGradAt(const float *logits, const int64_t *labels,
                               const float *dloss, const double *stats,
                               float *dlogits, int64_t n, int64_t c,
                               int64_t i) {
  int64_t r = i / c, k = i - r * c;
  const double scale = double(dloss[0]) / double(n);
  double f = scale / stats[2 * r + 1];
  double e = expClamped(double(logits[i]) - stats[2 * r]);
  dlogits[i] = k == labels[r] ? float(e * f - scale) : float(e * f);
}

//===----------------------------------------------------------------------===//
// Cross-entropy with ignore_index, mean of the kept rows or sum, and the
// count of kept rows (xentForward / xentBackward / pfrt_k_count_kept)
//===----------------------------------------------------------------------===//

/// Row r's loss (0 when its label is `ignore`; NaN when out of range).
PFRT_HD inline void xentRowLossIgnoreAt(const float *logits,
                                        const int64_t *labels, double *rowLoss,
                                        int64_t c, int64_t ignore, int64_t r) {
  if (labels[r] == ignore) {
    rowLoss[r] = 0.0;
    return;
  }
  xentRowLossAt(logits, labels, rowLoss, c, r);
}

/// loss[0] = the sum of the kept rows' losses in row order, divided by
/// their count when mean (0 / 0 = NaN when every row is ignored); the first
/// kept row with an out-of-range label is recorded under `code`. One
/// thread.
PFRT_HD inline void xentTotalIgnore(const double *rowLoss,
                                    const int64_t *labels, float *loss,
                                    int64_t n, int64_t c, int64_t ignore,
                                    int32_t mean, int32_t code,
                                    DeviceError *err) {
  double total = 0;
  int64_t count = 0;
  for (int64_t r = 0; r < n; ++r) {
    if (labels[r] == ignore)
      continue;
    if (!labelOk(labels[r], c)) {
      raiseError(err, code, r, labels[r], c, 0.0);
      break;
    }
    total += rowLoss[r];
    ++count;
  }
  loss[0] = mean ? float(total / double(count)) : float(total);
}

/// The gradient's scale (dloss / kept rows when mean, else dloss) into
/// *scale, and the first kept row with an out-of-range label. One thread.
PFRT_HD inline void xentGradScale(const int64_t *labels, const float *dloss,
                                  double *scale, int64_t n, int64_t c,
                                  int64_t ignore, int32_t mean, int32_t code,
                                  DeviceError *err) {
  int64_t count = 0;
  for (int64_t r = 0; r < n; ++r)
    count += !(labels[r] == ignore);
  for (int64_t r = 0; r < n; ++r)
    if (labels[r] != ignore && !labelOk(labels[r], c)) {
      raiseError(err, code, r, labels[r], c, 0.0);
      break;
    }
  *scale = mean ? double(dloss[0]) / double(count) : double(dloss[0]);
}

/// Element i of dlogits [n, c]: zeros on an ignored row, else xentGradAt's
/// arithmetic with the scale of xentGradScale.
PFRT_HD inline void xentGradIgnoreAt(const float *logits, const int64_t *labels,
                                     const double *scalePtr,
                                     const double *stats, float *dlogits,
                                     int64_t c, int64_t ignore, int64_t i) {
  int64_t r = i / c, k = i - r * c;
  if (labels[r] == ignore) {
    dlogits[i] = 0.0f;
    return;
  }
  const double scale = *scalePtr;
  double f = scale / stats[2 * r + 1];
  double e = expClamped(double(logits[i]) - stats[2 * r]);
  dlogits[i] = k == labels[r] ? float(e * f - scale) : float(e * f);
}

/// count[0] = float(the number of labels != ignore). One thread.
PFRT_HD inline void countKept(const int64_t *labels, float *count, int64_t n,
                              int64_t ignore) {
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i)
    kept += labels[i] != ignore;
  count[0] = float(kept);
}

//===----------------------------------------------------------------------===//
// Vocabulary-parallel cross-entropy (pfrt_softmax_xent_vocab): the host row
// (src/mpi/Collectives.cpp) runs these bodies too, between its MPI
// all-reduces, where the device twin (cuda/DeviceVocabXent.cpp) runs them
// between NCCL's, so both give the same bits wherever the all-reduces do.
//===----------------------------------------------------------------------===//

/// One call's sizes: n rows of this rank's block of c classes, which
/// starts at `offset` of `classes`; mode 0 the mean over every row, 1 the
/// mean over the rows whose label is not `ignore`, 2 their sum; `code` the
/// error a bad label records (forward or gradient).
struct VocabXent {
  int64_t n, c, offset, classes, ignore;
  int32_t mode, code;
};

/// Whether row r is left out (modes 1 and 2, its label `ignore`).
PFRT_HD inline bool vxentIgnored(const VocabXent &p, const int64_t *labels,
                                 int64_t r) {
  return p.mode != 0 && labels[r] == p.ignore;
}

/// The float32 max of row r of this rank's block (rowMax: from x[0], `>`).
PFRT_HD inline void vxentRowMaxAt(const float *logits, float *rowMaxOut,
                                  const VocabXent &p, int64_t r) {
  rowMaxOut[r] = rowMax(logits + r * p.c, p.c);
}

/// Row r's label logit where this block holds it and the row is kept, else
/// 0 (the all-reduced sum then holds it once).
PFRT_HD inline double vxentTargetAt(const float *logits, const int64_t *labels,
                                    const VocabXent &p, int64_t r) {
  const int64_t l = labels[r];
  if (vxentIgnored(p, labels, r) || l < p.offset || l - p.offset >= p.c)
    return 0.0;
  return double(logits[r * p.c + (l - p.offset)]);
}

/// sums[r] = the float64 sum over row r of the block of exp(x - m), m the
/// group's max rowMax[r], in softmaxRowSum's 32 lanes and combineLanes'
/// tree (one warp on the device); with `target`, sums[n + r] =
/// vxentTargetAt.
PFRT_HD inline void vxentRowSumsAt(const float *logits, const int64_t *labels,
                                   const float *rowMax, double *sums,
                                   const VocabXent &p, int32_t target,
                                   int64_t r) {
  const float *x = logits + r * p.c;
  const double m = double(rowMax[r]);
  double acc[kRowLanes];
  for (int j = 0; j < kRowLanes; ++j)
    acc[j] = softmaxLaneSum(x, p.c, m, j);
  sums[r] = combineLanes(acc);
  if (target)
    sums[p.n + r] = vxentTargetAt(logits, labels, p, r);
}

/// loss[0] from the all-reduced statistics: the kept rows' max + log(sum)
/// - target summed in row order in float64, divided by their count (modes
/// 0 and 1; 0 / 0 = NaN when every row is ignored) or not (mode 2). The
/// first kept row whose label is outside [0, classes) is recorded under
/// p.code. One thread.
PFRT_HD inline void vxentLoss(const int64_t *labels, const float *rowMax,
                              const double *sums, float *loss,
                              const VocabXent &p, DeviceError *err) {
  double total = 0;
  int64_t kept = 0;
  for (int64_t r = 0; r < p.n; ++r) {
    if (vxentIgnored(p, labels, r))
      continue;
    if (!labelOk(labels[r], p.classes)) {
      raiseError(err, p.code, r, labels[r], p.classes, 0.0);
      break;
    }
    total += double(rowMax[r]) + log(sums[r]) - sums[p.n + r];
    ++kept;
  }
  loss[0] = float(p.mode == 2 ? total : total / double(kept));
}

/// *scale = dloss (mode 2) or dloss / the kept rows' count, and the first
/// kept row with a label outside [0, classes) recorded under p.code. One
/// thread.
PFRT_HD inline void vxentGradScale(const int64_t *labels, const float *dloss,
                                   double *scale, const VocabXent &p,
                                   DeviceError *err) {
  int64_t kept = 0;
  for (int64_t r = 0; r < p.n; ++r) {
    if (vxentIgnored(p, labels, r))
      continue;
    if (!labelOk(labels[r], p.classes)) {
      raiseError(err, p.code, r, labels[r], p.classes, 0.0);
      break;
    }
    ++kept;
  }
  *scale = p.mode == 2 ? double(dloss[0]) : double(dloss[0]) / double(kept);
}

/// Element i of dlogits [n, c] (in place over the logits too: it reads
/// only element i): zero on an ignored row, else exp(x - m) scale / sum,
/// less scale at the label's class.
PFRT_HD inline void vxentGradAt(const float *logits, const int64_t *labels,
                                const float *rowMax, const double *sums,
                                const double *scalePtr, float *dlogits,
                                const VocabXent &p, int64_t i) {
  const int64_t r = i / p.c, k = i - r * p.c;
  if (vxentIgnored(p, labels, r)) {
    dlogits[i] = 0.0f;
    return;
  }
  const double scale = *scalePtr, f = scale / sums[r];
  const double e = expClamped(double(logits[i]) - double(rowMax[r]));
  dlogits[i] = labels[r] == p.offset + k ? float(e * f - scale) : float(e * f);
}

} // namespace dev
} // namespace pfrt

#endif // PFRT_SRC_CUDA_KERNELS_XENTBODIES_H
