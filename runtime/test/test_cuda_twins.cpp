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

#include "CudaTwinsTest.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

using namespace cudatwins;

namespace cudatwins {

uint64_t gSeed, gState, gTag;
pt::DeviceArena gArena(kArena);

std::vector<float> uniform(int64_t n, float lo, float hi) {
  return pt::uniformValues(gSeed, ++gTag, 0, n, lo, hi);
}

int64_t randint(int64_t lo, int64_t hi) { return pt_randint(&gState, lo, hi); }

void expectBinaryTwins(std::initializer_list<BinaryTwin> ops,
                       const std::vector<float> &a, const std::vector<float> &b,
                       const float *da, const float *db, float *dout,
                       const std::string &at) {
  const int64_t n = int64_t(a.size());
  std::vector<float> want(a.size());
  for (const BinaryTwin &op : ops) {
    op.twin(da, db, dout, n);
    op.cpu(a.data(), b.data(), want.data(), n);
    expectBits(download(dout, n), want, op.name + at);
  }
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

} // namespace cudatwins

namespace {

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
    expectBinaryTwins({{"relu_grad", pfrt_cuda_k_relu_grad, pfrt_k_relu_grad},
                       {"add", pfrt_cuda_k_add, pfrt_k_add},
                       {"mul", pfrt_cuda_k_mul, pfrt_k_mul}},
                      a, b, da, db, dout, at);
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

} // namespace

int main(int argc, char **argv) {
  pt::skipWithoutDevice("cuda-twins");
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
    convTwins();
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
  convTwins();
  convNetTwins();
  gptFamilyTwins();
  hostTwins(dir);
  pfrt_cuda_synchronize();
  printf("cuda-twins: every device twin matches its host row (arena high "
         "water %lld)\n",
         (long long)pfrt_cuda_arena_high_water());
  pfrt_cuda_finalize();
  pfrt_finalize();
  return 0;
}
