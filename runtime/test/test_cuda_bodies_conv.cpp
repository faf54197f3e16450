//===- test_cuda_bodies_conv.cpp - the conv-network family's bodies -------===//
//
// Part of pfrt-test-cuda-bodies (test_cuda_bodies.cpp says what it checks):
// activations, transposes, convolutions, pooling and batch norm.
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

namespace {

//===----------------------------------------------------------------------===//
// Activations and transpose
//===----------------------------------------------------------------------===//

/// activationAt over every element against pfrt_k_activation (dy NULL) or
/// pfrt_k_activation_grad, each on its own copies of x and dy; in place,
/// the output is the copy of x (forward) or of dy (gradient). Same bits.
void activationCase(int32_t kind, const std::vector<float> &x,
                    const std::vector<float> *dy, bool inPlace,
                    const std::string &what) {
  const int64_t n = int64_t(x.size());
  std::vector<float> bx = x, cx = x, bd = dy ? *dy : std::vector<float>(),
                     cd = bd, bo(x.size()), co(x.size());
  float *bOut = inPlace ? (dy ? bd.data() : bx.data()) : bo.data();
  float *cOut = inPlace ? (dy ? cd.data() : cx.data()) : co.data();
  for (int64_t i = 0; i < n; ++i)
    activationAt(kind, bx.data(), dy ? bd.data() : nullptr, bOut, i);
  if (dy)
    pfrt_k_activation_grad(kind, cx.data(), cd.data(), cOut, n);
  else
    pfrt_k_activation(kind, cx.data(), cOut, n);
  expectBits(std::vector<float>(bOut, bOut + n),
             std::vector<float>(cOut, cOut + n), what);
}

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
      for (bool inPlace : {false, true}) {
        std::string how = std::string(inPlace ? " in place" : "") + at;
        activationCase(kind, x, nullptr, inPlace, "activation" + how);
        activationCase(kind, x, &dy, inPlace, "activation_grad" + how);
      }
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
  // pfrt-test-k-pool's cases, then more: N C H W KH KW sh sw ph pw
  for (const auto &c : pt::kPoolCases)
    poolCase(c);
  const int64_t cfgs[][10] = {
      {8, 4, 12, 12, 2, 2, 2, 2, 0, 0}, // convnet's max pool
      {8, 8, 4, 4, 2, 2, 2, 2, 0, 0},   // convnet's avg pool
      {2, 3, 16, 16, 3, 3, 2, 2, 1, 1}, // ResNet's stem pool (smaller)
      {1, 1, 1, 1, 1, 1, 1, 1, 0, 0},   {3, 2, 7, 5, 3, 3, 1, 1, 0, 0},
      {2, 2, 9, 9, 4, 2, 3, 1, 2, 1},   {1, 3, 6, 6, 2, 3, 3, 2, 1, 1},
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
      expectBodyBits(
          planes,
          [&](float *o, int64_t p) { globalAvgPoolAt(x.data(), o, q[2], p); },
          [&](float *o) {
            pfrt_k_global_avg_pool(x.data(), o, q[0], q[1], q[2]);
          },
          "global_avg_pool" + at);
      expectBodyBits(
          n,
          [&](float *o, int64_t i) {
            globalAvgPoolGradAt(dy.data(), o, q[2], i);
          },
          [&](float *o) {
            pfrt_k_global_avg_pool_grad(dy.data(), o, q[0], q[1], q[2]);
          },
          "global_avg_pool_grad" + at);
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

void cudabodies::convFamilies() {
  activations();
  transposes();
  convs();
  pools();
  batchNorms();
}
