//===- test_k_attention.cpp - flash-style attention against float64 -------===//
//
// pfrt-test-k-attention [twins | bad CASE | bad-twin CASE]
//
// Fresh random q, k, v and dout (PFRT_TEST_SEED replays a run) through
// pfrt_k_attention(_grad), or with `twins` through their device twins (a
// GPU, or the emulation: PFRT_CUDA_FAKE=1; exits 77 without a device),
// against a float64 reference computed here from the materialised
// softmax: no mask, causal (T == S, T != S, t0 > 0), an additive float
// mask broadcast over batch and heads, a bool mask with fully masked rows
// (out 0, lse -inf, dq 0), dropout p = 0.1 and 0.5 (the keep set from
// pfrt_init_param's uniforms over the whole logical tensor, as
// pfrt_k_dropout draws them, and pfrt_k_dropout itself), head and query
// shards of a bigger logical tensor (the rows of the whole one), D != Dv,
// sizes off the tiles, S = 0, Dv = 0 and a bigger case. Every case runs
// twice: the same bits. The twins also run under pfrt_cuda_run_step (a
// captured step replayed: each step's own dropout mask). `bad CASE` /
// `bad-twin CASE` make one bad call, which must be fatal (run_tests.sh
// matches the message).
//
//===----------------------------------------------------------------------===//

#include "CudaTestUtil.h"
#include "TestUtil.h"
#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

#include "../src/common/Internal.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace {

uint64_t gSeed, gTag = 0;
int gChecks = 0;
bool gDevice = false;
constexpr int64_t kDataStep = 5;
constexpr uint64_t kStream = 0xa77e;
constexpr int64_t kMicrobatch = 2;
// The largest error allowed, relative to the largest magnitude of the
// tensor (max |got - ref| / max |ref|). The kernels compute in float32
// (products and accumulators), so their rounding error grows with the
// magnitude of the terms summed, not with each element's own value: an
// element that is a near-cancelling sum is small with an absolute error of
// the others' size, and an element-wise relative test would fail on it
// for no fault. 1e-5 is a few float32 epsilons times the dot products'
// lengths' square roots.
constexpr double kTol = 1e-5;

std::vector<float> uniform(int64_t n, float lo, float hi) {
  return pt::uniformValues(gSeed, ++gTag, 0, n, lo, hi);
}

/// An attention case: the local dims, the rules, and where the block lies
/// in the logical tensor (LB == 0: no logical block, the call passes null).
struct Case {
  std::string name;
  int64_t batch, heads, queries, keys, dim, dimV; // B, H, T, S, D, Dv
  int32_t causal = 0;
  int maskKind = 0; // 0 none, 1 float broadcast over b and h, 2 bool
  double p = 0.0;
  int64_t logicalBatch = 0, logicalHeads = 0, logicalQueries = 0;
  int64_t b0 = 0, h0 = 0, t0 = 0;
  double scale() const { return 1.0 / std::sqrt(double(dim)); }
};

/// A case's inputs.
struct Inputs {
  std::vector<float> q, k, v, dout, fmask;
  std::vector<uint8_t> bmask;
  int64_t ms[4] = {0, 0, 0, 0};
  const void *mask() const {
    if (!fmask.empty())
      return fmask.data();
    if (!bmask.empty())
      return bmask.data();
    return nullptr;
  }
  int32_t maskDtype() const {
    return bmask.empty() ? PFRT_DTYPE_F32 : PFRT_DTYPE_BOOL;
  }
};

/// A kernel's results.
struct Outputs {
  std::vector<float> out, lse, dq, dk, dv;
};

Inputs makeInputs(const Case &c) {
  Inputs in;
  const int64_t bh = c.batch * c.heads;
  in.q = uniform(bh * c.queries * c.dim, -2.0f, 2.0f);
  in.k = uniform(bh * c.keys * c.dim, -2.0f, 2.0f);
  in.v = uniform(bh * c.keys * c.dimV, -1.0f, 1.0f);
  in.dout = uniform(bh * c.queries * c.dimV, -1.0f, 1.0f);
  if (c.maskKind == 1) { // [T, S], 1 in 8 -inf, broadcast over b and h
    in.fmask = uniform(c.queries * c.keys, -2.0f, 2.0f);
    std::vector<float> u = uniform(c.queries * c.keys, 0.0f, 1.0f);
    for (size_t i = 0; i < u.size(); ++i)
      if (u[i] < 0.125f)
        in.fmask[i] = -std::numeric_limits<float>::infinity();
    in.ms[2] = c.keys;
    in.ms[3] = 1;
  } else if (c.maskKind == 2) { // [B, H, T, S]; rows t % 7 == 3 all out
    std::vector<float> u = uniform(bh * c.queries * c.keys, 0.0f, 1.0f);
    in.bmask.resize(u.size());
    for (size_t i = 0; i < u.size(); ++i) {
      int64_t t = int64_t(i) / c.keys % c.queries;
      in.bmask[i] = t % 7 == 3 ? 0 : u[i] < 0.7f ? uint8_t(1 + (i % 3)) : 0;
    }
    in.ms[0] = c.heads * c.queries * c.keys;
    in.ms[1] = c.queries * c.keys;
    in.ms[2] = c.keys;
    in.ms[3] = 1;
  }
  return in;
}

/// The logical block argument of a case (null without one).
struct Logical {
  int64_t v[8];
  const int64_t *get(const Case &c) const {
    return c.logicalBatch ? v : nullptr;
  }
};
Logical logicalOf(const Case &c) {
  return {{c.logicalBatch, c.logicalHeads, c.logicalQueries, c.keys, c.b0, c.h0,
           c.t0, 0}};
}

/// The keep set of the case's block, [B, H, T, S] (empty without dropout):
/// the uniforms of the whole logical tensor (pfrt_init_param, the
/// sub-stream pfrt_k_dropout draws on) at the block's indices; and
/// pfrt_k_dropout of ones over the block must keep the same set.
std::vector<uint8_t> keepSet(const Case &c) {
  if (c.p == 0.0)
    return {};
  const bool whole = c.logicalBatch == 0;
  const int64_t lb = whole ? c.batch : c.logicalBatch;
  const int64_t lh = whole ? c.heads : c.logicalHeads;
  const int64_t lt = whole ? c.queries : c.logicalQueries;
  const int64_t logical[4] = {lb, lh, lt, c.keys};
  std::vector<float> u(size_t(lb * lh * lt * c.keys));
  const uint64_t sub = pfrt_stream_for_step(
      pfrt_stream_for_step(kStream, uint64_t(kDataStep)), kMicrobatch);
  pfrt_init_param(u.data(), PFRT_INIT_UNIFORM, 0.0, 1.0, 1234, sub, 4, logical,
                  nullptr, nullptr);
  const int64_t off[4] = {c.b0, c.h0, c.t0, 0},
                shape[4] = {c.batch, c.heads, c.queries, c.keys};
  const int64_t n = c.batch * c.heads * c.queries * c.keys;
  std::vector<float> ones(size_t(n), 1.0f), y(static_cast<size_t>(n));
  pfrt_k_dropout(ones.data(), y.data(), n, c.p, 1234, kStream, kMicrobatch, 4,
                 logical, off, shape);
  std::vector<uint8_t> keep(static_cast<size_t>(n));
  int64_t i = 0, kept = 0;
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t t = 0; t < c.queries; ++t)
        for (int64_t s = 0; s < c.keys; ++s, ++i) {
          float x = u[size_t(
              (((c.b0 + b) * lh + c.h0 + h) * lt + c.t0 + t) * c.keys + s)];
          keep[size_t(i)] = x >= float(c.p);
          CHECK(keep[size_t(i)] == (y[size_t(i)] != 0.0f),
                "%s: pfrt_k_dropout keeps another set", c.name.c_str());
          kept += keep[size_t(i)];
        }
  const bool rateOk =
      n < 1000 || std::fabs(double(kept) / double(n) - (1.0 - c.p)) < 0.05;
  CHECK(rateOk, "%s: kept %lld of %lld", c.name.c_str(), (long long)kept,
        (long long)n);
  return keep;
}

/// The float64 reference: the materialised softmax of each row.
struct Reference {
  std::vector<double> out, lse, dq, dk, dv;
};

/// Whether key s takes part in row t of plane (b, h), and its score.
bool refScore(const Case &c, const Inputs &in, int64_t b, int64_t h, int64_t t,
              int64_t s, double *score) {
  if (c.causal && s > c.t0 + t)
    return false;
  const int64_t bh = b * c.heads + h;
  double dot = 0.0;
  for (int64_t d = 0; d < c.dim; ++d)
    dot += double(in.q[size_t((bh * c.queries + t) * c.dim + d)]) *
           double(in.k[size_t((bh * c.keys + s) * c.dim + d)]);
  *score = double(float(c.scale())) * dot;
  const int64_t at = b * in.ms[0] + h * in.ms[1] + t * in.ms[2] + s * in.ms[3];
  if (!in.bmask.empty() && !in.bmask[size_t(at)])
    return false;
  if (!in.fmask.empty()) {
    if (std::isinf(in.fmask[size_t(at)]))
      return false;
    *score += double(in.fmask[size_t(at)]);
  }
  return true;
}

Reference reference(const Case &c, const Inputs &in,
                    const std::vector<uint8_t> &keep) {
  Reference r;
  const int64_t bh = c.batch * c.heads;
  r.out.assign(size_t(bh * c.queries * c.dimV), 0.0);
  r.lse.assign(size_t(bh * c.queries),
               -std::numeric_limits<double>::infinity());
  r.dq.assign(size_t(bh * c.queries * c.dim), 0.0);
  r.dk.assign(size_t(bh * c.keys * c.dim), 0.0);
  r.dv.assign(size_t(bh * c.keys * c.dimV), 0.0);
  const double f = c.p > 0 ? double(float(1.0 / (1.0 - c.p))) : 1.0;
  const double sc = double(float(c.scale()));
  std::vector<double> p(size_t(c.keys)), dp(size_t(c.keys));
  std::vector<uint8_t> takes(size_t(c.keys));
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t t = 0; t < c.queries; ++t) {
        const int64_t plane = b * c.heads + h, row = plane * c.queries + t;
        double mx = -std::numeric_limits<double>::infinity(), sum = 0.0;
        for (int64_t s = 0; s < c.keys; ++s) {
          takes[size_t(s)] = refScore(c, in, b, h, t, s, &p[size_t(s)]);
          if (takes[size_t(s)])
            mx = std::max(mx, p[size_t(s)]);
        }
        if (std::isinf(mx))
          continue; // no key: out 0, lse -inf, no gradient
        for (int64_t s = 0; s < c.keys; ++s) {
          p[size_t(s)] = takes[size_t(s)] ? std::exp(p[size_t(s)] - mx) : 0.0;
          sum += p[size_t(s)];
        }
        r.lse[size_t(row)] = mx + std::log(sum);
        const float *g = &in.dout[size_t(row * c.dimV)];
        double delta = 0.0;
        for (int64_t s = 0; s < c.keys; ++s) {
          p[size_t(s)] /= sum;
          const double z = keep.empty()                     ? 1.0
                           : keep[size_t(row * c.keys + s)] ? f
                                                            : 0.0;
          const float *vs = &in.v[size_t((plane * c.keys + s) * c.dimV)];
          double gv = 0.0;
          for (int64_t d = 0; d < c.dimV; ++d) {
            r.out[size_t(row * c.dimV + d)] += p[size_t(s)] * z * double(vs[d]);
            r.dv[size_t((plane * c.keys + s) * c.dimV + d)] +=
                p[size_t(s)] * z * double(g[d]);
            gv += double(g[d]) * double(vs[d]);
          }
          dp[size_t(s)] = z * gv; // dL/dP through the dropout
          delta += p[size_t(s)] * dp[size_t(s)];
        }
        for (int64_t s = 0; s < c.keys; ++s) {
          const double ds = p[size_t(s)] * (dp[size_t(s)] - delta) * sc;
          for (int64_t d = 0; d < c.dim; ++d) {
            r.dq[size_t(row * c.dim + d)] +=
                ds * double(in.k[size_t((plane * c.keys + s) * c.dim + d)]);
            r.dk[size_t((plane * c.keys + s) * c.dim + d)] +=
                ds * double(in.q[size_t(row * c.dim + d)]);
          }
        }
      }
  return r;
}

/// max |got - want| / max |want| (see kTol); lse compares its finite
/// entries and needs -inf exactly where the reference has it.
double relErr(const std::vector<float> &got, const std::vector<double> &want) {
  CHECK(got.size() == want.size(), "sizes %zu and %zu", got.size(),
        want.size());
  double err = 0.0, mag = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isinf(want[i])) {
      CHECK(got[i] == float(want[i]), "element %zu: %g, not -inf", i,
            double(got[i]));
      continue;
    }
    err = std::max(err, std::fabs(double(got[i]) - want[i]));
    mag = std::max(mag, std::fabs(want[i]));
  }
  return mag > 0 ? err / mag : err;
}

void expectClose(const Case &c, const char *what, const std::vector<float> &got,
                 const std::vector<double> &want) {
  double e = relErr(got, want);
  if (getenv("PFRT_TEST_VERBOSE"))
    printf("    %s %s: %.3g\n", c.name.c_str(), what, e);
  CHECK(e <= kTol, "%s%s: %s is %.3g off the float64 reference (seed %llu)",
        gDevice ? "twin " : "", c.name.c_str(), what, e,
        (unsigned long long)gSeed);
  ++gChecks;
}

/// The same bits (two runs, or a shard and the whole).
void expectSame(const Case &c, const char *what, const std::vector<float> &a,
                const std::vector<float> &b) {
  const bool same = a.size() == b.size() &&
                    pt_bits_equal(a.data(), b.data(), int64_t(a.size()));
  CHECK(same, "%s%s: %s differs (bits)", gDevice ? "twin " : "", c.name.c_str(),
        what);
  ++gChecks;
}

/// The forward and gradient of a case on the CPU, or through the twins.
Outputs run(const Case &c, const Inputs &in) {
  const int64_t bh = c.batch * c.heads,
                dims[6] = {c.batch, c.heads, c.queries, c.keys, c.dim, c.dimV};
  const Logical lg = logicalOf(c);
  Outputs o;
  o.out.resize(size_t(bh * c.queries * c.dimV));
  o.lse.resize(size_t(bh * c.queries));
  o.dq.resize(in.q.size());
  o.dk.resize(in.k.size());
  o.dv.resize(in.v.size());
  if (!gDevice) {
    CHECK(pfrt_k_attention(in.q.data(), in.k.data(), in.v.data(), in.mask(),
                           in.maskDtype(), in.ms, o.out.data(), o.lse.data(),
                           dims, c.scale(), c.causal, c.p, 1234, kStream,
                           kMicrobatch, lg.get(c)) == 0,
          "pfrt_k_attention failed");
    CHECK(pfrt_k_attention_grad(
              in.q.data(), in.k.data(), in.v.data(), in.mask(), in.maskDtype(),
              in.ms, o.out.data(), o.lse.data(), in.dout.data(), o.dq.data(),
              o.dk.data(), o.dv.data(), dims, c.scale(), c.causal, c.p, 1234,
              kStream, kMicrobatch, lg.get(c)) == 0,
          "pfrt_k_attention_grad failed");
    return o;
  }
  pt::DeviceArena arena(int64_t(256) << 20);
  const float *q = arena.upload(in.q.data(), int64_t(in.q.size()));
  const float *k = arena.upload(in.k.data(), int64_t(in.k.size()));
  const float *v = arena.upload(in.v.data(), int64_t(in.v.size()));
  const float *g = arena.upload(in.dout.data(), int64_t(in.dout.size()));
  const void *mask =
      !in.fmask.empty()   ? static_cast<const void *>(arena.upload(
                                in.fmask.data(), int64_t(in.fmask.size())))
      : !in.bmask.empty() ? static_cast<const void *>(arena.upload(
                                in.bmask.data(), int64_t(in.bmask.size())))
                          : nullptr;
  auto *out = static_cast<float *>(arena.alloc(int64_t(o.out.size()) * 4));
  auto *lse = static_cast<float *>(arena.alloc(int64_t(o.lse.size()) * 4));
  auto *dq = static_cast<float *>(arena.alloc(int64_t(o.dq.size()) * 4));
  auto *dk = static_cast<float *>(arena.alloc(int64_t(o.dk.size()) * 4));
  auto *dv = static_cast<float *>(arena.alloc(int64_t(o.dv.size()) * 4));
  pfrt_cuda_k_attention(q, k, v, mask, in.maskDtype(), in.ms, out, lse, dims,
                        c.scale(), c.causal, c.p, 1234, kStream, kMicrobatch,
                        lg.get(c));
  pfrt_cuda_k_attention_grad(q, k, v, mask, in.maskDtype(), in.ms, out, lse, g,
                             dq, dk, dv, dims, c.scale(), c.causal, c.p, 1234,
                             kStream, kMicrobatch, lg.get(c));
  o.out = pt::download(out, int64_t(o.out.size()));
  o.lse = pt::download(lse, int64_t(o.lse.size()));
  o.dq = pt::download(dq, int64_t(o.dq.size()));
  o.dk = pt::download(dk, int64_t(o.dk.size()));
  o.dv = pt::download(dv, int64_t(o.dv.size()));
  return o;
}

/// A case against the reference, twice (the same bits both times).
Outputs check(const Case &c, const Inputs &in) {
  const std::vector<uint8_t> keep = keepSet(c);
  const Reference ref = reference(c, in, keep);
  Outputs a = run(c, in), b = run(c, in);
  expectClose(c, "out", a.out, ref.out);
  expectClose(c, "lse", a.lse, ref.lse);
  expectClose(c, "dq", a.dq, ref.dq);
  expectClose(c, "dk", a.dk, ref.dk);
  expectClose(c, "dv", a.dv, ref.dv);
  expectSame(c, "out", a.out, b.out);
  expectSame(c, "lse", a.lse, b.lse);
  expectSame(c, "dq", a.dq, b.dq);
  expectSame(c, "dk", a.dk, b.dk);
  expectSame(c, "dv", a.dv, b.dv);
  // Rows without a key: out 0, lse -inf and dq 0, exactly.
  int64_t empty = 0;
  for (size_t r = 0; r < ref.lse.size(); ++r) {
    if (!std::isinf(ref.lse[r]))
      continue;
    ++empty;
    const bool negInf = std::isinf(a.lse[r]) && a.lse[r] < 0;
    CHECK(negInf, "%s: row %zu's lse is %g", c.name.c_str(), r,
          double(a.lse[r]));
    for (int64_t d = 0; d < c.dimV; ++d)
      CHECK(a.out[r * size_t(c.dimV) + size_t(d)] == 0.0f,
            "%s: empty row %zu: out is not 0", c.name.c_str(), r);
    for (int64_t d = 0; d < c.dim; ++d)
      CHECK(a.dq[r * size_t(c.dim) + size_t(d)] == 0.0f,
            "%s: empty row %zu: dq is not 0", c.name.c_str(), r);
  }
  const bool emptyRows = c.maskKind != 2 || empty > 0;
  CHECK(emptyRows, "%s: no fully masked row", c.name.c_str());
  printf("  %s%s: ok (%lld empty rows)\n", gDevice ? "twin " : "",
         c.name.c_str(), (long long)empty);
  return a;
}

/// Rows [b0, b0 + B) x [h0, h0 + H) x [t0, t0 + T) of a [LB, LH, LT, n]
/// tensor.
std::vector<float> slice(const std::vector<float> &x, const Case &c,
                         int64_t n) {
  std::vector<float> y;
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t t = 0; t < c.queries; ++t) {
        const int64_t row =
            ((c.b0 + b) * c.logicalHeads + c.h0 + h) * c.logicalQueries + c.t0 +
            t;
        y.insert(y.end(), x.begin() + row * n, x.begin() + (row + 1) * n);
      }
  return y;
}

/// A shard of a bigger logical tensor, with dropout and causal: its rows
/// of out and lse are the whole tensor's. A head shard's planes are the
/// whole's planes, bit for bit; a query shard's rows are the whole's rows
/// bit for bit on the device (a thread a row), to float32 rounding on the
/// CPU (OpenBLAS's products of a row may depend on the product's row count).
void shardCase(const Case &whole, const Inputs &in, const Outputs &all,
               const Case &part) {
  Inputs pin;
  pin.q = slice(in.q, part, part.dim);
  pin.dout = slice(in.dout, part, part.dimV);
  Case keys = part; // the keys: all S rows of the shard's heads
  keys.queries = keys.logicalQueries = whole.keys;
  keys.t0 = 0;
  pin.k = slice(in.k, keys, part.dim);
  pin.v = slice(in.v, keys, part.dimV);
  Outputs got = check(part, pin);
  std::vector<float> out = slice(all.out, part, part.dimV);
  std::vector<float> lse = slice(all.lse, part, 1);
  if (part.queries == whole.queries || gDevice) {
    expectSame(part, "out (the whole's rows)", got.out, out);
    expectSame(part, "lse (the whole's rows)", got.lse, lse);
    return;
  }
  expectClose(part, "out (the whole's rows)", got.out,
              std::vector<double>(out.begin(), out.end()));
  expectClose(part, "lse (the whole's rows)", got.lse,
              std::vector<double>(lse.begin(), lse.end()));
}

void shardCases() {
  Case whole{"whole [2, 4, 48, 40]", 2, 4, 48, 40, 16, 16, 1, 0, 0.3};
  whole.logicalBatch = 2;
  whole.logicalHeads = 4;
  whole.logicalQueries = 48;
  Inputs in = makeInputs(whole);
  Outputs all = check(whole, in);
  Case heads = whole;
  heads.name = "head shard b0=1 h0=2";
  heads.batch = 1;
  heads.heads = 2;
  heads.b0 = 1;
  heads.h0 = 2;
  shardCase(whole, in, all, heads);
  Case rows = heads;
  rows.name = "query shard b0=1 h0=2 t0=16";
  rows.queries = 24;
  rows.t0 = 16;
  shardCase(whole, in, all, rows);
}

/// The twins under pfrt_cuda_run_step (step 1 captured as a graph, steps
/// 2-3 replayed): each step draws its own data step's dropout mask, the
/// bits of the uncaptured twins at that step.
struct StepBuffers {
  const float *q, *k, *v;
  float *out, *lse, *dq, *dk, *dv;
};
StepBuffers gStep;
constexpr int64_t kStepDims[6] = {1, 2, 40, 48, 16, 16};

void attentionStep(int64_t) {
  const StepBuffers &b = gStep;
  pfrt_cuda_k_attention(b.q, b.k, b.v, nullptr, 0, nullptr, b.out, b.lse,
                        kStepDims, 0.25, 1, 0.3, 99, kStream, 1, nullptr);
  pfrt_cuda_k_attention_grad(b.q, b.k, b.v, nullptr, 0, nullptr, b.out, b.lse,
                             b.q, b.dq, b.dk, b.dv, kStepDims, 0.25, 1, 0.3, 99,
                             kStream, 1, nullptr);
}

void capturedSteps() {
  const int64_t rows = 2 * 40, keys = 2 * 48;
  pt::DeviceArena arena(int64_t(16) << 20);
  std::vector<float> q = uniform(rows * 16, -2, 2),
                     k = uniform(keys * 16, -2, 2),
                     v = uniform(keys * 16, -1, 1);
  gStep = {arena.upload(q.data(), rows * 16),
           arena.upload(k.data(), keys * 16),
           arena.upload(v.data(), keys * 16),
           static_cast<float *>(arena.alloc(rows * 16 * 4)),
           static_cast<float *>(arena.alloc(rows * 4)),
           static_cast<float *>(arena.alloc(rows * 16 * 4)),
           static_cast<float *>(arena.alloc(keys * 16 * 4)),
           static_cast<float *>(arena.alloc(keys * 16 * 4))};
  Case c{"captured step", 1, 2, 40, 48, 16, 16, 1, 0, 0.3};
  std::vector<float> previous;
  for (int64_t step = 0; step < 4; ++step) {
    pfrt_begin_step(step);
    pfrt_cuda_run_step(attentionStep, step);
    pfrt_end_step();
    std::vector<float> outs[2], dks[2];
    for (int i = 0; i < 2; ++i) {
      if (i == 1) // uncaptured, the same data step
        attentionStep(step);
      outs[i] = pt::download(gStep.out, rows * 16);
      dks[i] = pt::download(gStep.dk, keys * 16);
    }
    expectSame(c, "out (captured and not)", outs[0], outs[1]);
    expectSame(c, "dk (captured and not)", dks[0], dks[1]);
    const bool fresh = previous.empty() || previous != outs[0];
    CHECK(fresh, "step %lld drew the previous step's dropout mask",
          (long long)step);
    previous = outs[0];
  }
  printf("  twin captured steps: ok\n");
}

/// uniformBlock against pfrt_init_param's values at a sub-block.
void uniformBlockCase() {
  const int64_t logical[2] = {37, 53};
  std::vector<float> all(37 * 53), blk(5 * 64);
  pfrt_init_param(all.data(), PFRT_INIT_UNIFORM, 0.0, 1.0, 77, 99, 2, logical,
                  nullptr, nullptr);
  pfrt::uniformBlock(blk.data(), 64, 77, 99, 11 * 53 + 20, 53, 5, 30);
  for (int64_t r = 0; r < 5; ++r)
    for (int64_t c = 0; c < 30; ++c)
      CHECK(blk[size_t(r * 64 + c)] == all[size_t((11 + r) * 53 + 20 + c)],
            "uniformBlock differs at (%lld, %lld)", (long long)r, (long long)c);
  ++gChecks;
}

void cases() {
  pfrt_set_data_step(kDataStep);
  std::vector<Case> list = {
      {"plain", 2, 3, 40, 56, 16, 16},
      {"causal T == S", 2, 2, 64, 64, 16, 16, 1},
      {"causal T < S", 1, 2, 30, 70, 8, 8, 1},
      {"causal T > S", 1, 2, 70, 30, 8, 8, 1},
      {"float mask broadcast", 2, 2, 33, 45, 16, 16, 0, 1},
      {"bool mask", 2, 2, 40, 50, 16, 16, 0, 2},
      {"bool mask causal", 1, 2, 40, 40, 16, 16, 1, 2},
      {"dropout 0.1", 2, 2, 48, 64, 16, 16, 0, 0, 0.1},
      {"dropout 0.5 float mask", 1, 3, 40, 72, 16, 16, 0, 1, 0.5},
      {"D != Dv", 2, 2, 35, 47, 24, 40},
      {"off the tiles", 1, 2, 77, 131, 24, 24, 0, 0, 0.1},
      {"big", 2, 4, 512, 512, 64, 64, 1},
      {"no keys", 1, 2, 5, 0, 8, 8},
      {"Dv = 0", 1, 2, 10, 12, 8, 0},
  };
  Case t0{"causal t0 = 20", 1, 2, 30, 64, 16, 16, 1, 0, 0.5};
  t0.logicalBatch = 1, t0.logicalHeads = 2, t0.logicalQueries = 64, t0.t0 = 20;
  list.push_back(t0);
  for (const Case &c : list)
    check(c, makeInputs(c));
  shardCases();
}

/// One bad call of the CPU kernel or (twin) its device twin.
int badCall(const std::string &what, bool twin) {
  std::vector<float> q(64, 0.5f), out(64), lse(16);
  int64_t dims[6] = {1, 1, 4, 4, 4, 4}, ms[4] = {0, 0, 4, 1};
  const float *qp = q.data();
  const void *mask = nullptr;
  int32_t maskDtype = PFRT_DTYPE_F32;
  double p = 0.0;
  if (what == "null_q") {
    qp = nullptr;
  } else if (what == "negative_dims")
    dims[2] = -3;
  else if (what == "d_zero")
    dims[4] = 0;
  else if (what == "dropout_one")
    p = 1.0;
  else if (what == "dropout_negative")
    p = -0.1;
  else if (what == "mask_dtype") {
    mask = q.data();
    maskDtype = PFRT_DTYPE_I64;
  } else
    CHECK(false, "unknown bad case %s", what.c_str());
  auto *fn = twin ? pfrt_cuda_k_attention : pfrt_k_attention;
  fn(qp, q.data(), q.data(), mask, maskDtype, ms, out.data(), lse.data(), dims,
     0.5, 0, p, 1, 2, 0, nullptr);
  printf("bad call %s returned\n", what.c_str());
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  gDevice = mode == "twins";
  if (gDevice)
    pt::skipWithoutDevice("k-attention twins");
  pfrt_init(&argc, &argv);
  if (mode == "bad" || mode == "bad-twin") {
    CHECK(argc > 2, "usage: %s bad|bad-twin CASE", argv[0]);
    return badCall(argv[2], mode == "bad-twin");
  }
  gSeed = pt_seed("k-attention");
  pfrt_set_num_threads(1);
  if (gDevice)
    pfrt_cuda_arena_plan(int64_t(256) << 20);
  else
    uniformBlockCase();
  cases();
  if (gDevice) {
    capturedSteps();
    pfrt_cuda_synchronize();
    pfrt_cuda_finalize();
  }
  printf("k-attention%s: %d checks passed\n", gDevice ? " twins" : "", gChecks);
  pfrt_finalize();
  return 0;
}
