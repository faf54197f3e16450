//===- Optim.cpp - SGD and Adam/AdamW parameter updates -------------------===//
//
// Element-wise float32 arithmetic in the order torch.optim's single-tensor
// implementations use (hyper-parameters rounded to float32 as ATen does for
// a Python scalar; bias corrections in float64 as PyTorch computes them in
// Python). Every loop is branch-free in i and safe for exact in-place use
// (new_x == x), hence PFRT_IVDEP instead of restrict.
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"
#include "pfrt/pfrt.h"

#include <cmath>
#include <type_traits>

using namespace pfrt;
using namespace pfrt::kern;

namespace {

template <bool WeightDecay, bool Nesterov>
void sgdMomentum(const float *p, const float *g, const float *buf, float *np,
                 float *nbuf, int64_t n, float lr, float wd, float mom,
                 float damp1, bool first) {
  if (first) { // torch: buf = clone(grad) on the first step
    PFRT_IVDEP
    for (int64_t i = 0; i < n; ++i) {
      float gi = WeightDecay ? g[i] + wd * p[i] : g[i];
      float b = gi;
      nbuf[i] = b;
      gi = Nesterov ? gi + mom * b : b;
      np[i] = p[i] - lr * gi;
    }
    return;
  }
  PFRT_IVDEP
  for (int64_t i = 0; i < n; ++i) {
    float gi = WeightDecay ? g[i] + wd * p[i] : g[i];
    float b = buf[i] * mom + damp1 * gi;
    nbuf[i] = b;
    gi = Nesterov ? gi + mom * b : b;
    np[i] = p[i] - lr * gi;
  }
}

template <bool Decoupled, bool L2, bool LerpLow>
void adamLoop(const float *p, const float *g, const float *m, const float *v,
              float *np, float *nm, float *nv, int64_t n, float decay, float wd,
              float w1, float b2, float w2, float bc2s, float eps,
              float negStep) {
  PFRT_IVDEP
  for (int64_t i = 0; i < n; ++i) {
    float pi = Decoupled ? p[i] * decay : p[i];
    float gi = L2 ? g[i] + wd * pi : g[i];
    float mi = m[i];
    // torch.lerp(m, g, w1)
    float mn = LerpLow ? mi + w1 * (gi - mi) : gi - (gi - mi) * (1.0f - w1);
    float vn = v[i] * b2 + w2 * gi * gi;
    float denom = std::sqrt(vn) / bc2s + eps;
    nm[i] = mn;
    nv[i] = vn;
    np[i] = pi + negStep * mn / denom;
  }
}

} // namespace

extern "C" {

void pfrt_k_sgd(const float *p, const float *g, const float *lr,
                const float *buf, const float *step, float *new_p,
                float *new_buf, int64_t n, double momentum, double dampening,
                double weight_decay, int32_t nesterov) {
  const char *fn = "pfrt_k_sgd";
  checkSgdArgs(fn, p, g, lr, step, new_p, new_buf, n, momentum, dampening,
               nesterov);
  const float lrf = *lr, wd = float(weight_decay);
  if (momentum == 0.0) {
    if (weight_decay != 0.0) {
      PFRT_IVDEP
      for (int64_t i = 0; i < n; ++i)
        new_p[i] = p[i] - lrf * (g[i] + wd * p[i]);
    } else {
      PFRT_IVDEP
      for (int64_t i = 0; i < n; ++i)
        new_p[i] = p[i] - lrf * g[i];
    }
    return;
  }
  const bool first = *step <= 1.0f;
  if (!first)
    checkPtr(fn, "buf", buf, n);
  const float mom = float(momentum), damp1 = float(1.0 - dampening);
  auto run = [&](auto wdTag, auto nesTag) {
    sgdMomentum<decltype(wdTag)::value, decltype(nesTag)::value>(
        p, g, buf, new_p, new_buf, n, lrf, wd, mom, damp1, first);
  };
  using T = std::true_type;
  using F = std::false_type;
  if (weight_decay != 0.0)
    nesterov ? run(T{}, T{}) : run(T{}, F{});
  else
    nesterov ? run(F{}, T{}) : run(F{}, F{});
}

void pfrt_k_adam(const float *p, const float *g, const float *m, const float *v,
                 const float *lr, const float *step, float *new_p, float *new_m,
                 float *new_v, int64_t n, double beta1, double beta2,
                 double eps, double weight_decay, int32_t decoupled,
                 int32_t bias_correction) {
  const char *fn = "pfrt_k_adam";
  checkAdamArgs(fn, p, g, m, v, lr, step, new_p, new_m, new_v, n);
  const double lrd = double(*lr), t = double(*step);
  if (bias_correction && !(t >= 1.0))
    fatal("%s: step = %g must be >= 1 with bias correction", fn, t);
  double stepSize = lrd, bc2s = 1.0;
  if (bias_correction) {
    stepSize = lrd / (1.0 - std::pow(beta1, t));
    bc2s = std::sqrt(1.0 - std::pow(beta2, t));
  }
  const float w1 = float(1.0 - beta1), b2 = float(beta2),
              w2 = float(1.0 - beta2), wd = float(weight_decay),
              decay = float(1.0 - lrd * weight_decay);
  const bool l2 = !decoupled && weight_decay != 0.0;
  const bool dec = decoupled && weight_decay != 0.0;
  const bool lerpLow = w1 < 0.5f;
  auto run = [&](auto decTag, auto l2Tag, auto lowTag) {
    adamLoop<decltype(decTag)::value, decltype(l2Tag)::value,
             decltype(lowTag)::value>(p, g, m, v, new_p, new_m, new_v, n, decay,
                                      wd, w1, b2, w2, float(bc2s), float(eps),
                                      float(-stepSize));
  };
  using T = std::true_type;
  using F = std::false_type;
  if (dec)
    lerpLow ? run(T{}, F{}, T{}) : run(T{}, F{}, F{});
  else if (l2)
    lerpLow ? run(F{}, T{}, T{}) : run(F{}, T{}, F{});
  else
    lerpLow ? run(F{}, F{}, T{}) : run(F{}, F{}, F{});
}

void pfrt_k_sgd_multi(void *const *ptrs, const int64_t *n,
                      const int8_t *clear_grad, int64_t count, const float *lr,
                      const float *step, double momentum, double dampening,
                      double weight_decay, int32_t nesterov) {
  checkMultiTableArgs("pfrt_k_sgd_multi", ptrs, n, count);
  for (int64_t t = 0; t < count; ++t) {
    void *const *q = ptrs + 5 * t;
    auto *g = static_cast<float *>(q[1]);
    pfrt_k_sgd(static_cast<const float *>(q[0]), g, lr,
               static_cast<const float *>(q[2]), step,
               static_cast<float *>(q[3]), static_cast<float *>(q[4]), n[t],
               momentum, dampening, weight_decay, nesterov);
    if (clear_grad && clear_grad[t])
      for (int64_t i = 0; i < n[t]; ++i)
        g[i] = 0.0f;
  }
}

void pfrt_k_adam_multi(void *const *ptrs, const int64_t *n,
                       const int8_t *clear_grad, int64_t count, const float *lr,
                       const float *step, double beta1, double beta2,
                       double eps, double weight_decay, int32_t decoupled,
                       int32_t bias_correction) {
  checkMultiTableArgs("pfrt_k_adam_multi", ptrs, n, count);
  for (int64_t t = 0; t < count; ++t) {
    void *const *q = ptrs + 7 * t;
    auto *g = static_cast<float *>(q[1]);
    pfrt_k_adam(
        static_cast<const float *>(q[0]), g, static_cast<const float *>(q[2]),
        static_cast<const float *>(q[3]), lr, step, static_cast<float *>(q[4]),
        static_cast<float *>(q[5]), static_cast<float *>(q[6]), n[t], beta1,
        beta2, eps, weight_decay, decoupled, bias_correction);
    if (clear_grad && clear_grad[t])
      for (int64_t i = 0; i < n[t]; ++i)
        g[i] = 0.0f;
  }
}

} // extern "C"
