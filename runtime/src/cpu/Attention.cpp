//===- Attention.cpp - flash-style scaled-dot-product attention -----------===//
//
// pfrt_k_attention and its gradient without a [T, S] buffer: for each
// (b, h) plane, query tiles of kQueryTile rows meet key tiles of kKeyTile
// rows; the tile products are SGEMMs (pfrt_sgemm, Blas.cpp) into float32
// scratch of one tile, the forward keeps a running max and sum per row (an
// online softmax: the accumulator is rescaled when the max grows) and the
// gradient recomputes each tile's probabilities from q, k and the forward's
// log-sum-exp. Dropout's uniforms are drawn tile by tile at their logical
// indices (uniformBlock, Random.cpp), pfrt_k_dropout's values. Like the
// other CPU kernels this one is single-threaded (OpenBLAS may thread inside
// a product) and loops in a fixed order, so its results are bit-identical
// run to run; the gradient's dK and dV accumulate over query tiles and dQ
// over key tiles, each in tile order.
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"
#include "pfrt/pfrt.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

using namespace pfrt;
using namespace pfrt::kern;

namespace {

constexpr int64_t kQueryTile = 128;
constexpr int64_t kKeyTile = 128;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

/// One call's fixed arguments and the (b, h) plane it is working on.
struct Plane {
  const AttentionSizes *a;
  const void *mask;
  int32_t maskDtype;
  const int64_t *ms;
  float scale;
  bool causal;
  uint64_t seed, sub; // dropout's key and sub-stream
  int64_t b, h;

  /// The plane's element offset into a [B, H, rows, width] tensor.
  int64_t at(int64_t rows, int64_t width) const {
    return (b * a->heads + h) * rows * width;
  }
};

/// The scores tile sc[rows][cols] (leading dimension kKeyTile) of queries
/// [i0, i0 + rows) and keys [j0, j0 + cols): scale q k^T, the mask added
/// (additive) or applied, and -inf where a key does not take part.
void scoresTile(const Plane &p, const float *q, const float *k, int64_t i0,
                int64_t rows, int64_t j0, int64_t cols, float *sc) {
  const AttentionSizes &a = *p.a;
  pfrt_sgemm(0, 1, rows, cols, a.dim, p.scale, q + i0 * a.dim, a.dim,
             k + j0 * a.dim, a.dim, 0.0f, sc, kKeyTile);
  for (int64_t r = 0; r < rows; ++r) {
    float *row = sc + r * kKeyTile;
    const int64_t t = i0 + r;
    if (p.mask) {
      const int64_t base = p.b * p.ms[0] + p.h * p.ms[1] + t * p.ms[2];
      if (p.maskDtype == PFRT_DTYPE_F32) {
        const float *m = static_cast<const float *>(p.mask) + base;
        for (int64_t c = 0; c < cols; ++c)
          row[c] += m[(j0 + c) * p.ms[3]];
      } else {
        const uint8_t *m = static_cast<const uint8_t *>(p.mask) + base;
        for (int64_t c = 0; c < cols; ++c)
          if (!m[(j0 + c) * p.ms[3]])
            row[c] = kNegInf;
      }
    }
    if (p.causal) // keys s > t0 + t are out
      for (int64_t c = std::max<int64_t>(a.t0 + t + 1 - j0, 0); c < cols; ++c)
        row[c] = kNegInf;
  }
}

/// Dropout's keep mask of the tile: u[rows][cols] (leading dimension
/// kKeyTile), the uniforms at the tile's logical indices.
void uniformsTile(const Plane &p, int64_t i0, int64_t rows, int64_t j0,
                  int64_t cols, float *u) {
  const AttentionSizes &a = *p.a;
  const int64_t first =
      (((a.b0 + p.b) * a.logicalHeads + (a.h0 + p.h)) * a.logicalQueries +
       (a.t0 + i0)) *
          a.keys +
      j0;
  uniformBlock(u, kKeyTile, p.seed, p.sub, first, a.keys, rows, cols);
}

/// The keys a query tile [i0, i0 + rows) meets: all, or under causal those
/// up to its last row's t0 + t.
int64_t keyEnd(const Plane &p, int64_t i0, int64_t rows) {
  if (!p.causal)
    return p.a->keys;
  return std::min(p.a->keys, std::max<int64_t>(p.a->t0 + i0 + rows, 0));
}

/// Scratch of the forward's query tile.
struct ForwardScratch {
  float *sc, *u, *acc, *m;
  double *l;
};

/// One query tile of the forward: out and lse of rows [i0, i0 + rows).
void forwardTile(const Plane &p, const float *q, const float *k, const float *v,
                 float *out, float *lse, int64_t i0, int64_t rows,
                 const ForwardScratch &w) {
  const AttentionSizes &a = *p.a;
  const int64_t dv = a.dimV;
  std::fill(w.m, w.m + rows, kNegInf);
  std::fill(w.l, w.l + rows, 0.0);
  std::fill(w.acc, w.acc + rows * dv, 0.0f);
  const int64_t end = keyEnd(p, i0, rows);
  for (int64_t j0 = 0; j0 < end; j0 += kKeyTile) {
    const int64_t cols = std::min(kKeyTile, end - j0);
    scoresTile(p, q, k, i0, rows, j0, cols, w.sc);
    if (a.dropout)
      uniformsTile(p, i0, rows, j0, cols, w.u);
    for (int64_t r = 0; r < rows; ++r) {
      float *row = w.sc + r * kKeyTile;
      float mx = w.m[r];
      for (int64_t c = 0; c < cols; ++c)
        mx = std::max(mx, row[c]);
      if (mx == kNegInf) { // nothing takes part yet
        std::fill(row, row + cols, 0.0f);
        continue;
      }
      if (mx != w.m[r]) {
        const float alpha = w.m[r] == kNegInf ? 0.0f : expFloat(w.m[r] - mx);
        w.l[r] *= double(alpha);
        float *acc = w.acc + r * dv;
        for (int64_t d = 0; d < dv; ++d)
          acc[d] *= alpha;
        w.m[r] = mx;
      }
      for (int64_t c = 0; c < cols; ++c) // vectorized, branch-free
        row[c] = row[c] == kNegInf ? 0.0f : expFloat(row[c] - mx);
      double sum = 0.0;
      for (int64_t c = 0; c < cols; ++c)
        sum += double(row[c]);
      w.l[r] += sum;
      if (a.dropout) {
        const float *u = w.u + r * kKeyTile;
        for (int64_t c = 0; c < cols; ++c)
          row[c] = u[c] >= a.threshold ? row[c] * a.keepScale : 0.0f;
      }
    }
    pfrt_sgemm(0, 0, rows, dv, cols, 1.0f, w.sc, kKeyTile, v + j0 * dv,
               std::max<int64_t>(dv, 1), 1.0f, w.acc, std::max<int64_t>(dv, 1));
  }
  for (int64_t r = 0; r < rows; ++r) {
    const double l = w.l[r];
    float *o = out + (i0 + r) * dv;
    const float *acc = w.acc + r * dv;
    for (int64_t d = 0; d < dv; ++d)
      o[d] = l > 0.0 ? float(double(acc[d]) / l) : 0.0f;
    lse[i0 + r] = l > 0.0 ? float(double(w.m[r]) + std::log(l)) : kNegInf;
  }
}

/// Scratch of the gradient's tile pair.
struct GradScratch {
  float *sc, *u, *pd, *dp, *delta;
};

/// One (key tile, query tile) pair of the gradient: adds its terms to
/// dq rows [i0, i0 + rows) and dk, dv rows [j0, j0 + cols).
void gradTile(const Plane &p, const float *q, const float *k, const float *v,
              const float *lse, const float *dout, float *dq, float *dk,
              float *dv, int64_t i0, int64_t rows, int64_t j0, int64_t cols,
              const GradScratch &w) {
  const AttentionSizes &a = *p.a;
  const int64_t d = a.dim, e = a.dimV;
  const int64_t lde = std::max<int64_t>(e, 1); // BLAS wants ld >= 1
  scoresTile(p, q, k, i0, rows, j0, cols, w.sc);
  if (a.dropout)
    uniformsTile(p, i0, rows, j0, cols, w.u);
  // P = exp(S - lse) (0 where a key is out or the row has none), and the
  // dropped P in pd.
  for (int64_t r = 0; r < rows; ++r) {
    float *row = w.sc + r * kKeyTile;
    float *pd = w.pd + r * kKeyTile;
    const float l = lse[i0 + r];
    if (l == kNegInf) { // no key takes part in this row
      std::fill(row, row + cols, 0.0f);
    } else {
      for (int64_t c = 0; c < cols; ++c)
        row[c] = row[c] == kNegInf ? 0.0f : expFloat(row[c] - l);
    }
    if (a.dropout) {
      const float *u = w.u + r * kKeyTile;
      for (int64_t c = 0; c < cols; ++c)
        pd[c] = u[c] >= a.threshold ? row[c] * a.keepScale : 0.0f;
    }
  }
  const float *pd = a.dropout ? w.pd : w.sc;
  // dV += Pd^T dO; dPd = dO V^T.
  pfrt_sgemm(1, 0, cols, e, rows, 1.0f, pd, kKeyTile, dout + i0 * e, lde, 1.0f,
             dv + j0 * e, lde);
  pfrt_sgemm(0, 1, rows, cols, e, 1.0f, dout + i0 * e, lde, v + j0 * e, lde,
             0.0f, w.dp, kKeyTile);
  // dS = P (dP - delta), dP = dropout(dPd); into sc.
  for (int64_t r = 0; r < rows; ++r) {
    float *row = w.sc + r * kKeyTile;
    const float *dp = w.dp + r * kKeyTile;
    const float delta = w.delta[i0 + r];
    if (a.dropout) {
      const float *u = w.u + r * kKeyTile;
      for (int64_t c = 0; c < cols; ++c)
        row[c] *= (u[c] >= a.threshold ? dp[c] * a.keepScale : 0.0f) - delta;
    } else {
      for (int64_t c = 0; c < cols; ++c)
        row[c] *= dp[c] - delta;
    }
  }
  // dQ += scale dS K; dK += scale dS^T Q.
  pfrt_sgemm(0, 0, rows, d, cols, p.scale, w.sc, kKeyTile, k + j0 * d, d, 1.0f,
             dq + i0 * d, d);
  pfrt_sgemm(1, 0, cols, d, rows, p.scale, w.sc, kKeyTile, q + i0 * d, d, 1.0f,
             dk + j0 * d, d);
}

/// The fixed arguments of a call, its dropout sub-stream included.
Plane makePlane(const AttentionSizes &a, const void *mask, int32_t maskDtype,
                const int64_t *maskStrides, double scale, int32_t causal,
                uint64_t seed, uint64_t stream, int64_t microbatch) {
  Plane p;
  p.a = &a;
  p.mask = mask;
  p.maskDtype = maskDtype;
  p.ms = maskStrides;
  p.scale = float(scale);
  p.causal = causal != 0;
  p.seed = seed;
  p.sub = pfrt_stream_for_step(
      pfrt_stream_for_step(stream, uint64_t(currentDataStep())),
      uint64_t(microbatch));
  p.b = p.h = 0;
  return p;
}

/// Runs body(q, k, v of the plane) on each (b, h) plane in order, p.b and
/// p.h set to it.
template <typename Body>
void forEachPlane(Plane &p, const float *q, const float *k, const float *v,
                  Body &&body) {
  const AttentionSizes &a = *p.a;
  for (p.b = 0; p.b < a.batch; ++p.b)
    for (p.h = 0; p.h < a.heads; ++p.h)
      body(q + p.at(a.queries, a.dim), k + p.at(a.keys, a.dim),
           v + p.at(a.keys, a.dimV));
}

} // namespace

extern "C" {

int pfrt_k_attention(const float *q, const float *k, const float *v,
                     const void *mask, int32_t maskDtype,
                     const int64_t *maskStrides, float *out, float *lse,
                     const int64_t *dims, double scale, int32_t causal,
                     double dropoutP, uint64_t seed, uint64_t stream,
                     int64_t microbatch, const int64_t *logical) {
  const AttentionSizes a =
      checkAttentionArgs("pfrt_k_attention", dims, mask, maskDtype, maskStrides,
                         scale, dropoutP, logical, {q, k, v, out, lse});
  if (a.rows == 0)
    return 0;
  Plane p = makePlane(a, mask, maskDtype, maskStrides, scale, causal, seed,
                      stream, microbatch);
  const int64_t tile = kQueryTile * kKeyTile;
  const int64_t accBytes = kQueryTile * a.dimV * int64_t(sizeof(float));
  auto *base = static_cast<char *>(
      scratch(0, (2 * tile + 2 * kQueryTile) * int64_t(sizeof(float)) +
                     accBytes + kQueryTile * int64_t(sizeof(double))));
  ForwardScratch w;
  w.l = reinterpret_cast<double *>(base);
  w.sc = reinterpret_cast<float *>(w.l + kQueryTile);
  w.u = w.sc + tile;
  w.m = w.u + tile;
  w.acc = w.m + kQueryTile;
  forEachPlane(p, q, k, v,
               [&](const float *qp, const float *kp, const float *vp) {
                 float *op = out + p.at(a.queries, a.dimV),
                       *lp = lse + p.at(a.queries, 1);
                 for (int64_t i0 = 0; i0 < a.queries; i0 += kQueryTile)
                   forwardTile(p, qp, kp, vp, op, lp, i0,
                               std::min(kQueryTile, a.queries - i0), w);
               });
  return 0;
}

int pfrt_k_attention_grad(const float *q, const float *k, const float *v,
                          const void *mask, int32_t maskDtype,
                          const int64_t *maskStrides, const float *out,
                          const float *lse, const float *dout, float *dq,
                          float *dk, float *dv, const int64_t *dims,
                          double scale, int32_t causal, double dropoutP,
                          uint64_t seed, uint64_t stream, int64_t microbatch,
                          const int64_t *logical) {
  const AttentionSizes a = checkAttentionArgs(
      "pfrt_k_attention_grad", dims, mask, maskDtype, maskStrides, scale,
      dropoutP, logical, {q, k, v, out, lse, dout, dq, dk, dv});
  std::fill(dq, dq + a.qElems, 0.0f);
  std::fill(dk, dk + a.kElems, 0.0f);
  std::fill(dv, dv + a.vElems, 0.0f);
  if (a.rows == 0 || a.keys == 0)
    return 0;
  Plane p = makePlane(a, mask, maskDtype, maskStrides, scale, causal, seed,
                      stream, microbatch);
  const int64_t tile = kQueryTile * kKeyTile;
  GradScratch w;
  w.sc = scratchOf<float>(0, 4 * tile + a.queries);
  w.u = w.sc + tile;
  w.pd = w.u + tile;
  w.dp = w.pd + tile;
  w.delta = w.dp + tile;
  forEachPlane(
      p, q, k, v, [&](const float *qp, const float *kp, const float *vp) {
        const float *lp = lse + p.at(a.queries, 1),
                    *op = out + p.at(a.queries, a.dimV),
                    *gp = dout + p.at(a.queries, a.dimV);
        float *dqp = dq + p.at(a.queries, a.dim),
              *dkp = dk + p.at(a.keys, a.dim);
        float *dvp = dv + p.at(a.keys, a.dimV);
        // delta_t = sum(dout * out) over the row, in float64.
        for (int64_t t = 0; t < a.queries; ++t) {
          double s = 0.0;
          for (int64_t d = 0; d < a.dimV; ++d)
            s += double(gp[t * a.dimV + d]) * double(op[t * a.dimV + d]);
          w.delta[t] = float(s);
        }
        for (int64_t j0 = 0; j0 < a.keys; j0 += kKeyTile) {
          const int64_t cols = std::min(kKeyTile, a.keys - j0);
          for (int64_t i0 = 0; i0 < a.queries; i0 += kQueryTile) {
            const int64_t rows = std::min(kQueryTile, a.queries - i0);
            if (keyEnd(p, i0, rows) <= j0)
              continue; // causal: no key of this tile takes part
            gradTile(p, qp, kp, vp, lp, gp, dqp, dkp, dvp, i0, rows, j0, cols,
                     w);
          }
        }
      });
  return 0;
}

} // extern "C"
