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
};

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
  return kReduceSum;
}

/// y[o] = the float64 sum over o's reduced extent, in the CPU kernel's
/// order: x is walked in memory order, and when the last dim is reduced each
/// contiguous run of it is summed with sumF64 before it is added.
PFRT_HD inline void reduceSumAt(const float *x, float *y, const ReducePlan &p,
                                int64_t o) {
  int64_t base = 0, rest = o;
  for (int64_t d = p.nKept - 1; d >= 0; --d) {
    int64_t e = p.keptExt[d];
    base += (rest % e) * p.keptStr[d];
    rest /= e;
  }
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

/// The CPU's softmaxRow without the stored exponentials: returns the float64
/// sum of exp(x[i] - max) (4 accumulators) and the max in *mx.
PFRT_HD inline double softmaxRowSum(const float *x, int64_t n, double *mx) {
  const double m = double(rowMax(x, n));
  double acc[4] = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int j = 0; j < 4; ++j)
      acc[j] += expClamped(double(x[i + j]) - m);
  double tail = 0;
  for (; i < n; ++i)
    tail += expClamped(double(x[i]) - m);
  *mx = m;
  return ((acc[0] + acc[2]) + (acc[1] + acc[3])) + tail;
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

} // namespace dev
} // namespace pfrt

#endif // PFRT_SRC_CUDA_DEVICEBODIES_H
