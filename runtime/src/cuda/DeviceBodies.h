//===- DeviceBodies.h - per-element bodies of the CUDA kernels --*- C++ -*-===//
//
// The arithmetic of libpfrt's CUDA kernels (Kernels.cu), one element or one
// row at a time, written once for both compilers: nvcc builds the kernels
// from these bodies, and the host compiler builds the same bodies into
// pfrt-test-cuda-bodies, which runs them in host loops against the CPU
// kernels (src/cpu). Each body repeats its CPU kernel's operations in the
// same order and precision (float32 where the CPU computes in float32,
// float64 sums with the same accumulator pattern), so on the host they give
// the CPU's bits; nvcc must build them with --fmad=false (no contraction,
// like -ffp-contract=off here) and IEEE division and square roots.
//
// Not installed; nothing here is part of the ABI.
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_CUDA_DEVICEBODIES_H
#define PFRT_SRC_CUDA_DEVICEBODIES_H

#include <math.h>
#include <stdint.h>
#ifndef __CUDA_ARCH__
#include <string.h>
#endif

#include "../common/ReduceOrder.h"

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
// Element-wise (src/cpu/Kernels.cpp)
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
// reduce_sum (pfrt_k_reduce_sum)
//===----------------------------------------------------------------------===//

/// The CPU kernel's coalesced view of x: unit dims dropped, neighbours with
/// the same flag merged, so the `r` dims alternate kept/reduced. Passed to
/// the kernel by value.
struct ReducePlan {
  int32_t r = 0;
  int32_t lastReduced = 0;
  int64_t nKept = 0, nRed = 0;
  int64_t outTotal = 0;
  // Kept dims (in order): extent and stride in x.
  int64_t keptExt[kMaxDims] = {0};
  int64_t keptStr[kMaxDims] = {0};
  // Reduced dims (in order): extent and stride in x.
  int64_t redExt[kMaxDims] = {0};
  int64_t redStr[kMaxDims] = {0};
  // How the GPU twin splits the sum (makeReducePlan), parts > 0: first
  // `parts` partial sums of each output (float64), then the outputs, each
  // adding its parts in order (reducePartsSumAt). chunk > 0: the column
  // case (nRed == 1, the last dim kept) in chunks of `chunk` rows
  // (reduceColumnChunk, the CPU's order too); chunk == 0: the last dim
  // reduced with reduced dims outside it, a part per contiguous run of
  // the last dim (the terms the CPU adds in that order).
  int64_t parts = 0;
  int64_t chunk = 0;
};

/// The most outputs for which the runs are split (more outputs keep the
/// GPU busy as they are) and the most partial sums (32 MiB of float64).
constexpr int64_t kReduceSplitOutputs = int64_t(1) << 17;
constexpr int64_t kReduceMaxParts = int64_t(1) << 22;

/// What pfrt_k_reduce_sum does for a shape (host side, shared by the
/// kernel's wrapper and the test). rank, shape and reduce have been checked.
enum ReduceKind {
  kReduceNothing = 0, // no output element
  kReduceZeros = 1,   // x is empty: every output is 0
  kReduceCopy = 2,    // nothing is summed: y = x
  kReduceSum = 3,     // reduceSumAt for each output element
};
inline ReduceKind makeReducePlan(int64_t rank, const int64_t *shape,
                                 const int8_t *reduce, ReducePlan *p) {
  int64_t total = 1, outTotal = 1;
  for (int64_t d = 0; d < rank; ++d) {
    total *= shape[d];
    if (!reduce[d])
      outTotal *= shape[d];
  }
  p->outTotal = outTotal;
  if (outTotal == 0)
    return kReduceNothing;
  if (total == 0)
    return kReduceZeros;
  int64_t ext[kMaxDims];
  bool red[kMaxDims];
  int64_t r = 0;
  for (int64_t d = 0; d < rank; ++d) {
    if (shape[d] == 1)
      continue;
    bool rd = reduce[d] != 0;
    if (r > 0 && red[r - 1] == rd) {
      ext[r - 1] *= shape[d];
    } else {
      ext[r] = shape[d];
      red[r] = rd;
      ++r;
    }
  }
  if (r == 0 || (r == 1 && !red[0]))
    return kReduceCopy;
  p->r = int32_t(r);
  p->lastReduced = red[r - 1];
  int64_t stride = 1;
  int64_t strides[kMaxDims];
  for (int64_t d = r - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= ext[d];
  }
  p->nKept = p->nRed = 0;
  for (int64_t d = 0; d < r; ++d) {
    if (red[d]) {
      p->redExt[p->nRed] = ext[d];
      p->redStr[p->nRed++] = strides[d];
    } else {
      p->keptExt[p->nKept] = ext[d];
      p->keptStr[p->nKept++] = strides[d];
    }
  }
  p->parts = p->chunk = 0;
  if (!p->lastReduced && p->nRed == 1) {
    p->chunk = kern::reduceColumnChunk(p->redExt[0], outTotal);
    if (p->chunk > 0)
      p->parts = (p->redExt[0] + p->chunk - 1) / p->chunk;
  } else if (p->lastReduced && p->nRed > 1 && outTotal < kReduceSplitOutputs) {
    int64_t runs = 1;
    for (int64_t d = 0; d + 1 < p->nRed; ++d)
      runs *= p->redExt[d];
    if (runs <= kReduceMaxParts / outTotal)
      p->parts = runs;
  }
  return kReduceSum;
}

/// Where output o's reduced extent starts in x.
PFRT_HD inline int64_t reduceBase(const ReducePlan &p, int64_t o) {
  int64_t base = 0, rest = o;
  for (int64_t d = p.nKept - 1; d >= 0; --d) {
    int64_t e = p.keptExt[d];
    base += (rest % e) * p.keptStr[d];
    rest /= e;
  }
  return base;
}

/// The column case (nRed == 1, the last dim kept) in chunks of p.chunk
/// rows (reduceColumnChunk, the CPU kernel's order): item i is chunk
/// i / outTotal of output i % outTotal, its float64 sum into part[i].
PFRT_HD inline void reduceColumnPartAt(const float *x, double *part,
                                       const ReducePlan &p, int64_t i) {
  const int64_t g = i / p.outTotal, o = i % p.outTotal, chunk = p.chunk;
  const int64_t rows = p.redExt[0], stride = p.redStr[0];
  const int64_t r1 = (g + 1) * chunk < rows ? (g + 1) * chunk : rows;
  const float *col = x + reduceBase(p, o);
  double acc = 0;
  for (int64_t r = g * chunk; r < r1; ++r)
    acc += double(col[r * stride]);
  part[i] = acc;
}

/// The last dim reduced with reduced dims outside it: item i is run
/// j = i / outTotal of output o = i % outTotal (the runs in memory order:
/// an odometer over the outer reduced dims), its sumF64 into part[i],
/// the term the CPU kernel adds for it.
PFRT_HD inline void reduceRunPartAt(const float *x, double *part,
                                    const ReducePlan &p, int64_t i) {
  const int64_t o = i % p.outTotal;
  int64_t j = i / p.outTotal, off = reduceBase(p, o);
  for (int64_t d = p.nRed - 2; d >= 0; --d) {
    const int64_t e = p.redExt[d];
    off += (j % e) * p.redStr[d];
    j /= e;
  }
  part[i] = sumF64(x + off, p.redExt[p.nRed - 1]);
}

/// y[o] = output o's `parts` partial sums added in order, from 0.
PFRT_HD inline void reducePartsSumAt(const double *part, float *y,
                                     int64_t outTotal, int64_t parts,
                                     int64_t o) {
  double acc = 0;
  for (int64_t g = 0; g < parts; ++g)
    acc += part[g * outTotal + o];
  y[o] = float(acc);
}

/// y[o] = the float64 sum over o's reduced extent, in the CPU kernel's
/// order: x is walked in memory order, and when the last dim is reduced each
/// contiguous run of it is summed with sumF64 before it is added.
PFRT_HD inline void reduceSumAt(const float *x, float *y, const ReducePlan &p,
                                int64_t o) {
  int64_t base = reduceBase(p, o);
  // The reduced dims walked as an odometer; with the last dim reduced its
  // run (stride 1) is one sumF64.
  int64_t nOuter = p.lastReduced ? p.nRed - 1 : p.nRed;
  int64_t len = p.lastReduced ? p.redExt[p.nRed - 1] : 1;
  int64_t idx[kMaxDims];
  for (int64_t d = 0; d < nOuter; ++d)
    idx[d] = 0;
  double acc = 0;
  int64_t off = base;
  for (;;) {
    if (p.lastReduced)
      acc += sumF64(x + off, len);
    else
      acc += double(x[off]);
    int64_t d = nOuter - 1;
    for (; d >= 0; --d) {
      off += p.redStr[d];
      if (++idx[d] < p.redExt[d])
        break;
      off -= p.redStr[d] * p.redExt[d];
      idx[d] = 0;
    }
    if (d < 0)
      break;
  }
  y[o] = float(acc);
}

//===----------------------------------------------------------------------===//
// Softmax cross-entropy (xentForward / xentBackward in src/cpu/Kernels.cpp)
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

/// The CPU's rowMax: 8 running maxima, then combined in order.
PFRT_HD inline float rowMax(const float *x, int64_t n) {
  float m[8];
  for (int j = 0; j < 8; ++j)
    m[j] = x[0];
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

PFRT_HD inline bool labelOk(int64_t l, int64_t c) { return l >= 0 && l < c; }

/// Row r's cross-entropy (log(sum) + max) - x[label] into rowLoss[r]; a row
/// whose label is out of range gets NaN (the single-threaded sum reports it).
PFRT_HD inline void xentRowLossAt(const float *logits, const int64_t *labels,
                                  double *rowLoss, int64_t c, int64_t r) {
  int64_t l = labels[r];
  if (!labelOk(l, c)) {
    rowLoss[r] = doubleOf(0x7ff8000000000000ull);
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
// Optimizers (src/cpu/Optim.cpp)
//===----------------------------------------------------------------------===//

/// SGD's hyper-parameters as the CPU kernel rounds them (float32).
struct SgdParams {
  float wd, mom, damp1;
  int32_t weightDecay; // weight_decay != 0
  int32_t momentum;    // momentum != 0
  int32_t nesterov;
};

inline SgdParams makeSgdParams(double momentum, double dampening,
                               double weight_decay, int32_t nesterov) {
  SgdParams q;
  q.wd = float(weight_decay);
  q.mom = float(momentum);
  q.damp1 = float(1.0 - dampening);
  q.weightDecay = weight_decay != 0.0;
  q.momentum = momentum != 0.0;
  q.nesterov = nesterov != 0;
  return q;
}

/// One element of pfrt_k_sgd; lr and step are the values *lr, *step (step
/// only read with momentum). buf is not read on the first step.
PFRT_HD inline void sgdAt(const float *p, const float *g, const float *buf,
                          float *np, float *nbuf, float lr, float step,
                          const SgdParams &q, int64_t i) {
  if (!q.momentum) {
    np[i] = q.weightDecay ? p[i] - lr * (g[i] + q.wd * p[i]) : p[i] - lr * g[i];
    return;
  }
  float gi = q.weightDecay ? g[i] + q.wd * p[i] : g[i];
  float b = step <= 1.0f ? gi : buf[i] * q.mom + q.damp1 * gi;
  nbuf[i] = b;
  gi = q.nesterov ? gi + q.mom * b : b;
  np[i] = p[i] - lr * gi;
}

/// A multi-tensor update's table, passed to its kernel by value (so a
/// captured launch keeps it): at most kMultiTensors tensors a launch, P
/// pointers each (SGD's 5, Adam's 7; Adam's table is 3.5 KB, under the
/// 4 KB of a kernel's parameters). Block b updates elements
/// [(b - firstBlock[t]) kMultiChunk, + kMultiChunk) of the tensor t with
/// firstBlock[t] <= b < firstBlock[t + 1].
constexpr int kMultiTensors = 48;
constexpr int64_t kMultiChunk = 4 * kBlock;
template <int P> struct MultiTable {
  float *ptr[kMultiTensors][P];
  int64_t n[kMultiTensors];
  int64_t firstBlock[kMultiTensors + 1];
  uint64_t clear; // bit t: zero tensor t's gradient (pointer 1) once read
  int32_t count;
};
// A launch's parameters are at most 4 KB: Adam's table and its other
// arguments (two pointers, four doubles, two ints, the error record).
static_assert(sizeof(MultiTable<7>) + 64 <= 4096,
              "a multi-tensor table must fit in a kernel's parameters");
static_assert(kMultiTensors <= 64, "the clear mask has 64 bits");

/// Adam's per-call constants, computed from *lr and *step as the CPU kernel
/// does (bias corrections in float64, then rounded to float32).
struct AdamConsts {
  float decay, wd, w1, b2, w2, bc2s, eps, negStep;
  int32_t decoupled; // decoupled && weight_decay != 0
  int32_t l2;        // !decoupled && weight_decay != 0
  int32_t lerpLow;   // w1 < 0.5f
};

/// false (and nothing computed) when bias_correction and step < 1, where
/// the CPU kernel is fatal.
PFRT_HD inline bool makeAdamConsts(float lr, float step, double beta1,
                                   double beta2, double eps,
                                   double weight_decay, int32_t decoupled,
                                   int32_t bias_correction, AdamConsts *k) {
  const double lrd = double(lr), t = double(step);
  if (bias_correction && !(t >= 1.0))
    return false;
  double stepSize = lrd, bc2s = 1.0;
  if (bias_correction) {
    stepSize = lrd / (1.0 - pow(beta1, t));
    bc2s = sqrt(1.0 - pow(beta2, t));
  }
  k->w1 = float(1.0 - beta1);
  k->b2 = float(beta2);
  k->w2 = float(1.0 - beta2);
  k->wd = float(weight_decay);
  k->decay = float(1.0 - lrd * weight_decay);
  k->l2 = !decoupled && weight_decay != 0.0;
  k->decoupled = decoupled && weight_decay != 0.0;
  k->lerpLow = k->w1 < 0.5f;
  k->bc2s = float(bc2s);
  k->eps = float(eps);
  k->negStep = float(-stepSize);
  return true;
}

/// One element of pfrt_k_adam (adamLoop).
PFRT_HD inline void adamAt(const float *p, const float *g, const float *m,
                           const float *v, float *np, float *nm, float *nv,
                           const AdamConsts &k, int64_t i) {
  float pi = k.decoupled ? p[i] * k.decay : p[i];
  float gi = k.l2 ? g[i] + k.wd * pi : g[i];
  float mi = m[i];
  float mn = k.lerpLow ? mi + k.w1 * (gi - mi) : gi - (gi - mi) * (1.0f - k.w1);
  float vn = v[i] * k.b2 + k.w2 * gi * gi;
  float denom = sqrtf(vn) / k.bc2s + k.eps;
  nm[i] = mn;
  nv[i] = vn;
  np[i] = pi + k.negStep * mn / denom;
}

//===----------------------------------------------------------------------===//
// Bit casts of floats (the exponent tricks of expFloat)
//===----------------------------------------------------------------------===//

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
// Activations (activation / activationLoop0 in src/cpu/Kernels.cpp)
//===----------------------------------------------------------------------===//

/// The CPU's expFloat: exp(x) in float32, Cody-Waite and a Taylor
/// polynomial, 2^k from the exponent bits.
PFRT_HD inline float expFloat(float x) {
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
  int32_t k = bitsOfFloat(t); // the low mantissa bits of t hold k + 2^22
  uint32_t sbits = uint32_t(k + 127 - 0x4B400000) << 23;
  return p * floatOfBits(sbits);
}

/// The CPU's phiFloat: the standard normal CDF in float32 (Numerical
/// Recipes' erfc fit).
PFRT_HD inline float phiFloat(float x) {
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

/// The CPU's tanhFast: 1 - 2 / (exp(2u) + 1), |u| clamped to 350.
PFRT_HD inline double tanhFast(double u) {
  u = u > 350.0 ? 350.0 : (u < -350.0 ? -350.0 : u);
  return 1.0 - 2.0 / (expClamped(2.0 * u) + 1.0);
}

/// out[i] = f(x[i]) (dy NULL) or f'(x[i]) dy[i] for activation `kind`
/// (0 exact GELU in float32, 1 tanh GELU, 2 tanh, 3 sigmoid in float64):
/// the CPU's expressions, operation for operation. No libm call: every
/// exponential is expFloat or expClamped. out may be x or dy (one thread
/// reads element i before writing it).
PFRT_HD inline void activationAt(int32_t kind, const float *x, const float *dy,
                                 float *out, int64_t i) {
  if (kind == 0) {
    if (!dy) {
      out[i] = x[i] * phiFloat(x[i]);
      return;
    }
    float v = x[i];
    float pdf = 0.398942280f * expFloat(-0.5f * v * v);
    out[i] = (phiFloat(v) + v * pdf) * dy[i];
    return;
  }
  const double kSqrt2OverPi = 0.79788456080286535588;
  const double xd = x[i];
  double f, df = 0.0;
  if (kind == 1) {
    double u = kSqrt2OverPi * (xd + 0.044715 * xd * xd * xd);
    double t = tanhFast(u);
    f = 0.5 * xd * (1.0 + t);
    if (dy)
      df = 0.5 * (1.0 + t) + 0.5 * xd * (1.0 - t * t) * kSqrt2OverPi *
                                 (1.0 + 3 * 0.044715 * xd * xd);
  } else if (kind == 2) {
    double t = tanhFast(xd);
    f = t;
    if (dy)
      df = 1.0 - t * t;
  } else {
    double e = expClamped(xd < -700.0 ? 700.0 : -xd);
    double sg = 1.0 / (1.0 + e);
    f = sg;
    if (dy)
      df = sg * (1.0 - sg);
  }
  out[i] = dy ? static_cast<float>(df * dy[i]) : static_cast<float>(f);
}

//===----------------------------------------------------------------------===//
// transpose (pfrt_k_transpose)
//===----------------------------------------------------------------------===//

/// y's dims with unit dims dropped and neighbours merged where they are
/// contiguous in x too: extent and stride in x of each, outermost first.
/// Passed to the kernel by value.
struct TransposePlan {
  int32_t r = 0;
  int64_t total = 0;
  int64_t ext[kMaxDims] = {0};
  int64_t istr[kMaxDims] = {0};
};

/// rank, shape and perm have been checked (perm is a permutation).
inline void makeTransposePlan(int64_t rank, const int64_t *shape,
                              const int64_t *perm, TransposePlan *p) {
  int64_t xstr[kMaxDims];
  int64_t s = 1;
  p->total = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    xstr[d] = s;
    s *= shape[d];
    p->total *= shape[d];
  }
  int32_t r = 0;
  for (int64_t j = 0; j < rank; ++j) {
    int64_t e = shape[perm[j]], st = xstr[perm[j]];
    if (e == 1)
      continue;
    if (r > 0 && p->istr[r - 1] == st * e) {
      // The previous output dim steps over exactly this one in x.
      p->ext[r - 1] *= e;
      p->istr[r - 1] = st;
      continue;
    }
    p->ext[r] = e;
    p->istr[r] = st;
    ++r;
  }
  p->r = r;
}

/// y[o] = the element of x it is a copy of.
PFRT_HD inline void transposeAt(const float *x, float *y,
                                const TransposePlan &p, int64_t o) {
  int64_t off = 0, rest = o;
  for (int32_t d = p.r - 1; d >= 0; --d) {
    off += (rest % p.ext[d]) * p.istr[d];
    rest /= p.ext[d];
  }
  y[o] = x[off];
}

//===----------------------------------------------------------------------===//
// Convolution (src/cpu/Conv.cpp): im2col, col2im, the sum over images
//===----------------------------------------------------------------------===//

/// pfrt_k_conv2d's dims (checked by the twin), and what follows from them.
struct ConvGeom {
  int64_t N, C, H, W, O, KH, KW, OH, OW, sh, sw, ph, pw, dh, dw, G;
  int64_t Cg, Og, K, P, HW;
  int32_t direct; // 1x1, stride 1, no padding: the column matrix is x
};

inline ConvGeom makeConvGeom(const int64_t *dims) {
  ConvGeom d;
  d.N = dims[0], d.C = dims[1], d.H = dims[2], d.W = dims[3], d.O = dims[4];
  d.KH = dims[5], d.KW = dims[6], d.OH = dims[7], d.OW = dims[8];
  d.sh = dims[9], d.sw = dims[10], d.ph = dims[11], d.pw = dims[12];
  d.dh = dims[13], d.dw = dims[14], d.G = dims[15];
  d.Cg = d.G > 0 ? d.C / d.G : 0;
  d.Og = d.G > 0 ? d.O / d.G : 0;
  d.K = d.Cg * d.KH * d.KW;
  d.P = d.OH * d.OW;
  d.HW = d.H * d.W;
  d.direct = d.KH == 1 && d.KW == 1 && d.sh == 1 && d.sw == 1 && d.ph == 0 &&
             d.pw == 0;
  return d;
}

/// The column matrices of a run of images, one thread per element:
///   col[n][(c*KH + kh)*KW + kw][oh*OW + ow]
///     = x[n][c][oh*sh - ph + kh*dh][ow*sw - pw + kw*dw]  (0 outside),
/// c over all C channels, so image n's group g is the [K][P] matrix at
/// (n*G + g)*K*P, the CPU's col for that image and group. i < nb*C*KH*KW*P.
PFRT_HD inline void im2colAt(const float *x, float *col, const ConvGeom &d,
                             int64_t i) {
  int64_t p = i % d.P, r = i / d.P;
  int64_t kw = r % d.KW;
  r /= d.KW;
  int64_t kh = r % d.KH;
  r /= d.KH; // r = n*C + c
  int64_t oh = p / d.OW, ow = p - oh * d.OW;
  int64_t ih = oh * d.sh - d.ph + kh * d.dh;
  int64_t iw = ow * d.sw - d.pw + kw * d.dw;
  col[i] = (ih >= 0 && ih < d.H && iw >= 0 && iw < d.W)
               ? x[(r * d.H + ih) * d.W + iw]
               : 0.0f;
}

/// dx[n][c][ih][iw] = col2im of col (laid out as im2colAt writes it), one
/// thread per input element gathering its contributions: 0.0f, then + each
/// col element that reads it, in the CPU's col2imAdd order (kh, then kw).
/// i < nb*C*H*W.
PFRT_HD inline void col2imAt(const float *col, float *dx, const ConvGeom &d,
                             int64_t i) {
  int64_t iw = i % d.W, t = i / d.W;
  int64_t ih = t % d.H;
  t /= d.H; // t = n*C + c
  const float *rows = col + t * d.KH * d.KW * d.P;
  float acc = 0.0f;
  for (int64_t kh = 0; kh < d.KH; ++kh) {
    int64_t a = ih + d.ph - kh * d.dh;
    if (a < 0 || a % d.sh != 0 || a / d.sh >= d.OH)
      continue;
    int64_t oh = a / d.sh;
    for (int64_t kw = 0; kw < d.KW; ++kw) {
      int64_t b = iw + d.pw - kw * d.dw;
      if (b < 0 || b % d.sw != 0 || b / d.sw >= d.OW)
        continue;
      acc += rows[(kh * d.KW + kw) * d.P + oh * d.OW + b / d.sw];
    }
  }
  dx[i] = acc;
}

/// The weight gradient summed over a run of images in float32, in image
/// order, as the CPU's SGEMMs accumulate it (beta = 1 after the first
/// image): part[n*stride + i] is image n's dy_g col_n^T; the run's first
/// image starts the sum when `first` (the batch's first image), else it is
/// added to dw[i].
PFRT_HD inline void sumImagesAt(const float *part, float *dw, int64_t nb,
                                int64_t stride, int32_t first, int64_t i) {
  float acc = first ? part[i] : dw[i] + part[i];
  for (int64_t n = 1; n < nb; ++n)
    acc = acc + part[n * stride + i];
  dw[i] = acc;
}

//===----------------------------------------------------------------------===//
// Pooling (src/cpu/Pool.cpp)
//===----------------------------------------------------------------------===//

/// The pools' dims (checked by the twin) and what follows from them.
struct PoolGeom {
  int64_t N, C, H, W, OH, OW, KH, KW, sh, sw, ph, pw;
  int64_t planes, HW, P;
  int32_t overlap; // windows overlap: max-pool gradients sum in float64
};

inline PoolGeom makePoolGeom(const int64_t *dims) {
  PoolGeom d;
  d.N = dims[0], d.C = dims[1], d.H = dims[2], d.W = dims[3];
  d.OH = dims[4], d.OW = dims[5], d.KH = dims[6], d.KW = dims[7];
  d.sh = dims[8], d.sw = dims[9], d.ph = dims[10], d.pw = dims[11];
  d.planes = d.N * d.C;
  d.HW = d.H * d.W;
  d.P = d.OH * d.OW;
  d.overlap = d.sh < d.KH || d.sw < d.KW;
  return d;
}

/// The output windows that contain input row (or column) i: [*lo, *hi).
PFRT_HD inline void windowsOf(int64_t i, int64_t pad, int64_t k, int64_t s,
                              int64_t outs, int64_t *lo, int64_t *hi) {
  int64_t first = i + pad - k + 1; // oh*s >= first
  *lo = first <= 0 ? 0 : (first + s - 1) / s;
  int64_t last = (i + pad) / s + 1; // oh*s <= i + pad
  *hi = last < outs ? last : outs;
}

/// y[o] = the window's maximum, scanned in row-major order as maxPoolFwd
/// does: padding never wins, a NaN wins and stays. o < planes*P.
PFRT_HD inline void maxPoolAt(const float *x, float *y, const PoolGeom &d,
                              int64_t o) {
  int64_t pl = o / d.P, q = o - pl * d.P;
  int64_t oh = q / d.OW, ow = q - oh * d.OW;
  const float *plane = x + pl * d.HW;
  float m = negInf();
  for (int64_t kh = 0; kh < d.KH; ++kh) {
    int64_t ih = oh * d.sh - d.ph + kh;
    if (ih < 0 || ih >= d.H)
      continue;
    for (int64_t kw = 0; kw < d.KW; ++kw) {
      int64_t iw = ow * d.sw - d.pw + kw;
      if (iw < 0 || iw >= d.W)
        continue;
      float v = plane[ih * d.W + iw];
      m = ((v > m) | (v != v)) ? v : m;
    }
  }
  y[o] = m;
}

/// arg[o] = the flat index in its plane of window o's FIRST maximum in
/// row-major scan order (maxPoolBwd's rule: starts at the window's first
/// valid element, so an all -inf window picks it; the first NaN wins).
PFRT_HD inline void maxPoolArgAt(const float *x, int32_t *arg,
                                 const PoolGeom &d, int64_t o) {
  int64_t pl = o / d.P, q = o - pl * d.P;
  int64_t oh = q / d.OW, ow = q - oh * d.OW;
  const float *plane = x + pl * d.HW;
  int64_t ih0 = oh * d.sh - d.ph > 0 ? oh * d.sh - d.ph : 0;
  int64_t iw0 = ow * d.sw - d.pw > 0 ? ow * d.sw - d.pw : 0;
  float best = negInf();
  int64_t a = ih0 * d.W + iw0;
  for (int64_t kh = 0; kh < d.KH; ++kh) {
    int64_t ih = oh * d.sh - d.ph + kh;
    if (ih < 0 || ih >= d.H)
      continue;
    for (int64_t kw = 0; kw < d.KW; ++kw) {
      int64_t iw = ow * d.sw - d.pw + kw;
      if (iw < 0 || iw >= d.W)
        continue;
      float v = plane[ih * d.W + iw];
      bool take = (v > best) | ((v != v) & (best == best));
      best = take ? v : best;
      a = take ? ih * d.W + iw : a;
    }
  }
  arg[o] = int32_t(a);
}

/// dx[i] = the dy of every window whose arg-max is input i, gathered in
/// the CPU's scatter order (windows in row-major order): summed in float64
/// when windows overlap, else the one window's dy (0 if none).
/// i < planes*HW.
PFRT_HD inline void maxPoolGradAt(const int32_t *arg, const float *dy,
                                  float *dx, const PoolGeom &d, int64_t i) {
  int64_t pl = i / d.HW, q = i - pl * d.HW;
  int64_t ih = q / d.W, iw = q - ih * d.W;
  int64_t ohLo, ohHi, owLo, owHi;
  windowsOf(ih, d.ph, d.KH, d.sh, d.OH, &ohLo, &ohHi);
  windowsOf(iw, d.pw, d.KW, d.sw, d.OW, &owLo, &owHi);
  const int32_t *argp = arg + pl * d.P;
  const float *dyp = dy + pl * d.P;
  if (d.overlap) {
    double acc = 0.0;
    for (int64_t oh = ohLo; oh < ohHi; ++oh)
      for (int64_t ow = owLo; ow < owHi; ++ow)
        if (argp[oh * d.OW + ow] == int32_t(q))
          acc += double(dyp[oh * d.OW + ow]);
    dx[i] = float(acc);
    return;
  }
  float v = 0.0f;
  for (int64_t oh = ohLo; oh < ohHi; ++oh)
    for (int64_t ow = owLo; ow < owHi; ++ow)
      if (argp[oh * d.OW + ow] == int32_t(q))
        v = dyp[oh * d.OW + ow];
  dx[i] = v;
}

/// y[o] = the float64 window sum over KH*KW (count_include_pad), summed
/// in row-major order. o < planes*P.
PFRT_HD inline void avgPoolAt(const float *x, float *y, const PoolGeom &d,
                              int64_t o) {
  int64_t pl = o / d.P, q = o - pl * d.P;
  int64_t oh = q / d.OW, ow = q - oh * d.OW;
  const float *plane = x + pl * d.HW;
  const double div = double(d.KH * d.KW);
  double acc = 0.0;
  for (int64_t kh = 0; kh < d.KH; ++kh) {
    int64_t ih = oh * d.sh - d.ph + kh;
    if (ih < 0 || ih >= d.H)
      continue;
    for (int64_t kw = 0; kw < d.KW; ++kw) {
      int64_t iw = ow * d.sw - d.pw + kw;
      if (iw < 0 || iw >= d.W)
        continue;
      acc += double(plane[ih * d.W + iw]);
    }
  }
  y[o] = float(acc / div);
}

/// dx[i] = the float64 sum of dy / (KH*KW) over the windows containing
/// input i, in avgPoolBwd's scatter order: windows by row ascending, and
/// within a row by kernel column ascending, i.e. window column descending.
PFRT_HD inline void avgPoolGradAt(const float *dy, float *dx, const PoolGeom &d,
                                  int64_t i) {
  int64_t pl = i / d.HW, q = i - pl * d.HW;
  int64_t ih = q / d.W, iw = q - ih * d.W;
  int64_t ohLo, ohHi, owLo, owHi;
  windowsOf(ih, d.ph, d.KH, d.sh, d.OH, &ohLo, &ohHi);
  windowsOf(iw, d.pw, d.KW, d.sw, d.OW, &owLo, &owHi);
  const float *dyp = dy + pl * d.P;
  const double div = double(d.KH * d.KW);
  double acc = 0.0;
  for (int64_t oh = ohLo; oh < ohHi; ++oh)
    for (int64_t ow = owHi - 1; ow >= owLo; --ow)
      acc += double(dyp[oh * d.OW + ow]) / div;
  dx[i] = float(acc);
}

/// y[p] = the float64 mean of plane p (planeMeans).
PFRT_HD inline void globalAvgPoolAt(const float *x, float *y, int64_t hw,
                                    int64_t p) {
  y[p] = float(sumF64(x + p * hw, hw) / double(hw));
}

/// dx[i] = dy[plane] / hw, rounded once.
PFRT_HD inline void globalAvgPoolGradAt(const float *dy, float *dx, int64_t hw,
                                        int64_t i) {
  dx[i] = float(double(dy[i / hw]) / double(hw));
}

//===----------------------------------------------------------------------===//
// Batch norm (src/cpu/Norm.cpp)
//===----------------------------------------------------------------------===//

/// Per-channel coefficients of the element-wise passes, in device scratch
/// (4 doubles a channel): y = (x - mean) a + b, or
/// dx = a ((dy - mdy) - (x - mean) k2).
enum : int { kBnMean = 0, kBnA = 1, kBnB = 2, kBnMdy = 2, kBnK2 = 3 };

/// Sums of one run of hw values (row r, channel j: q = r*c + j) as the
/// CPU's runSums forms them (4 accumulators, the tail in the first, shift
/// k = the channel's first value), before they are added to the channel's
/// totals: runs[4q + 0..3] = sum(x - k), sum((x - k)^2), sum(dy),
/// sum(dy (x - k)) (the last two only when dy != NULL). Used for hw > 1.
PFRT_HD inline void bnRunSumsAt(const float *x, const float *dy, double *runs,
                                int64_t c, int64_t hw, int64_t q) {
  const int64_t j = q % c;
  const double k = double(x[j * hw]);
  const float *xr = x + q * hw;
  const float *gr = dy ? dy + q * hw : nullptr;
  double a1[4] = {0, 0, 0, 0}, a2[4] = {0, 0, 0, 0};
  double b1[4] = {0, 0, 0, 0}, b2[4] = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 4 <= hw; i += 4)
    for (int jj = 0; jj < 4; ++jj) {
      double dd = double(xr[i + jj]) - k;
      a1[jj] += dd;
      a2[jj] += dd * dd;
      if (gr) {
        double g = double(gr[i + jj]);
        b1[jj] += g;
        b2[jj] += g * dd;
      }
    }
  for (; i < hw; ++i) {
    double dd = double(xr[i]) - k;
    a1[0] += dd;
    a2[0] += dd * dd;
    if (gr) {
      double g = double(gr[i]);
      b1[0] += g;
      b2[0] += g * dd;
    }
  }
  runs[4 * q] = (a1[0] + a1[2]) + (a1[1] + a1[3]);
  runs[4 * q + 1] = (a2[0] + a2[2]) + (a2[1] + a2[3]);
  runs[4 * q + 2] = gr ? (b1[0] + b1[2]) + (b1[1] + b1[3]) : 0.0;
  runs[4 * q + 3] = gr ? (b2[0] + b2[2]) + (b2[1] + b2[3]) : 0.0;
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
// sub, div, masked fill (src/cpu/Tensor.cpp), softmax (src/cpu/Kernels.cpp)
//===----------------------------------------------------------------------===//

PFRT_HD inline void subAt(const float *a, const float *b, float *out,
                          int64_t i) {
  out[i] = a[i] - b[i];
}

PFRT_HD inline void divAt(const float *a, const float *b, float *out,
                          int64_t i) {
  out[i] = a[i] / b[i];
}

/// y[i] = mask[i] != 0 ? v : x[i]; the mask is int64 when maskI64, else
/// float. v = float(value), rounded once on the host.
PFRT_HD inline void maskedFillAt(const float *x, const void *mask, float *y,
                                 int32_t maskI64, float v, int64_t i) {
  bool set = maskI64 ? static_cast<const int64_t *>(mask)[i] != 0
                     : static_cast<const float *>(mask)[i] != 0;
  y[i] = set ? v : x[i];
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
  double m = doubleOf(0xfff0000000000000ull), sum = 0.0;
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

//===----------------------------------------------------------------------===//
// Layer norm (src/cpu/Kernels.cpp)
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

//===----------------------------------------------------------------------===//
// Strided element copies: broadcast (src/cpu/Tensor.cpp), pfrt_copy_box
// (src/mpi/Boxing.cpp)
//===----------------------------------------------------------------------===//

/// Element o of a box of extents ext[0..r) (row-major) is element
/// sBase + sum(i_d sstr[d]) of the source and dBase + sum(i_d dstr[d]) of
/// the destination. Passed to the kernels by value.
struct BoxMap {
  int32_t r = 0;
  int64_t total = 0;
  int64_t sBase = 0, dBase = 0;
  int64_t ext[kMaxDims] = {0};
  int64_t sstr[kMaxDims] = {0};
  int64_t dstr[kMaxDims] = {0};
};

PFRT_HD inline void boxOffsets(const BoxMap &m, int64_t o, int64_t *s,
                               int64_t *d) {
  int64_t so = m.sBase, dof = m.dBase, rest = o;
  for (int32_t k = m.r - 1; k >= 0; --k) {
    int64_t i = rest % m.ext[k];
    rest /= m.ext[k];
    so += i * m.sstr[k];
    dof += i * m.dstr[k];
  }
  *s = so;
  *d = dof;
}

/// Copies element o of the box (4- or 8-byte elements, their bits).
PFRT_HD inline void copyElemAt(const void *src, void *dst, const BoxMap &m,
                               int32_t es, int64_t o) {
  int64_t s, d;
  boxOffsets(m, o, &s, &d);
  if (es == 8)
    static_cast<uint64_t *>(dst)[d] = static_cast<const uint64_t *>(src)[s];
  else
    static_cast<uint32_t *>(dst)[d] = static_cast<const uint32_t *>(src)[s];
}

/// pfrt_k_broadcast's map (shapes checked): y = out_shape contiguous, x
/// read with stride 0 on the repeated axes.
inline void makeBroadcastMap(int64_t rank, const int64_t *inShape,
                             const int64_t *outShape, BoxMap *m) {
  int64_t s = 1, t = 1;
  m->r = int32_t(rank);
  m->total = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    m->ext[d] = outShape[d];
    m->sstr[d] = inShape[d] == 1 && outShape[d] != 1 ? 0 : s;
    m->dstr[d] = t;
    s *= inShape[d];
    t *= outShape[d];
    m->total *= outShape[d];
  }
}

/// pfrt_copy_box's map (arguments checked; offsets NULL = zeros).
inline void makeCopyBoxMap(int64_t ndim, const int64_t *srcShape,
                           const int64_t *srcOffset, const int64_t *dstShape,
                           const int64_t *dstOffset, const int64_t *sizes,
                           BoxMap *m) {
  int64_t ss = 1, ds = 1;
  m->r = int32_t(ndim);
  m->total = 1;
  for (int64_t d = ndim - 1; d >= 0; --d) {
    m->ext[d] = sizes[d];
    m->sstr[d] = ss;
    m->dstr[d] = ds;
    m->sBase += (srcOffset ? srcOffset[d] : 0) * ss;
    m->dBase += (dstOffset ? dstOffset[d] : 0) * ds;
    ss *= srcShape[d];
    ds *= dstShape[d];
    m->total *= sizes[d];
  }
}

//===----------------------------------------------------------------------===//
// Embedding (embeddingRows / embeddingGradRows in src/cpu/Kernels.cpp)
//===----------------------------------------------------------------------===//

/// The first id (in order) outside [0, vocab) is recorded. One thread.
PFRT_HD inline void embeddingCheckIds(const int64_t *ids, int64_t n,
                                      int64_t vocab, int32_t code,
                                      DeviceError *err) {
  for (int64_t i = 0; i < n; ++i)
    if (ids[i] < 0 || ids[i] >= vocab) {
      raiseError(err, code, i, ids[i], vocab, 0.0);
      return;
    }
}

/// Element i of y [n, d]: row ids[r] - row0 of the table's v rows, zeros
/// for an id outside them.
PFRT_HD inline void embeddingAt(const float *table, const int64_t *ids,
                                float *y, int64_t v, int64_t d, int64_t row0,
                                int64_t i) {
  int64_t r = i / d, k = i - r * d;
  int64_t row = ids[r] - row0;
  y[i] = row >= 0 && row < v ? table[row * d + k] : 0.0f;
}

/// The positions of each of the v rows' ids, in increasing order: row j's
/// are pos[start[j] .. start[j + 1]) (start has v + 1 entries, cursor v).
/// One thread, so the gradient needs no atomics.
PFRT_HD inline void embeddingIndex(const int64_t *ids, int64_t n, int64_t v,
                                   int64_t row0, int64_t *start,
                                   int64_t *cursor, int64_t *pos) {
  for (int64_t j = 0; j <= v; ++j)
    start[j] = 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t row = ids[i] - row0;
    if (row >= 0 && row < v)
      ++start[row + 1];
  }
  for (int64_t j = 0; j < v; ++j) {
    start[j + 1] += start[j];
    cursor[j] = start[j];
  }
  for (int64_t i = 0; i < n; ++i) {
    int64_t row = ids[i] - row0;
    if (row >= 0 && row < v)
      pos[cursor[row]++] = i;
  }
}

/// Element i of dtable [v, d]: 0 plus the dy rows of its ids in position
/// order, in float32, as the CPU accumulates them.
PFRT_HD inline void embeddingGradAt(const int64_t *start, const int64_t *pos,
                                    const float *dy, float *dtable, int64_t d,
                                    int64_t i) {
  int64_t row = i / d, k = i - row * d;
  float acc = 0.0f;
  for (int64_t q = start[row]; q < start[row + 1]; ++q)
    acc += dy[pos[q] * d + k];
  dtable[i] = acc;
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
// Dropout (pfrt_k_dropout in src/common/Inputs.cpp; Philox4x32-10 and the
// uniform initialiser of src/common/Random.cpp)
//===----------------------------------------------------------------------===//

/// pfrt_stream_for_step: FNV-1a over the step's 8 bytes.
PFRT_HD inline uint64_t streamForStep(uint64_t stream, uint64_t step) {
  uint64_t h = stream;
  for (int j = 0; j < 8; ++j)
    h = (h ^ ((step >> (8 * j)) & 0xff)) * 0x100000001b3ull;
  return h;
}

/// The first word of Philox4x32-10's block for counter (c0, c1, c2, c3)
/// under key (k0, k1) (Random.cpp's philox, round for round).
PFRT_HD inline uint32_t philoxFirst(uint32_t c0, uint32_t c1, uint32_t c2,
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
  return c0;
}

/// The uniform initialiser's value in [0, 1) at logical index li of
/// (seed, stream): float(0 + 1 * (x0 + 0.5) 2^-32).
PFRT_HD inline float uniformAt(uint64_t seed, uint64_t stream, int64_t li) {
  uint64_t u = uint64_t(li);
  uint32_t x0 =
      philoxFirst(uint32_t(u), uint32_t(u >> 32), uint32_t(stream),
                  uint32_t(stream >> 32), uint32_t(seed), uint32_t(seed >> 32));
  double span = 1.0 - 0.0;
  double unit = (double(x0) + 0.5) * 2.3283064365386962890625e-10; // 2^-32
  return float(0.0 + span * unit);
}

/// What a dropout call fixes on the host; the step is read at run time.
struct DropoutParams {
  uint64_t seed = 0, stream = 0;
  int64_t microbatch = 0;
  float scale = 0.0f, threshold = 0.0f; // float(1 / (1 - p)) or 0, float(p)
};

/// The sub-stream of a step and micro-batch (pfrt_k_dropout's).
PFRT_HD inline uint64_t dropoutStream(const DropoutParams &q, int64_t step) {
  return streamForStep(streamForStep(q.stream, uint64_t(step)),
                       uint64_t(q.microbatch));
}

/// The shard's map to logical indices: local element o (row-major over the
/// shard's shape) is logical element sBase + sum(i_d sstr[d]); dBase and
/// dstr are unused.
inline void makeShardMap(int64_t ndim, const int64_t *logical,
                         const int64_t *offset, const int64_t *shape,
                         BoxMap *m) {
  int64_t ls = 1;
  m->r = int32_t(ndim);
  m->total = 1;
  for (int64_t d = ndim - 1; d >= 0; --d) {
    m->ext[d] = shape ? shape[d] : logical[d];
    m->sstr[d] = ls;
    m->dstr[d] = 0;
    m->sBase += (offset ? offset[d] : 0) * ls;
    ls *= logical[d];
    m->total *= m->ext[d];
  }
}

/// y[i] = u >= threshold ? x[i] * scale : 0, u the uniform value at the
/// element's logical index on the step's sub-stream.
PFRT_HD inline void dropoutAt(const float *x, float *y, const DropoutParams &q,
                              const BoxMap &m, uint64_t sub, int64_t i) {
  int64_t li, unused;
  boxOffsets(m, i, &li, &unused);
  float u = uniformAt(q.seed, sub, li);
  y[i] = u >= q.threshold ? x[i] * q.scale : 0.0f;
}

} // namespace dev
} // namespace pfrt

#endif // PFRT_SRC_CUDA_DEVICEBODIES_H
