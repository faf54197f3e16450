//===- KernelArgs.cpp - the kernels' argument checks, written once --------===//
//
// See KernelArgs.h. The messages name the calling kernel, CPU or device
// twin; tests match them.
//
//===----------------------------------------------------------------------===//

#include "KernelArgs.h"

#include "Internal.h"
#include "LogicalMath.h"
#include "pfrt/pfrt.h"

#include <climits>
#include <cmath>

namespace pfrt {
namespace kern {

//===----------------------------------------------------------------------===//
// Sizes and buffers
//===----------------------------------------------------------------------===//

void checkSize(const char *fn, const char *what, int64_t v) {
  if (v < 0)
    fatal("%s: %s = %lld is negative", fn, what, (long long)v);
}

void checkPtr(const char *fn, const char *what, const void *p, int64_t n) {
  if (!p && n > 0)
    fatal("%s: %s is NULL", fn, what);
}

int64_t mulChecked(const char *fn, int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    fatal("%s: size %lld * %lld overflows int64", fn, (long long)a,
          (long long)b);
  return r;
}

void checkBuffers(const char *fn, int64_t n, std::initializer_list<Buf> bufs) {
  for (const Buf &b : bufs)
    checkPtr(fn, b.name, b.ptr, n);
}

//===----------------------------------------------------------------------===//
// Element-wise
//===----------------------------------------------------------------------===//

void checkElementwiseArgs(const char *fn, int64_t n,
                          std::initializer_list<Buf> bufs) {
  checkSize(fn, "n", n);
  checkBuffers(fn, n, bufs);
}

int64_t checkBiasAddArgs(const char *fn, const void *x, const void *b,
                         const void *y, int64_t outer, int64_t c,
                         int64_t inner) {
  checkSize(fn, "outer", outer);
  checkSize(fn, "c", c);
  checkSize(fn, "inner", inner);
  int64_t total = mulChecked(fn, mulChecked(fn, outer, c), inner);
  checkPtr(fn, "x", x, total);
  checkPtr(fn, "y", y, total);
  checkPtr(fn, "b", b, total > 0 ? c : 0);
  return total;
}

void checkActivationArgs(const char *fn, int32_t kind, const void *x,
                         const void *dy, const void *out, int64_t n,
                         bool grad) {
  if (kind < 0 || kind > 3)
    fatal("%s: kind %d is not one of 0 (gelu), 1 (gelu_tanh), 2 (tanh), 3 "
          "(sigmoid)",
          fn, kind);
  checkSize(fn, "n", n);
  checkPtr(fn, "x", x, n);
  if (grad)
    checkPtr(fn, "dy", dy, n);
  checkPtr(fn, grad ? "dx" : "y", out, n);
}

//===----------------------------------------------------------------------===//
// Reductions and layout
//===----------------------------------------------------------------------===//

/// rank in [0, kMaxRank].
static void checkRank(const char *fn, int64_t rank) {
  if (rank < 0 || rank > kMaxRank)
    fatal("%s: rank %lld is outside [0, %lld]", fn, (long long)rank,
          (long long)kMaxRank);
}

/// total * shape[d], fatal if shape[d] is negative (naming the shape).
static int64_t timesDim(const char *fn, int64_t total, int64_t rank,
                        const int64_t *shape, int64_t d) {
  if (shape[d] < 0)
    fatal("%s: shape %s has a negative dimension", fn,
          shapeToString(rank, shape).c_str());
  return mulChecked(fn, total, shape[d]);
}

/// The opening of a kernel's checks over a shape of `rank` axes with one
/// more array of an entry an axis (`what`): the rank, then both arrays.
static void checkShapeAnd(const char *fn, int64_t rank, const int64_t *shape,
                          const char *what, const void *perAxis) {
  checkRank(fn, rank);
  checkPtr(fn, "shape", shape, rank);
  checkPtr(fn, what, perAxis, rank);
}

ReduceSizes checkReduceSumArgs(const char *fn, const void *x, const void *y,
                               int64_t rank, const int64_t *shape,
                               const int8_t *reduce) {
  checkShapeAnd(fn, rank, shape, "reduce", reduce);
  ReduceSizes s{1, 1};
  for (int64_t d = 0; d < rank; ++d) {
    s.total = timesDim(fn, s.total, rank, shape, d);
    if (!reduce[d])
      s.outTotal = mulChecked(fn, s.outTotal, shape[d]);
  }
  checkPtr(fn, "x", x, s.total);
  checkPtr(fn, "y", y, s.outTotal);
  return s;
}

int64_t checkTransposeArgs(const char *fn, const void *x, const void *y,
                           int64_t rank, const int64_t *shape,
                           const int64_t *perm) {
  checkShapeAnd(fn, rank, shape, "perm", perm);
  bool seen[kMaxRank] = {false};
  int64_t total = 1;
  for (int64_t d = 0; d < rank; ++d) {
    total = timesDim(fn, total, rank, shape, d);
    if (perm[d] < 0 || perm[d] >= rank || seen[perm[d]])
      fatal("%s: perm %s is not a permutation of 0..%lld", fn,
            shapeToString(rank, perm).c_str(), (long long)rank - 1);
    seen[perm[d]] = true;
  }
  checkBuffers(fn, total, {{"x", x}, {"y", y}});
  return total;
}

int64_t checkBroadcastArgs(const char *fn, const void *x, const void *y,
                           int64_t rank, const int64_t *inShape,
                           const int64_t *outShape, int64_t elemBytes) {
  checkRank(fn, rank);
  if (elemBytes != 1 && elemBytes != 4 && elemBytes != 8)
    fatal("%s: element size %lld is not 1, 4 or 8", fn, (long long)elemBytes);
  checkPtr(fn, "in_shape", inShape, rank);
  checkPtr(fn, "out_shape", outShape, rank);
  int64_t total = 1, inTotal = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (outShape[d] < 0 || (inShape[d] != outShape[d] && inShape[d] != 1))
      fatal("%s: cannot broadcast %s to %s", fn,
            shapeToString(rank, inShape).c_str(),
            shapeToString(rank, outShape).c_str());
    total = mulChecked(fn, total, outShape[d]);
    inTotal = mulChecked(fn, inTotal, inShape[d]);
  }
  checkPtr(fn, "x", x, inTotal);
  checkPtr(fn, "y", y, total);
  return total;
}

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

MatmulSizes checkMatmulArgs(const char *fn, const void *a, const void *b,
                            const void *c, int64_t batch, int64_t batchB,
                            int64_t m, int64_t n, int64_t k, bool hasBias,
                            const void *bias) {
  checkSize(fn, "batch", batch);
  checkSize(fn, "m", m);
  checkSize(fn, "n", n);
  checkSize(fn, "k", k);
  if (batchB != batch && batchB != 1)
    fatal("%s: batch_b = %lld must be 1 or batch = %lld", fn, (long long)batchB,
          (long long)batch);
  MatmulSizes s;
  s.aSize = mulChecked(fn, m, k);
  s.bSize = mulChecked(fn, k, n);
  s.cSize = mulChecked(fn, m, n);
  s.cTotal = mulChecked(fn, batch, s.cSize);
  if (hasBias)
    checkPtr(fn, "bias", bias, n);
  checkPtr(fn, "a", a, mulChecked(fn, batch, s.aSize));
  checkPtr(fn, "b", b, mulChecked(fn, batchB, s.bSize));
  checkPtr(fn, "c", c, s.cTotal);
  return s;
}

//===----------------------------------------------------------------------===//
// Softmax, layer norm, cross-entropy
//===----------------------------------------------------------------------===//

int64_t checkSoftmaxArgs(const char *fn, int64_t outer, int64_t n,
                         int64_t inner, std::initializer_list<Buf> bufs) {
  checkSize(fn, "outer", outer);
  checkSize(fn, "n", n);
  checkSize(fn, "inner", inner);
  int64_t total = mulChecked(fn, mulChecked(fn, outer, n), inner);
  checkBuffers(fn, total, bufs);
  return total;
}

int64_t checkSoftmaxRowsArgs(const char *fn, int64_t rows, int64_t n,
                             std::initializer_list<Buf> bufs) {
  checkSize(fn, "rows", rows);
  checkSize(fn, "n", n);
  int64_t total = mulChecked(fn, rows, n);
  checkBuffers(fn, total, bufs);
  return total;
}

int64_t checkLayerNormArgs(const char *fn, int64_t rows, int64_t c, double eps,
                           std::initializer_list<Buf> perElement,
                           std::initializer_list<Buf> perChannel) {
  checkSize(fn, "rows", rows);
  checkSize(fn, "c", c);
  if (c < 1 || !(eps > 0.0))
    fatal("%s: c = %lld must be >= 1 and eps = %g > 0", fn, (long long)c, eps);
  int64_t n = mulChecked(fn, rows, c);
  checkBuffers(fn, n, perElement);
  checkBuffers(fn, c, perChannel);
  return n;
}

int64_t checkXentArgs(const char *fn, const void *logits, const void *labels,
                      int64_t n, int64_t c) {
  if (n < 1 || c < 1)
    fatal("%s: n = %lld and c = %lld must be >= 1", fn, (long long)n,
          (long long)c);
  int64_t total = mulChecked(fn, n, c);
  checkPtr(fn, "logits", logits, total);
  checkPtr(fn, "labels", labels, n);
  return total;
}

void checkXentForwardArgs(const char *fn, const void *logits,
                          const void *labels, const void *loss, int64_t n,
                          int64_t c) {
  checkXentArgs(fn, logits, labels, n, c);
  checkPtr(fn, "loss", loss, 1);
}

int64_t checkXentBackwardArgs(const char *fn, const void *logits,
                              const void *labels, const void *dloss,
                              const void *dlogits, int64_t n, int64_t c) {
  int64_t total = checkXentArgs(fn, logits, labels, n, c);
  checkPtr(fn, "dloss", dloss, 1);
  checkPtr(fn, "dlogits", dlogits, total);
  return total;
}

void checkCountKeptArgs(const char *fn, const void *labels, const void *count,
                        int64_t n) {
  checkSize(fn, "n", n);
  checkPtr(fn, "labels", labels, n);
  checkPtr(fn, "count", count, 1);
}

//===----------------------------------------------------------------------===//
// Embedding
//===----------------------------------------------------------------------===//

void checkEmbeddingArgs(const char *fn, const int64_t *ids, int64_t n,
                        int64_t v, int64_t d, int64_t row0, int64_t vocab) {
  checkSize(fn, "n", n);
  checkSize(fn, "v", vocab);
  checkSize(fn, "d", d);
  checkPtr(fn, "ids", ids, n);
  if (row0 < 0 || v < 0 || row0 > vocab - v)
    fatal("%s: rows [%lld, %lld) are not rows of a vocabulary of %lld", fn,
          (long long)row0, (long long)row0 + v, (long long)vocab);
}

/// The input `in` of inRows rows and the output `out` of outRows rows of d
/// floats; returns the output's element count.
static int64_t checkRowBuffers(const char *fn, Buf in, int64_t inRows, Buf out,
                               int64_t outRows, int64_t d) {
  checkPtr(fn, in.name, in.ptr, mulChecked(fn, inRows, d));
  int64_t total = mulChecked(fn, outRows, d);
  checkPtr(fn, out.name, out.ptr, total);
  return total;
}

int64_t checkEmbeddingLookupArgs(const char *fn, const void *table,
                                 const void *y, int64_t n, int64_t v,
                                 int64_t d) {
  return checkRowBuffers(fn, {"table", table}, v, {"y", y}, n, d);
}

int64_t checkEmbeddingGradArgs(const char *fn, const void *dy,
                               const void *dtable, int64_t n, int64_t v,
                               int64_t d) {
  return checkRowBuffers(fn, {"dy", dy}, n, {"dtable", dtable}, v, d);
}

//===----------------------------------------------------------------------===//
// Optimizers
//===----------------------------------------------------------------------===//

void checkSgdScalars(const char *fn, const void *lr, const void *step,
                     double momentum, double dampening, int32_t nesterov) {
  checkPtr(fn, "lr", lr, 1);
  if (nesterov && (momentum <= 0.0 || dampening != 0.0))
    fatal("%s: Nesterov momentum requires a momentum and zero dampening", fn);
  if (momentum != 0.0)
    checkPtr(fn, "step", step, 1);
}

void checkSgdArgs(const char *fn, const void *p, const void *g, const void *lr,
                  const void *step, const void *newP, const void *newBuf,
                  int64_t n, double momentum, double dampening,
                  int32_t nesterov) {
  checkSize(fn, "n", n);
  checkPtr(fn, "p", p, n);
  checkPtr(fn, "g", g, n);
  checkPtr(fn, "new_p", newP, n);
  checkSgdScalars(fn, lr, step, momentum, dampening, nesterov);
  if (momentum != 0.0)
    checkPtr(fn, "new_buf", newBuf, n);
}

void checkAdamArgs(const char *fn, const void *p, const void *g, const void *m,
                   const void *v, const void *lr, const void *step,
                   const void *newP, const void *newM, const void *newV,
                   int64_t n) {
  checkSize(fn, "n", n);
  checkBuffers(fn, n,
               {{"p", p},
                {"g", g},
                {"m", m},
                {"v", v},
                {"new_p", newP},
                {"new_m", newM},
                {"new_v", newV}});
  checkPtr(fn, "lr", lr, 1);
  checkPtr(fn, "step", step, 1);
}

void checkMultiTableArgs(const char *fn, void *const *ptrs, const int64_t *n,
                         int64_t count) {
  if (count < 0)
    fatal("%s: count = %lld must be >= 0", fn, (long long)count);
  if (count > 0 && (!ptrs || !n))
    fatal("%s: the pointer and size tables must not be NULL", fn);
}

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

static ConvArgs convDims(const char *fn, const int64_t *dims) {
  if (!dims)
    fatal("%s: dims is NULL", fn);
  ConvArgs d;
  d.N = dims[0], d.C = dims[1], d.H = dims[2], d.W = dims[3], d.O = dims[4];
  d.KH = dims[5], d.KW = dims[6], d.OH = dims[7], d.OW = dims[8];
  d.sh = dims[9], d.sw = dims[10], d.ph = dims[11], d.pw = dims[12];
  d.dh = dims[13], d.dw = dims[14], d.G = dims[15];
  auto bad = [&](const char *why) {
    fatal("%s: %s (dims N=%lld C=%lld H=%lld W=%lld O=%lld KH=%lld KW=%lld "
          "OH=%lld OW=%lld stride=%lldx%lld pad=%lldx%lld dilation=%lldx%lld "
          "groups=%lld)",
          fn, why, (long long)d.N, (long long)d.C, (long long)d.H,
          (long long)d.W, (long long)d.O, (long long)d.KH, (long long)d.KW,
          (long long)d.OH, (long long)d.OW, (long long)d.sh, (long long)d.sw,
          (long long)d.ph, (long long)d.pw, (long long)d.dh, (long long)d.dw,
          (long long)d.G);
  };
  if (d.N < 0 || d.C < 0 || d.H < 0 || d.W < 0 || d.O < 0)
    bad("negative size");
  if (d.KH < 1 || d.KW < 1)
    bad("kernel size must be >= 1");
  if (d.sh < 1 || d.sw < 1 || d.dh < 1 || d.dw < 1)
    bad("strides and dilations must be >= 1");
  if (d.ph < 0 || d.pw < 0)
    bad("padding must be >= 0");
  if (d.G < 1 || d.C % d.G != 0 || d.O % d.G != 0)
    bad("groups must be >= 1 and divide C and O");
  int64_t effH = d.dh * (d.KH - 1) + 1, effW = d.dw * (d.KW - 1) + 1;
  if (d.H + 2 * d.ph < effH || d.W + 2 * d.pw < effW)
    bad("the dilated kernel is larger than the padded input");
  if (d.OH != (d.H + 2 * d.ph - effH) / d.sh + 1 ||
      d.OW != (d.W + 2 * d.pw - effW) / d.sw + 1)
    bad("OH/OW do not match (H + 2*pad - dil*(K-1) - 1) / stride + 1");
  d.Cg = d.C / d.G;
  d.Og = d.O / d.G;
  d.K = mulChecked(fn, mulChecked(fn, d.Cg, d.KH), d.KW);
  d.P = mulChecked(fn, d.OH, d.OW);
  d.HW = mulChecked(fn, d.H, d.W);
  mulChecked(fn, mulChecked(fn, d.N, d.C), d.HW);
  mulChecked(fn, mulChecked(fn, d.N, d.O), d.P);
  mulChecked(fn, d.K, d.P);
  d.direct = d.KH == 1 && d.KW == 1 && d.sh == 1 && d.sw == 1 && d.ph == 0 &&
             d.pw == 0;
  return d;
}

ConvArgs checkConvArgs(const char *fn, const int64_t *dims,
                       std::initializer_list<ConvBuf> bufs) {
  ConvArgs d = convDims(fn, dims);
  for (const ConvBuf &b : bufs)
    checkPtr(fn, b.name, b.ptr,
             b.kind == ConvTensor::X   ? d.N * d.C * d.HW
             : b.kind == ConvTensor::W ? d.O * d.K
                                       : d.N * d.O * d.P);
  return d;
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

PoolArgs checkPoolArgs(const char *fn, const int64_t *dims,
                       std::initializer_list<PoolBuf> bufs) {
  if (!dims)
    fatal("%s: dims is NULL", fn);
  PoolArgs d;
  d.N = dims[0], d.C = dims[1], d.H = dims[2], d.W = dims[3];
  d.OH = dims[4], d.OW = dims[5], d.KH = dims[6], d.KW = dims[7];
  d.sh = dims[8], d.sw = dims[9], d.ph = dims[10], d.pw = dims[11];
  auto bad = [&](const char *why) {
    fatal("%s: %s (dims N=%lld C=%lld H=%lld W=%lld OH=%lld OW=%lld "
          "kernel=%lldx%lld stride=%lldx%lld pad=%lldx%lld)",
          fn, why, (long long)d.N, (long long)d.C, (long long)d.H,
          (long long)d.W, (long long)d.OH, (long long)d.OW, (long long)d.KH,
          (long long)d.KW, (long long)d.sh, (long long)d.sw, (long long)d.ph,
          (long long)d.pw);
  };
  if (d.N < 0 || d.C < 0 || d.H < 0 || d.W < 0)
    bad("negative size");
  if (d.KH < 1 || d.KW < 1 || d.sh < 1 || d.sw < 1)
    bad("kernel sizes and strides must be >= 1");
  if (d.ph < 0 || d.pw < 0 || 2 * d.ph > d.KH || 2 * d.pw > d.KW)
    bad("padding must be in [0, kernel / 2]");
  if (d.H + 2 * d.ph < d.KH || d.W + 2 * d.pw < d.KW)
    bad("the kernel is larger than the padded input");
  if (d.OH != (d.H + 2 * d.ph - d.KH) / d.sh + 1 ||
      d.OW != (d.W + 2 * d.pw - d.KW) / d.sw + 1)
    bad("OH/OW do not match (H + 2*pad - kernel) / stride + 1");
  d.planes = mulChecked(fn, d.N, d.C);
  d.HW = mulChecked(fn, d.H, d.W);
  d.P = mulChecked(fn, d.OH, d.OW);
  mulChecked(fn, d.planes, d.HW);
  mulChecked(fn, d.planes, d.P);
  for (const PoolBuf &b : bufs)
    checkPtr(fn, b.name, b.ptr,
             b.kind == PoolTensor::In ? d.planes * d.HW : d.planes * d.P);
  return d;
}

void checkPoolPlaneIndex(const char *fn, const PoolArgs &d) {
  if (d.HW > INT32_MAX)
    fatal("%s: a plane of %lld elements is too large", fn, (long long)d.HW);
}

/// n, c, hw >= 0, and the planes n * c.
static int64_t globalPoolPlanes(const char *fn, int64_t n, int64_t c,
                                int64_t hw) {
  checkSize(fn, "n", n);
  checkSize(fn, "c", c);
  checkSize(fn, "hw", hw);
  return mulChecked(fn, n, c);
}

GlobalPoolSizes checkGlobalAvgPoolArgs(const char *fn, const void *x,
                                       const void *y, int64_t n, int64_t c,
                                       int64_t hw) {
  GlobalPoolSizes s;
  s.planes = globalPoolPlanes(fn, n, c, hw);
  s.total = mulChecked(fn, s.planes, hw);
  checkPtr(fn, "x", x, s.total);
  checkPtr(fn, "y", y, s.planes);
  if (s.planes > 0 && hw == 0)
    fatal("%s: hw = 0 (mean of an empty plane)", fn);
  return s;
}

GlobalPoolSizes checkGlobalAvgPoolGradArgs(const char *fn, const void *dy,
                                           const void *dx, int64_t n, int64_t c,
                                           int64_t hw) {
  GlobalPoolSizes s;
  s.planes = globalPoolPlanes(fn, n, c, hw);
  checkPtr(fn, "dy", dy, s.planes);
  s.total = mulChecked(fn, s.planes, hw);
  checkPtr(fn, "dx", dx, s.total);
  return s;
}

//===----------------------------------------------------------------------===//
// Batch norm
//===----------------------------------------------------------------------===//

int64_t checkBatchNormArgs(const char *fn, const void *x, int64_t n, int64_t c,
                           int64_t hw, double eps,
                           std::initializer_list<Buf> perElement,
                           std::initializer_list<Buf> perChannel) {
  checkSize(fn, "n", n);
  checkSize(fn, "c", c);
  checkSize(fn, "hw", hw);
  int64_t m = mulChecked(fn, n, hw);
  int64_t total = mulChecked(fn, m, c);
  checkPtr(fn, "x", x, total);
  if (c > 0 && m < 2)
    fatal("%s: batch norm needs more than one value per channel in "
          "training (N*HW = %lld)",
          fn, (long long)m);
  if (!(eps >= 0.0))
    fatal("%s: eps = %g must be >= 0", fn, eps);
  checkBuffers(fn, total, perElement);
  checkBuffers(fn, c, perChannel);
  return total;
}

void checkBatchNormRunning(const char *fn, const void *rmean, const void *rvar,
                           const void *newMean, const void *newVar) {
  if (!rmean != !newMean || !rvar != !newVar)
    fatal("%s: rmean/new_mean and rvar/new_var must both be given or both "
          "be NULL",
          fn);
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

/// The logical block of an attention call: where [B, H, T, S] lies in
/// [LB, LH, LT, S] (null: the whole tensor).
static void checkAttentionLogical(const char *fn, const int64_t *logical,
                                  AttentionSizes &a) {
  const int64_t local[4] = {a.batch, a.heads, a.queries, a.keys};
  if (!logical) {
    a.logicalBatch = a.batch;
    a.logicalHeads = a.heads;
    a.logicalQueries = a.queries;
    a.b0 = a.h0 = a.t0 = 0;
    return;
  }
  if (logical[3] != a.keys || logical[7] != 0)
    fatal("%s: logical block {S = %lld, s0 = %lld}: the keys must not be "
          "sharded (S = %lld, s0 = 0)",
          fn, (long long)logical[3], (long long)logical[7], (long long)a.keys);
  makeShard(fn, 4, logical, logical + 4, local);
  a.logicalBatch = logical[0];
  a.logicalHeads = logical[1];
  a.logicalQueries = logical[2];
  a.b0 = logical[4];
  a.h0 = logical[5];
  a.t0 = logical[6];
}

AttentionSizes checkAttentionArgs(const char *fn, const int64_t *dims,
                                  const void *mask, int32_t maskDtype,
                                  const int64_t *maskStrides, double scale,
                                  double dropoutP, const int64_t *logical,
                                  std::initializer_list<const void *> bufs) {
  if (!dims)
    fatal("%s: dims is NULL", fn);
  using S = AttentionSizes;
  struct Named {
    const char *name;
    int64_t S::*field;
  };
  // dims in their order: name and field.
  static const Named kDims[6] = {{"B", &S::batch},   {"H", &S::heads},
                                 {"T", &S::queries}, {"S", &S::keys},
                                 {"D", &S::dim},     {"Dv", &S::dimV}};
  AttentionSizes a;
  for (int i = 0; i < 6; ++i) {
    checkSize(fn, kDims[i].name, dims[i]);
    a.*kDims[i].field = dims[i];
  }
  if (a.dim < 1)
    fatal("%s: D = %lld: the query and key rows need at least one element", fn,
          (long long)a.dim);
  if (!std::isfinite(scale))
    fatal("%s: scale %g is not finite", fn, scale);
  const bool dropoutOk = dropoutP >= 0.0 && dropoutP < 1.0; // NaN fails
  if (!dropoutOk)
    fatal("%s: dropoutP %g is not in [0, 1)", fn, dropoutP);
  a.hasMask = mask != nullptr;
  if (a.hasMask) {
    if (maskDtype != PFRT_DTYPE_F32 && maskDtype != PFRT_DTYPE_BOOL)
      fatal("%s: maskDtype %d is neither %d (f32, additive) nor %d (bool)", fn,
            maskDtype, PFRT_DTYPE_F32, PFRT_DTYPE_BOOL);
    if (!maskStrides)
      fatal("%s: a mask without maskStrides", fn);
    for (int i = 0; i < 4; ++i)
      if (maskStrides[i] < 0)
        fatal("%s: maskStrides[%d] = %lld is negative", fn, i,
              (long long)maskStrides[i]);
  }
  const int64_t bh = mulChecked(fn, a.batch, a.heads);
  a.rows = mulChecked(fn, bh, a.queries);
  const int64_t keys = mulChecked(fn, bh, a.keys);
  a.qElems = mulChecked(fn, a.rows, a.dim);
  a.kElems = mulChecked(fn, keys, a.dim);
  a.vElems = mulChecked(fn, keys, a.dimV);
  a.outElems = mulChecked(fn, a.rows, a.dimV);
  a.scores = mulChecked(fn, a.rows, a.keys);
  checkAttentionLogical(fn, logical, a);
  a.dropout = dropoutP > 0.0;
  a.threshold = float(dropoutP);
  a.keepScale = float(1.0 / (1.0 - dropoutP));
  // The buffers in their order: name and element count.
  static const Named kBufs[] = {
      {"q", &S::qElems},     {"k", &S::kElems},  {"v", &S::vElems},
      {"out", &S::outElems}, {"lse", &S::rows},  {"dout", &S::outElems},
      {"dq", &S::qElems},    {"dk", &S::kElems}, {"dv", &S::vElems}};
  size_t i = 0;
  for (const void *ptr : bufs) {
    checkPtr(fn, kBufs[i].name, ptr, a.*kBufs[i].field);
    ++i;
  }
  return a;
}

//===----------------------------------------------------------------------===//
// Comparisons and boolean tensors
//===----------------------------------------------------------------------===//

int64_t checkDtype(const char *fn, const char *what, int32_t dtype) {
  int64_t bytes = logical::dtypeBytes(dtype);
  if (bytes < 0)
    fatal(
        "%s: %s %d is not a dtype (0 f32, 1 i64, 2 i32, 3 bool, 4 bf16, 5 f16)",
        fn, what, dtype);
  return bytes;
}

void checkCompareArgs(const char *fn, const void *a, const void *b,
                      const void *out, int64_t n, int32_t dtype,
                      int32_t predicate) {
  checkDtype(fn, "dtype", dtype);
  if (predicate < 0 || predicate >= logical::kNumPredicates)
    fatal("%s: predicate %d is not one of 0 (eq), 1 (ne), 2 (lt), 3 (le), 4 "
          "(gt), 5 (ge)",
          fn, predicate);
  checkElementwiseArgs(fn, n, {{"a", a}, {"b", b}, {"out", out}});
}

void checkLogicalArgs(const char *fn, const void *a, const void *b,
                      const void *out, int64_t n, int32_t kind) {
  if (kind < 0 || kind >= logical::kNumLogical)
    fatal("%s: kind %d is not one of 0 (and), 1 (or), 2 (xor), 3 (not)", fn,
          kind);
  checkElementwiseArgs(fn, n, {{"a", a}, {"out", out}});
  if (kind != logical::kNot)
    checkPtr(fn, "b", b, n);
}

int64_t checkWhereArgs(const char *fn, const void *cond, const void *a,
                       const void *b, const void *out, int64_t n,
                       int32_t dtype) {
  int64_t bytes = checkDtype(fn, "dtype", dtype);
  checkElementwiseArgs(fn, n,
                       {{"cond", cond}, {"a", a}, {"b", b}, {"out", out}});
  return bytes;
}

void checkCastArgs(const char *fn, const void *x, int32_t xDtype, const void *y,
                   int32_t yDtype, int64_t n) {
  checkDtype(fn, "xDtype", xDtype);
  checkDtype(fn, "yDtype", yDtype);
  checkElementwiseArgs(fn, n, {{"x", x}, {"y", y}});
}

} // namespace kern
} // namespace pfrt
