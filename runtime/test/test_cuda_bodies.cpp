//===- test_cuda_bodies.cpp - the CUDA kernels' bodies against the CPU ----===//
//
// pfrt-test-cuda-bodies: no GPU needed. The per-element and per-row bodies
// of libpfrt's CUDA kernels (src/cuda/DeviceBodies.h), built here by the
// host compiler, run in host loops in the order a kernel's threads would
// compute them, over fresh random data (PFRT_TEST_SEED replays a run), and
// are compared with the CPU kernels pfrt_k_*: every element bit for bit
// (the bodies repeat the CPU kernels' operations, float64 sums included,
// in the same order), and the reductions (reduce_sum, the cross-entropy)
// also within 1e-6 relative, the tolerance a GPU run is held to. Shapes
// include n = 1, c = 1, odd sizes and sizes around the 8-wide accumulator
// blocks; data includes -0, infinities and NaNs where the kernels must
// pass them through. Also checked: the cross-entropy bodies record the
// first out-of-range label (row and value) instead of reading past the row.
//
// The conv-network family: activations (every kind, beyond the clamps, in
// place), transposes, pooling (max with ties, -inf and NaN; avg; global)
// and batch norm (train with running statistics in place, eval, gradients;
// 2-D and 4-D, |mean| >> std, gamma/beta absent) bit for bit; convolutions
// (direct path, groups, strides, padding, dilation, batch 1, odd sizes) as
// the twins compute them with the CPU's SGEMM in cuBLASLt's place: im2col,
// then the same SGEMM per image and group, gives pfrt_k_conv2d's bits, the
// input gradient's col2im pfrt_k_conv2d_grad_input's, and the weight
// gradient's ordered sum over images the same bits however the batch is
// split into runs (and the CPU's value within float32 rounding).
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"
#include "pfrt/pfrt.h"

#include "../src/cpu/KernelUtil.h"
#include "../src/cuda/DeviceBodies.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

using namespace pfrt::dev;

namespace {

uint64_t gSeed;
uint64_t gState;
uint64_t gTag = 0;
int gChecks = 0;

/// Fresh uniform floats in [lo, hi).
std::vector<float> uniform(int64_t n, float lo = -3.0f, float hi = 3.0f) {
  std::vector<float> v(static_cast<size_t>(n > 0 ? n : 0));
  uint64_t t = ++gTag;
  for (int64_t i = 0; i < n; ++i)
    v[size_t(i)] =
        lo + (hi - lo) * 0.5f * (pt_value(gSeed, t, 0, uint64_t(i)) + 1.0f);
  return v;
}

int64_t randint(int64_t lo, int64_t hi) { return pt_randint(&gState, lo, hi); }

double uniform1(double lo, double hi) {
  gState = pt_mix(gState);
  return lo + (hi - lo) * double(gState >> 11) * (1.0 / 9007199254740992.0);
}

/// A few special values at random places (relu and friends pass them on).
void sprinkle(std::vector<float> &v) {
  const float specials[] = {0.0f,
                            -0.0f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            1e-40f};
  if (v.size() < 8)
    return;
  for (float s : specials)
    v[size_t(randint(0, int64_t(v.size()) - 1))] = s;
}

void expectBits(const std::vector<float> &got, const std::vector<float> &want,
                const std::string &what) {
  CHECK(got.size() == want.size(), "%s: sizes differ", what.c_str());
  for (size_t i = 0; i < got.size(); ++i) {
    uint32_t a, b;
    std::memcpy(&a, &got[i], 4);
    std::memcpy(&b, &want[i], 4);
    CHECK(a == b,
          "%s: element %zu is %.9g (0x%08x), the CPU kernel's %.9g "
          "(0x%08x)",
          what.c_str(), i, double(got[i]), a, double(want[i]), b);
  }
  ++gChecks;
}

void expectClose(const std::vector<float> &got, const std::vector<float> &want,
                 const std::string &what) {
  for (size_t i = 0; i < got.size(); ++i) {
    double g = got[i], w = want[i];
    double err = std::fabs(g - w) / std::max(std::fabs(w), 1e-30);
    CHECK(g == w || err <= 1e-6, "%s: element %zu is %.9g, the CPU's %.9g",
          what.c_str(), i, g, w);
  }
}

//===----------------------------------------------------------------------===//
// Element-wise
//===----------------------------------------------------------------------===//

void elementwise() {
  std::vector<int64_t> sizes = {1, 2, 7, 8, 9, 255, 256, 257, 1031};
  sizes.push_back(randint(1, 5000));
  for (int64_t n : sizes) {
    std::string at = " n=" + std::to_string(n);
    auto a = uniform(n), b = uniform(n);
    sprinkle(a);
    sprinkle(b);
    std::vector<float> got(static_cast<size_t>(n)),
        want(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      reluAt(a.data(), got.data(), i);
    pfrt_k_relu(a.data(), want.data(), n);
    expectBits(got, want, "relu" + at);
    for (int64_t i = 0; i < n; ++i)
      reluGradAt(a.data(), b.data(), got.data(), i);
    pfrt_k_relu_grad(a.data(), b.data(), want.data(), n);
    expectBits(got, want, "relu_grad" + at);
    for (int64_t i = 0; i < n; ++i)
      addAt(a.data(), b.data(), got.data(), i);
    pfrt_k_add(a.data(), b.data(), want.data(), n);
    expectBits(got, want, "add" + at);
    for (int64_t i = 0; i < n; ++i)
      mulAt(a.data(), b.data(), got.data(), i);
    pfrt_k_mul(a.data(), b.data(), want.data(), n);
    expectBits(got, want, "mul" + at);
    double s = uniform1(-4.0, 4.0);
    for (int64_t i = 0; i < n; ++i)
      scaleAt(a.data(), got.data(), float(s), i);
    pfrt_k_scale(a.data(), want.data(), n, s);
    expectBits(got, want, "scale" + at);
    for (int64_t i = 0; i < n; ++i)
      copyAt(a.data(), got.data(), i);
    pfrt_k_copy(a.data(), want.data(), n);
    expectBits(got, want, "copy" + at);
    double v = uniform1(-10.0, 10.0);
    for (int64_t i = 0; i < n; ++i)
      fillAt(got.data(), float(v), i);
    pfrt_k_fill(want.data(), n, v);
    expectBits(got, want, "fill" + at);
  }
  // In place (out == a), as the generated code may call them.
  auto a = uniform(777), b = uniform(777);
  auto a2 = a;
  for (int64_t i = 0; i < 777; ++i)
    addAt(a.data(), b.data(), a.data(), i);
  pfrt_k_add(a2.data(), b.data(), a2.data(), 777);
  expectBits(a, a2, "add in place");
}

void biasAdd() {
  struct Shape {
    int64_t outer, c, inner;
  };
  std::vector<Shape> shapes = {{1, 1, 1},  {1, 7, 1},   {5, 1, 1},
                               {3, 1, 9},  {2, 3, 5},   {7, 13, 1},
                               {4, 9, 17}, {1, 1, 257}, {33, 65, 3}};
  shapes.push_back({randint(1, 20), randint(1, 20), randint(1, 20)});
  for (const Shape &s : shapes) {
    int64_t total = s.outer * s.c * s.inner;
    auto x = uniform(total), bias = uniform(s.c);
    sprinkle(x);
    for (int relu = 0; relu < 2; ++relu) {
      std::vector<float> got(static_cast<size_t>(total)),
          want(static_cast<size_t>(total));
      for (int64_t i = 0; i < total; ++i)
        biasAddAt(x.data(), bias.data(), got.data(), s.c, s.inner, relu, i);
      if (relu)
        pfrt_k_bias_add_relu(x.data(), bias.data(), want.data(), s.outer, s.c,
                             s.inner);
      else
        pfrt_k_bias_add(x.data(), bias.data(), want.data(), s.outer, s.c,
                        s.inner);
      char what[128];
      snprintf(what, sizeof(what), "bias_add%s [%lld, %lld, %lld]",
               relu ? "_relu" : "", (long long)s.outer, (long long)s.c,
               (long long)s.inner);
      expectBits(got, want, what);
    }
  }
  // The k == 0 GEMM with a bias: rows of the bias.
  const int64_t rows = 5, n = 11;
  auto bias = uniform(n);
  std::vector<float> got(static_cast<size_t>(rows * n)),
      want(static_cast<size_t>(rows * n));
  for (int64_t i = 0; i < rows * n; ++i)
    biasRowsAt(bias.data(), got.data(), n, i);
  pfrt_k_matmul_bias(nullptr, nullptr, bias.data(), want.data(), 1, 1, rows, n,
                     0, 0, 0);
  expectBits(got, want, "bias rows (matmul_bias with k = 0)");
}

//===----------------------------------------------------------------------===//
// reduce_sum
//===----------------------------------------------------------------------===//

/// Cases whose sum was split: in chunks of rows (the column case), in
/// runs of the last dim.
int gColumnCases = 0, gRunCases = 0;

/// With `cancel`, a third of the elements get +-2^45 added: where they
/// cancel within an output's extent, the float64 rounding of the partial
/// sums shows in the float result, so a changed summation order would.
void reduceCase(const std::vector<int64_t> &shape,
                const std::vector<int8_t> &reduce, bool cancel = false) {
  int64_t rank = int64_t(shape.size());
  int64_t total = 1, outTotal = 1;
  for (int64_t d = 0; d < rank; ++d) {
    total *= shape[size_t(d)];
    if (!reduce[size_t(d)])
      outTotal *= shape[size_t(d)];
  }
  auto x = uniform(total);
  if (cancel)
    for (float &v : x)
      v += float(randint(-1, 1)) * 35184372088832.0f; // 2^45
  std::vector<float> want(static_cast<size_t>(outTotal), -7.0f),
      got(static_cast<size_t>(outTotal), -7.f);
  pfrt_k_reduce_sum(x.data(), want.data(), rank, shape.data(), reduce.data());
  // What pfrt_cuda_k_reduce_sum does, with the kernel's threads as a loop.
  ReducePlan plan;
  switch (makeReducePlan(rank, shape.data(), reduce.data(), &plan)) {
  case kReduceNothing:
    break;
  case kReduceZeros:
    std::fill(got.begin(), got.end(), 0.0f);
    break;
  case kReduceCopy:
    for (int64_t i = 0; i < total; ++i)
      copyAt(x.data(), got.data(), i);
    break;
  case kReduceSum:
    CHECK(plan.outTotal == outTotal, "reduce plan: %lld outputs, not %lld",
          (long long)plan.outTotal, (long long)outTotal);
    if (plan.parts > 0) {
      // A split sum's two launches: the parts (column chunks or runs of
      // the last dim), then each output's parts in order.
      std::vector<double> part(size_t(plan.parts * outTotal), -7.0);
      for (int64_t i = 0; i < plan.parts * outTotal; ++i) {
        if (plan.chunk > 0)
          reduceColumnPartAt(x.data(), part.data(), plan, i);
        else
          reduceRunPartAt(x.data(), part.data(), plan, i);
      }
      for (int64_t o = 0; o < outTotal; ++o)
        reducePartsSumAt(part.data(), got.data(), outTotal, plan.parts, o);
      ++(plan.chunk > 0 ? gColumnCases : gRunCases);
      break;
    }
    for (int64_t o = 0; o < plan.outTotal; ++o)
      reduceSumAt(x.data(), got.data(), plan, o);
    break;
  }
  std::string what = "reduce_sum shape (";
  for (int64_t d = 0; d < rank; ++d)
    what += (d ? ", " : "") + std::to_string(shape[size_t(d)]) +
            (reduce[size_t(d)] ? "r" : "");
  what += cancel ? ") with cancelling +-2^45" : ")";
  expectClose(got, want, what);
  expectBits(got, want, what);
}

void reduceSum() {
  // Fixed cases: everything reduced, nothing reduced, last dim kept or
  // reduced, unit and empty dims, runs around the 8 accumulators.
  reduceCase({1}, {1});
  reduceCase({1}, {0});
  reduceCase({7}, {1});
  reduceCase({8}, {1});
  reduceCase({9}, {1});
  reduceCase({1000}, {1});
  reduceCase({}, {});
  reduceCase({5, 3}, {0, 0});
  reduceCase({5, 3}, {1, 0});
  reduceCase({5, 3}, {0, 1});
  reduceCase({1, 3}, {1, 0});
  reduceCase({17, 1}, {1, 0});
  reduceCase({4, 0, 3}, {0, 1, 0});
  reduceCase({4, 0, 3}, {1, 0, 0});
  reduceCase({6, 7, 9}, {1, 0, 1});
  reduceCase({6, 7, 9}, {0, 1, 0});
  reduceCase({2, 3, 4, 5}, {1, 1, 0, 0});
  reduceCase({2, 3, 4, 5}, {0, 1, 1, 0});
  reduceCase({3, 1, 4, 1, 5}, {1, 0, 0, 1, 1});
  reduceCase({33, 65}, {1, 0});
  reduceCase({33, 65}, {0, 1});
  // Random shapes of rank 1..5 with dims 1..9 (some 1: they vanish).
  for (int k = 0; k < 40; ++k) {
    int64_t rank = randint(1, 5);
    std::vector<int64_t> shape(static_cast<size_t>(rank));
    std::vector<int8_t> reduce(static_cast<size_t>(rank));
    for (int64_t d = 0; d < rank; ++d) {
      shape[size_t(d)] = randint(0, 5) == 0 ? 1 : randint(1, 9);
      reduce[size_t(d)] = int8_t(randint(0, 1));
    }
    reduceCase(shape, reduce);
    reduceCase(shape, reduce, true);
  }
  for (int64_t len : {64, 100, 1000, 4099})
    reduceCase({len}, {1}, true);
  reduceCase({64, 129}, {0, 1}, true);
  reduceCase({17, 3, 77}, {0, 1, 1}, true);
  reduceCase({3, 40}, {0, 1}, true);
  reduceCase({40, 3}, {1, 0}, true);
  reduceCase({5, 6, 7}, {1, 0, 1}, true);
  // The column case in chunks of rows (reduceColumnChunk): a bias
  // gradient's shape, a kept outer dim, a last chunk shorter than the
  // others, just enough rows for two chunks, and the order shown by
  // cancelling terms.
  int before = gColumnCases;
  reduceCase({1000, 7}, {1, 0}, true);
  reduceCase({3, 517, 9}, {0, 1, 0}, true);
  reduceCase({2, 3, 100, 5}, {0, 1, 1, 0}, true);
  reduceCase({32, 4}, {1, 0}, true);
  reduceCase({31, 4}, {1, 0}, true); // one chunk: rows in order
  reduceCase({8192, 10}, {1, 0});
  reduceCase({300, 1024}, {1, 0}, true);
  CHECK(gColumnCases - before == 6,
        "%d of the column cases were chunked, not 6", gColumnCases - before);
  // The last dim reduced with reduced dims outside it, a part per run: a
  // convolution's bias gradient (N, C, H, W over 0, 2, 3), runs outside
  // runs, a kept dim between; one run per output is not split.
  before = gRunCases;
  reduceCase({8, 4, 12, 12}, {1, 0, 1, 1}, true);
  reduceCase({3, 5, 2, 7, 9}, {1, 1, 0, 1, 1}, true);
  reduceCase({6, 3, 5, 4}, {1, 0, 1, 1}, true);
  reduceCase({7, 50}, {0, 1}, true);
  reduceCase({3, 4, 2, 5, 6}, {1, 0, 1, 0, 1}, true); // runs in 2 dims
  reduceCase({5, 2, 4, 3, 7}, {1, 0, 1, 0, 1}, true);
  CHECK(gRunCases - before == 5, "%d of the run cases were split, not 5",
        gRunCases - before);
  CHECK(pfrt::kern::reduceColumnChunk(8192, 1024) == 64 &&
            pfrt::kern::reduceColumnChunk(31, 4) == 0 &&
            pfrt::kern::reduceColumnChunk(32, 4) == 16,
        "reduceColumnChunk: 8192 x 1024 in chunks of %lld rows",
        (long long)pfrt::kern::reduceColumnChunk(8192, 1024));
}

//===----------------------------------------------------------------------===//
// Softmax cross-entropy
//===----------------------------------------------------------------------===//

void xentCase(int64_t n, int64_t c, float lo, float hi) {
  auto x = uniform(n * c, lo, hi);
  std::vector<int64_t> labels(static_cast<size_t>(n));
  for (auto &l : labels)
    l = randint(0, c - 1);
  char what[128];
  snprintf(what, sizeof(what), "softmax_xent n=%lld c=%lld logits in [%g, %g)",
           (long long)n, (long long)c, double(lo), double(hi));
  // Forward: one thread per row, then one thread summing in row order.
  std::vector<double> rowLoss(static_cast<size_t>(n));
  for (int64_t r = 0; r < n; ++r)
    xentRowLossAt(x.data(), labels.data(), rowLoss.data(), c, r);
  DeviceError err{};
  std::vector<float> got(1), want(1);
  xentTotal(rowLoss.data(), labels.data(), got.data(), n, c, &err);
  CHECK(err.code == kErrNone, "%s: error %d recorded", what, int(err.code));
  pfrt_k_softmax_xent(x.data(), labels.data(), want.data(), n, c);
  expectClose(got, want, what);
  expectBits(got, want, what);
  // Gradient: the label check, stats per row, then one thread per element.
  std::vector<float> dloss = uniform(1, 0.25f, 2.0f);
  std::vector<double> stats(static_cast<size_t>(2 * n));
  xentCheckLabels(labels.data(), n, c, kErrXentGradLabel, &err);
  CHECK(err.code == kErrNone, "%s grad: error %d recorded", what,
        int(err.code));
  for (int64_t r = 0; r < n; ++r)
    xentRowStatsAt(x.data(), stats.data(), c, r);
  std::vector<float> gotD(static_cast<size_t>(n * c)),
      wantD(static_cast<size_t>(n * c));
  for (int64_t i = 0; i < n * c; ++i)
    xentGradAt(x.data(), labels.data(), dloss.data(), stats.data(), gotD.data(),
               n, c, i);
  pfrt_k_softmax_xent_grad(x.data(), labels.data(), dloss.data(), wantD.data(),
                           n, c);
  std::string g = std::string(what) + " (grad)";
  expectClose(gotD, wantD, g);
  expectBits(gotD, wantD, g);
}

void xentLabels() {
  const int64_t n = 9, c = 5;
  auto x = uniform(n * c);
  std::vector<int64_t> labels(static_cast<size_t>(n));
  for (auto &l : labels)
    l = randint(0, c - 1);
  labels[3] = c;  // the first bad row
  labels[6] = -1; // a later one
  labels[8] = 1000000;
  std::vector<double> rowLoss(static_cast<size_t>(n));
  for (int64_t r = 0; r < n; ++r)
    xentRowLossAt(x.data(), labels.data(), rowLoss.data(), c, r);
  CHECK(std::isnan(rowLoss[3]) && std::isnan(rowLoss[6]),
        "a row with a bad label must get NaN, got %g and %g", rowLoss[3],
        rowLoss[6]);
  DeviceError err{};
  float loss = 0.0f;
  xentTotal(rowLoss.data(), labels.data(), &loss, n, c, &err);
  CHECK(err.code == kErrXentLabel && err.row == 3 && err.value == c &&
            err.bound == c,
        "xentTotal recorded code %d row %lld value %lld bound %lld, expected "
        "%d row 3 value %lld bound %lld",
        int(err.code), (long long)err.row, (long long)err.value,
        (long long)err.bound, int(kErrXentLabel), (long long)c, (long long)c);
  // The first error wins: a later one leaves the record alone.
  xentCheckLabels(labels.data() + 6, 3, c, kErrXentGradLabel, &err);
  CHECK(err.code == kErrXentLabel && err.row == 3,
        "a second error overwrote the first");
  DeviceError err2{};
  xentCheckLabels(labels.data(), n, c, kErrXentGradLabel, &err2);
  CHECK(err2.code == kErrXentGradLabel && err2.row == 3 && err2.value == c,
        "xentCheckLabels recorded code %d row %lld value %lld", int(err2.code),
        (long long)err2.row, (long long)err2.value);
  DeviceError err3{};
  xentCheckLabels(labels.data() + 4, n - 4, c, kErrXentGradLabel, &err3);
  CHECK(err3.code == kErrXentGradLabel && err3.row == 2 && err3.value == -1,
        "negative label: recorded row %lld value %lld", (long long)err3.row,
        (long long)err3.value);
  // The gradient body never reads a bad row's label column.
  std::vector<double> stats(static_cast<size_t>(2 * n));
  for (int64_t r = 0; r < n; ++r)
    xentRowStatsAt(x.data(), stats.data(), c, r);
  float dloss = 1.0f;
  std::vector<float> d(static_cast<size_t>(n * c));
  for (int64_t i = 0; i < n * c; ++i)
    xentGradAt(x.data(), labels.data(), &dloss, stats.data(), d.data(), n, c,
               i);
  ++gChecks;
}

void xent() {
  xentCase(1, 1, -1, 1);
  xentCase(1, 7, -3, 3);
  xentCase(7, 1, -3, 3);
  xentCase(7, 10, -3, 3);
  xentCase(3, 2, -1, 1);
  xentCase(5, 8, -4, 4);
  xentCase(5, 9, -4, 4);
  xentCase(33, 1000, -5, 5);
  xentCase(5, 3, 80, 120);
  xentCase(4, 17, -900, 900); // exp arguments below the -700 clamp
  xentCase(64, 10, -2, 2);
  xentCase(randint(1, 40), randint(1, 300), -6, 6);
  xentLabels();
}

//===----------------------------------------------------------------------===//
// Optimizers
//===----------------------------------------------------------------------===//

void sgd() {
  // momentum dampening weight_decay nesterov
  const double cfgs[][4] = {
      {0, 0, 0, 0},      {0, 0, 0.01, 0},  {0.9, 0, 0, 0}, {0.9, 0.1, 0.01, 0},
      {0.9, 0, 0.05, 1}, {0.5, 0.3, 0, 0}, {0.7, 0, 0, 1}, {0.9, 0, 1e-4, 0}};
  for (const auto &q : cfgs)
    for (int64_t n : {int64_t(1), int64_t(9), int64_t(1031)})
      for (int inplace = 0; inplace < 2; ++inplace) {
        bool mom = q[0] != 0;
        SgdParams sp = makeSgdParams(q[0], q[1], q[2], int32_t(q[3]));
        auto p = uniform(n), buf = uniform(n); // buf: garbage at step 1
        auto pc = p, bufc = buf;
        std::vector<float> np(static_cast<size_t>(n)),
            nb(static_cast<size_t>(n)), npc(static_cast<size_t>(n)),
            nbc(static_cast<size_t>(n));
        for (int t = 1; t <= 4; ++t) {
          auto g = uniform(n);
          float lr = float(uniform1(0.01, 0.2)), step = float(t);
          float *outP = inplace ? p.data() : np.data();
          float *outB = inplace ? buf.data() : nb.data();
          for (int64_t i = 0; i < n; ++i)
            sgdAt(p.data(), g.data(), buf.data(), outP, mom ? outB : nullptr,
                  lr, step, sp, i);
          float *outPc = inplace ? pc.data() : npc.data();
          float *outBc = inplace ? bufc.data() : nbc.data();
          pfrt_k_sgd(pc.data(), g.data(), &lr, mom ? bufc.data() : nullptr,
                     mom ? &step : nullptr, outPc, mom ? outBc : nullptr, n,
                     q[0], q[1], q[2], int32_t(q[3]));
          if (!inplace) {
            p.swap(np);
            pc.swap(npc);
            if (mom) {
              buf.swap(nb);
              bufc.swap(nbc);
            }
          }
          char what[160];
          snprintf(what, sizeof(what),
                   "sgd momentum=%g dampening=%g wd=%g nesterov=%d n=%lld "
                   "step %d%s",
                   q[0], q[1], q[2], int(q[3]), (long long)n, t,
                   inplace ? " in place" : "");
          expectBits(p, pc, what);
          if (mom)
            expectBits(buf, bufc, std::string(what) + " (buf)");
        }
      }
}

void adam() {
  // beta1 beta2 eps weight_decay decoupled bias_correction zero_state
  const double cfgs[][7] = {
      {0.9, 0.999, 1e-8, 0, 0, 1, 1},    {0.9, 0.999, 1e-8, 0.01, 0, 1, 0},
      {0.9, 0.999, 1e-8, 0.01, 1, 1, 1}, {0.9, 0.999, 1e-8, 0.01, 1, 0, 0},
      {0.9, 0.98, 1e-6, 0, 0, 0, 0},     {0.3, 0.9, 1e-3, 0.1, 0, 1, 0},
      {0.3, 0.9, 1e-3, 0.1, 1, 1, 0},    {0.5, 0.5, 1e-8, 0, 1, 0, 1}};
  for (const auto &q : cfgs)
    for (int64_t n : {int64_t(1), int64_t(9), int64_t(1031)}) {
      auto p = uniform(n);
      std::vector<float> m(static_cast<size_t>(n), 0.0f),
          v(static_cast<size_t>(n), 0.0f);
      if (!q[6]) {
        m = uniform(n, -0.1f, 0.1f);
        v = uniform(n, 0.0f, 0.01f);
      }
      auto pc = p, mc = m, vc = v;
      for (int t = 1; t <= 4; ++t) {
        auto g = uniform(n);
        float lr = float(uniform1(1e-4, 0.3)), step = float(t);
        AdamConsts k;
        bool ok = makeAdamConsts(lr, step, q[0], q[1], q[2], q[3],
                                 int32_t(q[4]), int32_t(q[5]), &k);
        CHECK(ok, "makeAdamConsts refused step %g", double(step));
        for (int64_t i = 0; i < n; ++i) // in place, as the compiler calls it
          adamAt(p.data(), g.data(), m.data(), v.data(), p.data(), m.data(),
                 v.data(), k, i);
        pfrt_k_adam(pc.data(), g.data(), mc.data(), vc.data(), &lr, &step,
                    pc.data(), mc.data(), vc.data(), n, q[0], q[1], q[2], q[3],
                    int32_t(q[4]), int32_t(q[5]));
        char what[200];
        snprintf(what, sizeof(what),
                 "adam beta1=%g beta2=%g eps=%g wd=%g decoupled=%d "
                 "bias_correction=%d n=%lld step %d",
                 q[0], q[1], q[2], q[3], int(q[4]), int(q[5]), (long long)n, t);
        expectBits(p, pc, what);
        expectBits(m, mc, std::string(what) + " (m)");
        expectBits(v, vc, std::string(what) + " (v)");
      }
    }
  // Bias correction needs step >= 1 (the CPU kernel's fatal error; the
  // kernel records it instead); without it any step goes.
  AdamConsts k;
  CHECK(!makeAdamConsts(0.1f, 0.0f, 0.9, 0.999, 1e-8, 0, 0, 1, &k),
        "step 0 with bias correction must be refused");
  CHECK(!makeAdamConsts(0.1f, std::numeric_limits<float>::quiet_NaN(), 0.9,
                        0.999, 1e-8, 0, 0, 1, &k),
        "a NaN step with bias correction must be refused");
  CHECK(makeAdamConsts(0.1f, 0.0f, 0.9, 0.999, 1e-8, 0, 0, 0, &k),
        "step 0 without bias correction must be accepted");
  DeviceError err{};
  raiseError(&err, kErrAdamStep, 0, 0, 0, 0.5);
  CHECK(err.code == kErrAdamStep && err.real == 0.5, "raiseError");
  ++gChecks;
}

//===----------------------------------------------------------------------===//
// Activations and transpose
//===----------------------------------------------------------------------===//

void activations() {
  for (int32_t kind = 0; kind < 4; ++kind)
    for (int64_t n :
         {int64_t(1), int64_t(7), int64_t(1031), randint(1, 3000)}) {
      auto x = uniform(n, -6.0f, 6.0f), dy = uniform(n);
      // Beyond the clamps of the exponentials (float: -87/88, double:
      // -700, tanh: 350) and the special values.
      const float wide[] = {-1000.0f, -710.0f, -100.0f, -20.0f, -9.5f,
                            9.5f,     20.0f,   100.0f,  710.0f, 1000.0f};
      for (size_t k = 0; k < sizeof(wide) / sizeof(wide[0]) && k < x.size();
           ++k)
        x[size_t(randint(0, n - 1))] = wide[k];
      sprinkle(x);
      std::string at =
          " kind=" + std::to_string(kind) + " n=" + std::to_string(n);
      std::vector<float> got(static_cast<size_t>(n)),
          want(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i)
        activationAt(kind, x.data(), nullptr, got.data(), i);
      pfrt_k_activation(kind, x.data(), want.data(), n);
      expectBits(got, want, "activation" + at);
      for (int64_t i = 0; i < n; ++i)
        activationAt(kind, x.data(), dy.data(), got.data(), i);
      pfrt_k_activation_grad(kind, x.data(), dy.data(), want.data(), n);
      expectBits(got, want, "activation_grad" + at);
      // In place: y == x, dx == dy.
      auto xi = x, xc = x, di = dy, dc = dy;
      for (int64_t i = 0; i < n; ++i)
        activationAt(kind, xi.data(), nullptr, xi.data(), i);
      pfrt_k_activation(kind, xc.data(), xc.data(), n);
      expectBits(xi, xc, "activation in place" + at);
      for (int64_t i = 0; i < n; ++i)
        activationAt(kind, x.data(), di.data(), di.data(), i);
      pfrt_k_activation_grad(kind, x.data(), dc.data(), dc.data(), n);
      expectBits(di, dc, "activation_grad in place" + at);
    }
}

void transposeCase(const std::vector<int64_t> &shape,
                   const std::vector<int64_t> &perm) {
  int64_t rank = int64_t(shape.size()), total = 1;
  for (int64_t e : shape)
    total *= e;
  auto x = uniform(total);
  std::vector<float> got(static_cast<size_t>(total), -7.0f),
      want(static_cast<size_t>(total), -7.0f);
  pfrt_k_transpose(x.data(), want.data(), rank, shape.data(), perm.data());
  if (total > 0) {
    TransposePlan plan;
    makeTransposePlan(rank, shape.data(), perm.data(), &plan);
    CHECK(plan.total == total, "transpose plan: %lld elements, not %lld",
          (long long)plan.total, (long long)total);
    for (int64_t o = 0; o < plan.total; ++o)
      transposeAt(x.data(), got.data(), plan, o);
  }
  std::string what = "transpose shape (";
  for (int64_t d = 0; d < rank; ++d)
    what += (d ? ", " : "") + std::to_string(shape[size_t(d)]);
  what += ") perm (";
  for (int64_t d = 0; d < rank; ++d)
    what += (d ? ", " : "") + std::to_string(perm[size_t(d)]);
  expectBits(got, want, what + ")");
}

void transposes() {
  transposeCase({}, {});
  transposeCase({7}, {0});
  transposeCase({5, 3}, {1, 0});
  transposeCase({5, 3}, {0, 1});
  transposeCase({1, 9}, {1, 0});
  transposeCase({33, 65}, {1, 0});
  transposeCase({2, 3, 4}, {2, 1, 0});
  transposeCase({2, 3, 4}, {1, 2, 0});
  transposeCase({2, 3, 4, 5}, {0, 2, 3, 1}); // NCHW -> NHWC
  transposeCase({2, 3, 4, 5}, {0, 3, 1, 2}); // NHWC -> NCHW
  transposeCase({3, 1, 4, 1, 5}, {4, 1, 3, 0, 2});
  transposeCase({4, 0, 3}, {2, 0, 1});
  for (int k = 0; k < 40; ++k) {
    int64_t rank = randint(1, 6);
    std::vector<int64_t> shape(static_cast<size_t>(rank)),
        perm(static_cast<size_t>(rank));
    for (int64_t d = 0; d < rank; ++d) {
      shape[size_t(d)] = randint(0, 4) == 0 ? 1 : randint(1, 6);
      perm[size_t(d)] = d;
    }
    for (int64_t d = rank - 1; d > 0; --d)
      std::swap(perm[size_t(d)], perm[size_t(randint(0, d))]);
    transposeCase(shape, perm);
  }
}

//===----------------------------------------------------------------------===//
// Convolutions
//===----------------------------------------------------------------------===//

/// got within tol of want relative to max(1, scale[i]), the same sum over
/// the absolute values of its terms (float32 sums in another order).
void expectNear(const std::vector<float> &got, const std::vector<float> &want,
                const std::vector<float> &scale, double tol,
                const std::string &what) {
  CHECK(got.size() == want.size(), "%s: sizes differ", what.c_str());
  for (size_t i = 0; i < got.size(); ++i) {
    double g = got[i], w = want[i];
    CHECK(g == w || std::fabs(g - w) <= tol * std::max(1.0, double(scale[i])),
          "%s: element %zu is %.9g, the CPU's %.9g", what.c_str(), i, g, w);
  }
  ++gChecks;
}

struct ConvCase {
  int64_t N, C, H, W, O, KH, KW, sh, sw, ph, pw, dh, dw, G;
};

/// What the conv twins do, with the kernels' threads as loops and the
/// CPU's SGEMM (the same call per image and group as pfrt_k_conv2d*) in
/// place of cuBLASLt: the forward and the input gradient must then give
/// the CPU kernels' bits (im2col and col2im are exact), the weight
/// gradient its value within float32 rounding (the CPU accumulates through
/// SGEMM's beta; the twin sums the images' products in the same order),
/// and the weight gradient's runs of images the same bits however the
/// batch is split.
void convCase(const ConvCase &c) {
  const int64_t OH = (c.H + 2 * c.ph - c.dh * (c.KH - 1) - 1) / c.sh + 1;
  const int64_t OW = (c.W + 2 * c.pw - c.dw * (c.KW - 1) - 1) / c.sw + 1;
  const int64_t dims[16] = {c.N, c.C,  c.H,  c.W,  c.O,  c.KH, c.KW, OH,
                            OW,  c.sh, c.sw, c.ph, c.pw, c.dh, c.dw, c.G};
  const ConvGeom d = makeConvGeom(dims);
  char what[200];
  snprintf(what, sizeof(what),
           "conv2d N=%lld C=%lld H=%lld W=%lld O=%lld K=%lldx%lld "
           "stride=%lldx%lld pad=%lldx%lld dil=%lldx%lld groups=%lld",
           (long long)c.N, (long long)c.C, (long long)c.H, (long long)c.W,
           (long long)c.O, (long long)c.KH, (long long)c.KW, (long long)c.sh,
           (long long)c.sw, (long long)c.ph, (long long)c.pw, (long long)c.dh,
           (long long)c.dw, (long long)c.G);
  const std::string at = what;
  const int64_t nx = d.N * d.C * d.HW, ny = d.N * d.O * d.P, nw = d.O * d.K;
  const int64_t colImage = d.G * d.K * d.P;
  auto x = uniform(nx), w = uniform(nw), dy = uniform(ny);
  // im2col of all images (the twin's runs are consecutive slices of it).
  std::vector<float> col(static_cast<size_t>(d.N * colImage));
  for (int64_t i = 0; i < d.N * colImage; ++i)
    im2colAt(x.data(), col.data(), d, i);
  if (d.direct)
    expectBits(col, x, at + ": im2col of the direct path is x");
  auto colOf = [&](std::vector<float> &v, int64_t n, int64_t g) {
    return v.data() + (n * d.G + g) * d.K * d.P;
  };
  // Forward.
  std::vector<float> got(static_cast<size_t>(ny), -7.0f),
      want(static_cast<size_t>(ny), -7.0f);
  for (int64_t n = 0; n < d.N; ++n)
    for (int64_t g = 0; g < d.G; ++g)
      pfrt_sgemm(0, 0, d.Og, d.P, d.K, 1.0f, w.data() + g * d.Og * d.K, d.K,
                 colOf(col, n, g), d.P, 0.0f,
                 got.data() + (n * d.O + g * d.Og) * d.P, d.P);
  pfrt_k_conv2d(x.data(), w.data(), want.data(), dims);
  expectBits(got, want, at + " (forward)");
  // Input gradient: dcol = w_g^T dy_g per image and group, then col2im.
  std::vector<float> dcol(static_cast<size_t>(d.N * colImage));
  for (int64_t n = 0; n < d.N; ++n)
    for (int64_t g = 0; g < d.G; ++g)
      pfrt_sgemm(1, 0, d.K, d.P, d.Og, 1.0f, w.data() + g * d.Og * d.K, d.K,
                 dy.data() + (n * d.O + g * d.Og) * d.P, d.P, 0.0f,
                 colOf(dcol, n, g), d.P);
  std::vector<float> gotDx(static_cast<size_t>(nx), -7.0f),
      wantDx(static_cast<size_t>(nx), -7.0f);
  if (d.direct)
    gotDx = dcol; // the twin's GEMM writes dx itself
  else
    for (int64_t i = 0; i < nx; ++i)
      col2imAt(dcol.data(), gotDx.data(), d, i);
  pfrt_k_conv2d_grad_input(dy.data(), w.data(), wantDx.data(), dims);
  expectBits(gotDx, wantDx, at + " (grad_input)");
  // Weight gradient: each image's dy_g col^T, then the ordered sum.
  std::vector<float> part(static_cast<size_t>(d.N * nw));
  for (int64_t n = 0; n < d.N; ++n)
    for (int64_t g = 0; g < d.G; ++g)
      pfrt_sgemm(0, 1, d.Og, d.K, d.P, 1.0f,
                 dy.data() + (n * d.O + g * d.Og) * d.P, d.P, colOf(col, n, g),
                 d.P, 0.0f, part.data() + n * nw + g * d.Og * d.K, d.K);
  std::vector<float> wantDw(static_cast<size_t>(nw), -7.0f), first;
  pfrt_k_conv2d_grad_weight(x.data(), dy.data(), wantDw.data(), dims);
  std::vector<float> ax = x, ady = dy, scale(static_cast<size_t>(nw));
  for (float &v : ax)
    v = std::fabs(v);
  for (float &v : ady)
    v = std::fabs(v);
  pfrt_k_conv2d_grad_weight(ax.data(), ady.data(), scale.data(), dims);
  for (int64_t nb : {d.N, int64_t(1), int64_t(2), int64_t(3)}) {
    if (nb > d.N)
      continue;
    std::vector<float> gotDw(static_cast<size_t>(nw), -7.0f);
    for (int64_t n0 = 0; n0 < d.N; n0 += nb) {
      int64_t m = std::min(nb, d.N - n0);
      for (int64_t i = 0; i < nw; ++i)
        sumImagesAt(part.data() + n0 * nw, gotDw.data(), m, nw, n0 == 0, i);
    }
    std::string runs = at + " (grad_weight, runs of " + std::to_string(nb) +
                       " image" + (nb > 1 ? "s)" : ")");
    if (first.empty())
      first = gotDw;
    else
      expectBits(gotDw, first, runs + " against one run");
    if (d.N == 1)
      expectBits(gotDw, wantDw, runs); // one SGEMM, beta = 0
    else
      expectNear(gotDw, wantDw, scale, 1e-5, runs);
  }
}

void convs() {
  // N C H W O KH KW sh sw ph pw dh dw G
  std::vector<ConvCase> cases = {
      {2, 3, 8, 8, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1},   // 3x3, pad 1
      {1, 1, 12, 12, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1}, // convnet's conv1, batch 1
      {3, 4, 6, 6, 8, 3, 3, 1, 1, 0, 0, 1, 1, 1},   // convnet's conv2
      {2, 5, 7, 9, 6, 1, 1, 1, 1, 0, 0, 1, 1, 1},   // 1x1: the direct path
      {2, 4, 5, 5, 6, 1, 1, 1, 1, 0, 0, 1, 1, 2},   // direct, 2 groups
      {2, 6, 7, 9, 4, 1, 1, 2, 2, 0, 0, 1, 1, 1},   // 1x1 stride 2
      {1, 3, 15, 13, 5, 7, 7, 2, 2, 3, 3, 1, 1, 1}, // 7x7 stride 2 pad 3
      {2, 4, 9, 11, 6, 3, 3, 2, 2, 1, 1, 1, 1, 2},  // 2 groups, stride 2
      {1, 4, 10, 10, 4, 3, 3, 1, 1, 2, 2, 2, 2, 4}, // depthwise, dilation 2
      {3, 2, 5, 13, 3, 2, 4, 3, 1, 0, 2, 1, 1, 1},  // asymmetric
      {1, 2, 3, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1},   // 3x3 input, 3x3 kernel
      {2, 3, 1, 1, 4, 1, 1, 1, 1, 0, 0, 1, 1, 1},   // 1x1 images
      {2, 2, 4, 4, 3, 5, 5, 1, 1, 2, 2, 1, 1, 1},   // kernel > input
      {5, 3, 9, 7, 2, 3, 2, 2, 3, 1, 1, 1, 2, 1},   // odd everything
      {4, 8, 14, 14, 16, 3, 3, 2, 2, 1, 1, 1, 1, 1}};
  for (int k = 0; k < 12; ++k) {
    ConvCase c;
    c.G = randint(1, 3);
    c.C = c.G * randint(1, 4);
    c.O = c.G * randint(1, 4);
    c.N = randint(1, 4);
    c.KH = randint(1, 4);
    c.KW = randint(1, 4);
    c.sh = randint(1, 3);
    c.sw = randint(1, 3);
    c.dh = randint(1, 2);
    c.dw = randint(1, 2);
    c.ph = randint(0, 2);
    c.pw = randint(0, 2);
    c.H = std::max<int64_t>(randint(1, 12), c.dh * (c.KH - 1) + 1 - 2 * c.ph);
    c.W = std::max<int64_t>(randint(1, 12), c.dw * (c.KW - 1) + 1 - 2 * c.pw);
    cases.push_back(c);
  }
  for (const ConvCase &c : cases)
    convCase(c);
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

/// +-2^45 added to a third of v: where they cancel in a float64 sum, its
/// rounding shows in the float result, so a changed summation order would.
void cancelling(std::vector<float> &v) {
  for (float &f : v)
    f += float(randint(-1, 1)) * 35184372088832.0f; // 2^45
}

/// Data of a pool case: 0 distinct-ish random values, 1 ties everywhere
/// (values from {-1, -0.5, 0, 0.5}), 2 random with -inf, NaN, -0 and
/// denormals sprinkled in, 3 random with cancelling +-2^45.
std::vector<float> poolData(int64_t n, int kind) {
  auto v = uniform(n);
  if (kind == 3)
    cancelling(v);
  if (kind == 1)
    for (float &f : v)
      f = std::floor(f / 3.0f * 2.0f) * 0.5f;
  if (kind == 2) {
    sprinkle(v);
    for (int64_t k = 0; k < n / 16; ++k)
      v[size_t(randint(0, n - 1))] = -std::numeric_limits<float>::infinity();
  }
  return v;
}

void poolCase(const int64_t *cfg) {
  const int64_t N = cfg[0], C = cfg[1], H = cfg[2], W = cfg[3], KH = cfg[4],
                KW = cfg[5], sh = cfg[6], sw = cfg[7], ph = cfg[8], pw = cfg[9];
  const int64_t OH = (H + 2 * ph - KH) / sh + 1,
                OW = (W + 2 * pw - KW) / sw + 1;
  const int64_t dims[12] = {N, C, H, W, OH, OW, KH, KW, sh, sw, ph, pw};
  const PoolGeom d = makePoolGeom(dims);
  char what[160];
  snprintf(what, sizeof(what),
           "N=%lld C=%lld H=%lld W=%lld kernel=%lldx%lld stride=%lldx%lld "
           "pad=%lldx%lld",
           (long long)N, (long long)C, (long long)H, (long long)W,
           (long long)KH, (long long)KW, (long long)sh, (long long)sw,
           (long long)ph, (long long)pw);
  const int64_t nx = d.planes * d.HW, ny = d.planes * d.P;
  for (int kind = 0; kind < 4; ++kind) {
    std::string at = std::string(what) + (kind == 0   ? ""
                                          : kind == 1 ? " (ties)"
                                          : kind == 2 ? " (-inf, NaN)"
                                                      : " (cancelling)");
    auto x = poolData(nx, kind), dy = uniform(ny);
    if (kind == 3)
      cancelling(dy);
    std::vector<float> got(static_cast<size_t>(ny), -7.0f),
        want(static_cast<size_t>(ny), -7.0f);
    for (int64_t o = 0; o < ny; ++o)
      maxPoolAt(x.data(), got.data(), d, o);
    pfrt_k_max_pool2d(x.data(), want.data(), dims);
    expectBits(got, want, "max_pool2d " + at);
    std::vector<int32_t> arg(static_cast<size_t>(ny));
    for (int64_t o = 0; o < ny; ++o)
      maxPoolArgAt(x.data(), arg.data(), d, o);
    std::vector<float> gotDx(static_cast<size_t>(nx), -7.0f),
        wantDx(static_cast<size_t>(nx), -7.0f);
    for (int64_t i = 0; i < nx; ++i)
      maxPoolGradAt(arg.data(), dy.data(), gotDx.data(), d, i);
    pfrt_k_max_pool2d_grad(x.data(), dy.data(), wantDx.data(), dims);
    expectBits(gotDx, wantDx, "max_pool2d_grad " + at);
    if (kind == 2)
      continue;
    for (int64_t o = 0; o < ny; ++o)
      avgPoolAt(x.data(), got.data(), d, o);
    pfrt_k_avg_pool2d(x.data(), want.data(), dims);
    expectBits(got, want, "avg_pool2d " + at);
    for (int64_t i = 0; i < nx; ++i)
      avgPoolGradAt(dy.data(), gotDx.data(), d, i);
    pfrt_k_avg_pool2d_grad(dy.data(), wantDx.data(), dims);
    expectBits(gotDx, wantDx, "avg_pool2d_grad " + at);
  }
}

void pools() {
  // N C H W KH KW sh sw ph pw (pfrt-test-k-pool's cases, then more)
  const int64_t cfgs[][10] = {
      {2, 3, 8, 8, 2, 2, 2, 2, 0, 0},    {2, 3, 9, 11, 3, 3, 2, 2, 1, 1},
      {1, 4, 7, 10, 3, 2, 1, 1, 1, 1},   {3, 2, 13, 9, 5, 3, 3, 2, 2, 1},
      {1, 1, 5, 5, 5, 5, 1, 1, 2, 2},    {2, 2, 6, 7, 1, 1, 2, 3, 0, 0},
      {2, 5, 12, 12, 3, 3, 2, 2, 1, 1},  {1, 3, 4, 37, 2, 4, 1, 3, 1, 2},
      {1, 2, 3, 70, 1, 66, 1, 1, 0, 33}, // a very wide window
      {8, 4, 12, 12, 2, 2, 2, 2, 0, 0},  // convnet's max pool
      {8, 8, 4, 4, 2, 2, 2, 2, 0, 0},    // convnet's avg pool
      {2, 3, 16, 16, 3, 3, 2, 2, 1, 1},  // ResNet's stem pool (smaller)
      {1, 1, 1, 1, 1, 1, 1, 1, 0, 0},    {3, 2, 7, 5, 3, 3, 1, 1, 0, 0},
      {2, 2, 9, 9, 4, 2, 3, 1, 2, 1},    {1, 3, 6, 6, 2, 3, 3, 2, 1, 1},
  };
  for (const auto &c : cfgs)
    poolCase(c);
  for (int k = 0; k < 12; ++k) {
    int64_t c[10];
    c[0] = randint(1, 3);
    c[1] = randint(1, 4);
    c[4] = randint(1, 5);
    c[5] = randint(1, 5);
    c[6] = randint(1, 3);
    c[7] = randint(1, 3);
    c[8] = randint(0, c[4] / 2);
    c[9] = randint(0, c[5] / 2);
    c[2] = std::max<int64_t>(randint(1, 14), c[4] - 2 * c[8]);
    c[3] = std::max<int64_t>(randint(1, 14), c[5] - 2 * c[9]);
    poolCase(c);
  }
  // Global average pooling.
  const int64_t g[][3] = {{2, 3, 49}, {3, 5, 1}, {1, 7, 130}, {4, 2, 9},
                          {1, 1, 8},  {2, 2, 7}, {8, 8, 4},   {2, 4, 1031}};
  for (const auto &q : g)
    for (int cancel = 0; cancel < 2; ++cancel) {
      int64_t planes = q[0] * q[1], n = planes * q[2];
      auto x = uniform(n, -1.0f, 3.0f), dy = uniform(planes);
      if (cancel)
        cancelling(x);
      std::string at =
          " n=" + std::to_string(q[0]) + " c=" + std::to_string(q[1]) +
          " hw=" + std::to_string(q[2]) + (cancel ? " cancelling" : "");
      std::vector<float> got(static_cast<size_t>(planes)),
          want(static_cast<size_t>(planes));
      for (int64_t p = 0; p < planes; ++p)
        globalAvgPoolAt(x.data(), got.data(), q[2], p);
      pfrt_k_global_avg_pool(x.data(), want.data(), q[0], q[1], q[2]);
      expectBits(got, want, "global_avg_pool" + at);
      std::vector<float> gotDx(static_cast<size_t>(n)),
          wantDx(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i)
        globalAvgPoolGradAt(dy.data(), gotDx.data(), q[2], i);
      pfrt_k_global_avg_pool_grad(dy.data(), wantDx.data(), q[0], q[1], q[2]);
      expectBits(gotDx, wantDx, "global_avg_pool_grad" + at);
    }
}

//===----------------------------------------------------------------------===//
// Batch norm
//===----------------------------------------------------------------------===//

/// The run sums (hw > 1) as pfrt_cuda_bn_runs computes them.
std::vector<double> bnRuns(const std::vector<float> &x, const float *dy,
                           int64_t n, int64_t c, int64_t hw) {
  std::vector<double> runs(static_cast<size_t>(hw > 1 ? 4 * n * c : 1));
  if (hw > 1)
    for (int64_t q = 0; q < n * c; ++q)
      bnRunSumsAt(x.data(), dy, runs.data(), c, hw, q);
  return runs;
}

/// With `cancel`, dy gets cancelling +-2^45 (the gradients' float64 sums
/// of dy and dy (x - mean) then show their summation order).
void bnCase(int64_t n, int64_t c, int64_t hw, float offset,
            bool cancel = false) {
  const int64_t total = n * c * hw;
  const double eps = 1e-5, momentum = 0.1;
  char what[128];
  snprintf(what, sizeof(what), "n=%lld c=%lld hw=%lld offset=%g%s",
           (long long)n, (long long)c, (long long)hw, double(offset),
           cancel ? " cancelling dy" : "");
  auto x = uniform(total, offset - 2.0f, offset + 2.0f), dy = uniform(total);
  if (cancel)
    cancelling(dy);
  auto gamma = uniform(c, 0.5f, 1.5f), beta = uniform(c);
  auto rmean = uniform(c), rvar = uniform(c, 0.5f, 2.0f);
  std::vector<double> co(static_cast<size_t>(4 * c));
  for (int affine = 0; affine < 2; ++affine)
    for (int running = 0; running < 2; ++running) {
      std::string at = std::string(what) + (affine ? "" : " no affine") +
                       (running ? "" : " no running stats");
      const float *g = affine ? gamma.data() : nullptr;
      const float *b = affine ? beta.data() : nullptr;
      // Training forward; the running statistics updated in place.
      auto runs = bnRuns(x, nullptr, n, c, hw);
      std::vector<float> y(static_cast<size_t>(total)),
          wantY(static_cast<size_t>(total));
      auto rm = rmean, rv = rvar, rmc = rmean, rvc = rvar;
      float *rmp = running ? rm.data() : nullptr;
      float *rvp = running ? rv.data() : nullptr;
      for (int64_t j = 0; j < c; ++j)
        bnTrainChannelAt(x.data(), runs.data(), g, b, rmp, rvp, rmp, rvp,
                         co.data(), n, c, hw, eps, momentum, j);
      for (int64_t i = 0; i < total; ++i)
        bnAffineAt(x.data(), y.data(), co.data(), c, hw, i);
      float *rmcp = running ? rmc.data() : nullptr;
      float *rvcp = running ? rvc.data() : nullptr;
      pfrt_k_batch_norm(x.data(), g, b, rmcp, rvcp, wantY.data(), rmcp, rvcp, n,
                        c, hw, eps, momentum);
      expectBits(y, wantY, "batch_norm " + at);
      if (running) {
        expectBits(rm, rmc, "batch_norm running mean " + at);
        expectBits(rv, rvc, "batch_norm running var " + at);
        // Eval mode with the running statistics.
        for (int64_t j = 0; j < c; ++j)
          bnEvalChannelAt(g, b, rmean.data(), rvar.data(), co.data(), eps, j);
        for (int64_t i = 0; i < total; ++i)
          bnAffineAt(x.data(), y.data(), co.data(), c, hw, i);
        pfrt_k_batch_norm_eval(x.data(), g, b, rmean.data(), rvar.data(),
                               wantY.data(), n, c, hw, eps);
        expectBits(y, wantY, "batch_norm_eval " + at);
      }
      if (running)
        continue; // the gradients do not read the running statistics
      // Gradients.
      auto runsDy = bnRuns(x, dy.data(), n, c, hw);
      std::vector<float> dx(static_cast<size_t>(total)),
          wantDx(static_cast<size_t>(total));
      for (int64_t j = 0; j < c; ++j)
        bnGradInputChannelAt(x.data(), dy.data(), runsDy.data(), g, co.data(),
                             n, c, hw, eps, j);
      for (int64_t i = 0; i < total; ++i)
        bnGradInputAt(x.data(), dy.data(), dx.data(), co.data(), c, hw, i);
      pfrt_k_batch_norm_grad_input(x.data(), g, dy.data(), wantDx.data(), n, c,
                                   hw, eps);
      expectBits(dx, wantDx, "batch_norm_grad_input " + at);
      if (!affine)
        continue;
      std::vector<float> dg(static_cast<size_t>(c)), db(static_cast<size_t>(c)),
          wantDg(static_cast<size_t>(c)), wantDb(static_cast<size_t>(c));
      for (int64_t j = 0; j < c; ++j)
        bnGradParamsChannelAt(x.data(), dy.data(), runsDy.data(), dg.data(),
                              db.data(), n, c, hw, eps, j);
      pfrt_k_batch_norm_grad_params(x.data(), dy.data(), wantDg.data(),
                                    wantDb.data(), n, c, hw, eps);
      expectBits(dg, wantDg, "batch_norm_grad_params dgamma " + at);
      expectBits(db, wantDb, "batch_norm_grad_params dbeta " + at);
    }
}

void batchNorms() {
  // n c hw: 2-D input (hw = 1), runs around the 4 accumulators, batch 1.
  const int64_t cases[][3] = {{8, 5, 1},   {2, 3, 1}, {33, 17, 1}, {2, 3, 4},
                              {3, 4, 5},   {2, 2, 7}, {1, 3, 9},   {4, 3, 13},
                              {5, 1, 2},   {1, 2, 3}, {8, 4, 144}, {2, 7, 33},
                              {3, 2, 1031}};
  for (const auto &q : cases) {
    bnCase(q[0], q[1], q[2], 0.0f);
    bnCase(q[0], q[1], q[2], 1000.0f); // |mean| >> std
    bnCase(q[0], q[1], q[2], 0.0f, true);
  }
  for (int k = 0; k < 6; ++k) {
    int64_t hw = randint(1, 40);
    int64_t n = randint(hw == 1 ? 2 : 1, 9);
    bnCase(n, randint(1, 9), hw, float(randint(-50, 50)));
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// sub, div, masked fill, softmax
//===----------------------------------------------------------------------===//

void tensorOps() {
  std::vector<int64_t> sizes = {1, 7, 8, 9, 257, 1031, randint(1, 5000)};
  for (int64_t n : sizes) {
    std::string at = " n=" + std::to_string(n);
    auto a = uniform(n), b = uniform(n);
    sprinkle(a);
    sprinkle(b);
    b[size_t(randint(0, n - 1))] = 0.0f; // a division by zero
    std::vector<float> got(static_cast<size_t>(n)),
        want(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      subAt(a.data(), b.data(), got.data(), i);
    pfrt_k_sub(a.data(), b.data(), want.data(), n);
    expectBits(got, want, "sub" + at);
    for (int64_t i = 0; i < n; ++i)
      divAt(a.data(), b.data(), got.data(), i);
    pfrt_k_div(a.data(), b.data(), want.data(), n);
    expectBits(got, want, "div" + at);
    std::vector<float> maskF(static_cast<size_t>(n));
    std::vector<int64_t> maskI(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      int64_t r = randint(0, 3);
      maskI[size_t(i)] = r == 0 ? 0 : (r == 1 ? -5 : 1);
      maskF[size_t(i)] = r == 0 ? (randint(0, 1) ? -0.0f : 0.0f) : 1.0f;
    }
    double v = randint(0, 1) ? -1e9 : uniform1(-3.0, 3.0);
    float vf = float(v);
    for (int64_t i = 0; i < n; ++i)
      maskedFillAt(a.data(), maskF.data(), got.data(), 0, vf, i);
    pfrt_k_masked_fill(a.data(), maskF.data(), want.data(), n, 0, v);
    expectBits(got, want, "masked_fill float mask" + at);
    for (int64_t i = 0; i < n; ++i)
      maskedFillAt(a.data(), maskI.data(), got.data(), 1, vf, i);
    pfrt_k_masked_fill(a.data(), maskI.data(), want.data(), n, 1, v);
    expectBits(got, want, "masked_fill int64 mask" + at);
  }
}

void softmaxCase(int64_t outer, int64_t n, int64_t inner, bool masked) {
  int64_t total = outer * n * inner, lines = outer * inner;
  auto x = uniform(total, -8.0f, 8.0f), dy = uniform(total);
  if (masked) // a causal mask's -1e9 fills
    for (int64_t i = 0; i < total; ++i)
      if (randint(0, 2) == 0)
        x[size_t(i)] = -1e9f;
  for (int32_t lg = 0; lg < 2; ++lg) {
    std::string at = " [" + std::to_string(outer) + "," + std::to_string(n) +
                     "," + std::to_string(inner) +
                     "] log=" + std::to_string(lg);
    std::vector<float> got(static_cast<size_t>(total)),
        want(static_cast<size_t>(total));
    for (int64_t j = 0; j < lines; ++j)
      softmaxLineAt(x.data(), got.data(), n, inner, lg, j);
    pfrt_k_softmax(x.data(), want.data(), outer, n, inner, lg);
    expectBits(got, want, "softmax" + at);
    std::vector<float> gotDx(static_cast<size_t>(total)),
        wantDx(static_cast<size_t>(total));
    for (int64_t j = 0; j < lines; ++j)
      softmaxGradLineAt(want.data(), dy.data(), gotDx.data(), n, inner, lg, j);
    pfrt_k_softmax_grad(want.data(), dy.data(), wantDx.data(), outer, n, inner,
                        lg);
    expectBits(gotDx, wantDx, "softmax_grad" + at);
  }
}

void softmaxes() {
  softmaxCase(1, 1, 1, false);
  softmaxCase(1, 7, 1, false);
  softmaxCase(5, 9, 1, true);
  softmaxCase(3, 257, 1, false);
  softmaxCase(2, 5, 3, false);
  softmaxCase(4, 8, 7, true);
  softmaxCase(1, 13, 1031, false);
  softmaxCase(randint(1, 6), randint(1, 70), randint(1, 9), randint(0, 1));
}

void layerNormCase(int64_t rows, int64_t c) {
  std::string at = " [" + std::to_string(rows) + "," + std::to_string(c) + "]";
  const double eps = 1e-5;
  int64_t n = rows * c;
  auto x = uniform(n, -4.0f, 4.0f), dy = uniform(n);
  auto gamma = uniform(c, 0.5f, 1.5f), beta = uniform(c);
  if (n > 0)
    x[size_t(randint(0, n - 1))] += 1000.0f; // a row with a large outlier
  std::vector<double> stats(static_cast<size_t>(2 * rows));
  for (int64_t r = 0; r < rows; ++r)
    lnRowStatsAt(x.data(), stats.data(), c, eps, r);
  std::vector<float> got(static_cast<size_t>(n)), want(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    lnAffineAt(x.data(), gamma.data(), beta.data(), got.data(), stats.data(), c,
               i);
  pfrt_k_layer_norm(x.data(), gamma.data(), beta.data(), want.data(), rows, c,
                    eps);
  expectBits(got, want, "layer_norm" + at);
  for (int64_t r = 0; r < rows; ++r)
    lnGradInputRowAt(x.data(), gamma.data(), dy.data(), got.data(),
                     stats.data(), c, r);
  pfrt_k_layer_norm_grad_input(x.data(), gamma.data(), dy.data(), want.data(),
                               rows, c, eps);
  expectBits(got, want, "layer_norm_grad_input" + at);
  std::vector<float> dg(static_cast<size_t>(c)), db(static_cast<size_t>(c)),
      wantDg(static_cast<size_t>(c)), wantDb(static_cast<size_t>(c));
  for (int64_t k = 0; k < c; ++k)
    lnGradParamsColAt(x.data(), dy.data(), stats.data(), dg.data(), db.data(),
                      rows, c, k);
  pfrt_k_layer_norm_grad_params(x.data(), dy.data(), wantDg.data(),
                                wantDb.data(), rows, c, eps);
  expectBits(dg, wantDg, "layer_norm_grad_params dgamma" + at);
  expectBits(db, wantDb, "layer_norm_grad_params dbeta" + at);
}

void layerNorms() {
  layerNormCase(1, 1);
  layerNormCase(1, 7);
  layerNormCase(3, 8);
  layerNormCase(5, 9);
  layerNormCase(17, 64);
  layerNormCase(4, 1031);
  layerNormCase(0, 5);
  layerNormCase(randint(1, 40), randint(1, 300));
}

//===----------------------------------------------------------------------===//
// GPT-shaped programs: embeddings, broadcast, copy_box, the cross-entropy
// with ignore_index or summed, count_kept, dropout
//===----------------------------------------------------------------------===//

std::vector<int64_t> randomIds(int64_t n, int64_t vocab) {
  std::vector<int64_t> ids(static_cast<size_t>(n));
  for (auto &id : ids)
    id = randint(0, vocab - 1);
  return ids;
}

/// The whole table (row0 = 0, v = vocab) or a block of its rows.
void embeddingCase(int64_t n, int64_t vocab, int64_t d, int64_t row0,
                   int64_t v) {
  std::string at = " n=" + std::to_string(n) +
                   " vocab=" + std::to_string(vocab) +
                   " d=" + std::to_string(d) + " rows=[" +
                   std::to_string(row0) + "," + std::to_string(row0 + v) + ")";
  bool whole = row0 == 0 && v == vocab;
  auto table = uniform(v * d), dy = uniform(n * d);
  sprinkle(table);
  auto ids = randomIds(n, vocab); // repeats when vocab < n
  DeviceError err{};
  embeddingCheckIds(ids.data(), n, vocab, kErrEmbeddingId, &err);
  CHECK(err.code == kErrNone, "embedding%s: error %d recorded", at.c_str(),
        int(err.code));
  std::vector<float> got(static_cast<size_t>(n * d)),
      want(static_cast<size_t>(n * d), 7.0f);
  for (int64_t i = 0; i < n * d; ++i)
    embeddingAt(table.data(), ids.data(), got.data(), v, d, row0, i);
  if (whole)
    pfrt_k_embedding(table.data(), ids.data(), want.data(), n, v, d);
  else
    pfrt_k_embedding_rows(table.data(), ids.data(), want.data(), n, v, d, row0,
                          vocab);
  expectBits(got, want, "embedding" + at);
  // The gradient: the positions of each row, then one thread per element.
  std::vector<int64_t> start(static_cast<size_t>(v + 1)),
      cursor(static_cast<size_t>(v > 0 ? v : 1)),
      pos(static_cast<size_t>(n > 0 ? n : 1));
  embeddingIndex(ids.data(), n, v, row0, start.data(), cursor.data(),
                 pos.data());
  std::vector<float> gotD(static_cast<size_t>(v * d)),
      wantD(static_cast<size_t>(v * d), 7.0f);
  for (int64_t i = 0; i < v * d; ++i)
    embeddingGradAt(start.data(), pos.data(), dy.data(), gotD.data(), d, i);
  if (whole)
    pfrt_k_embedding_grad(ids.data(), dy.data(), wantD.data(), n, v, d);
  else
    pfrt_k_embedding_grad_rows(ids.data(), dy.data(), wantD.data(), n, v, d,
                               row0, vocab);
  expectBits(gotD, wantD, "embedding_grad" + at);
}

void embeddings() {
  embeddingCase(1, 1, 1, 0, 1);
  embeddingCase(9, 3, 5, 0, 3); // every row repeated
  embeddingCase(64, 256, 64, 0, 256);
  embeddingCase(40, 10, 17, 0, 10);
  embeddingCase(33, 20, 8, 5, 7); // a block of rows: other ids give zeros
  embeddingCase(50, 12, 3, 6, 6);
  embeddingCase(0, 4, 3, 0, 4);
  int64_t vocab = randint(1, 300);
  int64_t v = randint(0, vocab);
  embeddingCase(randint(1, 200), vocab, randint(1, 40), randint(0, vocab - v),
                v);
  // The first bad id (in order) is recorded, and the forward body never
  // reads outside the table for it.
  std::vector<int64_t> ids = {0, 3, 5, -1, 9};
  DeviceError err{};
  embeddingCheckIds(ids.data(), 5, 5, kErrEmbeddingGradRowsId, &err);
  CHECK(err.code == kErrEmbeddingGradRowsId && err.row == 2 && err.value == 5 &&
            err.bound == 5,
        "embedding ids: recorded code %d row %lld value %lld bound %lld",
        int(err.code), (long long)err.row, (long long)err.value,
        (long long)err.bound);
  auto table = uniform(5 * 2);
  std::vector<float> y(10);
  for (int64_t i = 0; i < 10; ++i)
    embeddingAt(table.data(), ids.data(), y.data(), 5, 2, 0, i);
  CHECK(y[4] == 0.0f && y[6] == 0.0f, "a bad id must give zeros");
  ++gChecks;
}

void broadcastCase(const std::vector<int64_t> &in,
                   const std::vector<int64_t> &out, int64_t es) {
  int64_t rank = int64_t(out.size()), inTotal = 1, total = 1;
  std::string at = " es=" + std::to_string(es) + " [";
  for (int64_t d = 0; d < rank; ++d) {
    inTotal *= in[size_t(d)];
    total *= out[size_t(d)];
    at += std::to_string(in[size_t(d)]) + "->" +
          std::to_string(out[size_t(d)]) + (d + 1 < rank ? "," : "]");
  }
  // 8-byte elements: pairs of random floats (their bits).
  auto x = uniform(inTotal * es / 4);
  std::vector<float> got(static_cast<size_t>(total * es / 4)),
      want(static_cast<size_t>(total * es / 4), 5.0f);
  BoxMap m;
  makeBroadcastMap(rank, in.data(), out.data(), &m);
  CHECK(m.total == total, "broadcast%s: %lld elements", at.c_str(),
        (long long)m.total);
  for (int64_t o = 0; o < m.total; ++o)
    copyElemAt(x.data(), got.data(), m, int32_t(es), o);
  pfrt_k_broadcast(x.data(), want.data(), rank, in.data(), out.data(), es);
  expectBits(got, want, "broadcast" + at);
}

void broadcasts() {
  broadcastCase({}, {}, 4);
  broadcastCase({1}, {7}, 4);
  broadcastCase({1, 8, 64}, {2, 8, 64}, 4); // gpt: the positions' embeddings
  broadcastCase({1, 1, 8, 8}, {2, 4, 8, 8}, 8); // gpt: the causal mask
  broadcastCase({3, 1, 5}, {3, 4, 5}, 4);
  broadcastCase({1, 6, 1}, {5, 6, 3}, 8);
  broadcastCase({2, 3}, {2, 3}, 4);
  std::vector<int64_t> in, out;
  int64_t rank = randint(1, 5);
  for (int64_t d = 0; d < rank; ++d) {
    out.push_back(randint(1, 6));
    in.push_back(randint(0, 1) ? 1 : out.back());
  }
  broadcastCase(in, out, randint(0, 1) ? 4 : 8);
}

void copyBoxCase(int64_t rank, int32_t dtype, bool offsets) {
  const size_t r = static_cast<size_t>(rank);
  std::vector<int64_t> src(r), dst(r), sizes(r), so(r), dof(r);
  int64_t srcTotal = 1, dstTotal = 1;
  std::string at = " dtype=" + std::to_string(dtype) + " src [";
  for (int64_t d = 0; d < rank; ++d) {
    sizes[size_t(d)] = randint(0, 4) == 0 ? 1 : randint(1, 7);
    src[size_t(d)] = sizes[size_t(d)] + (offsets ? randint(0, 3) : 0);
    dst[size_t(d)] = sizes[size_t(d)] + (offsets ? randint(0, 3) : 0);
    so[size_t(d)] = randint(0, src[size_t(d)] - sizes[size_t(d)]);
    dof[size_t(d)] = randint(0, dst[size_t(d)] - sizes[size_t(d)]);
    srcTotal *= src[size_t(d)];
    dstTotal *= dst[size_t(d)];
    at += std::to_string(src[size_t(d)]) + (d + 1 < rank ? "," : "");
  }
  at += "]";
  int64_t words = dtype == PFRT_DTYPE_I64 ? 2 : 1;
  auto x = uniform(srcTotal * words);
  auto init = uniform(dstTotal * words);
  std::vector<float> got = init, want = init;
  const int64_t *sop = offsets ? so.data() : nullptr;
  const int64_t *dop = offsets ? dof.data() : nullptr;
  BoxMap m;
  makeCopyBoxMap(rank, src.data(), sop, dst.data(), dop, sizes.data(), &m);
  for (int64_t o = 0; o < m.total; ++o)
    copyElemAt(x.data(), got.data(), m, int32_t(4 * words), o);
  pfrt_copy_box(x.data(), src.data(), sop, want.data(), dst.data(), dop,
                sizes.data(), rank, dtype);
  expectBits(got, want, "copy_box" + at);
}

void copyBoxes() {
  for (int32_t dtype : {PFRT_DTYPE_F32, PFRT_DTYPE_I64, PFRT_DTYPE_I32})
    for (int64_t rank = 0; rank <= 4; ++rank)
      for (int rep = 0; rep < 3; ++rep)
        copyBoxCase(rank, dtype, rep > 0);
}

void xentIgnoreCase(int64_t n, int64_t c, int64_t ignore, int ignored,
                    bool mean) {
  auto x = uniform(n * c, -4.0f, 4.0f);
  std::vector<int64_t> labels(static_cast<size_t>(n));
  for (auto &l : labels)
    l = randint(0, 3) < ignored ? ignore : randint(0, c - 1);
  char what[160];
  snprintf(what, sizeof(what), "softmax_xent_%s n=%lld c=%lld ignore=%lld",
           mean ? "ignore" : "sum", (long long)n, (long long)c,
           (long long)ignore);
  int32_t code = mean ? kErrXentIgnoreLabel : kErrXentSumLabel;
  std::vector<double> rowLoss(static_cast<size_t>(n));
  for (int64_t r = 0; r < n; ++r)
    xentRowLossIgnoreAt(x.data(), labels.data(), rowLoss.data(), c, ignore, r);
  DeviceError err{};
  std::vector<float> got(1), want(1);
  xentTotalIgnore(rowLoss.data(), labels.data(), got.data(), n, c, ignore, mean,
                  code, &err);
  CHECK(err.code == kErrNone, "%s: error %d recorded", what, int(err.code));
  if (mean)
    pfrt_k_softmax_xent_ignore(x.data(), labels.data(), want.data(), n, c,
                               ignore);
  else
    pfrt_k_softmax_xent_sum(x.data(), labels.data(), want.data(), n, c, ignore);
  expectBits(got, want, what);
  std::vector<float> dloss = uniform(1, 0.25f, 2.0f);
  std::vector<double> stats(static_cast<size_t>(2 * n));
  double scale = 0.0;
  xentGradScale(labels.data(), dloss.data(), &scale, n, c, ignore, mean,
                code + 1, &err);
  CHECK(err.code == kErrNone, "%s grad: error %d recorded", what,
        int(err.code));
  for (int64_t r = 0; r < n; ++r)
    xentRowStatsAt(x.data(), stats.data(), c, r);
  std::vector<float> gotD(static_cast<size_t>(n * c)),
      wantD(static_cast<size_t>(n * c), 3.0f);
  for (int64_t i = 0; i < n * c; ++i)
    xentGradIgnoreAt(x.data(), labels.data(), &scale, stats.data(), gotD.data(),
                     c, ignore, i);
  if (mean)
    pfrt_k_softmax_xent_grad_ignore(x.data(), labels.data(), dloss.data(),
                                    wantD.data(), n, c, ignore);
  else
    pfrt_k_softmax_xent_grad_sum(x.data(), labels.data(), dloss.data(),
                                 wantD.data(), n, c, ignore);
  expectBits(gotD, wantD, std::string(what) + " (grad)");
  // count_kept.
  std::vector<float> cnt(1), wantCnt(1);
  countKept(labels.data(), cnt.data(), n, ignore);
  pfrt_k_count_kept(labels.data(), wantCnt.data(), n, ignore);
  expectBits(cnt, wantCnt, std::string(what) + " count_kept");
}

void xentIgnores() {
  for (int mean = 0; mean < 2; ++mean) {
    xentIgnoreCase(1, 1, -1, 0, mean);
    xentIgnoreCase(7, 10, -1, 1, mean);
    xentIgnoreCase(16, 256, -1, 2, mean); // gpt's vocabulary head
    xentIgnoreCase(9, 5, 2, 1, mean);     // ignore_index a class
    xentIgnoreCase(33, 100, -100, 3, mean);
    xentIgnoreCase(6, 4, -1, 4, mean); // every row ignored (mean: NaN)
    xentIgnoreCase(randint(1, 40), randint(1, 300), -1, int(randint(0, 3)),
                   mean);
  }
  // The first kept row with a bad label is recorded; ignored rows are not.
  std::vector<int64_t> labels = {-1, 2, 9, -1, 4, -7};
  auto x = uniform(6 * 5);
  std::vector<double> rowLoss(6);
  for (int64_t r = 0; r < 6; ++r)
    xentRowLossIgnoreAt(x.data(), labels.data(), rowLoss.data(), 5, -1, r);
  DeviceError err{};
  float loss;
  xentTotalIgnore(rowLoss.data(), labels.data(), &loss, 6, 5, -1, 1,
                  kErrXentIgnoreLabel, &err);
  CHECK(err.code == kErrXentIgnoreLabel && err.row == 2 && err.value == 9,
        "xent_ignore: recorded code %d row %lld value %lld", int(err.code),
        (long long)err.row, (long long)err.value);
  DeviceError err2{};
  double scale;
  float dloss = 1.0f;
  xentGradScale(labels.data() + 3, &dloss, &scale, 3, 5, -1, 0,
                kErrXentGradSumLabel, &err2);
  CHECK(err2.code == kErrXentGradSumLabel && err2.row == 2 && err2.value == -7,
        "xent_grad_sum: recorded code %d row %lld value %lld", int(err2.code),
        (long long)err2.row, (long long)err2.value);
  ++gChecks;
}

void dropoutCase(const std::vector<int64_t> &logical,
                 const std::vector<int64_t> &offset,
                 const std::vector<int64_t> &shape, double p, int64_t step,
                 int64_t microbatch) {
  int64_t rank = int64_t(logical.size()), n = 1;
  for (int64_t s : shape)
    n *= s;
  std::string at = " p=" + std::to_string(p) + " step=" + std::to_string(step) +
                   " mb=" + std::to_string(microbatch) +
                   " n=" + std::to_string(n);
  auto x = uniform(n);
  uint64_t seed = pt_mix(gSeed ^ uint64_t(step)), stream = pt_mix(gState);
  DropoutParams q;
  q.seed = seed;
  q.stream = stream;
  q.microbatch = microbatch;
  q.scale = p < 1.0 ? float(1.0 / (1.0 - p)) : 0.0f;
  q.threshold = float(p);
  BoxMap m;
  const int64_t *off = offset.empty() ? nullptr : offset.data();
  makeShardMap(rank, logical.data(), off, shape.data(), &m);
  CHECK(m.total == n, "dropout%s: %lld elements", at.c_str(),
        (long long)m.total);
  std::vector<float> got(static_cast<size_t>(n)),
      want(static_cast<size_t>(n), 9.0f);
  uint64_t sub = dropoutStream(q, step);
  CHECK(sub == pfrt_stream_for_step(pfrt_stream_for_step(stream, step),
                                    uint64_t(microbatch)),
        "dropout%s: the sub-stream differs from pfrt_stream_for_step's",
        at.c_str());
  for (int64_t i = 0; i < n; ++i)
    dropoutAt(x.data(), got.data(), q, m, sub, i);
  pfrt_set_data_step(step);
  pfrt_k_dropout(x.data(), want.data(), n, p, seed, stream, microbatch, rank,
                 logical.data(), off, shape.data());
  expectBits(got, want, "dropout" + at);
  // The uniform values themselves, against the initialiser's.
  std::vector<float> u(static_cast<size_t>(n)), wantU(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int64_t li, unused;
    boxOffsets(m, i, &li, &unused);
    u[size_t(i)] = uniformAt(seed, sub, li);
  }
  pfrt_init_param(wantU.data(), PFRT_INIT_UNIFORM, 0.0, 1.0, seed, sub, rank,
                  logical.data(), off, shape.data());
  expectBits(u, wantU, "dropout's uniform values" + at);
}

void dropouts() {
  dropoutCase({1000}, {}, {1000}, 0.1, 0, 0);
  dropoutCase({2, 8, 64}, {}, {2, 8, 64}, 0.5, 3, 1);
  dropoutCase({6, 10, 12}, {2, 0, 4}, {3, 10, 5}, 0.3, 17, 0); // a shard
  dropoutCase({5, 7}, {0, 3}, {5, 4}, 0.0, 1, 2);
  dropoutCase({5, 7}, {1, 0}, {4, 7}, 1.0, 2, 0);
  dropoutCase({}, {}, {}, 0.25, 5, 0);
  dropoutCase({int64_t(1) << 33}, {(int64_t(1) << 33) - 300}, {300}, 0.2,
              int64_t(1) << 40, 3); // logical indices above 2^32
  int64_t len = randint(1, 3000), off = randint(0, len - 1);
  dropoutCase({len}, {off}, {randint(1, len - off)}, uniform1(0.0, 1.0),
              randint(0, 100000), randint(0, 7));
  pfrt_set_data_step(0);
}

int main(int argc, char **argv) {
  pfrt_init(&argc, &argv);
  gSeed = pt_seed("cuda-bodies");
  gState = pt_mix(gSeed ^ 0xb0d1e5);
  elementwise();
  biasAdd();
  reduceSum();
  xent();
  sgd();
  adam();
  activations();
  transposes();
  convs();
  pools();
  batchNorms();
  tensorOps();
  softmaxes();
  layerNorms();
  embeddings();
  broadcasts();
  copyBoxes();
  xentIgnores();
  dropouts();
  printf("cuda-bodies: %d comparisons with the CPU kernels passed\n", gChecks);
  pfrt_finalize();
  return 0;
}
