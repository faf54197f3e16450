//===- test_cuda_twins_conv.cpp - the conv-network twins ------------------===//
//
// Part of pfrt-test-cuda-twins (test_cuda_twins.cpp says what it checks):
// convolutions, pooling, batch norm, transposes and activations.
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

namespace {

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

} // namespace

void cudatwins::convTwins() { convs(); }

void cudatwins::convNetTwins() {
  pools();
  batchNorms();
  transposesAndActivations();
}
