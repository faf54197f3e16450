//===- Kernels.cu - libpfrt's CUDA kernels (the device twins' bodies) -----===//
//
// Compiled by nvcc at build time into a fatbin (sm_90 SASS and compute_90
// PTX) that libpfrt embeds and loads with cuModuleLoadData; no CUDA runtime
// library is involved. Every kernel is `extern "C"` (looked up by name
// through ../Module.h's table), launched with kBlock threads a block on the
// compute stream, and loops grid-stride over its elements or rows, so any
// grid size covers any n. The arithmetic is the family bodies'
// (DeviceBodies.h), built with --fmad=false. No atomics: every output
// element is written by one thread, and every sum has a fixed order. The
// emulation (../emulation/FakeKernels.cpp) builds this file for the host.
//
//===----------------------------------------------------------------------===//

#include "DeviceBodies.h"

using namespace pfrt::dev;

namespace {
__device__ inline int64_t firstIndex() {
  return int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline int64_t gridStride() {
  return int64_t(gridDim.x) * blockDim.x;
}

/// The elements [begin, end) of tensor `tensor` of a multi-tensor table
/// that this block updates, and whether it clears that tensor's gradient.
struct MultiRange {
  int tensor;
  int64_t begin, end;
  bool clear;
};
template <int P>
__device__ inline MultiRange multiRange(const MultiTable<P> &t) {
  const int64_t b = blockIdx.x;
  int j = 0;
  while (j + 1 < t.count && t.firstBlock[j + 1] <= b)
    ++j;
  const int64_t begin = (b - t.firstBlock[j]) * kMultiChunk;
  const int64_t end =
      begin + kMultiChunk < t.n[j] ? begin + kMultiChunk : t.n[j];
  return {j, begin, end, bool((t.clear >> j) & 1)};
}

/// Adam's constants for this block, derived once by its first thread
/// (float64 bias corrections) into shared `k`; `*ok` false (and block 0
/// records the error) with bias correction and step < 1.
__device__ inline void adamBlockConsts(const float *lr, const float *step,
                                       double beta1, double beta2, double eps,
                                       double weight_decay, int32_t decoupled,
                                       int32_t bias_correction,
                                       DeviceError *err, AdamConsts *k,
                                       int *ok) {
  if (threadIdx.x == 0) {
    float t = *step;
    *ok = makeAdamConsts(*lr, t, beta1, beta2, eps, weight_decay, decoupled,
                         bias_correction, k);
    if (!*ok && blockIdx.x == 0)
      raiseError(err, kErrAdamStep, 0, 0, 0, double(t));
  }
  __syncthreads();
}
} // namespace

#define PFRT_FOR_EACH(i, n)                                                    \
  for (int64_t i = firstIndex(); i < (n); i += gridStride())

#ifdef __CUDA_ARCH__
namespace {
/// Row x[0..n)'s max (rowMax's: from x[0], `>`) and sum of exp(x - max)
/// by one warp: lane `lane` sums its interleaved lane (softmaxLaneSum),
/// the lanes combine by shuffles in combineLanes' tree. Lane 0 gets the
/// sum (the other lanes partial sums); every lane gets the max.
__device__ inline float warpRowMax(const float *x, int64_t n, int lane) {
  float m = x[0];
  for (int64_t i = lane; i < n; i += kRowLanes)
    m = x[i] > m ? x[i] : m;
  for (int off = kRowLanes / 2; off >= 1; off /= 2) {
    float o = __shfl_xor_sync(0xffffffffu, m, off);
    m = o > m ? o : m;
  }
  return m;
}

/// Lane `lane`'s sum of exp(x - m) combined over the warp (lane 0's).
__device__ inline double warpLaneSum(const float *x, int64_t n, double m,
                                     int lane) {
  double v = softmaxLaneSum(x, n, m, lane);
  for (int off = kRowLanes / 2; off >= 1; off /= 2)
    v += __shfl_down_sync(0xffffffffu, v, off);
  return v;
}

__device__ inline double warpSoftmaxRowSum(const float *x, int64_t n, int lane,
                                           double *mx) {
  float m = warpRowMax(x, n, lane);
  *mx = double(m);
  return warpLaneSum(x, n, double(m), lane);
}

/// Row r's cross-entropy by one warp into rowLoss[r] (xentRowLossAt's
/// arithmetic; NaN for an out-of-range label).
__device__ inline void warpXentRowLoss(const float *logits,
                                       const int64_t *labels, double *rowLoss,
                                       int64_t c, int64_t r, int lane) {
  int64_t l = labels[r];
  if (!labelOk(l, c)) {
    if (lane == 0)
      rowLoss[r] = bitCast<double>(0x7ff8000000000000ull);
    return;
  }
  const float *x = logits + r * c;
  double mx;
  double s = warpSoftmaxRowSum(x, c, lane, &mx);
  if (lane == 0)
    rowLoss[r] = (log(s) + mx) - double(x[l]);
}
} // namespace

/// Warp-uniform loop over rows: one warp a row (blockDim.x is a multiple
/// of kRowLanes).
#define PFRT_FOR_EACH_ROW(r, lane, n)                                          \
  const int lane = int(threadIdx.x) % kRowLanes;                               \
  for (int64_t r = firstIndex() / kRowLanes; r < (n);                          \
       r += gridStride() / kRowLanes)
#endif

extern "C" {

__global__ void pfrt_cuda_relu(const float *x, float *y, int64_t n) {
  PFRT_FOR_EACH(i, n) reluAt(x, y, i);
}

__global__ void pfrt_cuda_relu_grad(const float *y, const float *dy, float *dx,
                                    int64_t n) {
  PFRT_FOR_EACH(i, n) reluGradAt(y, dy, dx, i);
}

__global__ void pfrt_cuda_add(const float *a, const float *b, float *out,
                              int64_t n) {
  PFRT_FOR_EACH(i, n) addAt(a, b, out, i);
}

__global__ void pfrt_cuda_mul(const float *a, const float *b, float *out,
                              int64_t n) {
  PFRT_FOR_EACH(i, n) mulAt(a, b, out, i);
}

__global__ void pfrt_cuda_scale(const float *x, float *y, float f, int64_t n) {
  PFRT_FOR_EACH(i, n) scaleAt(x, y, f, i);
}

__global__ void pfrt_cuda_copy(const float *x, float *y, int64_t n) {
  PFRT_FOR_EACH(i, n) copyAt(x, y, i);
}

__global__ void pfrt_cuda_fill(float *y, float f, int64_t n) {
  PFRT_FOR_EACH(i, n) fillAt(y, f, i);
}

__global__ void pfrt_cuda_split_tf32(const float *x, float *big, float *small,
                                     int64_t n) {
  PFRT_FOR_EACH(i, n) splitTF32At(x, big, small, i);
}

__global__ void pfrt_cuda_bias_add(const float *x, const float *b, float *y,
                                   int64_t c, int64_t inner, int32_t relu,
                                   int64_t n) {
  PFRT_FOR_EACH(i, n) biasAddAt(x, b, y, c, inner, relu, i);
}

__global__ void pfrt_cuda_bias_rows(const float *bias, float *c, int64_t cols,
                                    int64_t n) {
  PFRT_FOR_EACH(i, n) biasRowsAt(bias, c, cols, i);
}

/// One thread per output element, summing its reduced extent in order.
__global__ void pfrt_cuda_reduce_sum(const float *x, float *y, ReducePlan p) {
  PFRT_FOR_EACH(o, p.outTotal) reduceSumAt(x, y, p, o);
}

/// A split sum (ReducePlan::parts): one thread per (part, output), a
/// column chunk or a run of the last dim, then one per output adding its
/// parts in order.
__global__ void pfrt_cuda_reduce_column_part(const float *x, double *part,
                                             ReducePlan p, int64_t n) {
  PFRT_FOR_EACH(i, n) reduceColumnPartAt(x, part, p, i);
}

__global__ void pfrt_cuda_reduce_run_part(const float *x, double *part,
                                          ReducePlan p, int64_t n) {
  PFRT_FOR_EACH(i, n) reduceRunPartAt(x, part, p, i);
}

__global__ void pfrt_cuda_reduce_parts_sum(const double *part, float *y,
                                           int64_t outTotal, int64_t parts) {
  PFRT_FOR_EACH(o, outTotal) reducePartsSumAt(part, y, outTotal, parts, o);
}

/// One warp per row (launched over n * kRowLanes threads): the row's loss
/// into rowLoss; the emulation's host build runs the row on its lane 0.
__global__ void pfrt_cuda_xent_rows(const float *logits, const int64_t *labels,
                                    double *rowLoss, int64_t n, int64_t c) {
#ifdef __CUDA_ARCH__
  PFRT_FOR_EACH_ROW(r, lane, n)
  warpXentRowLoss(logits, labels, rowLoss, c, r, lane);
#else
  PFRT_FOR_EACH(t, n * kRowLanes)
  if (t % kRowLanes == 0)
    xentRowLossAt(logits, labels, rowLoss, c, t / kRowLanes);
#endif
}

/// One block (launched with kBlock threads): the mean of the rows in row
/// order, and the label check. Its threads stage a chunk of row losses and
/// label checks in shared memory; thread 0 sums it in order (xentTotal's
/// arithmetic). The emulation's host build runs xentTotal on thread 0.
__global__ void pfrt_cuda_xent_total(const double *rowLoss,
                                     const int64_t *labels, float *loss,
                                     int64_t n, int64_t c, DeviceError *err) {
#ifdef __CUDA_ARCH__
  __shared__ double vals[kBlock];
  __shared__ int ok[kBlock];
  double total = 0;
  bool stopped = false;
  for (int64_t base = 0; base < n; base += kBlock) {
    int64_t r = base + threadIdx.x;
    if (r < n) {
      vals[threadIdx.x] = rowLoss[r];
      ok[threadIdx.x] = labelOk(labels[r], c);
    }
    __syncthreads();
    if (threadIdx.x == 0 && !stopped) {
      int64_t m = n - base < kBlock ? n - base : kBlock;
      for (int64_t k = 0; k < m; ++k) {
        if (!ok[k]) {
          raiseError(err, kErrXentLabel, base + k, labels[base + k], c, 0.0);
          stopped = true;
          break;
        }
        total += vals[k];
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0)
    loss[0] = float(total / double(n));
#else
  if (blockIdx.x == 0 && threadIdx.x == 0)
    xentTotal(rowLoss, labels, loss, n, c, err);
#endif
}

/// One block (kBlock threads): the gradient's label check, the first bad
/// row in order (each thread the first of its rows, then the least).
__global__ void pfrt_cuda_xent_check_labels(const int64_t *labels, int64_t n,
                                            int64_t c, DeviceError *err) {
#ifdef __CUDA_ARCH__
  __shared__ int64_t first[kBlock];
  int64_t mine = n;
  for (int64_t r = threadIdx.x; r < n; r += kBlock)
    if (!labelOk(labels[r], c)) {
      mine = r;
      break;
    }
  first[threadIdx.x] = mine;
  __syncthreads();
  if (threadIdx.x == 0) {
    int64_t r = n;
    for (int k = 0; k < kBlock; ++k)
      r = first[k] < r ? first[k] : r;
    if (r < n)
      raiseError(err, kErrXentGradLabel, r, labels[r], c, 0.0);
  }
#else
  if (blockIdx.x == 0 && threadIdx.x == 0)
    xentCheckLabels(labels, n, c, kErrXentGradLabel, err);
#endif
}

/// One warp per row (n * kRowLanes threads): max and sum of exponentials.
__global__ void pfrt_cuda_xent_stats(const float *logits, double *stats,
                                     int64_t n, int64_t c) {
#ifdef __CUDA_ARCH__
  PFRT_FOR_EACH_ROW(r, lane, n) {
    double mx;
    double s = warpSoftmaxRowSum(logits + r * c, c, lane, &mx);
    if (lane == 0) {
      stats[2 * r] = mx;
      stats[2 * r + 1] = s;
    }
  }
#else
  PFRT_FOR_EACH(t, n * kRowLanes)
  if (t % kRowLanes == 0)
    xentRowStatsAt(logits, stats, c, t / kRowLanes);
#endif
}

/// One thread per element of [n, c].
__global__ void pfrt_cuda_xent_grad(const float *logits, const int64_t *labels,
                                    const float *dloss, const double *stats,
                                    float *dlogits, int64_t n, int64_t c,
                                    int64_t total) {
  PFRT_FOR_EACH(i, total)
  xentGradAt(logits, labels, dloss, stats, dlogits, n, c, i);
}

/// lr and step are device scalars (pfrt_cuda_scalar), read at run time so a
/// replayed graph sees the current values.
__global__ void pfrt_cuda_sgd(const float *p, const float *g, const float *lr,
                              const float *buf, const float *step, float *np,
                              float *nbuf, SgdParams q, int64_t n) {
  const float lrf = *lr;
  const float t = q.momentum ? *step : 0.0f;
  PFRT_FOR_EACH(i, n) sgdAt(p, g, buf, np, nbuf, lrf, t, q, i);
}

/// Each block's first thread derives the constants (float64 bias
/// corrections) once for the block; with bias correction and step < 1
/// nothing is updated and block 0 records the error.
__global__ void pfrt_cuda_adam(const float *p, const float *g, const float *m,
                               const float *v, const float *lr,
                               const float *step, float *np, float *nm,
                               float *nv, int64_t n, double beta1, double beta2,
                               double eps, double weight_decay,
                               int32_t decoupled, int32_t bias_correction,
                               DeviceError *err) {
  __shared__ AdamConsts k;
  __shared__ int ok;
  adamBlockConsts(lr, step, beta1, beta2, eps, weight_decay, decoupled,
                  bias_correction, err, &k, &ok);
  if (!ok)
    return;
  PFRT_FOR_EACH(i, n) adamAt(p, g, m, v, np, nm, nv, k, i);
}

/// pfrt_k_sgd_multi: each block a kMultiChunk range of one tensor, each
/// element sgdAt's arithmetic (the single update's bits).
__global__ void pfrt_cuda_sgd_multi(MultiTable<5> t, const float *lr,
                                    const float *step, SgdParams q) {
  const float lrf = *lr;
  const float st = q.momentum ? *step : 0.0f;
  const MultiRange r = multiRange(t);
  float *const *p = t.ptr[r.tensor];
  for (int64_t i = r.begin + threadIdx.x; i < r.end; i += blockDim.x) {
    sgdAt(p[0], p[1], p[2], p[3], p[4], lrf, st, q, i);
    if (r.clear)
      p[1][i] = 0.0f;
  }
}

/// pfrt_k_adam_multi: as pfrt_cuda_adam, each block's constants derived
/// once by its first thread.
__global__ void pfrt_cuda_adam_multi(MultiTable<7> t, const float *lr,
                                     const float *step, double beta1,
                                     double beta2, double eps,
                                     double weight_decay, int32_t decoupled,
                                     int32_t bias_correction,
                                     DeviceError *err) {
  __shared__ AdamConsts k;
  __shared__ int ok;
  adamBlockConsts(lr, step, beta1, beta2, eps, weight_decay, decoupled,
                  bias_correction, err, &k, &ok);
  if (!ok)
    return;
  const MultiRange r = multiRange(t);
  float *const *p = t.ptr[r.tensor];
  for (int64_t i = r.begin + threadIdx.x; i < r.end; i += blockDim.x) {
    adamAt(p[0], p[1], p[2], p[3], p[4], p[5], p[6], k, i);
    if (r.clear)
      p[1][i] = 0.0f;
  }
}

/// One thread per element; out may be x or dy (dy NULL: the forward).
__global__ void pfrt_cuda_activation(int32_t kind, const float *x,
                                     const float *dy, float *out, int64_t n) {
  PFRT_FOR_EACH(i, n) activationAt(kind, x, dy, out, i);
}

/// One thread per output element.
__global__ void pfrt_cuda_transpose(const float *x, float *y, TransposePlan p) {
  PFRT_FOR_EACH(o, p.total) transposeAt(x, y, p, o);
}

/// One thread per element of the column matrices of a run of images.
__global__ void pfrt_cuda_im2col(const float *x, float *col, ConvGeom d,
                                 int64_t total) {
  PFRT_FOR_EACH(i, total) im2colAt(x, col, d, i);
}

/// One thread per input element of a run of images, gathering (no atomics).
__global__ void pfrt_cuda_col2im(const float *col, float *dx, ConvGeom d,
                                 int64_t total) {
  PFRT_FOR_EACH(i, total) col2imAt(col, dx, d, i);
}

/// One thread per weight-gradient element, summing the images in order.
__global__ void pfrt_cuda_sum_images(const float *part, float *dw, int64_t nb,
                                     int64_t stride, int32_t first, int64_t n) {
  PFRT_FOR_EACH(i, n) sumImagesAt(part, dw, nb, stride, first, i);
}

/// One thread per output element.
__global__ void pfrt_cuda_max_pool(const float *x, float *y, PoolGeom d,
                                   int64_t total) {
  PFRT_FOR_EACH(o, total) maxPoolAt(x, y, d, o);
}

/// One thread per output element: its window's arg-max.
__global__ void pfrt_cuda_max_pool_arg(const float *x, int32_t *arg, PoolGeom d,
                                       int64_t total) {
  PFRT_FOR_EACH(o, total) maxPoolArgAt(x, arg, d, o);
}

/// One thread per input element, gathering from the windows that hold it.
__global__ void pfrt_cuda_max_pool_grad(const int32_t *arg, const float *dy,
                                        float *dx, PoolGeom d, int64_t total) {
  PFRT_FOR_EACH(i, total) maxPoolGradAt(arg, dy, dx, d, i);
}

/// One thread per output element.
__global__ void pfrt_cuda_avg_pool(const float *x, float *y, PoolGeom d,
                                   int64_t total) {
  PFRT_FOR_EACH(o, total) avgPoolAt(x, y, d, o);
}

/// One thread per input element, gathering from the windows that hold it.
__global__ void pfrt_cuda_avg_pool_grad(const float *dy, float *dx, PoolGeom d,
                                        int64_t total) {
  PFRT_FOR_EACH(i, total) avgPoolGradAt(dy, dx, d, i);
}

/// One thread per plane.
__global__ void pfrt_cuda_global_avg_pool(const float *x, float *y, int64_t hw,
                                          int64_t planes) {
  PFRT_FOR_EACH(p, planes) globalAvgPoolAt(x, y, hw, p);
}

/// One thread per element.
__global__ void pfrt_cuda_global_avg_pool_grad(const float *dy, float *dx,
                                               int64_t hw, int64_t total) {
  PFRT_FOR_EACH(i, total) globalAvgPoolGradAt(dy, dx, hw, i);
}

/// Batch norm, hw > 1: one thread per (row, channel) run of hw values.
__global__ void pfrt_cuda_bn_runs(const float *x, const float *dy, double *runs,
                                  int64_t c, int64_t hw, int64_t nruns) {
  PFRT_FOR_EACH(q, nruns) bnRunSumsAt(x, dy, runs, c, hw, q);
}

/// Batch norm: one thread per channel (its statistics in the CPU's order).
__global__ void pfrt_cuda_bn_train_channels(
    const float *x, const double *runs, const float *gamma, const float *beta,
    const float *rmean, const float *rvar, float *newMean, float *newVar,
    double *co, int64_t n, int64_t c, int64_t hw, double eps, double momentum) {
  PFRT_FOR_EACH(j, c)
  bnTrainChannelAt(x, runs, gamma, beta, rmean, rvar, newMean, newVar, co, n, c,
                   hw, eps, momentum, j);
}

__global__ void pfrt_cuda_bn_eval_channels(const float *gamma,
                                           const float *beta,
                                           const float *rmean,
                                           const float *rvar, double *co,
                                           int64_t c, double eps) {
  PFRT_FOR_EACH(j, c) bnEvalChannelAt(gamma, beta, rmean, rvar, co, eps, j);
}

__global__ void pfrt_cuda_bn_grad_input_channels(
    const float *x, const float *dy, const double *runs, const float *gamma,
    double *co, int64_t n, int64_t c, int64_t hw, double eps) {
  PFRT_FOR_EACH(j, c)
  bnGradInputChannelAt(x, dy, runs, gamma, co, n, c, hw, eps, j);
}

__global__ void pfrt_cuda_bn_grad_params_channels(
    const float *x, const float *dy, const double *runs, float *dgamma,
    float *dbeta, int64_t n, int64_t c, int64_t hw, double eps) {
  PFRT_FOR_EACH(j, c)
  bnGradParamsChannelAt(x, dy, runs, dgamma, dbeta, n, c, hw, eps, j);
}

/// Batch norm: one thread per element.
__global__ void pfrt_cuda_bn_affine(const float *x, float *y, const double *co,
                                    int64_t c, int64_t hw, int64_t total) {
  PFRT_FOR_EACH(i, total) bnAffineAt(x, y, co, c, hw, i);
}

__global__ void pfrt_cuda_bn_grad_input(const float *x, const float *dy,
                                        float *dx, const double *co, int64_t c,
                                        int64_t hw, int64_t total) {
  PFRT_FOR_EACH(i, total) bnGradInputAt(x, dy, dx, co, c, hw, i);
}

__global__ void pfrt_cuda_sub(const float *a, const float *b, float *out,
                              int64_t n) {
  PFRT_FOR_EACH(i, n) subAt(a, b, out, i);
}

__global__ void pfrt_cuda_div(const float *a, const float *b, float *out,
                              int64_t n) {
  PFRT_FOR_EACH(i, n) divAt(a, b, out, i);
}

__global__ void pfrt_cuda_masked_fill(const float *x, const void *mask,
                                      float *y, int32_t maskDtype, float v,
                                      int64_t n) {
  PFRT_FOR_EACH(i, n) maskedFillAt(x, mask, y, maskDtype, v, i);
}

/// Softmax: one thread per line of [outer, n, inner] (lines = outer * inner).
__global__ void pfrt_cuda_softmax(const float *x, float *y, int64_t n,
                                  int64_t inner, int32_t lg, int64_t lines) {
  PFRT_FOR_EACH(j, lines) softmaxLineAt(x, y, n, inner, lg, j);
}

__global__ void pfrt_cuda_softmax_grad(const float *y, const float *dy,
                                       float *dx, int64_t n, int64_t inner,
                                       int32_t lg, int64_t lines) {
  PFRT_FOR_EACH(j, lines) softmaxGradLineAt(y, dy, dx, n, inner, lg, j);
}

/// Layer norm: one thread per row (statistics, input gradient), per
/// element (the affine map) or per column (parameter gradients).
__global__ void pfrt_cuda_ln_stats(const float *x, double *stats, int64_t c,
                                   double eps, int64_t rows) {
  PFRT_FOR_EACH(r, rows) lnRowStatsAt(x, stats, c, eps, r);
}

__global__ void pfrt_cuda_ln_affine(const float *x, const float *gamma,
                                    const float *beta, float *y,
                                    const double *stats, int64_t c,
                                    int64_t total) {
  PFRT_FOR_EACH(i, total) lnAffineAt(x, gamma, beta, y, stats, c, i);
}

__global__ void pfrt_cuda_ln_grad_input(const float *x, const float *gamma,
                                        const float *dy, float *dx,
                                        const double *stats, int64_t c,
                                        int64_t rows) {
  PFRT_FOR_EACH(r, rows) lnGradInputRowAt(x, gamma, dy, dx, stats, c, r);
}

__global__ void pfrt_cuda_ln_grad_params(const float *x, const float *dy,
                                         const double *stats, float *dgamma,
                                         float *dbeta, int64_t rows,
                                         int64_t c) {
  PFRT_FOR_EACH(k, c)
  lnGradParamsColAt(x, dy, stats, dgamma, dbeta, rows, c, k);
}

/// Boxing's block copies (repacks around a collective, slices): one thread
/// a word of the grid.
__global__ void pfrt_cuda_copy_blocks(const void *src, void *dst, BlockCopy p) {
  PFRT_FOR_EACH(o, p.a * p.b * p.c) copyBlockWordAt(src, dst, p, o);
}

/// Strided copies (broadcast, copy_box): one thread per element of the box.
__global__ void pfrt_cuda_copy_elems(const void *src, void *dst, BoxMap m,
                                     int32_t es) {
  PFRT_FOR_EACH(o, m.total) copyElemAt(src, dst, m, es, o);
}

/// Embedding: the ids' check (one thread), one thread per element of y.
__global__ void pfrt_cuda_embedding_check(const int64_t *ids, int64_t n,
                                          int64_t vocab, int32_t code,
                                          DeviceError *err) {
  if (blockIdx.x == 0 && threadIdx.x == 0)
    embeddingCheckIds(ids, n, vocab, code, err);
}

__global__ void pfrt_cuda_embedding(const float *table, const int64_t *ids,
                                    float *y, int64_t v, int64_t d,
                                    int64_t row0, int64_t total) {
  PFRT_FOR_EACH(i, total) embeddingAt(table, ids, y, v, d, row0, i);
}

/// The gradient: each row's positions (one thread), then one thread per
/// element of dtable summing its positions in order.
__global__ void pfrt_cuda_embedding_index(const int64_t *ids, int64_t n,
                                          int64_t v, int64_t row0,
                                          int64_t *start, int64_t *cursor,
                                          int64_t *pos) {
  if (blockIdx.x == 0 && threadIdx.x == 0)
    embeddingIndex(ids, n, v, row0, start, cursor, pos);
}

__global__ void pfrt_cuda_embedding_grad(const int64_t *start,
                                         const int64_t *pos, const float *dy,
                                         float *dtable, int64_t d,
                                         int64_t total) {
  PFRT_FOR_EACH(i, total) embeddingGradAt(start, pos, dy, dtable, d, i);
}

/// Cross-entropy with ignore_index (mean of the kept rows, or sum): one
/// warp per row, then one thread for the total; the gradient's scale
/// (one thread), then one thread per element.
__global__ void pfrt_cuda_xent_rows_ignore(const float *logits,
                                           const int64_t *labels,
                                           double *rowLoss, int64_t n,
                                           int64_t c, int64_t ignore) {
#ifdef __CUDA_ARCH__
  PFRT_FOR_EACH_ROW(r, lane, n) {
    if (labels[r] == ignore) {
      if (lane == 0)
        rowLoss[r] = 0.0;
      continue;
    }
    warpXentRowLoss(logits, labels, rowLoss, c, r, lane);
  }
#else
  PFRT_FOR_EACH(t, n * kRowLanes)
  if (t % kRowLanes == 0)
    xentRowLossIgnoreAt(logits, labels, rowLoss, c, ignore, t / kRowLanes);
#endif
}

__global__ void pfrt_cuda_xent_total_ignore(const double *rowLoss,
                                            const int64_t *labels, float *loss,
                                            int64_t n, int64_t c,
                                            int64_t ignore, int32_t mean,
                                            int32_t code, DeviceError *err) {
  if (blockIdx.x == 0 && threadIdx.x == 0)
    xentTotalIgnore(rowLoss, labels, loss, n, c, ignore, mean, code, err);
}

__global__ void pfrt_cuda_xent_grad_scale(const int64_t *labels,
                                          const float *dloss, double *scale,
                                          int64_t n, int64_t c, int64_t ignore,
                                          int32_t mean, int32_t code,
                                          DeviceError *err) {
  if (blockIdx.x == 0 && threadIdx.x == 0)
    xentGradScale(labels, dloss, scale, n, c, ignore, mean, code, err);
}

__global__ void pfrt_cuda_xent_grad_ignore(const float *logits,
                                           const int64_t *labels,
                                           const double *scale,
                                           const double *stats, float *dlogits,
                                           int64_t c, int64_t ignore,
                                           int64_t total) {
  PFRT_FOR_EACH(i, total)
  xentGradIgnoreAt(logits, labels, scale, stats, dlogits, c, ignore, i);
}

/// One thread.
__global__ void pfrt_cuda_count_kept(const int64_t *labels, float *count,
                                     int64_t n, int64_t ignore) {
  if (blockIdx.x == 0 && threadIdx.x == 0)
    countKept(labels, count, n, ignore);
}

/// The vocabulary-parallel cross-entropy (XentBodies.h): one warp a row
/// for the block's max and sums (the host build: the row on lane 0), one
/// thread for the loss and the gradient's scale, one an element after.
__global__ void pfrt_cuda_vxent_max(const float *logits, float *rowMax,
                                    VocabXent p) {
#ifdef __CUDA_ARCH__
  PFRT_FOR_EACH_ROW(r, lane, p.n) {
    float m = warpRowMax(logits + r * p.c, p.c, lane);
    if (lane == 0)
      rowMax[r] = m;
  }
#else
  PFRT_FOR_EACH(t, p.n * kRowLanes)
  if (t % kRowLanes == 0)
    vxentRowMaxAt(logits, rowMax, p, t / kRowLanes);
#endif
}

__global__ void pfrt_cuda_vxent_sums(const float *logits, const int64_t *labels,
                                     const float *rowMax, double *sums,
                                     VocabXent p, int32_t target) {
#ifdef __CUDA_ARCH__
  PFRT_FOR_EACH_ROW(r, lane, p.n) {
    double s = warpLaneSum(logits + r * p.c, p.c, double(rowMax[r]), lane);
    if (lane == 0) {
      sums[r] = s;
      if (target)
        sums[p.n + r] = vxentTargetAt(logits, labels, p, r);
    }
  }
#else
  PFRT_FOR_EACH(t, p.n * kRowLanes)
  if (t % kRowLanes == 0)
    vxentRowSumsAt(logits, labels, rowMax, sums, p, target, t / kRowLanes);
#endif
}

__global__ void pfrt_cuda_vxent_loss(const int64_t *labels, const float *rowMax,
                                     const double *sums, float *loss,
                                     VocabXent p, DeviceError *err) {
  if (blockIdx.x == 0 && threadIdx.x == 0)
    vxentLoss(labels, rowMax, sums, loss, p, err);
}

__global__ void pfrt_cuda_vxent_scale(const int64_t *labels, const float *dloss,
                                      double *scale, VocabXent p,
                                      DeviceError *err) {
  if (blockIdx.x == 0 && threadIdx.x == 0)
    vxentGradScale(labels, dloss, scale, p, err);
}

__global__ void pfrt_cuda_vxent_grad(const float *logits, const int64_t *labels,
                                     const float *rowMax, const double *sums,
                                     const double *scale, float *dlogits,
                                     VocabXent p) {
  PFRT_FOR_EACH(i, p.n * p.c)
  vxentGradAt(logits, labels, rowMax, sums, scale, dlogits, p, i);
}

/// Dropout: one thread per element. The data step is *stepSlot when given
/// (a captured step: the slot is refreshed before each replay), else step.
__global__ void pfrt_cuda_dropout(const float *x, float *y, DropoutParams q,
                                  BoxMap m, const int64_t *stepSlot,
                                  int64_t step) {
  const uint64_t sub = dropoutStream(q, stepSlot ? *stepSlot : step);
  PFRT_FOR_EACH(i, m.total) dropoutAt(x, y, q, m, sub, i);
}

/// Attention (AttentionBodies.h): a block per (plane, kBlock rows), a
/// thread a query row (the forward, dQ) or key row (dK, dV); delta one
/// thread a row. The data step as dropout's.
__global__ void pfrt_cuda_attention(const float *q, const float *k,
                                    const float *v, const void *mask,
                                    float *out, float *lse, AttnParams p,
                                    const int64_t *stepSlot, int64_t step) {
  int64_t bh, t;
  if (attnRowOf(blockIdx.x, threadIdx.x, p.queries, &bh, &t))
    attnForwardRow(p, q, k, v, mask, out, lse,
                   dropoutStream(p.drop, stepSlot ? *stepSlot : step), bh, t);
}

__global__ void pfrt_cuda_attention_delta(const float *out, const float *dout,
                                          float *delta, int64_t dv,
                                          int64_t rows) {
  PFRT_FOR_EACH(r, rows) attnDeltaRow(out, dout, delta, dv, r);
}

__global__ void pfrt_cuda_attention_grad_kv(
    const float *q, const float *k, const float *v, const void *mask,
    const float *lse, const float *dout, const float *delta, float *dk,
    float *dv, AttnParams p, const int64_t *stepSlot, int64_t step) {
  int64_t bh, s;
  if (attnRowOf(blockIdx.x, threadIdx.x, p.keys, &bh, &s))
    attnGradKeyRow(p, q, k, v, mask, lse, dout, delta, dk, dv,
                   dropoutStream(p.drop, stepSlot ? *stepSlot : step), bh, s);
}

__global__ void pfrt_cuda_attention_grad_q(
    const float *q, const float *k, const float *v, const void *mask,
    const float *lse, const float *dout, const float *delta, float *dq,
    AttnParams p, const int64_t *stepSlot, int64_t step) {
  int64_t bh, t;
  if (attnRowOf(blockIdx.x, threadIdx.x, p.queries, &bh, &t))
    attnGradQueryRow(p, q, k, v, mask, lse, dout, delta, dq,
                     dropoutStream(p.drop, stepSlot ? *stepSlot : step), bh, t);
}

/// One thread: a run-time scalar's value, passed at launch (the value when
/// the launch was enqueued, whatever the host does with it afterwards).
__global__ void pfrt_cuda_set_scalar(float *slot, float value) {
  if (blockIdx.x == 0 && threadIdx.x == 0)
    *slot = value;
}

/// Comparisons and boolean tensors: one thread per element.
__global__ void pfrt_cuda_compare(const void *a, const void *b, uint8_t *out,
                                  int32_t dtype, int32_t predicate, int64_t n) {
  PFRT_FOR_EACH(i, n) compareAt(a, b, out, dtype, predicate, i);
}

__global__ void pfrt_cuda_logical(const uint8_t *a, const uint8_t *b,
                                  uint8_t *out, int32_t kind, int64_t n) {
  PFRT_FOR_EACH(i, n) logicalAt(a, b, out, kind, i);
}

__global__ void pfrt_cuda_where(const uint8_t *cond, const void *a,
                                const void *b, void *out, int64_t bytes,
                                int64_t n) {
  PFRT_FOR_EACH(i, n) whereAt(cond, a, b, out, bytes, i);
}

__global__ void pfrt_cuda_cast(const void *x, int32_t xDtype, void *y,
                               int32_t yDtype, int64_t n) {
  PFRT_FOR_EACH(i, n) castAt(x, xDtype, y, yDtype, i);
}

} // extern "C"
