//===- test_k_pool.cpp - Max/avg/global-avg pooling and gradients ---------===//
//
// Max pooling runs twice per shape: on distinct values (no ties, also
// checked by finite differences) and on values from {-1, -0.5, 0, 0.5}
// (ties everywhere, so "first maximum in scan order" is exercised).
//
//===----------------------------------------------------------------------===//

#include "KernelTest.h"

#include <cmath>

int main(int argc, char **argv) {
  kt::Harness h("k-pool", argc, argv);
  for (const auto &c : pt::kPoolCases) {
    int64_t N = c[0], C = c[1], H = c[2], W = c[3], KH = c[4], KW = c[5],
            sh = c[6], sw = c[7], ph = c[8], pw = c[9];
    int64_t OH = (H + 2 * ph - KH) / sh + 1, OW = (W + 2 * pw - KW) / sw + 1;
    const int64_t dims[12] = {N, C, H, W, OH, OW, KH, KW, sh, sw, ph, pw};
    kt::Shape xs{N, C, H, W}, ys{N, C, OH, OW};
    int64_t nx = kt::numel(xs), ny = kt::numel(ys);
    for (int ties = 0; ties < 2; ++ties) {
      std::string id = h.newCase();
      std::vector<float> x = h.distinct(nx);
      if (ties)
        for (float &v : x)
          v = std::floor(v * 2.0f) * 0.5f;
      auto dy = h.uniform(ny);
      std::vector<float> y(ny, 9.0f), dx(nx, 9.0f);
      pfrt_k_max_pool2d(x.data(), y.data(), dims);
      pfrt_k_max_pool2d_grad(x.data(), dy.data(), dx.data(), dims);
      h.save(id, "x", xs, x);
      h.save(id, "dy", ys, dy);
      h.save(id, "y", ys, y);
      h.save(id, "dx", xs, dx);
      h.record("max_pool2d", id, "dims=%s fd=%d",
               kt::join(kt::Shape(dims, dims + 12)).c_str(), ties ? 0 : 1);
    }
    std::string id = h.newCase();
    auto x = h.uniform(nx), dy = h.uniform(ny);
    std::vector<float> y(ny, 9.0f), dx(nx, 9.0f);
    pfrt_k_avg_pool2d(x.data(), y.data(), dims);
    pfrt_k_avg_pool2d_grad(dy.data(), dx.data(), dims);
    h.save(id, "x", xs, x);
    h.save(id, "dy", ys, dy);
    h.save(id, "y", ys, y);
    h.save(id, "dx", xs, dx);
    h.record("avg_pool2d", id, "dims=%s fd=1",
             kt::join(kt::Shape(dims, dims + 12)).c_str());
  }
  const int64_t gcfgs[][3] = {{2, 3, 49}, {3, 5, 1}, {1, 7, 130}, {4, 2, 9}};
  for (const auto &g : gcfgs) {
    std::string id = h.newCase();
    int64_t n = g[0] * g[1] * g[2];
    auto x = h.uniform(n, -1.0f, 3.0f), dy = h.uniform(g[0] * g[1]);
    std::vector<float> y(g[0] * g[1], 9.0f), dx(n, 9.0f);
    pfrt_k_global_avg_pool(x.data(), y.data(), g[0], g[1], g[2]);
    pfrt_k_global_avg_pool_grad(dy.data(), dx.data(), g[0], g[1], g[2]);
    h.save(id, "x", {g[0], g[1], g[2]}, x);
    h.save(id, "dy", {g[0], g[1]}, dy);
    h.save(id, "y", {g[0], g[1]}, y);
    h.save(id, "dx", {g[0], g[1], g[2]}, dx);
    h.record("global_avg_pool", id, "n=%lld c=%lld hw=%lld", (long long)g[0],
             (long long)g[1], (long long)g[2]);
  }
  return 0;
}
