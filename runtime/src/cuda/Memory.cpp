//===- Memory.cpp - device memory: allocations, the arena, copies ---------===//
//
// pfrt_cuda.h's memory rows (the planned device arena, copies between host
// and device, memset) and the allocations outside the arena that the
// twins keep for the program's life (CudaInternal.h): device scratch and
// slots, page-locked host buffers for captured copies.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include "../common/Internal.h"
#include "CudaInternal.h"
#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

#include <cstring>

using namespace pfrt;
using namespace pfrt::cuda::drv;

namespace pfrt {
namespace cuda {

void *allocPersistent(int64_t bytes, const char *what) {
  CudaState &s = gCuda;
  requireReady(what);
  if (streamCapturing())
    fatal("%s: cannot allocate %lld bytes of device memory during a CUDA "
          "graph capture (run the step once uncaptured before capturing it)",
          what, (long long)bytes);
  CUdeviceptr p = 0;
  size_t size = size_t(bytes > 0 ? bytes : 1);
  if (s.api.cuMemAlloc(&p, size) != CUDA_SUCCESS) {
    size_t free = 0, total = 0;
    s.api.cuMemGetInfo(&free, &total);
    fatal("%s: cannot allocate %zu bytes of device memory (%zu bytes free "
          "of %zu)",
          what, size, free, total);
  }
  return reinterpret_cast<void *>(p);
}

void *allocPinned(int64_t bytes, const char *what) {
  CudaState &s = gCuda;
  requireReady(what);
  // Page-locked memory of the driver's own (not registered pages of a
  // host allocation: a copy spanning two registrations is refused, and a
  // freed registration can come back at the same address): allocating it
  // does not touch the stream, so it is allowed inside a capture (a
  // captured step's buffers are made there), with the thread's capture
  // mode relaxed around it.
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  check(s.api.cuThreadExchangeStreamCaptureMode(&mode),
        "cuThreadExchangeStreamCaptureMode");
  void *p = nullptr;
  CUresult r = s.api.cuMemAllocHost(&p, size_t(bytes > 0 ? bytes : 1));
  check(s.api.cuThreadExchangeStreamCaptureMode(&mode),
        "cuThreadExchangeStreamCaptureMode");
  if (r != CUDA_SUCCESS || !p)
    fatal("%s: cannot allocate %lld bytes of page-locked host memory for a "
          "captured copy (CUDA error %d; run with PFRT_NO_CUDA_GRAPH=1)",
          what, (long long)bytes, int(r));
  std::memset(p, 0, size_t(bytes > 0 ? bytes : 1));
  return p;
}

void copyToHostOn(void *dst, const void *src, int64_t bytes, void *stream) {
  requireReady("pfrt_cuda copy to the host");
  check(gCuda.api.cuMemcpyDtoHAsync(dst, reinterpret_cast<CUdeviceptr>(src),
                                    size_t(bytes),
                                    static_cast<CUstream>(stream)),
        "cuMemcpyDtoHAsync");
}

void copyToDeviceOn(void *dst, const void *src, int64_t bytes, void *stream) {
  requireReady("pfrt_cuda copy to the device");
  check(gCuda.api.cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(dst), src,
                                    size_t(bytes),
                                    static_cast<CUstream>(stream)),
        "cuMemcpyHtoDAsync");
}

void copyToHostAsync(void *dst, const void *src, int64_t bytes) {
  requireReady("pfrt_cuda copy to the host");
  check(gCuda.api.cuMemcpyDtoHAsync(dst, reinterpret_cast<CUdeviceptr>(src),
                                    size_t(bytes), gCuda.stream),
        "cuMemcpyDtoHAsync");
}

} // namespace cuda
} // namespace pfrt

extern "C" {

int pfrt_cuda_arena_init(int64_t bytes) {
  CudaState &s = gCuda;
  requireReady("pfrt_cuda_arena_init");
  if (bytes < 0)
    fatal("pfrt_cuda_arena_init: negative size %lld", (long long)bytes);
  if (s.arena) {
    if (bytes > s.arenaBytes)
      fatal("pfrt_cuda_arena_init: the arena has %lld bytes, %lld asked",
            (long long)s.arenaBytes, (long long)bytes);
    return 0;
  }
  int64_t size = bytes > 0 ? bytes : 1;
  if (s.api.cuMemAlloc(&s.arena, size_t(size)) != CUDA_SUCCESS) {
    size_t free = 0, total = 0;
    s.api.cuMemGetInfo(&free, &total);
    fatal("cannot allocate the planned device arena: %lld bytes asked, %zu "
          "bytes free of %zu",
          (long long)size, free, total);
  }
  s.arenaBytes = size;
  check(s.api.cuMemsetD8Async(s.arena, 0, size_t(size), s.stream),
        "cuMemsetD8Async(arena)");
  return 0;
}

void *pfrt_cuda_arena_ptr(int64_t offset, int64_t bytes) {
  CudaState &s = gCuda;
  if (!s.arena)
    fatal("pfrt_cuda_arena_ptr: no device arena (pfrt_cuda_arena_init)");
  checkArenaRange("pfrt_cuda_arena_ptr", "device arena", offset, bytes,
                  s.arenaBytes, 1, s.highWater);
  return reinterpret_cast<void *>(s.arena + CUdeviceptr(offset));
}

int64_t pfrt_cuda_arena_high_water(void) { return gCuda.highWater; }

int pfrt_cuda_h2d(void *dst, const void *src, int64_t bytes) {
  requireReady("pfrt_cuda_h2d");
  check(gCuda.api.cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(dst), src,
                                    size_t(bytes), gCuda.stream),
        "cuMemcpyHtoDAsync");
  return 0;
}

int pfrt_cuda_d2h(void *dst, const void *src, int64_t bytes) {
  requireReady("pfrt_cuda_d2h");
  check(gCuda.api.cuMemcpyDtoHAsync(dst, reinterpret_cast<CUdeviceptr>(src),
                                    size_t(bytes), gCuda.stream),
        "cuMemcpyDtoHAsync");
  return pfrt_cuda_synchronize();
}

int pfrt_cuda_memset(void *dst, int32_t value, int64_t bytes) {
  requireReady("pfrt_cuda_memset");
  check(gCuda.api.cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(dst),
                                  (unsigned char)value, size_t(bytes),
                                  gCuda.stream),
        "cuMemsetD8Async");
  return 0;
}

} // extern "C"
