//===- AttentionBodies.h - flash-style attention rows -----------*- C++ -*-===//
//
// Not installed; nothing here is part of the ABI. Part of the CUDA kernels'
// bodies (DeviceBodies.h says how they are written and checked), for
// pfrt_cuda_k_attention(_grad) (src/cpu/Attention.cpp is the CPU kernel:
// the same rules, its own summation order, so the two agree to float32's
// rounding, not bit for bit).
//
// One thread a row: the forward's thread owns a query row (an online
// softmax over tiles of kAttnKeys keys: the tile's scores in registers,
// one rescale of the output row a tile), the gradient's a key row (dK, dV)
// or a query row (dQ), each over tiles of the other side in order. Every
// output element is written by one thread; no shared memory, so the host
// build (one thread after another) runs the same arithmetic.
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_CUDA_KERNELS_ATTENTIONBODIES_H
#define PFRT_SRC_CUDA_KERNELS_ATTENTIONBODIES_H

#include "CommonBodies.h"
#include "TensorBodies.h"

namespace pfrt {
namespace dev {

/// Keys (forward, dQ) or queries (dK, dV) a thread takes at a time.
constexpr int kAttnKeys = 32;

/// What an attention call fixes on the host (the data step is read at run
/// time, as dropout's).
struct AttnParams {
  int64_t batch, heads, queries, keys, dim, dimV; // B, H, T, S, D, Dv
  int64_t ms[4];                                  // the mask's strides
  int32_t maskKind;   // 0 none, 1 additive float32, 2 bool
  int32_t causal;     // keys s > t0 + t are out
  int32_t dropout;    // p > 0
  float scale;        // float(scale)
  DropoutParams drop; // seed, stream, microbatch, keep scale, threshold
  int64_t logicalHeads, logicalQueries, b0, h0, t0; // dropout, causal
};

/// The score of query t and key s of plane bh (= b * H + h), or -inf when
/// the key does not take part: float32 dot product in d order, times the
/// scale, plus an additive mask.
PFRT_HD inline float attnScore(const AttnParams &p, const float *q,
                               const float *k, const void *mask, int64_t bh,
                               int64_t t, int64_t s) {
  if (p.causal && s > p.t0 + t)
    return negInf();
  float v = 0.0f;
  if (p.maskKind) {
    const int64_t b = bh / p.heads, h = bh - b * p.heads;
    const int64_t at = b * p.ms[0] + h * p.ms[1] + t * p.ms[2] + s * p.ms[3];
    if (p.maskKind == 2) {
      if (!static_cast<const uint8_t *>(mask)[at])
        return negInf();
    } else {
      v = static_cast<const float *>(mask)[at];
    }
  }
  const float *qr = q + (bh * p.queries + t) * p.dim;
  const float *kr = k + (bh * p.keys + s) * p.dim;
  float dot = 0.0f;
  for (int64_t d = 0; d < p.dim; ++d)
    dot += qr[d] * kr[d];
  return p.scale * dot + v;
}

/// Whether dropout keeps (t, s) of plane bh: the uniform at its logical
/// index on sub-stream `sub` (pfrt_k_dropout's test).
PFRT_HD inline bool attnKeep(const AttnParams &p, int64_t bh, int64_t t,
                             int64_t s, uint64_t sub) {
  const int64_t b = bh / p.heads, h = bh - b * p.heads;
  const int64_t li =
      (((p.b0 + b) * p.logicalHeads + (p.h0 + h)) * p.logicalQueries +
       (p.t0 + t)) *
          p.keys +
      s;
  return uniformAt(p.drop.seed, sub, li) >= p.drop.threshold;
}

/// The keys query t meets: all, or up to t0 + t under causal.
PFRT_HD inline int64_t attnKeyEnd(const AttnParams &p, int64_t t) {
  if (!p.causal)
    return p.keys;
  return p.t0 + t + 1 < p.keys ? p.t0 + t + 1 : p.keys;
}

/// Column d of the row vector w times n rows of x (of `width` floats):
/// sum(w[i] * x[i][d]) in float32, i in order.
PFRT_HD inline float attnColumn(const float *w, const float *x, int n,
                                int64_t width, int64_t d) {
  float acc = 0.0f;
  for (int i = 0; i < n; ++i)
    acc += w[i] * x[i * width + d];
  return acc;
}

/// The forward of query row t of plane bh: out's row and lse.
PFRT_HD inline void attnForwardRow(const AttnParams &p, const float *q,
                                   const float *k, const float *v,
                                   const void *mask, float *out, float *lse,
                                   uint64_t sub, int64_t bh, int64_t t) {
  float *o = out + (bh * p.queries + t) * p.dimV;
  for (int64_t d = 0; d < p.dimV; ++d)
    o[d] = 0.0f;
  float m = negInf();
  double l = 0.0;
  const int64_t end = attnKeyEnd(p, t);
  float pr[kAttnKeys];
  for (int64_t j0 = 0; j0 < end; j0 += kAttnKeys) {
    const int cols = int(end - j0 < kAttnKeys ? end - j0 : kAttnKeys);
    float mx = m;
    for (int c = 0; c < cols; ++c) {
      pr[c] = attnScore(p, q, k, mask, bh, t, j0 + c);
      mx = pr[c] > mx ? pr[c] : mx;
    }
    if (mx == negInf())
      continue; // nothing takes part yet
    const float alpha = mx == m ? 1.0f : expf(m - mx);
    l *= double(alpha);
    m = mx;
    for (int c = 0; c < cols; ++c) {
      pr[c] = pr[c] == negInf() ? 0.0f : expf(pr[c] - mx);
      l += double(pr[c]);
      if (p.dropout)
        pr[c] = attnKeep(p, bh, t, j0 + c, sub) ? pr[c] * p.drop.scale : 0.0f;
    }
    const float *vt = v + (bh * p.keys + j0) * p.dimV;
    for (int64_t d = 0; d < p.dimV; ++d)
      o[d] = o[d] * alpha + attnColumn(pr, vt, cols, p.dimV, d);
  }
  for (int64_t d = 0; d < p.dimV; ++d)
    o[d] = l > 0.0 ? float(double(o[d]) / l) : 0.0f;
  lse[bh * p.queries + t] = l > 0.0 ? float(double(m) + log(l)) : negInf();
}

/// delta of row r: sum(dout * out) over the row in float64.
PFRT_HD inline void attnDeltaRow(const float *out, const float *dout,
                                 float *delta, int64_t dv, int64_t r) {
  double s = 0.0;
  for (int64_t d = 0; d < dv; ++d)
    s += double(dout[r * dv + d]) * double(out[r * dv + d]);
  delta[r] = float(s);
}

/// The gradient's terms of (t, s): the dropped probability *pd and
/// dS = P (dropout(dO_t . V_s) - delta_t) (0 and 0 where the key is out).
PFRT_HD inline float attnGradTerms(const AttnParams &p, const float *q,
                                   const float *k, const float *v,
                                   const void *mask, const float *lse,
                                   const float *dout, const float *delta,
                                   uint64_t sub, int64_t bh, int64_t t,
                                   int64_t s, float *pd) {
  const float l = lse[bh * p.queries + t];
  const float sc = attnScore(p, q, k, mask, bh, t, s);
  *pd = 0.0f;
  if (sc == negInf() || l == negInf())
    return 0.0f;
  const float pr = expf(sc - l);
  const float *g = dout + (bh * p.queries + t) * p.dimV;
  const float *vr = v + (bh * p.keys + s) * p.dimV;
  float dp = 0.0f;
  for (int64_t d = 0; d < p.dimV; ++d)
    dp += g[d] * vr[d];
  const bool keep = !p.dropout || attnKeep(p, bh, t, s, sub);
  const float f = p.dropout ? p.drop.scale : 1.0f;
  *pd = keep ? pr * f : 0.0f;
  return pr * ((keep ? dp * f : 0.0f) - delta[bh * p.queries + t]);
}

/// dK and dV of key row s of plane bh, over tiles of kAttnKeys queries.
PFRT_HD inline void attnGradKeyRow(const AttnParams &p, const float *q,
                                   const float *k, const float *v,
                                   const void *mask, const float *lse,
                                   const float *dout, const float *delta,
                                   float *dk, float *dv, uint64_t sub,
                                   int64_t bh, int64_t s) {
  float *gk = dk + (bh * p.keys + s) * p.dim;
  float *gv = dv + (bh * p.keys + s) * p.dimV;
  for (int64_t d = 0; d < p.dim; ++d)
    gk[d] = 0.0f;
  for (int64_t d = 0; d < p.dimV; ++d)
    gv[d] = 0.0f;
  // Under causal the queries t >= s - t0 meet key s.
  int64_t first = p.causal && s - p.t0 > 0 ? s - p.t0 : 0;
  float pd[kAttnKeys], ds[kAttnKeys];
  for (int64_t i0 = first; i0 < p.queries; i0 += kAttnKeys) {
    const int rows =
        int(p.queries - i0 < kAttnKeys ? p.queries - i0 : kAttnKeys);
    for (int r = 0; r < rows; ++r)
      ds[r] = attnGradTerms(p, q, k, v, mask, lse, dout, delta, sub, bh, i0 + r,
                            s, &pd[r]);
    const float *g = dout + (bh * p.queries + i0) * p.dimV;
    for (int64_t d = 0; d < p.dimV; ++d)
      gv[d] += attnColumn(pd, g, rows, p.dimV, d);
    const float *qt = q + (bh * p.queries + i0) * p.dim;
    for (int64_t d = 0; d < p.dim; ++d)
      gk[d] += p.scale * attnColumn(ds, qt, rows, p.dim, d);
  }
}

/// dQ of query row t of plane bh, over tiles of kAttnKeys keys.
PFRT_HD inline void attnGradQueryRow(const AttnParams &p, const float *q,
                                     const float *k, const float *v,
                                     const void *mask, const float *lse,
                                     const float *dout, const float *delta,
                                     float *dq, uint64_t sub, int64_t bh,
                                     int64_t t) {
  float *gq = dq + (bh * p.queries + t) * p.dim;
  for (int64_t d = 0; d < p.dim; ++d)
    gq[d] = 0.0f;
  const int64_t end = attnKeyEnd(p, t);
  float pd[kAttnKeys], ds[kAttnKeys];
  for (int64_t j0 = 0; j0 < end; j0 += kAttnKeys) {
    const int cols = int(end - j0 < kAttnKeys ? end - j0 : kAttnKeys);
    for (int c = 0; c < cols; ++c)
      ds[c] = attnGradTerms(p, q, k, v, mask, lse, dout, delta, sub, bh, t,
                            j0 + c, &pd[c]);
    const float *kt = k + (bh * p.keys + j0) * p.dim;
    for (int64_t d = 0; d < p.dim; ++d)
      gq[d] += p.scale * attnColumn(ds, kt, cols, p.dim, d);
  }
}

/// The thread's row of a launch of blocks over (plane, tile of kBlock
/// rows) of `rows` rows a plane: false when past the plane's end.
PFRT_HD inline bool attnRowOf(int64_t block, int64_t thread, int64_t rows,
                              int64_t *bh, int64_t *row) {
  const int64_t tiles = (rows + kBlock - 1) / kBlock;
  *bh = block / tiles;
  *row = (block - *bh * tiles) * kBlock + thread;
  return *row < rows;
}

} // namespace dev
} // namespace pfrt

#endif // PFRT_SRC_CUDA_KERNELS_ATTENTIONBODIES_H
