//===- test_k_norm.cpp - Training-mode batch norm and its gradients -------===//
//
// 2-D ([N, C], HW = 1) and 4-D inputs, the minimum of two values per
// channel, data with |mean| >> std (the statistics must not cancel), the
// in-place running-statistics update, and affine=False / no running stats
// (NULL gamma, beta, rmean, rvar).
//
//===----------------------------------------------------------------------===//

#include "KernelTest.h"

int main(int argc, char **argv) {
  kt::Harness h("k-norm", argc, argv);
  struct Case {
    int64_t n, c, hw;
    float lo, hi;
    int affine, fd;
  };
  const Case cases[] = {
      {8, 5, 1, -1, 1, 1, 1},    {4, 3, 25, -2, 2, 1, 1},
      {2, 7, 9, -1, 3, 1, 0},    {3, 2, 130, -1, 1, 1, 0},
      {2, 3, 1, -1, 1, 1, 1},    {5, 4, 6, 99, 101, 1, 0},
      {64, 33, 1, 40, 44, 1, 0}, {3, 4, 5, -1, 1, 0, 1},
      {16, 64, 49, -1, 1, 1, 0},
  };
  for (const Case &cs : cases) {
    std::string id = h.newCase();
    const int64_t n = cs.n, c = cs.c, hw = cs.hw, total = n * c * hw;
    auto x = h.uniform(total, cs.lo, cs.hi), dy = h.uniform(total);
    auto gamma = h.uniform(c, 0.5f, 2.0f), beta = h.uniform(c, -1.0f, 1.0f);
    auto rmean = h.uniform(c), rvar = h.uniform(c, 0.5f, 2.0f);
    double eps = cs.lo > 10 ? 1e-3 : 1e-5, momentum = h.uniform1(0.05, 0.5);
    std::vector<float> y(total), dx(total), dg(c), db(c);
    std::vector<float> nm = rmean, nv = rvar; // updated in place
    const float *g = cs.affine ? gamma.data() : nullptr;
    const float *b = cs.affine ? beta.data() : nullptr;
    if (cs.affine)
      pfrt_k_batch_norm(x.data(), g, b, nm.data(), nv.data(), y.data(),
                        nm.data(), nv.data(), n, c, hw, eps, momentum);
    else
      pfrt_k_batch_norm(x.data(), g, b, nullptr, nullptr, y.data(), nullptr,
                        nullptr, n, c, hw, eps, momentum);
    pfrt_k_batch_norm_grad_input(x.data(), g, dy.data(), dx.data(), n, c, hw,
                                 eps);
    pfrt_k_batch_norm_grad_params(x.data(), dy.data(), dg.data(), db.data(), n,
                                  c, hw, eps);
    h.saveAll(id, {n, c, hw}, {{"x", x}, {"dy", dy}, {"y", y}, {"dx", dx}});
    h.saveAll(id, {c},
              {{"gamma", gamma},
               {"beta", beta},
               {"rmean", rmean},
               {"rvar", rvar},
               {"new_mean", nm},
               {"new_var", nv},
               {"dgamma", dg},
               {"dbeta", db}});
    h.record("batch_norm", id,
             "n=%lld c=%lld hw=%lld eps=%.17g momentum=%.17g affine=%d fd=%d",
             (long long)n, (long long)c, (long long)hw, eps, momentum,
             cs.affine, cs.fd);
  }
  return 0;
}
