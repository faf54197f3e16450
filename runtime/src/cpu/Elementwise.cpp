//===- Elementwise.cpp - element-wise kernels and activations -------------===//
//
// The CPU kernels of pf's element-wise ops: ReLU and its gradient, add,
// sub, mul, div, scale, copy, fill, masked fill, the bias adds, and the
// activations (GELU, tanh-GELU, tanh, sigmoid) with their gradients.
// Every loop is safe for exact in-place use (out == an input), hence
// PFRT_IVDEP instead of restrict. The argument checks are
// common/KernelArgs.h's, shared with the device twins.
//
//===----------------------------------------------------------------------===//

#include "../common/LogicalMath.h"
#include "KernelUtil.h"
#include "pfrt/pfrt.h"

#include <cstring>

using namespace pfrt;
using namespace pfrt::kern;

//===----------------------------------------------------------------------===//
// Arithmetic
//===----------------------------------------------------------------------===//

extern "C" {

void pfrt_k_relu(const float *x, float *y, int64_t n) {
  checkElementwiseArgs("pfrt_k_relu", n, {{"x", x}, {"y", y}});
  PFRT_IVDEP
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i];
    y[i] = v < 0.0f ? 0.0f : v;
  }
}

void pfrt_k_relu_grad(const float *y, const float *dy, float *dx, int64_t n) {
  checkElementwiseArgs("pfrt_k_relu_grad", n,
                       {{"y", y}, {"dy", dy}, {"dx", dx}});
  // Load dy unconditionally: a load under the condition would be
  // vectorized as a masked gather or not at all (and branch on random data).
  PFRT_IVDEP
  for (int64_t i = 0; i < n; ++i) {
    float g = dy[i];
    dx[i] = y[i] > 0.0f ? g : 0.0f;
  }
}

void pfrt_k_add(const float *a, const float *b, float *out, int64_t n) {
  checkElementwiseArgs("pfrt_k_add", n, {{"a", a}, {"b", b}, {"out", out}});
  PFRT_IVDEP
  for (int64_t i = 0; i < n; ++i)
    out[i] = a[i] + b[i];
}

void pfrt_k_sub(const float *a, const float *b, float *out, int64_t n) {
  checkElementwiseArgs("pfrt_k_sub", n, {{"a", a}, {"b", b}, {"out", out}});
  PFRT_IVDEP
  for (int64_t i = 0; i < n; ++i)
    out[i] = a[i] - b[i];
}

void pfrt_k_mul(const float *a, const float *b, float *out, int64_t n) {
  checkElementwiseArgs("pfrt_k_mul", n, {{"a", a}, {"b", b}, {"out", out}});
  PFRT_IVDEP
  for (int64_t i = 0; i < n; ++i)
    out[i] = a[i] * b[i];
}

void pfrt_k_div(const float *a, const float *b, float *out, int64_t n) {
  checkElementwiseArgs("pfrt_k_div", n, {{"a", a}, {"b", b}, {"out", out}});
  PFRT_IVDEP
  for (int64_t i = 0; i < n; ++i)
    out[i] = a[i] / b[i];
}

void pfrt_k_scale(const float *x, float *y, int64_t n, double s) {
  checkElementwiseArgs("pfrt_k_scale", n, {{"x", x}, {"y", y}});
  const float f = float(s);
  PFRT_IVDEP
  for (int64_t i = 0; i < n; ++i)
    y[i] = x[i] * f;
}

void pfrt_k_copy(const float *x, float *y, int64_t n) {
  checkElementwiseArgs("pfrt_k_copy", n, {{"x", x}, {"y", y}});
  if (n > 0 && x != y)
    std::memcpy(y, x, size_t(n) * sizeof(float));
}

void pfrt_k_fill(float *y, int64_t n, double v) {
  checkElementwiseArgs("pfrt_k_fill", n, {{"y", y}});
  const float f = float(v);
  for (int64_t i = 0; i < n; ++i)
    y[i] = f;
}

void pfrt_k_masked_fill(const float *x, const void *mask, float *y, int64_t n,
                        int32_t maskDtype, double value) {
  const char *fn = "pfrt_k_masked_fill";
  checkDtype(fn, "maskDtype", maskDtype);
  checkElementwiseArgs(fn, n, {{"x", x}, {"mask", mask}, {"y", y}});
  float v = static_cast<float>(value);
  auto fill = [&](auto *m) {
    PFRT_IVDEP
    for (int64_t i = 0; i < n; ++i)
      y[i] = m[i] != 0 ? v : x[i];
  };
  switch (maskDtype) {
  case PFRT_DTYPE_F32:
    return fill(static_cast<const float *>(mask));
  case PFRT_DTYPE_I64:
    return fill(static_cast<const int64_t *>(mask));
  case PFRT_DTYPE_I32:
    return fill(static_cast<const int32_t *>(mask));
  case PFRT_DTYPE_BF16:
  case PFRT_DTYPE_F16: // as the floats they equal (-0 is not set)
    for (int64_t i = 0; i < n; ++i)
      y[i] = logical::maskSetAt(mask, maskDtype, i) ? v : x[i];
    return;
  default:
    return fill(static_cast<const uint8_t *>(mask));
  }
}

} // extern "C"

namespace {
/// y = x + b (broadcast over [outer, c, inner]), then relu if Relu.
template <bool Relu>
void biasAdd(const char *fn, const float *x, const float *b, float *y,
             int64_t outer, int64_t c, int64_t inner) {
  int64_t total = checkBiasAddArgs(fn, x, b, y, outer, c, inner);
  if (total == 0)
    return;
  if (inner == 1) {
    for (int64_t o = 0; o < outer; ++o) {
      const float *xr = x + o * c;
      float *yr = y + o * c;
      PFRT_IVDEP
      for (int64_t j = 0; j < c; ++j) {
        float v = xr[j] + b[j];
        yr[j] = Relu ? (v < 0.0f ? 0.0f : v) : v;
      }
    }
    return;
  }
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < c; ++j) {
      const float *xr = x + (o * c + j) * inner;
      float *yr = y + (o * c + j) * inner;
      const float bj = b[j];
      PFRT_IVDEP
      for (int64_t i = 0; i < inner; ++i) {
        float v = xr[i] + bj;
        yr[i] = Relu ? (v < 0.0f ? 0.0f : v) : v;
      }
    }
}
} // namespace

extern "C" {

void pfrt_k_bias_add(const float *x, const float *b, float *y, int64_t outer,
                     int64_t c, int64_t inner) {
  biasAdd<false>("pfrt_k_bias_add", x, b, y, outer, c, inner);
}

void pfrt_k_bias_add_relu(const float *x, const float *b, float *y,
                          int64_t outer, int64_t c, int64_t inner) {
  biasAdd<true>("pfrt_k_bias_add_relu", x, b, y, outer, c, inner);
}

} // extern "C"

//===----------------------------------------------------------------------===//
// Activations
//===----------------------------------------------------------------------===//

namespace {
// One loop per kind (target_clones takes no templates), the forward's
// apart from the gradient's so that it computes f alone; the math is
// common/KernelMath.h's, which the device twin runs too.
#define PFRT_ACTIVATION_LOOP(KIND)                                             \
  PFRT_MULTIVERSION void activationLoop##KIND(                                 \
      const float *PFRT_RESTRICT x, const float *PFRT_RESTRICT dy,             \
      float *PFRT_RESTRICT out, int64_t n) {                                   \
    if (!dy) {                                                                 \
      PFRT_INTERLEAVE                                                          \
      for (int64_t i = 0; i < n; ++i)                                          \
        out[i] = activationOut<KIND, false>(x[i], 0.0f);                       \
      return;                                                                  \
    }                                                                          \
    PFRT_INTERLEAVE                                                            \
    for (int64_t i = 0; i < n; ++i)                                            \
      out[i] = activationOut<KIND, true>(x[i], dy[i]);                         \
  }
PFRT_ACTIVATION_LOOP(0)
PFRT_ACTIVATION_LOOP(1)
PFRT_ACTIVATION_LOOP(2)
PFRT_ACTIVATION_LOOP(3)
#undef PFRT_ACTIVATION_LOOP

/// out = f(x) (dy null) or f'(x) dy. The loops take restrict pointers, so an
/// in-place call (out == x or dy) goes through a copy of its inputs, in
/// blocks; other calls run on the arrays directly.
void activationKernel(int32_t kind, const float *x, const float *dy, float *out,
                      int64_t n) {
  auto run = [kind](const float *xs, const float *d, float *o, int64_t m) {
    switch (kind) {
    case 0:
      activationLoop0(xs, d, o, m);
      break;
    case 1:
      activationLoop1(xs, d, o, m);
      break;
    case 2:
      activationLoop2(xs, d, o, m);
      break;
    default:
      activationLoop3(xs, d, o, m);
      break;
    }
  };
  if (out != x && out != dy) {
    run(x, dy, out, n);
    return;
  }
  constexpr int64_t kBlock = 4096;
  float xs[kBlock], ds[kBlock];
  for (int64_t at = 0; at < n; at += kBlock) {
    int64_t m = n - at < kBlock ? n - at : kBlock;
    std::memcpy(xs, x + at, size_t(m) * sizeof(float));
    if (dy)
      std::memcpy(ds, dy + at, size_t(m) * sizeof(float));
    run(xs, dy ? ds : nullptr, out + at, m);
  }
}
} // namespace

extern "C" {

void pfrt_k_activation(int32_t kind, const float *x, float *y, int64_t n) {
  checkActivationArgs("pfrt_k_activation", kind, x, nullptr, y, n, false);
  activationKernel(kind, x, nullptr, y, n);
}

void pfrt_k_activation_grad(int32_t kind, const float *x, const float *dy,
                            float *dx, int64_t n) {
  checkActivationArgs("pfrt_k_activation_grad", kind, x, dy, dx, n, true);
  activationKernel(kind, x, dy, dx, n);
}

} // extern "C"
