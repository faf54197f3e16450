//===- Pool.cpp - device twins of the pooling kernels ---------------------===//
//
// Pooling: one thread per output element for the forwards; the gradients
// gather, one thread per input element, from the windows that hold it, in
// the order the CPU scatters (no atomics).
// The arithmetic is PoolBodies.h's.
//
//===----------------------------------------------------------------------===//

#include "PoolBodies.h"
#include "Twin.h"

#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

#include <initializer_list>

using namespace pfrt;
using namespace pfrt::kern;
using namespace pfrt::twin;

namespace {

/// pfrt_k_max_pool2d's checks (common/KernelArgs.h: the dims, then each
/// tensor in order; with planeIndex, int32 flat indices in a plane), and
/// the kernels' geometry.
dev::PoolGeom checkPool(const char *fn, const int64_t *dims,
                        std::initializer_list<PoolBuf> bufs,
                        bool planeIndex = false) {
  PoolArgs a = checkPoolArgs(fn, dims, bufs);
  if (planeIndex)
    checkPoolPlaneIndex(fn, a);
  return dev::makePoolGeom(dims);
}

/// A forward pool (kernel k: kMaxPool, kAvgPool): one thread per output
/// window of x, written to y.
void poolForward(const char *fn, Kernel k, const float *x, float *y,
                 const int64_t *dims) {
  dev::PoolGeom d = checkPool(
      fn, dims, {{"x", x, PoolTensor::In}, {"y", y, PoolTensor::Out}});
  int64_t total = d.planes * d.P;
  void *args[] = {&x, &y, &d, &total};
  launch(k, total, args, fn);
}

} // namespace

extern "C" {

void pfrt_cuda_k_max_pool2d(const float *x, float *y, const int64_t dims[12]) {
  poolForward("pfrt_cuda_k_max_pool2d", kMaxPool, x, y, dims);
}

void pfrt_cuda_k_max_pool2d_grad(const float *x, const float *dy, float *dx,
                                 const int64_t dims[12]) {
  const char *fn = "pfrt_cuda_k_max_pool2d_grad";
  dev::PoolGeom d = checkPool(fn, dims,
                              {{"x", x, PoolTensor::In},
                               {"dy", dy, PoolTensor::Out},
                               {"dx", dx, PoolTensor::In}},
                              /*planeIndex=*/true);
  int64_t outs = d.planes * d.P, ins = d.planes * d.HW;
  if (ins == 0)
    return;
  // The arg-max of every window first (int32 flat indices in the plane, as
  // the CPU keeps them), then the gather.
  int32_t *arg = static_cast<int32_t *>(
      scratch((outs > 0 ? outs : 1) * int64_t(sizeof(int32_t)), fn));
  void *args1[] = {&x, &arg, &d, &outs};
  launch(kMaxPoolArg, outs, args1, fn);
  void *args2[] = {&arg, &dy, &dx, &d, &ins};
  launch(kMaxPoolGrad, ins, args2, fn);
}

void pfrt_cuda_k_avg_pool2d(const float *x, float *y, const int64_t dims[12]) {
  poolForward("pfrt_cuda_k_avg_pool2d", kAvgPool, x, y, dims);
}

void pfrt_cuda_k_avg_pool2d_grad(const float *dy, float *dx,
                                 const int64_t dims[12]) {
  const char *fn = "pfrt_cuda_k_avg_pool2d_grad";
  dev::PoolGeom d = checkPool(
      fn, dims, {{"dy", dy, PoolTensor::Out}, {"dx", dx, PoolTensor::In}});
  int64_t total = d.planes * d.HW;
  void *args[] = {&dy, &dx, &d, &total};
  launch(kAvgPoolGrad, total, args, fn);
}

void pfrt_cuda_k_global_avg_pool(const float *x, float *y, int64_t n, int64_t c,
                                 int64_t hw) {
  const char *fn = "pfrt_cuda_k_global_avg_pool";
  int64_t planes = checkGlobalAvgPoolArgs(fn, x, y, n, c, hw).planes;
  void *args[] = {&x, &y, &hw, &planes};
  launch(kGlobalAvgPool, planes, args, fn);
}

void pfrt_cuda_k_global_avg_pool_grad(const float *dy, float *dx, int64_t n,
                                      int64_t c, int64_t hw) {
  const char *fn = "pfrt_cuda_k_global_avg_pool_grad";
  int64_t total = checkGlobalAvgPoolGradArgs(fn, dy, dx, n, c, hw).total;
  void *args[] = {&dy, &dx, &hw, &total};
  launch(kGlobalAvgPoolGrad, total, args, fn);
}

} // extern "C"
