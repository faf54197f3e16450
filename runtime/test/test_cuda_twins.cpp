//===- test_cuda_twins.cpp - the device twins on a GPU --------------------===//
//
// pfrt-test-cuda-twins DIR [MODE]. Without a CUDA device it exits 77
// (run_tests.sh says SKIP). With one, it starts as a compiled GPU rank does
// (pfrt_cuda_arena_plan) and runs every device twin of pfrt_device.def on
// fresh random data against its host row or CPU kernel:
//   - element-wise kernels, bias_add(_relu), reduce_sum, sgd: bit for bit;
//   - softmax_xent and its gradient, adam: within 1e-6 relative (the GPU's
//     log and pow may differ from libm's in the last bit of a double);
//   - matmul_bgrad (BGRADB): C and the bias gradient within 1e-5; MODE
//     "bgrad" runs it alone (run_tests.sh: also where cuBLASLt has no BGRADB
//     algorithm, the fallback);
//   - matmul, matmul_acc, matmul_bias(_relu) (every transpose, batch_b 1 and
//     batch, k = 0): within 1e-5 of the CPU's float32 GEMM;
//   - conv2d and its gradients (direct path, groups, strides, padding,
//     dilation, several runs of images): within 1e-5 of the CPU's relative
//     to the summed terms' magnitude, and bit-identical when run twice;
//   - max/avg pooling and their gradients (ties included), global average
//     pooling, batch norm (train, eval, gradients, running statistics in
//     place), transpose: bit for bit; activations: within 1e-6;
//   - init_param and inputs: bit for bit with the host rows; scalars,
//     report_loss / report_output through the host;
//   - state registered on the device: gather, set, save and load;
//   - reductions run twice give the same bits, and a captured graph replays
//     the uncaptured results and re-reads a changed host scalar.
// MODE "bad_label" reports the loss of a cross-entropy with an
// out-of-range label (run_tests.sh expects the fatal error naming it).
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"
#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

uint64_t gSeed, gState, gTag;
int64_t gNext = 0; // bump offset into the device arena
const int64_t kArena = int64_t(256) << 20;

std::vector<float> uniform(int64_t n, float lo = -3.0f, float hi = 3.0f) {
  std::vector<float> v(static_cast<size_t>(n));
  uint64_t t = ++gTag;
  for (int64_t i = 0; i < n; ++i)
    v[size_t(i)] =
        lo + (hi - lo) * 0.5f * (pt_value(gSeed, t, 0, uint64_t(i)) + 1.0f);
  return v;
}

int64_t randint(int64_t lo, int64_t hi) { return pt_randint(&gState, lo, hi); }

/// A fresh device buffer of `bytes` (the test's own bump allocation).
void *dalloc(int64_t bytes) {
  int64_t at = gNext;
  gNext += (bytes + 255) / 256 * 256;
  CHECK(gNext <= kArena, "the test needs more than %lld bytes of arena",
        (long long)kArena);
  return pfrt_cuda_arena_ptr(at, bytes > 0 ? bytes : 1);
}

template <typename T> T *upload(const std::vector<T> &h) {
  T *d = static_cast<T *>(dalloc(int64_t(h.size() * sizeof(T))));
  if (!h.empty())
    pfrt_cuda_h2d(d, h.data(), int64_t(h.size() * sizeof(T)));
  return d;
}

std::vector<float> download(const float *d, int64_t n) {
  std::vector<float> h(static_cast<size_t>(n));
  if (n > 0)
    pfrt_cuda_d2h(h.data(), d, n * int64_t(sizeof(float)));
  return h;
}

void expectBits(const std::vector<float> &got, const std::vector<float> &want,
                const std::string &what) {
  CHECK(got.size() == want.size(), "%s: sizes differ", what.c_str());
  for (size_t i = 0; i < got.size(); ++i)
    CHECK(std::memcmp(&got[i], &want[i], 4) == 0,
          "%s: element %zu is %.9g, the CPU's %.9g", what.c_str(), i,
          double(got[i]), double(want[i]));
}

void expectClose(const std::vector<float> &got, const std::vector<float> &want,
                 double tol, const std::string &what) {
  CHECK(got.size() == want.size(), "%s: sizes differ", what.c_str());
  for (size_t i = 0; i < got.size(); ++i) {
    double g = got[i], w = want[i];
    CHECK(g == w || std::fabs(g - w) <= tol * std::max(1.0, std::fabs(w)),
          "%s: element %zu is %.9g, the CPU's %.9g", what.c_str(), i, g, w);
  }
}

void elementwise() {
  for (int64_t n : {int64_t(1), int64_t(257), int64_t(100003)}) {
    std::string at = " n=" + std::to_string(n);
    auto a = uniform(n), b = uniform(n);
    a[0] = -0.0f;
    float *da = upload(a), *db = upload(b);
    float *dout = static_cast<float *>(dalloc(n * 4));
    std::vector<float> want(static_cast<size_t>(n));
    pfrt_cuda_k_relu(da, dout, n);
    pfrt_k_relu(a.data(), want.data(), n);
    expectBits(download(dout, n), want, "relu" + at);
    pfrt_cuda_k_relu_grad(da, db, dout, n);
    pfrt_k_relu_grad(a.data(), b.data(), want.data(), n);
    expectBits(download(dout, n), want, "relu_grad" + at);
    pfrt_cuda_k_add(da, db, dout, n);
    pfrt_k_add(a.data(), b.data(), want.data(), n);
    expectBits(download(dout, n), want, "add" + at);
    pfrt_cuda_k_mul(da, db, dout, n);
    pfrt_k_mul(a.data(), b.data(), want.data(), n);
    expectBits(download(dout, n), want, "mul" + at);
    pfrt_cuda_k_scale(da, dout, n, 0.3);
    pfrt_k_scale(a.data(), want.data(), n, 0.3);
    expectBits(download(dout, n), want, "scale" + at);
    pfrt_cuda_k_copy(da, dout, n);
    expectBits(download(dout, n), a, "copy" + at);
    pfrt_cuda_k_fill(dout, n, 1.0 / 3.0);
    pfrt_k_fill(want.data(), n, 1.0 / 3.0);
    expectBits(download(dout, n), want, "fill" + at);
  }
  for (int relu = 0; relu < 2; ++relu) {
    const int64_t outer = 7, c = 13, inner = 9, total = outer * c * inner;
    auto x = uniform(total), b = uniform(c);
    float *dx = upload(x), *dbias = upload(b);
    float *dy = static_cast<float *>(dalloc(total * 4));
    std::vector<float> want(static_cast<size_t>(total));
    if (relu) {
      pfrt_cuda_k_bias_add_relu(dx, dbias, dy, outer, c, inner);
      pfrt_k_bias_add_relu(x.data(), b.data(), want.data(), outer, c, inner);
    } else {
      pfrt_cuda_k_bias_add(dx, dbias, dy, outer, c, inner);
      pfrt_k_bias_add(x.data(), b.data(), want.data(), outer, c, inner);
    }
    expectBits(download(dy, total), want, relu ? "bias_add_relu" : "bias_add");
  }
}

void reduceSum() {
  struct Case {
    std::vector<int64_t> shape;
    std::vector<int8_t> reduce;
  };
  const Case cases[] = {{{1000}, {1}},
                        {{33, 65}, {1, 0}},
                        {{33, 65}, {0, 1}},
                        {{6, 7, 9}, {1, 0, 1}},
                        {{2, 3, 4, 5}, {0, 1, 1, 0}},
                        {{5, 3}, {0, 0}},
                        {{4, 0, 3}, {0, 1, 0}},
                        {{512, 1024}, {1, 0}},
                        {{3, 517, 9}, {0, 1, 0}},
                        {{1000, 7}, {1, 0}},
                        {{8, 4, 12, 12}, {1, 0, 1, 1}},
                        {{3, 5, 2, 7, 9}, {1, 1, 0, 1, 1}},
                        {{5, 2, 4, 3, 7}, {1, 0, 1, 0, 1}}};
  // Each case twice: with uniform data, and with a third of the elements
  // +-2^45, where terms cancel and the float64 sums' rounding (their order)
  // shows in the result (the column cases sum in chunks of rows).
  for (int cancel = 0; cancel < 2; ++cancel)
    for (const Case &cs : cases) {
      int64_t total = 1, out = 1;
      for (size_t d = 0; d < cs.shape.size(); ++d) {
        total *= cs.shape[d];
        if (!cs.reduce[d])
          out *= cs.shape[d];
      }
      auto x = uniform(total);
      if (cancel)
        for (float &v : x)
          v += float(randint(-1, 1)) * 35184372088832.0f; // 2^45
      float *dx = upload(x);
      float *dy = static_cast<float *>(dalloc(out * 4));
      std::vector<float> want(static_cast<size_t>(out));
      int64_t rank = int64_t(cs.shape.size());
      pfrt_k_reduce_sum(x.data(), want.data(), rank, cs.shape.data(),
                        cs.reduce.data());
      pfrt_cuda_k_reduce_sum(dx, dy, rank, cs.shape.data(), cs.reduce.data());
      auto first = download(dy, out);
      expectBits(first, want, "reduce_sum");
      pfrt_cuda_k_reduce_sum(dx, dy, rank, cs.shape.data(), cs.reduce.data());
      expectBits(download(dy, out), first, "reduce_sum run twice");
    }
}

void xent() {
  struct Case {
    int64_t n, c;
    float lo, hi;
  };
  const Case cases[] = {
      {1, 1, -1, 1}, {7, 10, -3, 3}, {33, 1000, -5, 5}, {4, 17, -900, 900}};
  for (const Case &cs : cases) {
    auto x = uniform(cs.n * cs.c, cs.lo, cs.hi);
    std::vector<int64_t> labels(static_cast<size_t>(cs.n));
    for (auto &l : labels)
      l = randint(0, cs.c - 1);
    float *dx = upload(x);
    int64_t *dl = upload(labels);
    float *dloss = static_cast<float *>(dalloc(4));
    pfrt_cuda_k_softmax_xent(dx, dl, dloss, cs.n, cs.c);
    std::vector<float> want(1);
    pfrt_k_softmax_xent(x.data(), labels.data(), want.data(), cs.n, cs.c);
    auto first = download(dloss, 1);
    expectClose(first, want, 1e-6, "softmax_xent");
    pfrt_cuda_k_softmax_xent(dx, dl, dloss, cs.n, cs.c);
    expectBits(download(dloss, 1), first, "softmax_xent run twice");
    std::vector<float> g = {0.75f};
    float *dg = upload(g);
    float *dd = static_cast<float *>(dalloc(cs.n * cs.c * 4));
    std::vector<float> wantD(static_cast<size_t>(cs.n * cs.c));
    pfrt_cuda_k_softmax_xent_grad(dx, dl, dg, dd, cs.n, cs.c);
    pfrt_k_softmax_xent_grad(x.data(), labels.data(), g.data(), wantD.data(),
                             cs.n, cs.c);
    expectClose(download(dd, cs.n * cs.c), wantD, 1e-6, "softmax_xent_grad");
  }
}

void optimizers() {
  const int64_t n = 1031;
  float *lr = pfrt_scalar("lr"), *step = pfrt_scalar("step");
  // SGD with momentum and weight decay, 3 steps (bit for bit).
  {
    auto p = uniform(n), buf = uniform(n);
    float *dp = upload(p), *dbuf = upload(buf);
    for (int t = 1; t <= 3; ++t) {
      auto g = uniform(n);
      float *dgr = upload(g);
      *lr = 0.05f * float(t);
      *step = float(t);
      pfrt_cuda_k_sgd(dp, dgr, pfrt_cuda_scalar("lr"), dbuf,
                      pfrt_cuda_scalar("step"), dp, dbuf, n, 0.9, 0.1, 0.01, 0);
      pfrt_k_sgd(p.data(), g.data(), lr, buf.data(), step, p.data(), buf.data(),
                 n, 0.9, 0.1, 0.01, 0);
      expectBits(download(dp, n), p, "sgd step " + std::to_string(t));
      expectBits(download(dbuf, n), buf, "sgd buf step " + std::to_string(t));
    }
  }
  // AdamW with bias correction, 3 steps.
  {
    auto p = uniform(n);
    std::vector<float> m(static_cast<size_t>(n), 0.0f), v = m;
    float *dp = upload(p), *dm = upload(m), *dv = upload(v);
    for (int t = 1; t <= 3; ++t) {
      auto g = uniform(n);
      float *dgr = upload(g);
      *lr = 1e-3f;
      *step = float(t);
      pfrt_cuda_k_adam(dp, dgr, dm, dv, pfrt_cuda_scalar("lr"),
                       pfrt_cuda_scalar("step"), dp, dm, dv, n, 0.9, 0.999,
                       1e-8, 0.01, 1, 1);
      pfrt_k_adam(p.data(), g.data(), m.data(), v.data(), lr, step, p.data(),
                  m.data(), v.data(), n, 0.9, 0.999, 1e-8, 0.01, 1, 1);
      expectClose(download(dp, n), p, 1e-6, "adam p");
      expectClose(download(dm, n), m, 1e-6, "adam m");
      expectClose(download(dv, n), v, 1e-6, "adam v");
    }
  }
}

/// The multi-tensor updates: 50 tensors (two launches of at most 48),
/// sizes around the blocks' chunks and an empty one, every other gradient
/// cleared; SGD bit for bit against the host rows, Adam bit for bit
/// against the single-tensor device twin (and within 1e-6 of the host).
void multiTensorOptimizers() {
  const int count = 50;
  const int64_t sizes[] = {1, 1023, 1024, 1025, 0, 3000, 7, 4097};
  float *lr = pfrt_scalar("lr"), *step = pfrt_scalar("step");
  std::vector<int64_t> ns;
  std::vector<int8_t> clear;
  for (int i = 0; i < count; ++i) {
    ns.push_back(sizes[i % 8] + (i / 8));
    if (sizes[i % 8] == 0)
      ns.back() = 0;
    clear.push_back(int8_t(i % 2));
  }
  // SGD with momentum, weight decay and Nesterov, 3 steps.
  {
    std::vector<std::vector<float>> p, buf;
    std::vector<float *> dp, dbuf;
    for (int i = 0; i < count; ++i) {
      p.push_back(uniform(ns[i]));
      buf.push_back(uniform(ns[i]));
      dp.push_back(ns[i] ? upload(p[i]) : nullptr);
      dbuf.push_back(ns[i] ? upload(buf[i]) : nullptr);
    }
    for (int t = 1; t <= 3; ++t) {
      std::vector<std::vector<float>> g;
      std::vector<float *> dg;
      std::vector<void *> hostPtrs, devPtrs;
      for (int i = 0; i < count; ++i) {
        g.push_back(uniform(ns[i]));
        dg.push_back(ns[i] ? upload(g[i]) : nullptr);
        for (void *q :
             {(void *)p[i].data(), (void *)g[i].data(), (void *)buf[i].data(),
              (void *)p[i].data(), (void *)buf[i].data()})
          hostPtrs.push_back(q);
        for (void *q : {(void *)dp[i], (void *)dg[i], (void *)dbuf[i],
                        (void *)dp[i], (void *)dbuf[i]})
          devPtrs.push_back(q);
      }
      *lr = 0.05f * float(t);
      *step = float(t);
      pfrt_cuda_k_sgd_multi(devPtrs.data(), ns.data(), clear.data(), count,
                            pfrt_cuda_scalar("lr"), pfrt_cuda_scalar("step"),
                            0.9, 0.0, 0.01, 1);
      pfrt_k_sgd_multi(hostPtrs.data(), ns.data(), clear.data(), count, lr,
                       step, 0.9, 0.0, 0.01, 1);
      for (int i = 0; i < count; ++i) {
        if (!ns[i])
          continue;
        std::string at =
            " tensor " + std::to_string(i) + " step " + std::to_string(t);
        expectBits(download(dp[i], ns[i]), p[i], "sgd_multi p" + at);
        expectBits(download(dbuf[i], ns[i]), buf[i], "sgd_multi buf" + at);
        auto gd = download(dg[i], ns[i]);
        expectBits(gd, g[i], "sgd_multi g" + at);
        CHECK(bool(clear[i]) == (gd[0] == 0.0f && gd.back() == 0.0f),
              "sgd_multi: the gradient of%s was %s", at.c_str(),
              clear[i] ? "not cleared" : "cleared");
      }
    }
  }
  // AdamW with bias correction, 2 steps: the multi-tensor twin against
  // the single-tensor twin (bits) and the host (1e-6).
  {
    std::vector<std::vector<float>> p, m, v;
    std::vector<float *> dp, dm, dv, sp, sm, sv;
    for (int i = 0; i < count; ++i) {
      p.push_back(uniform(ns[i]));
      m.push_back(std::vector<float>(size_t(ns[i]), 0.0f));
      v.push_back(m.back());
      for (auto *list : {&dp, &sp})
        list->push_back(ns[i] ? upload(p[i]) : nullptr);
      for (auto *list : {&dm, &sm, &dv, &sv})
        list->push_back(ns[i] ? upload(m[i]) : nullptr);
    }
    for (int t = 1; t <= 2; ++t) {
      std::vector<std::vector<float>> g;
      std::vector<float *> dg, sg;
      std::vector<void *> devPtrs;
      for (int i = 0; i < count; ++i) {
        g.push_back(uniform(ns[i]));
        dg.push_back(ns[i] ? upload(g[i]) : nullptr);
        sg.push_back(ns[i] ? upload(g[i]) : nullptr);
        for (void *q :
             {(void *)dp[i], (void *)dg[i], (void *)dm[i], (void *)dv[i],
              (void *)dp[i], (void *)dm[i], (void *)dv[i]})
          devPtrs.push_back(q);
      }
      *lr = 1e-3f;
      *step = float(t);
      pfrt_cuda_k_adam_multi(devPtrs.data(), ns.data(), nullptr, count,
                             pfrt_cuda_scalar("lr"), pfrt_cuda_scalar("step"),
                             0.9, 0.999, 1e-8, 0.01, 1, 1);
      for (int i = 0; i < count; ++i) {
        if (!ns[i])
          continue;
        pfrt_cuda_k_adam(sp[i], sg[i], sm[i], sv[i], pfrt_cuda_scalar("lr"),
                         pfrt_cuda_scalar("step"), sp[i], sm[i], sv[i], ns[i],
                         0.9, 0.999, 1e-8, 0.01, 1, 1);
        pfrt_k_adam(p[i].data(), g[i].data(), m[i].data(), v[i].data(), lr,
                    step, p[i].data(), m[i].data(), v[i].data(), ns[i], 0.9,
                    0.999, 1e-8, 0.01, 1, 1);
        std::string at =
            " tensor " + std::to_string(i) + " step " + std::to_string(t);
        auto mp = download(dp[i], ns[i]);
        expectBits(mp, download(sp[i], ns[i]), "adam_multi p" + at);
        expectBits(download(dm[i], ns[i]), download(sm[i], ns[i]),
                   "adam_multi m" + at);
        expectBits(download(dv[i], ns[i]), download(sv[i], ns[i]),
                   "adam_multi v" + at);
        expectClose(mp, p[i], 1e-6, "adam_multi p vs host" + at);
        expectBits(download(dg[i], ns[i]), g[i], "adam_multi g kept" + at);
      }
    }
  }
}

void matmuls() {
  const int64_t m = 37, n = 53, k = 29;
  for (int64_t batch : {int64_t(1), int64_t(3)})
    for (int64_t batchB : {int64_t(1), batch})
      for (int ta = 0; ta < 2; ++ta)
        for (int tb = 0; tb < 2; ++tb)
          for (int kind = 0; kind < 4; ++kind) {
            auto a = uniform(batch * m * k), b = uniform(batchB * k * n);
            auto c = uniform(batch * m * n), bias = uniform(n);
            float *da = upload(a), *db = upload(b), *dc = upload(c),
                  *dbias = upload(bias);
            std::vector<float> want = c;
            if (kind == 0) {
              pfrt_cuda_k_matmul(da, db, dc, batch, batchB, m, n, k, ta, tb);
              pfrt_k_matmul(a.data(), b.data(), want.data(), batch, batchB, m,
                            n, k, ta, tb);
            } else if (kind == 1) {
              pfrt_cuda_k_matmul_acc(da, db, dc, batch, batchB, m, n, k, ta,
                                     tb);
              pfrt_k_matmul_acc(a.data(), b.data(), want.data(), batch, batchB,
                                m, n, k, ta, tb);
            } else if (kind == 2) {
              pfrt_cuda_k_matmul_bias(da, db, dbias, dc, batch, batchB, m, n, k,
                                      ta, tb);
              pfrt_k_matmul_bias(a.data(), b.data(), bias.data(), want.data(),
                                 batch, batchB, m, n, k, ta, tb);
            } else {
              pfrt_cuda_k_matmul_bias_relu(da, db, dbias, dc, batch, batchB, m,
                                           n, k, ta, tb);
              pfrt_k_matmul_bias_relu(a.data(), b.data(), bias.data(),
                                      want.data(), batch, batchB, m, n, k, ta,
                                      tb);
            }
            char what[96];
            snprintf(what, sizeof(what),
                     "matmul kind %d batch %lld batch_b %lld ta %d tb %d", kind,
                     (long long)batch, (long long)batchB, ta, tb);
            expectClose(download(dc, batch * m * n), want, 1e-5, what);
          }
  // k == 0: zeros, unchanged, bias rows.
  auto c = uniform(m * n), bias = uniform(n);
  float *dc = upload(c), *dbias = upload(bias);
  pfrt_cuda_k_matmul_acc(nullptr, nullptr, dc, 1, 1, m, n, 0, 0, 0);
  expectBits(download(dc, m * n), c, "matmul_acc k=0");
  std::vector<float> want(static_cast<size_t>(m * n));
  pfrt_cuda_k_matmul_bias(nullptr, nullptr, dbias, dc, 1, 1, m, n, 0, 0, 0);
  pfrt_k_matmul_bias(nullptr, nullptr, bias.data(), want.data(), 1, 1, m, n, 0,
                     0, 0);
  expectBits(download(dc, m * n), want, "matmul_bias k=0");
  pfrt_cuda_k_matmul_bias_relu(nullptr, nullptr, dbias, dc, 1, 1, m, n, 0, 0,
                               0);
  pfrt_k_matmul_bias_relu(nullptr, nullptr, bias.data(), want.data(), 1, 1, m,
                          n, 0, 0, 0);
  expectBits(download(dc, m * n), want, "matmul_bias_relu k=0");
  pfrt_cuda_k_matmul(nullptr, nullptr, dc, 1, 1, m, n, 0, 0, 0);
  std::fill(want.begin(), want.end(), 0.0f);
  expectBits(download(dc, m * n), want, "matmul k=0");
}

/// The conv-network family: convolutions within 1e-5 of the CPU's relative
/// to the magnitude of the summed terms (GEMM summation order) and
/// bit-identical when run twice; pools, global
/// average pooling, batch norm and transposes bit for bit; activations
/// within 1e-6. PFRT_CUDA_CONV_SCRATCH is set small by main, so the larger
/// convolutions run in several runs of images.
/// got within tol of want relative to scale[i], the same sum over the
/// absolute values of its terms (float32 sums in another order differ by
/// rounding relative to the terms, not to a result they cancel to).
void expectCloseTo(const std::vector<float> &got,
                   const std::vector<float> &want,
                   const std::vector<float> &scale, double tol,
                   const std::string &what) {
  CHECK(got.size() == want.size(), "%s: sizes differ", what.c_str());
  for (size_t i = 0; i < got.size(); ++i) {
    double g = got[i], w = want[i], sc = scale[i];
    CHECK(g == w || std::fabs(g - w) <= tol * std::max(1.0, sc),
          "%s: element %zu is %.9g, the CPU's %.9g (terms' magnitude %.9g)",
          what.c_str(), i, g, w, sc);
  }
}

std::vector<float> absOf(std::vector<float> v) {
  for (float &f : v)
    f = std::fabs(f);
  return v;
}

void convs() {
  // N C H W O KH KW sh sw ph pw dh dw G
  const int64_t cases[][14] = {
      {8, 1, 12, 12, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1}, // convnet's conv1
      {8, 4, 6, 6, 8, 3, 3, 1, 1, 0, 0, 1, 1, 1},   // convnet's conv2
      {3, 5, 7, 9, 6, 1, 1, 1, 1, 0, 0, 1, 1, 1},   // direct path
      {2, 4, 5, 5, 6, 1, 1, 1, 1, 0, 0, 1, 1, 2},   // direct, 2 groups
      {4, 6, 9, 9, 4, 1, 1, 2, 2, 0, 0, 1, 1, 1},   // 1x1 stride 2
      {2, 3, 31, 29, 8, 7, 7, 2, 2, 3, 3, 1, 1, 1}, // 7x7 stride 2 pad 3
      {3, 4, 9, 11, 6, 3, 3, 2, 2, 1, 1, 1, 1, 2},  // groups, stride 2
      {1, 4, 10, 10, 4, 3, 3, 1, 1, 2, 2, 2, 2, 4}, // depthwise, dilation 2
      {5, 4, 14, 14, 6, 3, 3, 1, 1, 1, 1, 1, 1, 2}, // groups, runs of 2, 2, 1
      {6, 16, 20, 20, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1} // one image a run
  };
  for (const auto &c : cases) {
    const int64_t N = c[0], C = c[1], H = c[2], W = c[3], O = c[4], KH = c[5],
                  KW = c[6], sh = c[7], sw = c[8], ph = c[9], pw = c[10],
                  dh = c[11], dw = c[12], G = c[13];
    const int64_t OH = (H + 2 * ph - dh * (KH - 1) - 1) / sh + 1;
    const int64_t OW = (W + 2 * pw - dw * (KW - 1) - 1) / sw + 1;
    const int64_t dims[16] = {N,  C,  H,  W,  O,  KH, KW, OH,
                              OW, sh, sw, ph, pw, dh, dw, G};
    const int64_t nx = N * C * H * W, ny = N * O * OH * OW,
                  nw = O * (C / G) * KH * KW;
    char what[96];
    snprintf(what, sizeof(what), "conv case N=%lld C=%lld H=%lld O=%lld K=%lld",
             (long long)N, (long long)C, (long long)H, (long long)O,
             (long long)KH);
    const std::string at = what;
    auto x = uniform(nx), w = uniform(nw), dy = uniform(ny);
    float *dx_ = upload(x), *dw_ = upload(w), *ddy = upload(dy);
    float *dout = static_cast<float *>(dalloc(ny * 4));
    float *dgx = static_cast<float *>(dalloc(nx * 4));
    float *dgw = static_cast<float *>(dalloc(nw * 4));
    std::vector<float> want(static_cast<size_t>(ny)),
        wantDx(static_cast<size_t>(nx)), wantDw(static_cast<size_t>(nw));
    pfrt_k_conv2d(x.data(), w.data(), want.data(), dims);
    pfrt_k_conv2d_grad_input(dy.data(), w.data(), wantDx.data(), dims);
    pfrt_k_conv2d_grad_weight(x.data(), dy.data(), wantDw.data(), dims);
    // The magnitudes of the terms: the same convolutions of |x|, |w|, |dy|.
    auto ax = absOf(x), aw = absOf(w), ady = absOf(dy);
    std::vector<float> scale(static_cast<size_t>(ny)),
        scaleDx(static_cast<size_t>(nx)), scaleDw(static_cast<size_t>(nw));
    pfrt_k_conv2d(ax.data(), aw.data(), scale.data(), dims);
    pfrt_k_conv2d_grad_input(ady.data(), aw.data(), scaleDx.data(), dims);
    pfrt_k_conv2d_grad_weight(ax.data(), ady.data(), scaleDw.data(), dims);
    pfrt_cuda_k_conv2d(dx_, dw_, dout, dims);
    auto y1 = download(dout, ny);
    expectCloseTo(y1, want, scale, 1e-5, at + " conv2d");
    pfrt_cuda_k_conv2d_grad_input(ddy, dw_, dgx, dims);
    auto gx1 = download(dgx, nx);
    expectCloseTo(gx1, wantDx, scaleDx, 1e-5, at + " conv2d_grad_input");
    pfrt_cuda_k_conv2d_grad_weight(dx_, ddy, dgw, dims);
    auto gw1 = download(dgw, nw);
    expectCloseTo(gw1, wantDw, scaleDw, 1e-5, at + " conv2d_grad_weight");
    pfrt_cuda_k_conv2d(dx_, dw_, dout, dims);
    pfrt_cuda_k_conv2d_grad_input(ddy, dw_, dgx, dims);
    pfrt_cuda_k_conv2d_grad_weight(dx_, ddy, dgw, dims);
    expectBits(download(dout, ny), y1, at + " conv2d run twice");
    expectBits(download(dgx, nx), gx1, at + " conv2d_grad_input run twice");
    expectBits(download(dgw, nw), gw1, at + " conv2d_grad_weight run twice");
  }
}

void pools() {
  // N C H W KH KW sh sw ph pw
  const int64_t cfgs[][10] = {
      {8, 4, 12, 12, 2, 2, 2, 2, 0, 0}, {8, 8, 4, 4, 2, 2, 2, 2, 0, 0},
      {2, 3, 9, 11, 3, 3, 2, 2, 1, 1},  {4, 16, 56, 56, 3, 3, 2, 2, 1, 1},
      {3, 2, 13, 9, 5, 3, 3, 2, 2, 1},  {1, 2, 3, 70, 1, 66, 1, 1, 0, 33}};
  for (const auto &c : cfgs)
    for (int ties = 0; ties < 2; ++ties) {
      const int64_t N = c[0], C = c[1], H = c[2], W = c[3], KH = c[4],
                    KW = c[5], sh = c[6], sw = c[7], ph = c[8], pw = c[9];
      const int64_t OH = (H + 2 * ph - KH) / sh + 1,
                    OW = (W + 2 * pw - KW) / sw + 1;
      const int64_t dims[12] = {N, C, H, W, OH, OW, KH, KW, sh, sw, ph, pw};
      const int64_t nx = N * C * H * W, ny = N * C * OH * OW;
      auto x = uniform(nx), dy = uniform(ny);
      if (ties)
        for (float &v : x)
          v = std::floor(v / 3.0f * 2.0f) * 0.5f;
      std::string at = "pool H=" + std::to_string(H) +
                       " K=" + std::to_string(KH) + (ties ? " ties" : "");
      float *dxin = upload(x), *ddy = upload(dy);
      float *dy_ = static_cast<float *>(dalloc(ny * 4));
      float *dgx = static_cast<float *>(dalloc(nx * 4));
      std::vector<float> want(static_cast<size_t>(ny)),
          wantDx(static_cast<size_t>(nx));
      pfrt_cuda_k_max_pool2d(dxin, dy_, dims);
      pfrt_k_max_pool2d(x.data(), want.data(), dims);
      expectBits(download(dy_, ny), want, "max_pool2d " + at);
      pfrt_cuda_k_max_pool2d_grad(dxin, ddy, dgx, dims);
      pfrt_k_max_pool2d_grad(x.data(), dy.data(), wantDx.data(), dims);
      expectBits(download(dgx, nx), wantDx, "max_pool2d_grad " + at);
      pfrt_cuda_k_avg_pool2d(dxin, dy_, dims);
      pfrt_k_avg_pool2d(x.data(), want.data(), dims);
      expectBits(download(dy_, ny), want, "avg_pool2d " + at);
      pfrt_cuda_k_avg_pool2d_grad(ddy, dgx, dims);
      pfrt_k_avg_pool2d_grad(dy.data(), wantDx.data(), dims);
      expectBits(download(dgx, nx), wantDx, "avg_pool2d_grad " + at);
    }
  const int64_t g[][3] = {{8, 8, 4}, {2, 3, 49}, {4, 64, 49}, {3, 5, 1}};
  for (const auto &q : g) {
    int64_t planes = q[0] * q[1], n = planes * q[2];
    auto x = uniform(n), dy = uniform(planes);
    float *dxin = upload(x), *ddy = upload(dy);
    float *dy_ = static_cast<float *>(dalloc(planes * 4));
    float *dgx = static_cast<float *>(dalloc(n * 4));
    std::vector<float> want(static_cast<size_t>(planes)),
        wantDx(static_cast<size_t>(n));
    pfrt_cuda_k_global_avg_pool(dxin, dy_, q[0], q[1], q[2]);
    pfrt_k_global_avg_pool(x.data(), want.data(), q[0], q[1], q[2]);
    expectBits(download(dy_, planes), want, "global_avg_pool");
    pfrt_cuda_k_global_avg_pool_grad(ddy, dgx, q[0], q[1], q[2]);
    pfrt_k_global_avg_pool_grad(dy.data(), wantDx.data(), q[0], q[1], q[2]);
    expectBits(download(dgx, n), wantDx, "global_avg_pool_grad");
  }
}

void batchNorms() {
  const int64_t cases[][3] = {
      {8, 5, 1}, {4, 3, 13}, {8, 4, 144}, {3, 2, 1031}, {16, 64, 49}};
  const double eps = 1e-5, momentum = 0.1;
  for (const auto &q : cases)
    for (int affine = 0; affine < 2; ++affine) {
      const int64_t n = q[0], c = q[1], hw = q[2], total = n * c * hw;
      std::string at = "batch_norm n=" + std::to_string(n) +
                       " c=" + std::to_string(c) + " hw=" + std::to_string(hw) +
                       (affine ? "" : " no affine");
      auto x = uniform(total, 3.0f, 7.0f), dy = uniform(total);
      auto gamma = uniform(c, 0.5f, 1.5f), beta = uniform(c);
      auto rmean = uniform(c), rvar = uniform(c, 0.5f, 2.0f);
      float *dxin = upload(x), *ddy = upload(dy);
      float *dg = affine ? upload(gamma) : nullptr;
      float *db = affine ? upload(beta) : nullptr;
      float *drm = upload(rmean), *drv = upload(rvar);
      float *dyout = static_cast<float *>(dalloc(total * 4));
      float *dgx = static_cast<float *>(dalloc(total * 4));
      float *ddg = static_cast<float *>(dalloc(c * 4));
      float *ddb = static_cast<float *>(dalloc(c * 4));
      const float *g = affine ? gamma.data() : nullptr;
      const float *b = affine ? beta.data() : nullptr;
      std::vector<float> wantY(static_cast<size_t>(total));
      // Eval first (the running statistics are then updated in place).
      pfrt_cuda_k_batch_norm_eval(dxin, dg, db, drm, drv, dyout, n, c, hw, eps);
      pfrt_k_batch_norm_eval(x.data(), g, b, rmean.data(), rvar.data(),
                             wantY.data(), n, c, hw, eps);
      expectBits(download(dyout, total), wantY, at + " eval");
      pfrt_cuda_k_batch_norm(dxin, dg, db, drm, drv, dyout, drm, drv, n, c, hw,
                             eps, momentum);
      pfrt_k_batch_norm(x.data(), g, b, rmean.data(), rvar.data(), wantY.data(),
                        rmean.data(), rvar.data(), n, c, hw, eps, momentum);
      auto y1 = download(dyout, total);
      expectBits(y1, wantY, at);
      expectBits(download(drm, c), rmean, at + " running mean");
      expectBits(download(drv, c), rvar, at + " running var");
      pfrt_cuda_k_batch_norm(dxin, dg, db, nullptr, nullptr, dyout, nullptr,
                             nullptr, n, c, hw, eps, momentum);
      expectBits(download(dyout, total), y1, at + " run twice");
      std::vector<float> wantDx(static_cast<size_t>(total));
      pfrt_cuda_k_batch_norm_grad_input(dxin, dg, ddy, dgx, n, c, hw, eps);
      pfrt_k_batch_norm_grad_input(x.data(), g, dy.data(), wantDx.data(), n, c,
                                   hw, eps);
      expectBits(download(dgx, total), wantDx, at + " grad_input");
      std::vector<float> wantDg(static_cast<size_t>(c)),
          wantDb(static_cast<size_t>(c));
      pfrt_cuda_k_batch_norm_grad_params(dxin, ddy, ddg, ddb, n, c, hw, eps);
      pfrt_k_batch_norm_grad_params(x.data(), dy.data(), wantDg.data(),
                                    wantDb.data(), n, c, hw, eps);
      expectBits(download(ddg, c), wantDg, at + " dgamma");
      expectBits(download(ddb, c), wantDb, at + " dbeta");
    }
}

void transposesAndActivations() {
  struct Case {
    std::vector<int64_t> shape, perm;
  };
  const Case cases[] = {{{33, 65}, {1, 0}},
                        {{2, 3, 4, 5}, {0, 2, 3, 1}},
                        {{2, 3, 4, 5}, {3, 1, 0, 2}},
                        {{3, 1, 4, 1, 5}, {4, 1, 3, 0, 2}},
                        {{64, 128, 7}, {1, 0, 2}}};
  for (const Case &cs : cases) {
    int64_t total = 1;
    for (int64_t e : cs.shape)
      total *= e;
    auto x = uniform(total);
    float *dxin = upload(x);
    float *dy_ = static_cast<float *>(dalloc(total * 4));
    std::vector<float> want(static_cast<size_t>(total));
    int64_t rank = int64_t(cs.shape.size());
    pfrt_cuda_k_transpose(dxin, dy_, rank, cs.shape.data(), cs.perm.data());
    pfrt_k_transpose(x.data(), want.data(), rank, cs.shape.data(),
                     cs.perm.data());
    expectBits(download(dy_, total), want, "transpose");
  }
  const int64_t n = 100003;
  for (int32_t kind = 0; kind < 4; ++kind) {
    auto x = uniform(n, -8.0f, 8.0f), dy = uniform(n);
    float *dxin = upload(x), *ddy = upload(dy);
    float *dout = static_cast<float *>(dalloc(n * 4));
    std::vector<float> want(static_cast<size_t>(n));
    std::string at = " kind " + std::to_string(kind);
    pfrt_cuda_k_activation(kind, dxin, dout, n);
    pfrt_k_activation(kind, x.data(), want.data(), n);
    expectClose(download(dout, n), want, 1e-6, "activation" + at);
    pfrt_cuda_k_activation_grad(kind, dxin, ddy, dout, n);
    pfrt_k_activation_grad(kind, x.data(), dy.data(), want.data(), n);
    expectClose(download(dout, n), want, 1e-6, "activation_grad" + at);
    pfrt_cuda_k_activation_grad(kind, dxin, ddy, ddy, n); // in place
    expectClose(download(ddy, n), want, 1e-6, "activation_grad in place" + at);
  }
}

void tensorOpsAndSoftmaxes() {
  for (int64_t n : {int64_t(1), int64_t(257), int64_t(100003)}) {
    std::string at = " n=" + std::to_string(n);
    auto a = uniform(n), b = uniform(n);
    b[0] = 0.0f;
    std::vector<float> maskF(static_cast<size_t>(n));
    std::vector<int64_t> maskI(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      maskI[size_t(i)] = (i * 7) % 3 == 0 ? 1 : 0;
      maskF[size_t(i)] = (i * 5) % 4 == 0 ? 1.0f : 0.0f;
    }
    float *da = upload(a), *db = upload(b), *dmf = upload(maskF);
    int64_t *dmi = upload(maskI);
    float *dout = static_cast<float *>(dalloc(n * 4));
    std::vector<float> want(static_cast<size_t>(n));
    pfrt_cuda_k_sub(da, db, dout, n);
    pfrt_k_sub(a.data(), b.data(), want.data(), n);
    expectBits(download(dout, n), want, "sub" + at);
    pfrt_cuda_k_div(da, db, dout, n);
    pfrt_k_div(a.data(), b.data(), want.data(), n);
    expectBits(download(dout, n), want, "div" + at);
    pfrt_cuda_k_masked_fill(da, dmf, dout, n, 0, -1e9);
    pfrt_k_masked_fill(a.data(), maskF.data(), want.data(), n, 0, -1e9);
    expectBits(download(dout, n), want, "masked_fill float" + at);
    pfrt_cuda_k_masked_fill(da, dmi, dout, n, 1, 0.25);
    pfrt_k_masked_fill(a.data(), maskI.data(), want.data(), n, 1, 0.25);
    expectBits(download(dout, n), want, "masked_fill int64" + at);
    pfrt_cuda_k_masked_fill(da, dmi, da, n, 1, 0.25); // in place
    expectBits(download(da, n), want, "masked_fill in place" + at);
  }
  struct Case {
    int64_t outer, n, inner;
  };
  const Case cases[] = {
      {1, 1, 1}, {64, 257, 1}, {3, 9, 1}, {2, 5, 3}, {4, 33, 65}};
  for (const Case &cs : cases) {
    int64_t total = cs.outer * cs.n * cs.inner;
    auto x = uniform(total, -8.0f, 8.0f), dy = uniform(total);
    x[0] = -1e9f;
    float *dxin = upload(x), *ddy = upload(dy);
    float *dyout = static_cast<float *>(dalloc(total * 4));
    float *ddx = static_cast<float *>(dalloc(total * 4));
    for (int32_t lg = 0; lg < 2; ++lg) {
      std::string at = " [" + std::to_string(cs.outer) + "," +
                       std::to_string(cs.n) + "," + std::to_string(cs.inner) +
                       "] log=" + std::to_string(lg);
      std::vector<float> want(static_cast<size_t>(total)),
          wantDx(static_cast<size_t>(total));
      pfrt_cuda_k_softmax(dxin, dyout, cs.outer, cs.n, cs.inner, lg);
      pfrt_k_softmax(x.data(), want.data(), cs.outer, cs.n, cs.inner, lg);
      auto y = download(dyout, total);
      expectClose(y, want, 1e-6, "softmax" + at);
      // The gradient from the same y on both sides.
      pfrt_cuda_k_softmax_grad(dyout, ddy, ddx, cs.outer, cs.n, cs.inner, lg);
      pfrt_k_softmax_grad(y.data(), dy.data(), wantDx.data(), cs.outer, cs.n,
                          cs.inner, lg);
      expectClose(download(ddx, total), wantDx, 1e-6, "softmax_grad" + at);
    }
  }
}

void layerNorms() {
  const double eps = 1e-5;
  struct Case {
    int64_t rows, c;
  };
  const Case cases[] = {{1, 1}, {3, 9}, {64, 768}, {1000, 33}, {0, 4}};
  for (const Case &cs : cases) {
    std::string at =
        " [" + std::to_string(cs.rows) + "," + std::to_string(cs.c) + "]";
    int64_t n = cs.rows * cs.c;
    auto x = uniform(n, -4.0f, 4.0f), dy = uniform(n);
    auto gamma = uniform(cs.c, 0.5f, 1.5f), beta = uniform(cs.c);
    float *dxin = upload(x), *ddy = upload(dy), *dg = upload(gamma),
          *dbeta = upload(beta);
    float *dout = static_cast<float *>(dalloc(n * 4));
    float *ddg = static_cast<float *>(dalloc(cs.c * 4));
    float *ddb = static_cast<float *>(dalloc(cs.c * 4));
    std::vector<float> want(static_cast<size_t>(n)),
        wantDg(static_cast<size_t>(cs.c)), wantDb(static_cast<size_t>(cs.c));
    pfrt_cuda_k_layer_norm(dxin, dg, dbeta, dout, cs.rows, cs.c, eps);
    pfrt_k_layer_norm(x.data(), gamma.data(), beta.data(), want.data(), cs.rows,
                      cs.c, eps);
    expectBits(download(dout, n), want, "layer_norm" + at);
    pfrt_cuda_k_layer_norm_grad_input(dxin, dg, ddy, dout, cs.rows, cs.c, eps);
    pfrt_k_layer_norm_grad_input(x.data(), gamma.data(), dy.data(), want.data(),
                                 cs.rows, cs.c, eps);
    expectBits(download(dout, n), want, "layer_norm_grad_input" + at);
    pfrt_cuda_k_layer_norm_grad_params(dxin, ddy, ddg, ddb, cs.rows, cs.c, eps);
    pfrt_k_layer_norm_grad_params(x.data(), dy.data(), wantDg.data(),
                                  wantDb.data(), cs.rows, cs.c, eps);
    expectBits(download(ddg, cs.c), wantDg, "layer_norm dgamma" + at);
    expectBits(download(ddb, cs.c), wantDb, "layer_norm dbeta" + at);
  }
}

// The twins of GPT-shaped programs have their host rows' signatures (as
// pfrt_device.def's rows assert in src/common/AbiCheck.cpp).
#define PFRT_SAME_SIGNATURE(HOST, DEVICE)                                      \
  static_assert(std::is_same_v<decltype(HOST), decltype(DEVICE)>,              \
                #DEVICE " does not have the signature of " #HOST)
PFRT_SAME_SIGNATURE(pfrt_k_embedding, pfrt_cuda_k_embedding);
PFRT_SAME_SIGNATURE(pfrt_k_embedding_grad, pfrt_cuda_k_embedding_grad);
PFRT_SAME_SIGNATURE(pfrt_k_embedding_rows, pfrt_cuda_k_embedding_rows);
PFRT_SAME_SIGNATURE(pfrt_k_embedding_grad_rows,
                    pfrt_cuda_k_embedding_grad_rows);
PFRT_SAME_SIGNATURE(pfrt_k_broadcast, pfrt_cuda_k_broadcast);
PFRT_SAME_SIGNATURE(pfrt_copy_box, pfrt_cuda_copy_box);
PFRT_SAME_SIGNATURE(pfrt_k_softmax_xent_ignore,
                    pfrt_cuda_k_softmax_xent_ignore);
PFRT_SAME_SIGNATURE(pfrt_k_softmax_xent_grad_ignore,
                    pfrt_cuda_k_softmax_xent_grad_ignore);
PFRT_SAME_SIGNATURE(pfrt_k_softmax_xent_sum, pfrt_cuda_k_softmax_xent_sum);
PFRT_SAME_SIGNATURE(pfrt_k_softmax_xent_grad_sum,
                    pfrt_cuda_k_softmax_xent_grad_sum);
PFRT_SAME_SIGNATURE(pfrt_k_count_kept, pfrt_cuda_k_count_kept);
PFRT_SAME_SIGNATURE(pfrt_k_dropout, pfrt_cuda_k_dropout);
#undef PFRT_SAME_SIGNATURE

/// embeddings (whole table and a block of rows, repeated ids), broadcast,
/// copy_box (f32, i64; slices, pads), the cross-entropy with ignore_index
/// or summed and its gradient, count_kept, dropout: bit for bit.
void gptTwins() {
  struct EmbCase {
    int64_t n, vocab, d, row0, v;
  };
  const EmbCase embs[] = {{16, 256, 64, 0, 256},
                          {40, 10, 17, 0, 10},
                          {33, 20, 8, 5, 7},
                          {1000, 300, 33, 0, 300},
                          {0, 4, 3, 0, 4}};
  for (const EmbCase &e : embs) {
    std::string at = " n=" + std::to_string(e.n) +
                     " vocab=" + std::to_string(e.vocab) + " rows from " +
                     std::to_string(e.row0);
    bool whole = e.row0 == 0 && e.v == e.vocab;
    auto table = uniform(e.v * e.d), dy = uniform(e.n * e.d);
    std::vector<int64_t> ids(static_cast<size_t>(e.n));
    for (auto &id : ids)
      id = randint(0, e.vocab - 1);
    float *dtable = upload(table), *ddy = upload(dy);
    int64_t *dids = upload(ids);
    float *dout = static_cast<float *>(dalloc(e.n * e.d * 4));
    float *dgrad = static_cast<float *>(dalloc(e.v * e.d * 4));
    std::vector<float> want(static_cast<size_t>(e.n * e.d)),
        wantG(static_cast<size_t>(e.v * e.d));
    if (whole) {
      pfrt_cuda_k_embedding(dtable, dids, dout, e.n, e.v, e.d);
      pfrt_k_embedding(table.data(), ids.data(), want.data(), e.n, e.v, e.d);
      pfrt_cuda_k_embedding_grad(dids, ddy, dgrad, e.n, e.v, e.d);
      pfrt_k_embedding_grad(ids.data(), dy.data(), wantG.data(), e.n, e.v, e.d);
    } else {
      pfrt_cuda_k_embedding_rows(dtable, dids, dout, e.n, e.v, e.d, e.row0,
                                 e.vocab);
      pfrt_k_embedding_rows(table.data(), ids.data(), want.data(), e.n, e.v,
                            e.d, e.row0, e.vocab);
      pfrt_cuda_k_embedding_grad_rows(dids, ddy, dgrad, e.n, e.v, e.d, e.row0,
                                      e.vocab);
      pfrt_k_embedding_grad_rows(ids.data(), dy.data(), wantG.data(), e.n, e.v,
                                 e.d, e.row0, e.vocab);
    }
    expectBits(download(dout, e.n * e.d), want, "embedding" + at);
    expectBits(download(dgrad, e.v * e.d), wantG, "embedding_grad" + at);
  }
  // Broadcasts of f32 and i64 (the causal mask).
  {
    const int64_t in[3] = {1, 8, 64}, out[3] = {2, 8, 64};
    auto x = uniform(8 * 64);
    float *dx = upload(x), *dy = static_cast<float *>(dalloc(2 * 8 * 64 * 4));
    std::vector<float> want(2 * 8 * 64);
    pfrt_cuda_k_broadcast(dx, dy, 3, in, out, 4);
    pfrt_k_broadcast(x.data(), want.data(), 3, in, out, 4);
    expectBits(download(dy, 2 * 8 * 64), want, "broadcast f32");
    const int64_t in4[4] = {1, 1, 8, 8}, out4[4] = {2, 4, 8, 8};
    std::vector<int64_t> mask(64), wantM(2 * 4 * 64), gotM(2 * 4 * 64);
    for (auto &v : mask)
      v = randint(-3, 3);
    int64_t *dm = upload(mask);
    int64_t *dmo = static_cast<int64_t *>(dalloc(2 * 4 * 64 * 8));
    pfrt_cuda_k_broadcast(dm, dmo, 4, in4, out4, 8);
    pfrt_k_broadcast(mask.data(), wantM.data(), 4, in4, out4, 8);
    pfrt_cuda_d2h(gotM.data(), dmo, 2 * 4 * 64 * 8);
    CHECK(gotM == wantM, "broadcast i64 differs from the host row");
  }
  // copy_box: a slice of the last axis, a pad, an i64 box.
  for (int rep = 0; rep < 6; ++rep) {
    const int64_t ndim = 3;
    int64_t src[3], dst[3], sizes[3], so[3], dof[3], srcN = 1, dstN = 1;
    for (int d = 0; d < 3; ++d) {
      sizes[d] = randint(1, 9);
      src[d] = sizes[d] + randint(0, 5);
      dst[d] = sizes[d] + randint(0, 5);
      so[d] = randint(0, src[d] - sizes[d]);
      dof[d] = randint(0, dst[d] - sizes[d]);
      srcN *= src[d];
      dstN *= dst[d];
    }
    int32_t dtype = rep % 2 ? PFRT_DTYPE_I64 : PFRT_DTYPE_F32;
    int64_t words = dtype == PFRT_DTYPE_I64 ? 2 : 1;
    auto x = uniform(srcN * words), init = uniform(dstN * words);
    float *dx = upload(x), *dd = upload(init);
    std::vector<float> want = init;
    pfrt_cuda_copy_box(dx, src, so, dd, dst, dof, sizes, ndim, dtype);
    pfrt_copy_box(x.data(), src, so, want.data(), dst, dof, sizes, ndim, dtype);
    expectBits(download(dd, dstN * words), want,
               "copy_box " + std::to_string(rep));
  }
  // The cross-entropy with ignore_index / summed, its gradient, count_kept.
  for (int mean = 0; mean < 2; ++mean)
    for (int64_t n : {int64_t(1), int64_t(16), int64_t(300)}) {
      const int64_t c = 97, ignore = -1;
      std::string at =
          std::string(mean ? " ignore" : " sum") + " n=" + std::to_string(n);
      auto x = uniform(n * c, -5.0f, 5.0f);
      std::vector<int64_t> labels(static_cast<size_t>(n));
      for (auto &l : labels)
        l = randint(0, 3) == 0 ? ignore : randint(0, c - 1);
      labels[0] = randint(0, c - 1);
      float *dx = upload(x);
      int64_t *dl = upload(labels);
      float *dloss = static_cast<float *>(dalloc(4));
      std::vector<float> want(1), g = {0.75f}, wantD(size_t(n * c)), cnt(1);
      float *dg = upload(g), *dd = static_cast<float *>(dalloc(n * c * 4));
      if (mean) {
        pfrt_cuda_k_softmax_xent_ignore(dx, dl, dloss, n, c, ignore);
        pfrt_k_softmax_xent_ignore(x.data(), labels.data(), want.data(), n, c,
                                   ignore);
        pfrt_cuda_k_softmax_xent_grad_ignore(dx, dl, dg, dd, n, c, ignore);
        pfrt_k_softmax_xent_grad_ignore(x.data(), labels.data(), g.data(),
                                        wantD.data(), n, c, ignore);
      } else {
        pfrt_cuda_k_softmax_xent_sum(dx, dl, dloss, n, c, ignore);
        pfrt_k_softmax_xent_sum(x.data(), labels.data(), want.data(), n, c,
                                ignore);
        pfrt_cuda_k_softmax_xent_grad_sum(dx, dl, dg, dd, n, c, ignore);
        pfrt_k_softmax_xent_grad_sum(x.data(), labels.data(), g.data(),
                                     wantD.data(), n, c, ignore);
      }
      // The GPU's log and exp may differ from the host's in the last bit.
      expectClose(download(dloss, 1), want, 1e-6, "softmax_xent" + at);
      expectClose(download(dd, n * c), wantD, 1e-6, "softmax_xent_grad" + at);
      float *dcnt = static_cast<float *>(dalloc(4));
      pfrt_cuda_k_count_kept(dl, dcnt, n, ignore);
      pfrt_k_count_kept(labels.data(), cnt.data(), n, ignore);
      expectBits(download(dcnt, 1), cnt, "count_kept" + at);
    }
  // Dropout on a shard, at two data steps (different masks).
  {
    const int64_t logical[3] = {4, 8, 64}, off[3] = {2, 0, 0},
                  shape[3] = {2, 8, 64}, n = 2 * 8 * 64;
    auto x = uniform(n);
    float *dx = upload(x), *dy = static_cast<float *>(dalloc(n * 4));
    std::vector<float> first;
    for (int64_t step : {int64_t(3), int64_t(4)}) {
      pfrt_set_data_step(step);
      std::vector<float> want(static_cast<size_t>(n));
      pfrt_cuda_k_dropout(dx, dy, n, 0.25, gSeed, 99, 1, 3, logical, off,
                          shape);
      pfrt_k_dropout(x.data(), want.data(), n, 0.25, gSeed, 99, 1, 3, logical,
                     off, shape);
      auto got = download(dy, n);
      expectBits(got, want, "dropout step " + std::to_string(step));
      CHECK(first.empty() || got != first,
            "dropout: the same mask at two data steps");
      first = got;
    }
    pfrt_set_data_step(0);
  }
}

void hostRows() {
  // init_param: a shard of a normal initialiser, bit for bit.
  const int64_t logical[2] = {10, 12}, off[2] = {3, 4}, shape[2] = {5, 6};
  float *dp = static_cast<float *>(dalloc(30 * 4));
  pfrt_cuda_init_param(dp, PFRT_INIT_NORMAL, 0.0, 0.02, gSeed, 7, 2, logical,
                       off, shape);
  std::vector<float> want(30);
  pfrt_init_param(want.data(), PFRT_INIT_NORMAL, 0.0, 0.02, gSeed, 7, 2,
                  logical, off, shape);
  expectBits(download(dp, 30), want, "init_param");
  float *ds = static_cast<float *>(dalloc(4));
  pfrt_cuda_init_param(ds, PFRT_INIT_CONSTANT, 2.5, 0.0, gSeed, 8, 0, nullptr,
                       nullptr, nullptr);
  expectBits(download(ds, 1), {2.5f}, "init_param rank 0");
  // Synthetic inputs, twice (the second load is the resident batch).
  const int64_t ishape[2] = {4, 8};
  float *din = static_cast<float *>(dalloc(32 * 4));
  std::vector<float> host(32);
  for (int rep = 0; rep < 2; ++rep) {
    pfrt_cuda_load_input(0, din, 128, PFRT_DTYPE_F32, 0, gSeed, 11, 2, ishape);
    pfrt_synthetic_batch(host.data(), gSeed, 11, 0, 2, ishape, nullptr,
                         nullptr);
    expectBits(download(din, 32), host, "load_input");
  }
  // Parts: two micro-batches of the rows.
  const int64_t zero[2] = {0, 0};
  float *dpart = static_cast<float *>(dalloc(16 * 4));
  for (int64_t part = 0; part < 2; ++part) {
    pfrt_cuda_load_input_part(1, dpart, 64, part, 2, PFRT_DTYPE_F32, 0, gSeed,
                              12, 2, ishape, 1, zero, ishape);
    std::vector<float> w(16);
    pfrt_load_input_part(1, w.data(), 64, part, 2, PFRT_DTYPE_F32, 0, gSeed, 12,
                         2, ishape, 1, zero, ishape);
    expectBits(download(dpart, 16), w, "load_input_part");
  }
  // Results through the host.
  pfrt_arena_reset();
  std::vector<float> loss = {1.25f}, out = uniform(9);
  pfrt_cuda_report_loss(upload(loss), 0);
  pfrt_cuda_report_output(1, upload(out), 36);
  pfrt_end_step();
  CHECK(pfrt_loss_count() == 1 && pfrt_loss_value(0) == 1.25f,
        "report_loss: %d losses", pfrt_loss_count());
  std::vector<float> back(9);
  CHECK(pfrt_output_bytes(1) == 36, "report_output: %lld bytes",
        (long long)pfrt_output_bytes(1));
  pfrt_output_copy(1, back.data(), 36);
  expectBits(back, out, "report_output");
}

void state(const std::string &dir) {
  const int64_t logical[2] = {6, 5};
  auto v = uniform(30);
  float *dv = upload(v);
  pfrt_cuda_state_register("w", PFRT_DTYPE_F32, 2, logical, nullptr, nullptr,
                           dv);
  std::vector<float> got(30);
  pfrt_state_gather("w", got.data(), 120);
  expectBits(got, v, "state_gather of device state");
  auto v2 = uniform(30);
  pfrt_state_set("w", v2.data(), 120);
  expectBits(download(dv, 30), v2, "state_set of device state");
  pfrt_state_save(dir.c_str(), 5);
  pfrt_cuda_k_fill(dv, 30, 0.0);
  int64_t step = -1;
  pfrt_state_load(dir.c_str(), &step);
  CHECK(step == 5, "state_load: step %lld", (long long)step);
  expectBits(download(dv, 30), v2, "state_load of device state");
  pfrt_state_clear();
}

/// A captured graph (the raw API): SGD with a device scalar; replayed, it
/// must give the uncaptured run's bits, twice. (The host work around a
/// replay, such as refreshing a scalar the host changed, is
/// pfrt_cuda_run_step's: runStep checks it.)
void graphs() {
  if (!pfrt_cuda_graphs_enabled())
    return;
  const int64_t n = 4099;
  auto p0 = uniform(n), g = uniform(n);
  float *dp = upload(p0), *dg = upload(g);
  *pfrt_scalar("lr") = 0.5f;
  float *dlr = pfrt_cuda_scalar("lr"); // uncaptured: set now
  auto run = [&] {
    pfrt_cuda_k_sgd(dp, dg, dlr, nullptr, nullptr, dp, nullptr, n, 0.0, 0.0,
                    0.0, 0);
  };
  run(); // uncaptured: p1 = p0 - 0.5 g
  auto p1 = download(dp, n);
  std::vector<float> want(static_cast<size_t>(n));
  float half = 0.5f;
  pfrt_k_sgd(p0.data(), g.data(), &half, nullptr, nullptr, want.data(), nullptr,
             n, 0.0, 0.0, 0.0, 0);
  expectBits(p1, want, "uncaptured SGD");
  pfrt_cuda_h2d(dp, p0.data(), n * 4);
  pfrt_cuda_graph_begin();
  run();
  pfrt_cuda_graph_end();
  pfrt_cuda_graph_launch();
  expectBits(download(dp, n), p1, "graph replay");
  pfrt_cuda_h2d(dp, p0.data(), n * 4);
  pfrt_cuda_graph_launch();
  expectBits(download(dp, n), p1, "second graph replay");
}

/// pfrt_cuda_run_step: a step that loads a user input, scales it by the
/// scalar lr (SGD of zeros with gradient -x), sums it and reports the sum
/// as its loss. Step 0 runs uncaptured, step 1 is captured and replayed,
/// steps 2-4 replay: every step must see its own input and lr (loaded and
/// refreshed around each replay) and report its own loss, equal to the
/// uncaptured kernels' bits.
constexpr int64_t kStepN = 1000;
float *gStepX, *gStepY, *gStepLoss;
void stepFn(int64_t) {
  const int64_t shape[1] = {kStepN};
  pfrt_cuda_load_input(0, gStepX, kStepN * 4, PFRT_DTYPE_F32, 0, gSeed, 13, 1,
                       shape);
  pfrt_cuda_k_fill(gStepY, kStepN, 0.0);
  // In place; a replay must draw its own step's mask.
  pfrt_cuda_k_dropout(gStepX, gStepX, kStepN, 0.4, gSeed, 31, 0, 1, shape,
                      nullptr, shape);
  pfrt_cuda_k_scale(gStepX, gStepX, kStepN, -1.0);
  pfrt_cuda_k_sgd(gStepY, gStepX, pfrt_cuda_scalar("lr"), nullptr, nullptr,
                  gStepY, nullptr, kStepN, 0.0, 0.0, 0.0, 0);
  const int8_t reduce[1] = {1};
  pfrt_cuda_k_reduce_sum(gStepY, gStepLoss, 1, shape, reduce);
  pfrt_cuda_report_loss(gStepLoss, 0);
}

void runStep() {
  gStepX = static_cast<float *>(dalloc(kStepN * 4));
  gStepY = static_cast<float *>(dalloc(kStepN * 4));
  gStepLoss = static_cast<float *>(dalloc(4));
  pfrt_use_user_inputs(1);
  float previous = 0.0f;
  for (int64_t k = 0; k < 5; ++k) {
    auto x = uniform(kStepN);
    float lr = 0.5f + 0.25f * float(k);
    pfrt_begin_step(k);
    *pfrt_scalar("lr") = lr;
    pfrt_set_input(0, x.data(), kStepN * 4);
    pfrt_cuda_run_step(stepFn, k);
    pfrt_end_step();
    // The host kernels on the same data.
    std::vector<float> y(static_cast<size_t>(kStepN), 0.0f);
    std::vector<float> nx(static_cast<size_t>(kStepN));
    const int64_t dshape[1] = {kStepN};
    pfrt_k_dropout(x.data(), x.data(), kStepN, 0.4, gSeed, 31, 0, 1, dshape,
                   nullptr, dshape);
    pfrt_k_scale(x.data(), nx.data(), kStepN, -1.0);
    pfrt_k_sgd(y.data(), nx.data(), &lr, nullptr, nullptr, y.data(), nullptr,
               kStepN, 0.0, 0.0, 0.0, 0);
    float want = 0.0f;
    const int64_t shape[1] = {kStepN};
    const int8_t reduce[1] = {1};
    pfrt_k_reduce_sum(y.data(), &want, 1, shape, reduce);
    CHECK(pfrt_loss_count() == 1, "run_step %lld: %d losses", (long long)k,
          pfrt_loss_count());
    float got = pfrt_loss_value(0);
    CHECK(std::memcmp(&got, &want, 4) == 0,
          "run_step %lld: loss %.9g, the host kernels give %.9g", (long long)k,
          double(got), double(want));
    CHECK(k == 0 || got != previous, "run_step %lld: the loss did not change",
          (long long)k);
    previous = got;
  }
  pfrt_use_user_inputs(0);
}

} // namespace

/// The weight and bias gradient GEMM (BGRADB) against its host row: C and
/// dbias within 1e-5 (cuBLASLt's reduction order is its own), fresh and
/// accumulating, and k = 0.
void biasGradients() {
  for (int64_t k : {int64_t(1), int64_t(16), int64_t(29)})
    for (int accumulate = 0; accumulate < 2; ++accumulate) {
      const int64_t m = 19, n = 27;
      auto a = uniform(k * m), b = uniform(k * n), c = uniform(m * n);
      auto bias = uniform(m);
      float *da = upload(a), *db = upload(b), *dc = upload(c),
            *dbias = upload(bias);
      std::vector<float> want = c, wantBias = bias;
      pfrt_cuda_k_matmul_bgrad(da, db, dc, dbias, m, n, k, accumulate);
      pfrt_k_matmul_bgrad(a.data(), b.data(), want.data(), wantBias.data(), m,
                          n, k, accumulate);
      char what[64];
      snprintf(what, sizeof(what), "matmul_bgrad k %lld accumulate %d",
               (long long)k, accumulate);
      expectClose(download(dc, m * n), want, 1e-5, what);
      expectClose(download(dbias, m), wantBias, 1e-5, what);
    }
  auto c = uniform(6), bias = uniform(3);
  float *dc = upload(c), *dbias = upload(bias);
  pfrt_cuda_k_matmul_bgrad(nullptr, nullptr, dc, dbias, 3, 2, 0, 1);
  expectBits(download(dc, 6), c, "matmul_bgrad k=0 accumulating");
  expectBits(download(dbias, 3), std::vector<float>(3, 0.0f),
             "matmul_bgrad k=0 bias");
}

/// The GEMM twins under PFRT_CUDA_GEMM_PRECISION (run_tests.sh runs this
/// mode with fp32 and with 3xtf32): each result against a double-precision
/// reference, the error relative to the sum of its terms' magnitudes.
/// float32 and 3xTF32 stay within 4e-6 of it; plain TF32 (the control, a
/// direct pfrt_cuda_gemm with tf32 = 1) does not, so the bound tells the
/// split apart from TF32 alone.
void gemmPrecision() {
  const char *p = getenv("PFRT_CUDA_GEMM_PRECISION");
  bool three = p && std::string(p) == "3xtf32";
  double worst = 0, worstTF32 = 0;
  struct Shape {
    int64_t m, n, k;
  };
  for (Shape sh : {Shape{37, 53, 61}, Shape{8, 300, 257}, Shape{64, 16, 5}})
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb)
        for (int kind = 0; kind < 4; ++kind) {
          const int64_t m = sh.m, n = sh.n, k = sh.k;
          auto a = uniform(m * k), b = uniform(k * n), c = uniform(m * n),
               bias = uniform(n);
          float *da = upload(a), *db = upload(b), *dc = upload(c),
                *dbias = upload(bias);
          // Row-major op(A) (m x k) and op(B) (k x n).
          auto at = [&](int64_t i, int64_t q) {
            return double(ta ? a[size_t(q * m + i)] : a[size_t(i * k + q)]);
          };
          auto bt = [&](int64_t q, int64_t j) {
            return double(tb ? b[size_t(j * k + q)] : b[size_t(q * n + j)]);
          };
          // Element (i, j) of op(A) op(B) in double, and its terms'
          // magnitude.
          auto product = [&](int64_t i, int64_t j) {
            double sum = 0, scale = 0;
            for (int64_t q = 0; q < k; ++q) {
              sum += at(i, q) * bt(q, j);
              scale += std::fabs(at(i, q) * bt(q, j));
            }
            return std::pair{sum, scale};
          };
          if (kind == 0)
            pfrt_cuda_k_matmul(da, db, dc, 1, 1, m, n, k, ta, tb);
          else if (kind == 1)
            pfrt_cuda_k_matmul_acc(da, db, dc, 1, 1, m, n, k, ta, tb);
          else if (kind == 2)
            pfrt_cuda_k_matmul_bias_relu(da, db, dbias, dc, 1, 1, m, n, k, ta,
                                         tb);
          std::vector<float> dbiasGot;
          if (kind == 3) { // the weight gradient: C = A^T B, A k x m
            if (ta == 0 || tb == 1)
              continue;
            pfrt_cuda_k_matmul_bgrad(da, db, dc, dbias, m, n, k, 0);
            dbiasGot = download(dbias, m);
          }
          std::vector<float> got = download(dc, m * n);
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) {
              auto [sum, scale] = product(i, j);
              if (kind == 1) {
                sum += c[size_t(i * n + j)];
                scale += std::fabs(c[size_t(i * n + j)]);
              } else if (kind == 2) {
                sum = std::max(sum + bias[size_t(j)], 0.0);
                scale += std::fabs(bias[size_t(j)]);
              }
              double e = std::fabs(got[size_t(i * n + j)] - sum) /
                         std::max(scale, 1e-30);
              CHECK(e <= 4e-6,
                    "gemm precision %s: kind %d %lldx%lldx%lld ta %d tb %d: "
                    "element (%lld, %lld) is %.9g, want %.9g (error %.3g of "
                    "the terms' magnitude)",
                    three ? "3xtf32" : "fp32", kind, (long long)m, (long long)n,
                    (long long)k, ta, tb, (long long)i, (long long)j,
                    double(got[size_t(i * n + j)]), sum, e);
              worst = std::max(worst, e);
            }
          for (size_t i = 0; i < dbiasGot.size(); ++i) {
            double sum = 0, scale = 0;
            for (int64_t q = 0; q < k; ++q) {
              sum += a[size_t(q * m + int64_t(i))];
              scale += std::fabs(a[size_t(q * m + int64_t(i))]);
            }
            CHECK(std::fabs(dbiasGot[i] - sum) <= 4e-6 * scale,
                  "gemm precision: matmul_bgrad's bias gradient %zu is %.9g, "
                  "want %.9g",
                  i, double(dbiasGot[i]), sum);
          }
          if (kind == 0) {
            // The mode took effect: the twin's bits are the exact float32
            // GEMM's (one cuBLASLt call) under fp32, not under 3xtf32.
            pfrt_cuda_gemm(ta, tb, m, n, k, 1.0f, da, ta ? m : k, db,
                           tb ? k : n, 0.0f, dc, n, 1, 0, 0, 0,
                           PFRT_EPILOGUE_NONE, nullptr, nullptr, 0);
            std::vector<float> exact = download(dc, m * n);
            int64_t differ = 0;
            for (size_t i = 0; i < exact.size(); ++i)
              differ += std::memcmp(&exact[i], &got[i], 4) != 0;
            CHECK(three ? differ > 0 : differ == 0,
                  "gemm precision %s: %lld of %lld elements differ from the "
                  "exact float32 GEMM's",
                  three ? "3xtf32" : "fp32", (long long)differ,
                  (long long)(m * n));
          }
          if (kind == 0) { // the control: plain TF32
            pfrt_cuda_gemm(ta, tb, m, n, k, 1.0f, da, ta ? m : k, db,
                           tb ? k : n, 0.0f, dc, n, 1, 0, 0, 0,
                           PFRT_EPILOGUE_NONE, nullptr, nullptr, 1);
            std::vector<float> t = download(dc, m * n);
            for (int64_t i = 0; i < m; ++i)
              for (int64_t j = 0; j < n; ++j) {
                auto [sum, scale] = product(i, j);
                worstTF32 =
                    std::max(worstTF32, std::fabs(t[size_t(i * n + j)] - sum) /
                                            std::max(scale, 1e-30));
              }
          }
        }
  CHECK(worstTF32 > 4e-6,
        "gemm precision: plain TF32's worst error %.3g is within the bound, "
        "so the test cannot tell 3xTF32 from it",
        worstTF32);
  printf("cuda-twins gemm_precision %s: worst error %.3g of the terms' "
         "magnitude (plain TF32: %.3g)\n",
         three ? "3xtf32" : "fp32", worst, worstTF32);
}

int main(int argc, char **argv) {
  if (pfrt_cuda_device_count() == 0) {
    printf("cuda-twins: no CUDA device here, skipped\n");
    return 77;
  }
  // 64 KiB of convolution scratch: the larger convolutions run in several
  // runs of images (read at the first convolution).
  setenv("PFRT_CUDA_CONV_SCRATCH", "65536", 0);
  pfrt_init(&argc, &argv);
  gSeed = pt_seed("cuda-twins");
  gState = pt_mix(gSeed ^ 0x7717e5);
  std::string dir = argc > 1 ? argv[1] : "/tmp/pfrt-cuda-twins";
  std::string mode = argc > 2 ? argv[2] : "";
  pfrt_cuda_arena_plan(kArena);
  if (mode == "bad_label") {
    std::vector<float> x = uniform(4 * 5);
    std::vector<int64_t> labels = {0, 4, 7, 1};
    float *dloss = static_cast<float *>(dalloc(4));
    pfrt_cuda_k_softmax_xent(upload(x), upload(labels), dloss, 4, 5);
    pfrt_cuda_report_loss(dloss, 0); // fatal: label 7 at row 2
    return 0;
  }
  if (mode == "gemm_precision") {
    gemmPrecision();
    pfrt_finalize();
    return 0;
  }
  if (mode == "misaligned_bias") {
    // A bias pointer not 16-byte aligned: BGRADB reports no algorithm (the
    // twin's GEMM-and-reduction fallback gives the aligned run's bits),
    // then the BIAS epilogue is a fatal error naming it.
    const int64_t m = 5, n = 7, k = 3;
    auto a = uniform(k * m), b = uniform(k * n);
    float *da = upload(a), *db = upload(b);
    float *dc = static_cast<float *>(dalloc(m * n * 4));
    float *aligned = static_cast<float *>(dalloc(m * 4));
    char *raw = static_cast<char *>(dalloc(m * 4 + 64));
    float *off = reinterpret_cast<float *>(raw + 4);
    int r = pfrt_cuda_gemm(0, 1, n, m, k, 1.0f, db, n, da, m, 0.0f, dc, m, 1, 0,
                           0, 0, PFRT_EPILOGUE_BGRADB, off, nullptr, 0);
    CHECK(r == 1, "BGRADB with a misaligned bias returned %d, not 1", r);
    pfrt_cuda_k_matmul_bgrad(da, db, dc, aligned, m, n, k, 0);
    auto want = download(aligned, m);
    pfrt_cuda_k_matmul_bgrad(da, db, dc, off, m, n, k, 0);
    expectBits(download(off, m), want, "matmul_bgrad into a misaligned bias");
    printf("cuda-twins misaligned bias: BGRADB falls back\n");
    fflush(stdout);
    pfrt_cuda_gemm(0, 0, m, n, k, 1.0f, da, k, db, n, 0.0f, dc, n, 1, 0, 0, 0,
                   PFRT_EPILOGUE_BIAS, off, nullptr, 0);
    return 1; // not reached
  }
  if (mode == "convs") { // alone: run_tests.sh runs it under 3xtf32 too
    convs();
    pfrt_cuda_synchronize();
    printf("cuda-twins convs (%s): ok\n",
           getenv("PFRT_CUDA_GEMM_PRECISION")
               ? getenv("PFRT_CUDA_GEMM_PRECISION")
               : "fp32");
    pfrt_finalize();
    return 0;
  }
  if (mode == "bgrad") { // alone: run_tests.sh runs it without BGRADB too
    biasGradients();
    pfrt_finalize();
    printf("cuda-twins bgrad: ok\n");
    return 0;
  }
  elementwise();
  reduceSum();
  xent();
  optimizers();
  multiTensorOptimizers();
  matmuls();
  biasGradients();
  convs();
  pools();
  batchNorms();
  transposesAndActivations();
  tensorOpsAndSoftmaxes();
  layerNorms();
  gptTwins();
  hostRows();
  state(dir);
  graphs();
  runStep();
  pfrt_cuda_synchronize();
  printf("cuda-twins: every device twin matches its host row (arena high "
         "water %lld)\n",
         (long long)pfrt_cuda_arena_high_water());
  pfrt_cuda_finalize();
  pfrt_finalize();
  return 0;
}
