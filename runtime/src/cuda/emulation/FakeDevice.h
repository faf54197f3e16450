//===- FakeDevice.h - a host emulation of the CUDA driver and cuBLASLt ----===//
//
// For tests on machines without a GPU: with PFRT_CUDA_FAKE=1, Driver.cpp takes
// the entry points below instead of libcuda's and libcublasLt's, so the whole
// GPU path of libpfrt (device twins, arena, staging, scalar mirrors, kernel
// arguments, the row-major to cuBLASLt GEMM mapping, graph capture and
// replay) runs on the host: device memory is host memory, a kernel launch
// runs the host build of Kernels.cu over its whole grid (blocks and threads
// one after another), cublasLtMatmul computes the column-major product it
// describes in float64, and a captured stream records closures that a
// graph launch replays. It is a test of libpfrt's logic, not of CUDA: the
// arithmetic of the GEMM differs from cuBLAS's, and nothing here says a
// kernel would be correct under real concurrency (CI also checks the
// kernels' bodies against the CPU kernels, kernels/DeviceBodies.h). What
// it models and what it does not: README.md here.
//
// Opt-in only (an environment variable the tests set): a program never
// falls back to it.
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_CUDA_FAKEDEVICE_H
#define PFRT_SRC_CUDA_FAKEDEVICE_H

#include <cublasLt.h>
#include <cuda.h>

#include <cstdint>
#include <functional>
#include <vector>

namespace pfrt {
namespace fake {

/// Whether PFRT_CUDA_FAKE=1 asks for the emulation.
bool enabled();

/// The emulated machine's GPUs: PFRT_CUDA_FAKE_DEVICES (1 to 64, default
/// 1), of which CUDA_VISIBLE_DEVICES shows some as CUDA does (a comma list
/// of indices, read up to the first that is not one of them). Device
/// ordinal i is physical device visibleDevices()[i]; its UUID names the
/// physical one, so ranks that see one GPU under different ordinals (or
/// different GPUs under ordinal 0) are told apart as on a real machine.
int physicalDevices();
const std::vector<int> &visibleDevices();

/// The emulated entry points, each with its CUDA declaration's type (the
/// names go through cuda.h's versioning macros like the real ones).
#define PFRT_FAKE_DECLARE(fn, symbol) decltype(::fn) fn;
#define PFRT_FAKE_FUNCTIONS(X)                                                 \
  X(cuInit, "")                                                                \
  X(cuGetErrorName, "")                                                        \
  X(cuDeviceGetCount, "")                                                      \
  X(cuDeviceGet, "")                                                           \
  X(cuDeviceGetUuid, "")                                                       \
  X(cuDevicePrimaryCtxRetain, "")                                              \
  X(cuCtxSetCurrent, "")                                                       \
  X(cuStreamCreate, "")                                                        \
  X(cuEventCreate, "")                                                         \
  X(cuEventRecord, "")                                                         \
  X(cuStreamWaitEvent, "")                                                     \
  X(cuEventSynchronize, "")                                                    \
  X(cuEventElapsedTime, "")                                                    \
  X(cuMemFree, "")                                                             \
  X(cuDeviceGetName, "")                                                       \
  X(cuStreamSynchronize, "")                                                   \
  X(cuStreamIsCapturing, "")                                                   \
  X(cuMemAlloc, "")                                                            \
  X(cuMemGetInfo, "")                                                          \
  X(cuMemAllocHost, "")                                                        \
  X(cuThreadExchangeStreamCaptureMode, "")                                     \
  X(cuMemcpyHtoDAsync, "")                                                     \
  X(cuMemcpyDtoHAsync, "")                                                     \
  X(cuMemcpyDtoDAsync, "")                                                     \
  X(cuMemsetD8Async, "")                                                       \
  X(cuModuleLoadData, "")                                                      \
  X(cuModuleGetFunction, "")                                                   \
  X(cuLaunchKernel, "")                                                        \
  X(cuStreamBeginCapture, "")                                                  \
  X(cuStreamEndCapture, "")                                                    \
  X(cuGraphInstantiate, "")                                                    \
  X(cuGraphLaunch, "")                                                         \
  X(cublasLtCreate, "")                                                        \
  X(cublasLtMatmulDescCreate, "")                                              \
  X(cublasLtMatmulDescSetAttribute, "")                                        \
  X(cublasLtMatrixLayoutCreate, "")                                            \
  X(cublasLtMatrixLayoutSetAttribute, "")                                      \
  X(cublasLtMatmulPreferenceCreate, "")                                        \
  X(cublasLtMatmulPreferenceDestroy, "")                                       \
  X(cublasLtMatmulPreferenceSetAttribute, "")                                  \
  X(cublasLtMatmulAlgoGetHeuristic, "")                                        \
  X(cublasLtMatmul, "")                                                        \
  X(cublasLtGetVersion, "")
PFRT_FAKE_FUNCTIONS(PFRT_FAKE_DECLARE)
#undef PFRT_FAKE_DECLARE

/// Runs `op` now, or records it in the graph while the stream is captured
/// (what every emulated stream operation does; FakeNccl.cpp's collectives
/// use it too).
void enqueueHostOp(std::function<void()> op);
/// The same on `stream`, one of the emulated streams. Every stream runs its
/// work in program order on the host (one valid order of the streams'
/// work), but a capture is checked as CUDA checks it: work on another
/// stream than the captured one is refused unless that stream joined the
/// capture (it waited for an event recorded in it), and ending the capture
/// is refused while a stream that joined has work the captured stream did
/// not wait for (CUDA_ERROR_STREAM_CAPTURE_UNJOINED).
CUresult enqueueHostOpOn(CUstream stream, std::function<void()> op);

/// A host build of one kernel of Kernels.cu: binds a launch's arguments
/// (cuLaunchKernel's array of pointers to each argument, copied now) into
/// a closure running one thread of it.
struct HostKernel {
  const char *name;
  std::function<std::function<void()>(void **args)> bind;
  /// The closure does the whole grid's work in one call (a generated
  /// kernel's host twin): a launch runs it once.
  bool wholeGrid = false;
};

/// Makes `name` a kernel the emulated module has: a launch with
/// cuLaunchKernel's arguments (`numPointers` buffers, then the element
/// count) runs `twin` once over all elements. Registering a name again
/// replaces its twin.
void registerPackedKernel(const char *name, unsigned numPointers,
                          void (*twin)(void **buffers, int64_t n));
/// Every kernel's host build (FakeKernels.cpp); ends with a null name.
extern const HostKernel kHostKernels[];

/// The emulated thread and block indices of the running launch.
struct Dim3 {
  unsigned x = 0, y = 0, z = 0;
};
extern Dim3 threadIdx, blockIdx, blockDim, gridDim;

} // namespace fake
} // namespace pfrt

#endif // PFRT_SRC_CUDA_FAKEDEVICE_H
