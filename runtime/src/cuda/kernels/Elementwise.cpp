//===- Elementwise.cpp - device twins of the element-wise kernels ---------===//
//
// pfrt_cuda_k_{relu, relu_grad, add, sub, mul, div, scale, copy, fill,
// masked_fill, bias_add, bias_add_relu, activation, activation_grad}: the
// CPU kernels' checks (common/KernelArgs.h), then one thread per element
// (ElementwiseBodies.h).
//
//===----------------------------------------------------------------------===//

#include "ElementwiseBodies.h"
#include "Twin.h"

#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

using namespace pfrt;
using namespace pfrt::kern;
using namespace pfrt::twin;

namespace {

void elementwise1(Kernel k, const char *fn, const float *x, float *y,
                  int64_t n) {
  checkElementwiseArgs(fn, n, {{"x", x}, {"y", y}});
  void *args[] = {&x, &y, &n};
  launch(k, n, args, fn);
}

void elementwise2(Kernel k, const char *fn, const char *na, const char *nb,
                  const char *nout, const float *a, const float *b, float *out,
                  int64_t n) {
  checkElementwiseArgs(fn, n, {{na, a}, {nb, b}, {nout, out}});
  void *args[] = {&a, &b, &out, &n};
  launch(k, n, args, fn);
}

void biasAdd(const char *fn, const float *x, const float *b, float *y,
             int64_t outer, int64_t c, int64_t inner, int32_t relu) {
  int64_t total = checkBiasAddArgs(fn, x, b, y, outer, c, inner);
  void *args[] = {&x, &b, &y, &c, &inner, &relu, &total};
  launch(kBiasAdd, total, args, fn);
}

/// y = f(x) (grad false, dy unused) or dx = f'(x) dy.
void activation(const char *fn, bool grad, int32_t kind, const float *x,
                const float *dy, float *out, int64_t n) {
  checkActivationArgs(fn, kind, x, dy, out, n, grad);
  if (!grad)
    dy = nullptr;
  void *args[] = {&kind, &x, &dy, &out, &n};
  launch(kActivation, n, args, fn);
}

} // namespace

extern "C" {

void pfrt_cuda_k_relu(const float *x, float *y, int64_t n) {
  elementwise1(kRelu, "pfrt_cuda_k_relu", x, y, n);
}

void pfrt_cuda_k_relu_grad(const float *y, const float *dy, float *dx,
                           int64_t n) {
  elementwise2(kReluGrad, "pfrt_cuda_k_relu_grad", "y", "dy", "dx", y, dy, dx,
               n);
}

void pfrt_cuda_k_add(const float *a, const float *b, float *out, int64_t n) {
  elementwise2(kAdd, "pfrt_cuda_k_add", "a", "b", "out", a, b, out, n);
}

void pfrt_cuda_k_mul(const float *a, const float *b, float *out, int64_t n) {
  elementwise2(kMul, "pfrt_cuda_k_mul", "a", "b", "out", a, b, out, n);
}

void pfrt_cuda_k_sub(const float *a, const float *b, float *out, int64_t n) {
  elementwise2(kSub, "pfrt_cuda_k_sub", "a", "b", "out", a, b, out, n);
}

void pfrt_cuda_k_div(const float *a, const float *b, float *out, int64_t n) {
  elementwise2(kDiv, "pfrt_cuda_k_div", "a", "b", "out", a, b, out, n);
}

void pfrt_cuda_k_masked_fill(const float *x, const void *mask, float *y,
                             int64_t n, int32_t maskDtype, double value) {
  const char *fn = "pfrt_cuda_k_masked_fill";
  checkDtype(fn, "maskDtype", maskDtype);
  checkElementwiseArgs(fn, n, {{"x", x}, {"mask", mask}, {"y", y}});
  float v = static_cast<float>(value);
  void *args[] = {&x, &mask, &y, &maskDtype, &v, &n};
  launch(kMaskedFill, n, args, fn);
}

void pfrt_cuda_k_scale(const float *x, float *y, int64_t n, double s) {
  const char *fn = "pfrt_cuda_k_scale";
  checkElementwiseArgs(fn, n, {{"x", x}, {"y", y}});
  float f = float(s);
  void *args[] = {&x, &y, &f, &n};
  launch(kScale, n, args, fn);
}

void pfrt_cuda_k_copy(const float *x, float *y, int64_t n) {
  const char *fn = "pfrt_cuda_k_copy";
  checkElementwiseArgs(fn, n, {{"x", x}, {"y", y}});
  if (x == y)
    return;
  void *args[] = {&x, &y, &n};
  launch(kCopy, n, args, fn);
}

void pfrt_cuda_k_fill(float *y, int64_t n, double v) {
  const char *fn = "pfrt_cuda_k_fill";
  checkElementwiseArgs(fn, n, {{"y", y}});
  float f = float(v);
  void *args[] = {&y, &f, &n};
  launch(kFill, n, args, fn);
}

void pfrt_cuda_k_bias_add(const float *x, const float *b, float *y,
                          int64_t outer, int64_t c, int64_t inner) {
  biasAdd("pfrt_cuda_k_bias_add", x, b, y, outer, c, inner, 0);
}

void pfrt_cuda_k_bias_add_relu(const float *x, const float *b, float *y,
                               int64_t outer, int64_t c, int64_t inner) {
  biasAdd("pfrt_cuda_k_bias_add_relu", x, b, y, outer, c, inner, 1);
}

void pfrt_cuda_k_activation(int32_t kind, const float *x, float *y, int64_t n) {
  activation("pfrt_cuda_k_activation", false, kind, x, nullptr, y, n);
}

void pfrt_cuda_k_activation_grad(int32_t kind, const float *x, const float *dy,
                                 float *dx, int64_t n) {
  activation("pfrt_cuda_k_activation_grad", true, kind, x, dy, dx, n);
}

} // extern "C"
