//===- Driver.cpp - one GPU per rank: the CUDA libraries and the device ---===//
//
// The CUDA driver and cuBLASLt are dlopen'ed (pfrt_cuda.h says where it
// looks); their headers give only the types. Nothing links libcuda, so a
// machine without a GPU runs every other part of the runtime. With
// PFRT_CUDA_FAKE=1 the entry points are the host emulation's
// (emulation/FakeDevice.h). Here: the libraries, the device and its
// context, start-up and shutdown; Memory.cpp, Stream.cpp and Gemm.cpp do
// the rest of pfrt_cuda.h's host rows (Driver.h).
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include "../common/Internal.h"
#include "CudaInternal.h"
#include "emulation/FakeDevice.h"
#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <glob.h>
#include <string>
#include <vector>

using namespace pfrt;
using namespace pfrt::cuda::drv;

namespace pfrt {
namespace cuda {
namespace drv {
CudaState gCuda;
} // namespace drv
} // namespace cuda
} // namespace pfrt

/// A missing driver, library or device: one line, exit status 2.
[[noreturn]] void pfrt::cuda::drv::unavailable(const std::string &what) {
  int rank = 0;
  if (const char *r = std::getenv("PMI_RANK"))
    rank = std::atoi(r);
  std::fprintf(stderr, "pfrt: rank %d: %s\n", rank, what.c_str());
  std::fflush(stderr);
  std::exit(2);
}

namespace {

/// Directories to look in, in order (pfrt_cuda.h).
std::vector<std::string> searchDirs() {
  std::vector<std::string> dirs;
  if (const char *env = std::getenv("PFRT_CUDA_LIB_DIR")) {
    std::string s = env;
    for (size_t start = 0; start <= s.size();) {
      size_t end = s.find(':', start);
      if (end == std::string::npos)
        end = s.size();
      if (end > start)
        dirs.push_back(s.substr(start, end - start));
      start = end + 1;
    }
  }
  const char *noDefault = std::getenv("PFRT_CUDA_NO_DEFAULT_PATH");
  if (!noDefault || std::strcmp(noDefault, "1") != 0) {
    dirs.push_back(""); // the loader's own search
    std::vector<std::string> patterns = {
        "/usr/local/lib/python3*/dist-packages/nvidia/*/lib",
        "/usr/local/lib/python3*/site-packages/nvidia/*/lib",
        "/usr/lib/python3/dist-packages/nvidia/*/lib",
        "/opt/conda/lib/python3*/site-packages/nvidia/*/lib"};
    if (const char *home = std::getenv("HOME"))
      patterns.push_back(std::string(home) +
                         "/.local/lib/python3*/site-packages/nvidia/*/lib");
    for (const std::string &p : patterns) {
      glob_t g;
      if (glob(p.c_str(), 0, nullptr, &g) == 0)
        for (size_t i = 0; i < g.gl_pathc; ++i)
          dirs.push_back(g.gl_pathv[i]);
      globfree(&g);
    }
  }
  return dirs;
}

} // namespace

/// dlopen of `name` in the search directories, or null (`tried`: where).
void *pfrt::cuda::drv::tryOpenLibrary(const char *name, std::string &tried) {
  for (const std::string &dir : searchDirs()) {
    std::string path = dir.empty() ? name : dir + "/" + name;
    if (void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL))
      return h;
    tried += (tried.empty() ? "" : ", ") + (dir.empty() ? "default" : dir);
  }
  return nullptr;
}

namespace {

/// dlopen of `name` in the search directories, or a clear exit.
void *openLibrary(const char *name, const char *what) {
  std::string tried;
  if (void *h = tryOpenLibrary(name, tried))
    return h;
  unavailable(std::string("no ") + what + " (" + name + " not found in: " +
              (tried.empty() ? "nowhere: PFRT_CUDA_LIB_DIR is empty and "
                               "PFRT_CUDA_NO_DEFAULT_PATH=1"
                             : tried) +
              "); set PFRT_CUDA_LIB_DIR to its directory");
}

template <class F> void resolve(F &f, void *library, const char *symbol) {
  f = reinterpret_cast<F>(dlsym(library, symbol));
  if (!f)
    unavailable(std::string("the CUDA libraries lack ") + symbol +
                " (too old a driver or cuBLASLt?)");
}

/// Resolves the driver's and cuBLASLt's entry points (exit 2 without them).
void loadDriver() {
  CudaState &s = gCuda;
  if (s.loaded)
    return;
  if (pfrt::fake::enabled()) {
    // Tests without a GPU (emulation/FakeDevice.h): the host emulation.
#define PFRT_FAKE(fn, symbol) s.api.fn = &pfrt::fake::fn;
    PFRT_CUDA_DRIVER_FUNCTIONS(PFRT_FAKE)
    PFRT_CUBLASLT_FUNCTIONS(PFRT_FAKE)
#undef PFRT_FAKE
    std::fprintf(stderr,
                 "pfrt: rank %d: PFRT_CUDA_FAKE=1: the CUDA driver "
                 "and cuBLASLt are emulated on the host (a test "
                 "mode, not a GPU)\n",
                 pfrt_rank());
    s.loaded = true;
    return;
  }
  void *library = openLibrary("libcuda.so.1", "CUDA driver");
#define PFRT_RESOLVE(fn, symbol) resolve(s.api.fn, library, symbol);
  PFRT_CUDA_DRIVER_FUNCTIONS(PFRT_RESOLVE)
  library = openLibrary("libcublasLt.so.13", "cuBLASLt");
  PFRT_CUBLASLT_FUNCTIONS(PFRT_RESOLVE)
#undef PFRT_RESOLVE
  s.loaded = true;
}

} // namespace

void pfrt::cuda::drv::check(CUresult r, const char *call) {
  if (r == CUDA_SUCCESS)
    return;
  const char *name = nullptr;
  if (gCuda.api.cuGetErrorName)
    gCuda.api.cuGetErrorName(r, &name);
  fatal("%s failed: %s (%d)", call, name ? name : "unknown error", int(r));
}

void pfrt::cuda::drv::check(cublasStatus_t r, const char *call) {
  if (r == CUBLAS_STATUS_SUCCESS)
    return;
  // cublas_api.h's names (cuBLASLt has no name function of its own).
  const char *name = r == CUBLAS_STATUS_NOT_INITIALIZED    ? "NOT_INITIALIZED"
                     : r == CUBLAS_STATUS_ALLOC_FAILED     ? "ALLOC_FAILED"
                     : r == CUBLAS_STATUS_INVALID_VALUE    ? "INVALID_VALUE"
                     : r == CUBLAS_STATUS_ARCH_MISMATCH    ? "ARCH_MISMATCH"
                     : r == CUBLAS_STATUS_MAPPING_ERROR    ? "MAPPING_ERROR"
                     : r == CUBLAS_STATUS_EXECUTION_FAILED ? "EXECUTION_FAILED"
                     : r == CUBLAS_STATUS_INTERNAL_ERROR   ? "INTERNAL_ERROR"
                     : r == CUBLAS_STATUS_NOT_SUPPORTED    ? "NOT_SUPPORTED"
                     : r == CUBLAS_STATUS_LICENSE_ERROR    ? "LICENSE_ERROR"
                                                           : "unknown";
  fatal("%s failed: CUBLAS_STATUS_%s (%d)", call, name, int(r));
}

void pfrt::cuda::drv::requireReady(const char *fn) {
  if (!gCuda.ready)
    fatal("%s: pfrt_cuda_init has not been called", fn);
}

namespace pfrt {
namespace cuda {

bool deviceReady() { return gCuda.ready; }

void *openOptionalLibrary(const char *name, std::string *tried) {
  std::string where;
  void *h = tryOpenLibrary(name, where);
  if (tried)
    *tried = where;
  return h;
}

void *computeStream() {
  requireReady("computeStream");
  return gCuda.stream;
}

int64_t deviceIdentity() {
  requireReady("deviceIdentity");
  CUdevice dev;
  CUuuid uuid;
  check(gCuda.api.cuDeviceGet(&dev, gCuda.device), "cuDeviceGet");
  check(gCuda.api.cuDeviceGetUuid(&uuid, dev), "cuDeviceGetUuid");
  uint64_t h = 0xcbf29ce484222325ull;
  for (char b : uuid.bytes)
    h = (h ^ uint64_t(uint8_t(b))) * 0x100000001b3ull;
  return int64_t(h & 0x7fffffffffffffffull);
}

static bool gHostStaged = false;
void noteHostStagedCommunication() { gHostStaged = true; }
bool hostStagedCommunication() { return gHostStaged; }
void clearHostStagedCommunication() { gHostStaged = false; }

} // namespace cuda
} // namespace pfrt

extern "C" {

int pfrt_cuda_device_count(void) {
  if (pfrt::fake::enabled())
    return int(pfrt::fake::visibleDevices().size());
  void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!cuda)
    return 0;
  auto init = reinterpret_cast<decltype(&::cuInit)>(dlsym(cuda, "cuInit"));
  auto count = reinterpret_cast<decltype(&::cuDeviceGetCount)>(
      dlsym(cuda, "cuDeviceGetCount"));
  int n = 0;
  if (!init || !count || init(0) != CUDA_SUCCESS || count(&n) != CUDA_SUCCESS)
    return 0;
  return n;
}

int pfrt_cuda_init(int64_t device) {
  CudaState &s = gCuda;
  if (s.ready)
    return 0;
  loadDriver();
  const Api &api = s.api;
  CUresult r = api.cuInit(0);
  if (r != CUDA_SUCCESS) {
    const char *name = nullptr;
    api.cuGetErrorName(r, &name);
    unavailable(std::string("no CUDA device (cuInit: ") +
                (name ? name : "error") + ")");
  }
  int count = 0;
  check(api.cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (count == 0)
    unavailable("no CUDA device (the driver reports none)");
  if (device < 0 || device >= count)
    fatal("pfrt_cuda_init: device %lld does not exist (%d devices)",
          (long long)device, count);
  CUdevice dev;
  check(api.cuDeviceGet(&dev, int(device)), "cuDeviceGet");
  check(api.cuDevicePrimaryCtxRetain(&s.context, dev),
        "cuDevicePrimaryCtxRetain");
  check(api.cuCtxSetCurrent(s.context), "cuCtxSetCurrent");
  check(api.cuStreamCreate(&s.stream, CU_STREAM_NON_BLOCKING),
        "cuStreamCreate");
  check(api.cublasLtCreate(&s.lt), "cublasLtCreate");
  check(api.cuMemAlloc(&s.workspace, s.workspaceBytes),
        "cuMemAlloc(cuBLASLt workspace)");
  s.device = int(device);
  s.ready = true;
  pfrt::cuda::drv::startDeviceClock();
  pfrt::cuda::configureCollectives();
  return 0;
}

int pfrt_cuda_finalize(void) {
  if (gCuda.ready) {
    pfrt_cuda_synchronize();
    pfrt::traceResolveDevice();
    pfrt::cuda::stopCollectives();
    pfrt::cuda::checkKernelErrors();
  }
  return 0;
}

} // extern "C"
