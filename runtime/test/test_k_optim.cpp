//===- test_k_optim.cpp - SGD and Adam/AdamW over 10 steps ----------------===//
//
// Each configuration runs 10 steps with fresh gradients and a learning rate
// that changes every step (read through the lr pointer), alternating
// in-place (new_x == x) and separate outputs. SGD's incoming buffer at step
// 1 is random garbage (it must be ignored); Adam starts from zero state as
// PyTorch does, or from random state.
//
//===----------------------------------------------------------------------===//

#include "KernelTest.h"

namespace {
constexpr int kSteps = 10;
}

int main(int argc, char **argv) {
  kt::Harness h("k-optim", argc, argv);
  const int64_t n = 1031;
  // momentum dampening weight_decay nesterov
  const double sgd[][4] = {
      {0, 0, 0, 0},      {0, 0, 0.01, 0},  {0.9, 0, 0, 0}, {0.9, 0.1, 0.01, 0},
      {0.9, 0, 0.05, 1}, {0.5, 0.3, 0, 0}, {0.7, 0, 0, 1}};
  int cfg = 0;
  for (const auto &s : sgd) {
    std::string id = h.newCase();
    bool inplace = (cfg++ % 2) == 0;
    bool mom = s[0] != 0;
    auto p0 = h.uniform(n), buf0 = h.uniform(n);
    auto grads = h.uniform(kSteps * n);
    std::vector<float> lrs(kSteps), traj(kSteps * n);
    std::vector<float> p = p0, buf = buf0, p2(n), buf2(n);
    for (int t = 0; t < kSteps; ++t) {
      float lr = float(h.uniform1(0.01, 0.2)), step = float(t + 1);
      lrs[t] = lr;
      const float *g = grads.data() + t * n;
      if (inplace) {
        pfrt_k_sgd(p.data(), g, &lr, mom ? buf.data() : nullptr, &step,
                   p.data(), mom ? buf.data() : nullptr, n, s[0], s[1], s[2],
                   int32_t(s[3]));
      } else {
        pfrt_k_sgd(p.data(), g, &lr, mom ? buf.data() : nullptr, &step,
                   p2.data(), mom ? buf2.data() : nullptr, n, s[0], s[1], s[2],
                   int32_t(s[3]));
        p.swap(p2);
        buf.swap(buf2);
      }
      std::copy(p.begin(), p.end(), traj.begin() + t * n);
    }
    h.save(id, "p0", {n}, p0);
    h.save(id, "grads", {kSteps, n}, grads);
    h.save(id, "lrs", {kSteps}, lrs);
    h.save(id, "traj", {kSteps, n}, traj);
    h.save(id, "buf", {n}, buf);
    h.record("sgd", id,
             "n=%lld steps=%d momentum=%.17g dampening=%.17g "
             "weight_decay=%.17g nesterov=%d",
             (long long)n, kSteps, s[0], s[1], s[2], int(s[3]));
  }
  // beta1 beta2 eps weight_decay decoupled bias_correction zero_state gscale
  const double adam[][8] = {
      {0.9, 0.999, 1e-8, 0, 0, 1, 1, 1},
      {0.9, 0.999, 1e-8, 0.01, 0, 1, 1, 1},
      {0.9, 0.999, 1e-8, 0.01, 1, 1, 1, 1},
      {0.8, 0.99, 1e-6, 0, 0, 0, 0, 1},
      {0.3, 0.9, 1e-3, 0.1, 1, 0, 0,
       1}, // 1 - beta1 >= 0.5: lerp's other branch
      {0.9, 0.999, 1e-8, 0.1, 0, 0, 1, 1},
      {0.95, 0.98, 1e-4, 0.02, 1, 1, 0, 1e-3}, // gradients near eps
  };
  for (const auto &a : adam) {
    std::string id = h.newCase();
    bool inplace = (cfg++ % 2) == 0;
    auto p0 = h.uniform(n);
    std::vector<float> m0(n, 0.0f), v0(n, 0.0f);
    if (!a[6]) {
      m0 = h.uniform(n, -0.1f, 0.1f);
      v0 = h.uniform(n, 1e-4f, 0.05f);
    }
    auto grads = h.uniform(kSteps * n, -float(a[7]), float(a[7]));
    std::vector<float> lrs(kSteps), traj(kSteps * n);
    std::vector<float> p = p0, m = m0, v = v0, p2(n), m2(n), v2(n);
    for (int t = 0; t < kSteps; ++t) {
      float lr = float(h.uniform1(1e-3, 0.05)), step = float(t + 1);
      lrs[t] = lr;
      const float *g = grads.data() + t * n;
      if (inplace) {
        pfrt_k_adam(p.data(), g, m.data(), v.data(), &lr, &step, p.data(),
                    m.data(), v.data(), n, a[0], a[1], a[2], a[3],
                    int32_t(a[4]), int32_t(a[5]));
      } else {
        pfrt_k_adam(p.data(), g, m.data(), v.data(), &lr, &step, p2.data(),
                    m2.data(), v2.data(), n, a[0], a[1], a[2], a[3],
                    int32_t(a[4]), int32_t(a[5]));
        p.swap(p2);
        m.swap(m2);
        v.swap(v2);
      }
      std::copy(p.begin(), p.end(), traj.begin() + t * n);
    }
    h.save(id, "p0", {n}, p0);
    h.save(id, "m0", {n}, m0);
    h.save(id, "v0", {n}, v0);
    h.save(id, "grads", {kSteps, n}, grads);
    h.save(id, "lrs", {kSteps}, lrs);
    h.save(id, "traj", {kSteps, n}, traj);
    h.save(id, "m", {n}, m);
    h.save(id, "v", {n}, v);
    h.record("adam", id,
             "n=%lld steps=%d beta1=%.17g beta2=%.17g eps=%.17g "
             "weight_decay=%.17g decoupled=%d bias_correction=%d",
             (long long)n, kSteps, a[0], a[1], a[2], a[3], int(a[4]),
             int(a[5]));
  }
  return 0;
}
