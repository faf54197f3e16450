//===- Driver.h - the CUDA driver and cuBLASLt, dlopen'ed ------*- C++ -*-===//
//
// Not installed; nothing here is part of the ABI. The state of the driver
// layer (pfrt_cuda.h's host rows), shared by its files: Driver.cpp (the
// libraries, the device), Memory.cpp (allocations, the arena, copies),
// Stream.cpp (streams, events, launches, graphs, the trace's clock) and
// Gemm.cpp (cuBLASLt's GEMMs). The device twins use CudaInternal.h.
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_CUDA_DRIVER_H
#define PFRT_SRC_CUDA_DRIVER_H

#include <cublasLt.h>
#include <cuda.h>

#include <cstdint>
#include <string>

namespace pfrt {
namespace cuda {
namespace drv {

// The driver and cuBLASLt entry points used, typed from their headers.
#define PFRT_CUDA_DRIVER_FUNCTIONS(X)                                          \
  X(cuInit, "cuInit")                                                          \
  X(cuGetErrorName, "cuGetErrorName")                                          \
  X(cuDeviceGetCount, "cuDeviceGetCount")                                      \
  X(cuDeviceGet, "cuDeviceGet")                                                \
  X(cuDeviceGetUuid, "cuDeviceGetUuid_v2")                                     \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")                      \
  X(cuCtxSetCurrent, "cuCtxSetCurrent")                                        \
  X(cuStreamCreate, "cuStreamCreate")                                          \
  X(cuStreamSynchronize, "cuStreamSynchronize")                                \
  X(cuMemAlloc, "cuMemAlloc_v2")                                               \
  X(cuMemGetInfo, "cuMemGetInfo_v2")                                           \
  X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2")                                 \
  X(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2")                                 \
  X(cuMemsetD8Async, "cuMemsetD8Async")                                        \
  X(cuModuleLoadData, "cuModuleLoadData")                                      \
  X(cuModuleGetFunction, "cuModuleGetFunction")                                \
  X(cuLaunchKernel, "cuLaunchKernel")                                          \
  X(cuStreamBeginCapture, "cuStreamBeginCapture_v2")                           \
  X(cuStreamEndCapture, "cuStreamEndCapture")                                  \
  X(cuGraphInstantiate, "cuGraphInstantiateWithFlags")                         \
  X(cuGraphLaunch, "cuGraphLaunch")                                            \
  X(cuStreamIsCapturing, "cuStreamIsCapturing")                                \
  X(cuMemAllocHost, "cuMemAllocHost_v2")                                       \
  X(cuThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode")    \
  X(cuEventCreate, "cuEventCreate")                                            \
  X(cuEventRecord, "cuEventRecord")                                            \
  X(cuStreamWaitEvent, "cuStreamWaitEvent")                                    \
  X(cuEventSynchronize, "cuEventSynchronize")                                  \
  X(cuEventElapsedTime, "cuEventElapsedTime_v2")                               \
  X(cuMemFree, "cuMemFree_v2")                                                 \
  X(cuDeviceGetName, "cuDeviceGetName")

#define PFRT_CUBLASLT_FUNCTIONS(X)                                             \
  X(cublasLtCreate, "cublasLtCreate")                                          \
  X(cublasLtMatmulDescCreate, "cublasLtMatmulDescCreate")                      \
  X(cublasLtMatmulDescSetAttribute, "cublasLtMatmulDescSetAttribute")          \
  X(cublasLtMatrixLayoutCreate, "cublasLtMatrixLayoutCreate")                  \
  X(cublasLtMatrixLayoutSetAttribute, "cublasLtMatrixLayoutSetAttribute")      \
  X(cublasLtMatmulPreferenceCreate, "cublasLtMatmulPreferenceCreate")          \
  X(cublasLtMatmulPreferenceDestroy, "cublasLtMatmulPreferenceDestroy")        \
  X(cublasLtMatmulPreferenceSetAttribute,                                      \
    "cublasLtMatmulPreferenceSetAttribute")                                    \
  X(cublasLtMatmulAlgoGetHeuristic, "cublasLtMatmulAlgoGetHeuristic")          \
  X(cublasLtMatmul, "cublasLtMatmul")                                          \
  X(cublasLtGetVersion, "cublasLtGetVersion")

struct Api {
#define PFRT_FIELD(fn, symbol) decltype(&::fn) fn = nullptr;
  PFRT_CUDA_DRIVER_FUNCTIONS(PFRT_FIELD)
  PFRT_CUBLASLT_FUNCTIONS(PFRT_FIELD)
#undef PFRT_FIELD
};

/// The driver layer's state: the entry points, the device, its compute
/// stream, cuBLASLt's handle and workspace, the arena, the captured graph.
struct CudaState {
  Api api;
  bool loaded = false, ready = false;
  CUcontext context = nullptr;
  int device = 0;
  CUstream stream = nullptr;
  cublasLtHandle_t lt = nullptr;
  CUdeviceptr workspace = 0;
  size_t workspaceBytes = 32u << 20;
  CUdeviceptr arena = 0;
  int64_t arenaBytes = 0, highWater = 0;
  CUgraphExec graph = nullptr;
  uint64_t syncs = 0;
};
extern CudaState gCuda;

/// A missing driver, library or device: one line, exit status 2.
[[noreturn]] void unavailable(const std::string &what);
/// dlopen of `name` in the search directories (pfrt_cuda.h), or null
/// (`tried`: where it looked).
void *tryOpenLibrary(const char *name, std::string &tried);

/// Fatal, naming `call` and the error, unless r is a success.
void check(CUresult r, const char *call);
void check(cublasStatus_t r, const char *call);
/// Fatal unless pfrt_cuda_init has run.
void requireReady(const char *fn);

/// With PF_TRACE, gives the trace's events device times (Stream.cpp; called
/// by pfrt_cuda_init once the device is ready).
void startDeviceClock();

} // namespace drv
} // namespace cuda
} // namespace pfrt

#endif // PFRT_SRC_CUDA_DRIVER_H
