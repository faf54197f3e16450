//===- OptimBodies.h - optimizer updates ------------------------*- C++ -*-===//
//
// Not installed; nothing here is part of the ABI. Part of the CUDA kernels'
// bodies (DeviceBodies.h says how they are written and checked).
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_CUDA_KERNELS_OPTIMBODIES_H
#define PFRT_SRC_CUDA_KERNELS_OPTIMBODIES_H

#include "CommonBodies.h"

namespace pfrt {
namespace dev {

//===----------------------------------------------------------------------===//
// Optimizers (src/cpu/Optim.cpp)
//===----------------------------------------------------------------------===//

/// SGD's hyper-parameters as the CPU kernel rounds them (float32).
struct SgdParams {
  float wd, mom, damp1;
  int32_t weightDecay; // weight_decay != 0
  int32_t momentum;    // momentum != 0
  int32_t nesterov;
};

inline SgdParams makeSgdParams(double momentum, double dampening,
                               double weight_decay, int32_t nesterov) {
  SgdParams q;
  q.wd = float(weight_decay);
  q.mom = float(momentum);
  q.damp1 = float(1.0 - dampening);
  q.weightDecay = weight_decay != 0.0;
  q.momentum = momentum != 0.0;
  q.nesterov = nesterov != 0;
  return q;
}

/// One element of pfrt_k_sgd; lr and step are the values *lr, *step (step
/// only read with momentum). buf is not read on the first step.
PFRT_HD inline void sgdAt(const float *p, const float *g, const float *buf,
                          float *np, float *nbuf, float lr, float step,
                          const SgdParams &q, int64_t i) {
  if (!q.momentum) {
    np[i] = q.weightDecay ? p[i] - lr * (g[i] + q.wd * p[i]) : p[i] - lr * g[i];
    return;
  }
  float gi = q.weightDecay ? g[i] + q.wd * p[i] : g[i];
  float b = step <= 1.0f ? gi : buf[i] * q.mom + q.damp1 * gi;
  nbuf[i] = b;
  gi = q.nesterov ? gi + q.mom * b : b;
  np[i] = p[i] - lr * gi;
}

/// A multi-tensor update's table, passed to its kernel by value (so a
/// captured launch keeps it): at most kMultiTensors tensors a launch, P
/// pointers each (SGD's 5, Adam's 7; Adam's table is 3.5 KB, under the
/// 4 KB of a kernel's parameters). Block b updates elements
/// [(b - firstBlock[t]) kMultiChunk, + kMultiChunk) of the tensor t with
/// firstBlock[t] <= b < firstBlock[t + 1].
constexpr int kMultiTensors = 48;
constexpr int64_t kMultiChunk = 4 * kBlock;
template <int P> struct MultiTable {
  float *ptr[kMultiTensors][P];
  int64_t n[kMultiTensors];
  int64_t firstBlock[kMultiTensors + 1];
  uint64_t clear; // bit t: zero tensor t's gradient (pointer 1) once read
  int32_t count;
};
// A launch's parameters are at most 4 KB: Adam's table and its other
// arguments (two pointers, four doubles, two ints, the error record).
static_assert(sizeof(MultiTable<7>) + 64 <= 4096,
              "a multi-tensor table must fit in a kernel's parameters");
static_assert(kMultiTensors <= 64, "the clear mask has 64 bits");

/// Adam's per-call constants, computed from *lr and *step as the CPU kernel
/// does (bias corrections in float64, then rounded to float32).
struct AdamConsts {
  float decay, wd, w1, b2, w2, bc2s, eps, negStep;
  int32_t decoupled; // decoupled && weight_decay != 0
  int32_t l2;        // !decoupled && weight_decay != 0
  int32_t lerpLow;   // w1 < 0.5f
};

/// false (and nothing computed) when bias_correction and step < 1, where
/// the CPU kernel is fatal.
PFRT_HD inline bool makeAdamConsts(float lr, float step, double beta1,
                                   double beta2, double eps,
                                   double weight_decay, int32_t decoupled,
                                   int32_t bias_correction, AdamConsts *k) {
  const double lrd = double(lr), t = double(step);
  if (bias_correction && !(t >= 1.0))
    return false;
  double stepSize = lrd, bc2s = 1.0;
  if (bias_correction) {
    stepSize = lrd / (1.0 - pow(beta1, t));
    bc2s = sqrt(1.0 - pow(beta2, t));
  }
  k->w1 = float(1.0 - beta1);
  k->b2 = float(beta2);
  k->w2 = float(1.0 - beta2);
  k->wd = float(weight_decay);
  k->decay = float(1.0 - lrd * weight_decay);
  k->l2 = !decoupled && weight_decay != 0.0;
  k->decoupled = decoupled && weight_decay != 0.0;
  k->lerpLow = k->w1 < 0.5f;
  k->bc2s = float(bc2s);
  k->eps = float(eps);
  k->negStep = float(-stepSize);
  return true;
}

/// One element of pfrt_k_adam (adamLoop).
PFRT_HD inline void adamAt(const float *p, const float *g, const float *m,
                           const float *v, float *np, float *nm, float *nv,
                           const AdamConsts &k, int64_t i) {
  float pi = k.decoupled ? p[i] * k.decay : p[i];
  float gi = k.l2 ? g[i] + k.wd * pi : g[i];
  float mi = m[i];
  float mn = k.lerpLow ? mi + k.w1 * (gi - mi) : gi - (gi - mi) * (1.0f - k.w1);
  float vn = v[i] * k.b2 + k.w2 * gi * gi;
  float denom = sqrtf(vn) / k.bc2s + k.eps;
  nm[i] = mn;
  nv[i] = vn;
  np[i] = pi + k.negStep * mn / denom;
}

} // namespace dev
} // namespace pfrt

#endif // PFRT_SRC_CUDA_KERNELS_OPTIMBODIES_H
