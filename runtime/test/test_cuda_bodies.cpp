//===- test_cuda_bodies.cpp - the CUDA kernels' bodies against the CPU ----===//
//
// pfrt-test-cuda-bodies: no GPU needed. The per-element and per-row bodies
// of libpfrt's CUDA kernels (src/cuda/kernels/*Bodies.h), built here by the
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

#include "CudaBodiesTest.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

using namespace pfrt::dev;
using namespace cudabodies;

namespace cudabodies {

uint64_t gSeed;
uint64_t gState;
uint64_t gTag = 0;
int gChecks = 0;

/// Fresh uniform floats in [lo, hi).
std::vector<float> uniform(int64_t n, float lo, float hi) {
  return pt::uniformValues(gSeed, ++gTag, 0, n, lo, hi);
}

int64_t randint(int64_t lo, int64_t hi) { return pt_randint(&gState, lo, hi); }

void expectBinaryBodies(std::initializer_list<BinaryBody> ops,
                        const std::vector<float> &a,
                        const std::vector<float> &b, const std::string &at) {
  const int64_t n = int64_t(a.size());
  for (const BinaryBody &op : ops)
    expectBodyBits(
        n, [&](float *o, int64_t i) { op.body(a.data(), b.data(), o, i); },
        [&](float *o) { op.cpu(a.data(), b.data(), o, n); }, op.name + at);
}

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

} // namespace cudabodies

namespace {

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
    expectBinaryBodies({{"relu_grad", reluGradAt, pfrt_k_relu_grad},
                        {"add", addAt, pfrt_k_add},
                        {"mul", mulAt, pfrt_k_mul}},
                       a, b, at);
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

} // namespace

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
  convFamilies();
  gptFamilies();
  printf("cuda-bodies: %d comparisons with the CPU kernels passed\n", gChecks);
  pfrt_finalize();
  return 0;
}
