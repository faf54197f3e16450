//===- Softmax.cpp - device twins of softmax and its gradient -------------===//
//
// pfrt_cuda_k_softmax(_grad): the CPU kernels' checks, then one thread per
// line of [outer, n, inner] in the CPU's order (SoftmaxBodies.h).
//
//===----------------------------------------------------------------------===//

#include "SoftmaxBodies.h"
#include "Twin.h"

#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

using namespace pfrt;
using namespace pfrt::kern;
using namespace pfrt::twin;

extern "C" {

void pfrt_cuda_k_softmax(const float *x, float *y, int64_t outer, int64_t n,
                         int64_t inner, int32_t log) {
  const char *fn = "pfrt_cuda_k_softmax";
  int64_t total = checkSoftmaxArgs(fn, outer, n, inner, {{"x", x}, {"y", y}});
  if (total == 0)
    return;
  int64_t lines = outer * inner;
  void *args[] = {&x, &y, &n, &inner, &log, &lines};
  launch(kSoftmax, lines, args, fn);
}

void pfrt_cuda_k_softmax_grad(const float *y, const float *dy, float *dx,
                              int64_t outer, int64_t n, int64_t inner,
                              int32_t log) {
  const char *fn = "pfrt_cuda_k_softmax_grad";
  checkSoftmaxArgs(fn, outer, n, inner, {{"y", y}, {"dy", dy}, {"dx", dx}});
  int64_t lines = outer * inner;
  if (lines == 0)
    return;
  void *args[] = {&y, &dy, &dx, &n, &inner, &log, &lines};
  launch(kSoftmaxGrad, lines, args, fn);
}

} // extern "C"
