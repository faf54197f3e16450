//===- Cuda.cpp - one GPU per rank: driver, arena, kernels, cuBLASLt ------===//
//
// The CUDA driver and cuBLASLt are dlopen'ed (pfrt_cuda.h says where it
// looks); their headers give only the types. Nothing links libcuda, so a
// machine without a GPU runs every other part of the runtime.
//
//===----------------------------------------------------------------------===//

#include "../common/Internal.h"
#include "CudaInternal.h"
#include "FakeDevice.h"
#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

#include <cublasLt.h>
#include <cuda.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <glob.h>
#include <map>
#include <set>
#include <string>
#include <sys/file.h>
#include <tuple>
#include <unistd.h>
#include <vector>

using namespace pfrt;

namespace {

/// A missing driver, library or device: one line, exit status 2.
[[noreturn]] void unavailable(const std::string &what) {
  int rank = 0;
  if (const char *r = std::getenv("PMI_RANK"))
    rank = std::atoi(r);
  std::fprintf(stderr, "pfrt: rank %d: %s\n", rank, what.c_str());
  std::fflush(stderr);
  std::exit(2);
}

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

/// dlopen of `name` in the search directories, or null (`tried`: where).
void *tryOpenLibrary(const char *name, std::string &tried) {
  for (const std::string &dir : searchDirs()) {
    std::string path = dir.empty() ? name : dir + "/" + name;
    if (void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL))
      return h;
    tried += (tried.empty() ? "" : ", ") + (dir.empty() ? "default" : dir);
  }
  return nullptr;
}

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

/// One shape of GEMM, ready to run.
struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  /// The index of `algo` among cuBLASLt's heuristic's answers (0 unless
  /// PFRT_CUDA_GEMM_TUNE chose another).
  int choice = 0;
  /// cuBLASLt has no algorithm for it (asked only of the BGRADB epilogue,
  /// whose callers fall back to a GEMM and a reduction).
  bool unsupported = false;
};

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
  std::map<std::vector<int64_t>, Plan> plans;
  CUgraphExec graph = nullptr;
  uint64_t syncs = 0;
} gState;

template <class F> void resolve(F &f, void *library, const char *symbol) {
  f = reinterpret_cast<F>(dlsym(library, symbol));
  if (!f)
    unavailable(std::string("the CUDA libraries lack ") + symbol +
                " (too old a driver or cuBLASLt?)");
}

/// Resolves the driver's and cuBLASLt's entry points (exit 2 without them).
void loadDriver() {
  CudaState &s = gState;
  if (s.loaded)
    return;
  if (pfrt::fake::enabled()) {
    // Tests without a GPU (FakeDevice.h): the host emulation.
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

void check(CUresult r, const char *call) {
  if (r == CUDA_SUCCESS)
    return;
  const char *name = nullptr;
  if (gState.api.cuGetErrorName)
    gState.api.cuGetErrorName(r, &name);
  fatal("%s failed: %s (%d)", call, name ? name : "unknown error", int(r));
}

void check(cublasStatus_t r, const char *call) {
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

void requireReady(const char *fn) {
  if (!gState.ready)
    fatal("%s: pfrt_cuda_init has not been called", fn);
}

/// PFRT_CUDA_GEMM_TUNE: which of cuBLASLt's algorithms each GEMM shape
/// runs. Unset or 0: the heuristic's first (cuBLASLt's own choice). 1: at
/// a shape's first use (outside a capture) up to 8 of the heuristic's
/// answers are timed on scratch buffers and the fastest is kept for the
/// run. A file's path: the same, and the choices are kept in that file: a
/// shape found there takes its recorded choice without timing, so runs
/// with one file run the same algorithms and give the same bits (timing
/// alone may choose differently from one run to the next, and two
/// algorithms may sum in different orders). The file names the device and
/// cuBLASLt's version; choices made for another are dropped.
struct GemmTuning {
  bool loaded = false;
  int mode = 0; // 0 off, 1 timed, 2 timed and kept in `path`
  std::string path, header;
  std::map<std::string, int> table;

  bool on() { return mode != 0; }

  int recorded(const std::string &name, int found) {
    auto it = table.find(name);
    if (it == table.end())
      return -1;
    if (it->second >= found) {
      std::fprintf(stderr,
                   "pfrt: rank %d: %s: the choice %d recorded for %s is not "
                   "among cuBLASLt's %d answers; timing it again\n",
                   pfrt_rank(), path.c_str(), it->second, name.c_str(), found);
      return -1;
    }
    return it->second;
  }

  void record(const std::string &name, int choice) {
    table[name] = choice;
    if (mode != 2)
      return;
    // Ranks of one job may share the file: under a lock, merge what the
    // others wrote since (this rank's choices win), then rewrite it whole
    // by a rename (never a file with half an entry).
    std::string lockPath = path + ".lock";
    int lock = open(lockPath.c_str(), O_RDWR | O_CREAT, 0644);
    if (lock < 0 || flock(lock, LOCK_EX) != 0)
      fatal("PFRT_CUDA_GEMM_TUNE: cannot lock %s", lockPath.c_str());
    std::map<std::string, int> merged;
    read(merged);
    for (auto &[shape, index] : table)
      merged[shape] = index;
    std::string tmp = path + ".tmp." + std::to_string(getpid());
    FILE *f = std::fopen(tmp.c_str(), "w");
    if (!f)
      fatal("PFRT_CUDA_GEMM_TUNE: cannot write %s", tmp.c_str());
    std::fprintf(f, "%s\n", header.c_str());
    for (auto &[shape, index] : merged)
      std::fprintf(f, "%s %d\n", shape.c_str(), index);
    if (std::fclose(f) != 0 || std::rename(tmp.c_str(), path.c_str()) != 0)
      fatal("PFRT_CUDA_GEMM_TUNE: cannot write %s", path.c_str());
    close(lock); // (releases the lock)
  }

  /// Adds the file's choices to `into`; false when it was made for another
  /// device or cuBLASLt (or does not exist yet).
  bool read(std::map<std::string, int> &into) {
    FILE *f = std::fopen(path.c_str(), "r");
    if (!f)
      return true; // a new file
    char line[512];
    bool same =
        std::fgets(line, sizeof(line), f) && std::string(line) == header + "\n";
    int lineNo = 1;
    while (same && std::fgets(line, sizeof(line), f)) {
      ++lineNo;
      std::string text(line);
      size_t space = text.find_last_of(' ');
      char *end = nullptr;
      long index = space == std::string::npos
                       ? -1
                       : std::strtol(text.c_str() + space + 1, &end, 10);
      if (index < 0 || !end || end == text.c_str() + space + 1 ||
          (*end != '\n' && *end != 0))
        fatal("PFRT_CUDA_GEMM_TUNE: %s:%d: expected `<shape> <choice>`, "
              "got: %s",
              path.c_str(), lineNo, line);
      into[text.substr(0, space)] = int(index);
    }
    std::fclose(f);
    return same;
  }
};

GemmTuning &gemmTuning() {
  static GemmTuning t;
  if (t.loaded)
    return t;
  t.loaded = true;
  const char *v = std::getenv("PFRT_CUDA_GEMM_TUNE");
  if (!v || !*v || std::strcmp(v, "0") == 0)
    return t;
  if (std::strcmp(v, "1") == 0) {
    t.mode = 1;
    return t;
  }
  t.mode = 2;
  t.path = v;
  char device[256] = "unknown";
  CUdevice dev;
  if (gState.api.cuDeviceGet(&dev, gState.device) == CUDA_SUCCESS)
    gState.api.cuDeviceGetName(device, sizeof(device), dev);
  t.header = std::string("# pfrt gemm choices: device ") + device +
             ", cublasLt " + std::to_string(gState.api.cublasLtGetVersion());
  if (!t.read(t.table))
    std::fprintf(stderr,
                 "pfrt: rank %d: %s was made for another device or cuBLASLt "
                 "(%s); timing every shape again\n",
                 pfrt_rank(), v, t.header.c_str());
  return t;
}

/// A GEMM's row-major arguments (pfrt_cuda_gemm's), for the tuner.
struct GemmShape {
  int64_t m, n, k;
  int32_t ta, tb;
  int64_t lda, ldb, ldc, batch, sa, sb, sc;
};

/// Where a plan's key holds its operands' alignments (pfrt_cuda_gemm's
/// order: our A, our B, C), after its 14 shape fields.
constexpr size_t kAlignA = 14, kAlignB = 15, kAlignC = 16, kKeySize = 17;

std::string gemmName(const std::vector<int64_t> &key) {
  static const char *kFields[] = {"ta",  "tb",  "m",        "n",     "k",
                                  "lda", "ldb", "ldc",      "batch", "sa",
                                  "sb",  "sc",  "epilogue", "tf32"};
  std::string name;
  for (size_t i = 0; i < key.size() && i < 14; ++i)
    name +=
        (i ? "," : "") + std::string(kFields[i]) + "=" + std::to_string(key[i]);
  // Operands aligned less than 256 bytes get other answers from the
  // heuristic: their own entry (the names of aligned shapes unchanged).
  if (key.size() == kKeySize &&
      (key[kAlignA] < 256 || key[kAlignB] < 256 || key[kAlignC] < 256))
    name += ",align=" + std::to_string(key[kAlignA]) + "/" +
            std::to_string(key[kAlignB]) + "/" + std::to_string(key[kAlignC]);
  return name;
}

/// Times the heuristic's `found` answers for `p` (each run once, then
/// three times between events) on zeroed scratch buffers and returns the
/// index of the fastest (the first of equals). Returns 0 (cuBLASLt's own
/// choice) where it cannot time: during a capture, for the DRELU_BGRAD
/// epilogue (its aux buffer), or without the scratch memory.
int timeCandidates(const Plan &p,
                   const cublasLtMatmulHeuristicResult_t *results, int found,
                   const GemmShape &g, float beta, int32_t epilogue,
                   const std::string &name) {
  CudaState &s = gState;
  const Api &api = s.api;
  auto note = [&](const char *why) {
    std::fprintf(stderr,
                 "pfrt: rank %d: gemm tune: %s: %s; cuBLASLt's own "
                 "choice\n",
                 pfrt_rank(), name.c_str(), why);
    return 0;
  };
  if (found < 2)
    return 0;
  if (pfrt::cuda::streamCapturing())
    return note("first used during a capture");
  if (epilogue == PFRT_EPILOGUE_DRELU_BGRAD)
    return note("DRELU_BGRAD is not timed");
  auto span = [&](int64_t ld, int64_t cols, int64_t stride) {
    return size_t((g.batch - 1) * stride + ld * cols) * sizeof(float);
  };
  // Column-major operands as planFor made them: A' = B, B' = A, C' = C^T.
  size_t bytesA = span(g.ldb, g.tb ? g.n : g.k, g.sb);
  size_t bytesB = span(g.lda, g.ta ? g.k : g.m, g.sa);
  size_t bytesC = span(g.ldc, g.m, g.sc);
  size_t bytesBias = size_t(std::max({g.m, g.n, g.k})) * sizeof(float);
  size_t total = bytesA + bytesB + bytesC + bytesBias + 4 * 256;
  CUdeviceptr scratch = 0;
  if (api.cuMemAlloc(&scratch, total) != CUDA_SUCCESS)
    return note("no device memory for the scratch buffers");
  check(api.cuMemsetD8Async(scratch, 0, total, s.stream), "cuMemsetD8Async");
  auto align = [](size_t x) { return (x + 255) / 256 * 256; };
  CUdeviceptr a = scratch, b = a + align(bytesA), c = b + align(bytesB),
              bias = c + align(bytesC);
  void *biasPtr = reinterpret_cast<void *>(bias);
  if (epilogue != PFRT_EPILOGUE_NONE && epilogue != PFRT_EPILOGUE_RELU)
    check(api.cublasLtMatmulDescSetAttribute(p.desc,
                                             CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                             &biasPtr, sizeof(biasPtr)),
          "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
  static CUevent start = nullptr, stop = nullptr;
  if (!start) {
    check(api.cuEventCreate(&start, CU_EVENT_DEFAULT), "cuEventCreate");
    check(api.cuEventCreate(&stop, CU_EVENT_DEFAULT), "cuEventCreate");
  }
  float alpha = 1.0f;
  std::string times;
  int best = -1;
  float bestMs = 0;
  for (int i = 0; i < found; ++i) {
    if (results[i].state != CUBLAS_STATUS_SUCCESS)
      continue;
    auto launch = [&] {
      return api.cublasLtMatmul(
          s.lt, p.desc, &alpha, reinterpret_cast<void *>(a), p.a,
          reinterpret_cast<void *>(b), p.b, &beta, reinterpret_cast<void *>(c),
          p.c, reinterpret_cast<void *>(c), p.c, &results[i].algo,
          reinterpret_cast<void *>(s.workspace), s.workspaceBytes, s.stream);
    };
    if (launch() != CUBLAS_STATUS_SUCCESS)
      continue; // an answer that does not run is never chosen
    check(api.cuEventRecord(start, s.stream), "cuEventRecord");
    for (int r = 0; r < 3; ++r)
      check(launch(), "cublasLtMatmul");
    check(api.cuEventRecord(stop, s.stream), "cuEventRecord");
    check(api.cuEventSynchronize(stop), "cuEventSynchronize");
    float ms = 0;
    check(api.cuEventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
    ms /= 3;
    char item[64];
    std::snprintf(item, sizeof(item), "%s%d: %.4f ms",
                  times.empty() ? "" : ", ", i, ms);
    times += item;
    if (best < 0 || ms < bestMs) {
      best = i;
      bestMs = ms;
    }
  }
  check(api.cuStreamSynchronize(s.stream), "cuStreamSynchronize");
  check(api.cuMemFree(scratch), "cuMemFree");
  if (const char *v = std::getenv("PFRT_CUDA_VERBOSE"); v && *v == '1')
    std::fprintf(stderr, "pfrt: rank %d: gemm tune: %s: %s; chosen %d\n",
                 pfrt_rank(), name.c_str(), times.c_str(), best);
  if (best < 0)
    fatal("pfrt_cuda_gemm: none of cuBLASLt's %d algorithms for %s runs", found,
          name.c_str());
  return best;
}

Plan &planFor(const std::vector<int64_t> &key, int32_t ta, int32_t tb,
              int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb,
              int64_t ldc, int64_t batch, int64_t sa, int64_t sb, int64_t sc,
              float beta, int32_t epilogue, int32_t tf32) {
  CudaState &s = gState;
  auto it = s.plans.find(key);
  if (it != s.plans.end())
    return it->second;
  Plan p;
  const Api &api = s.api;
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: A'
  // is B, B' is A, m' = n, n' = m.
  cublasOperation_t opA = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasComputeType_t compute =
      tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  check(api.cublasLtMatmulDescCreate(&p.desc, compute, CUDA_R_32F),
        "cublasLtMatmulDescCreate");
  check(api.cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                           &opA, sizeof(opA)),
        "cublasLtMatmulDescSetAttribute(TRANSA)");
  check(api.cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB,
                                           &opB, sizeof(opB)),
        "cublasLtMatmulDescSetAttribute(TRANSB)");
  static const cublasLtEpilogue_t kEpilogues[] = {
      CUBLASLT_EPILOGUE_DEFAULT,     CUBLASLT_EPILOGUE_RELU,
      CUBLASLT_EPILOGUE_BIAS,        CUBLASLT_EPILOGUE_RELU_BIAS,
      CUBLASLT_EPILOGUE_DRELU_BGRAD, CUBLASLT_EPILOGUE_BGRADB};
  cublasLtEpilogue_t ep = kEpilogues[epilogue];
  check(api.cublasLtMatmulDescSetAttribute(
            p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &ep, sizeof(ep)),
        "cublasLtMatmulDescSetAttribute(EPILOGUE)");
  if (epilogue == PFRT_EPILOGUE_DRELU_BGRAD) {
    int64_t auxLd = n;
    check(api.cublasLtMatmulDescSetAttribute(
              p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &auxLd,
              sizeof(auxLd)),
          "cublasLtMatmulDescSetAttribute(AUX_LD)");
  }
  auto layout = [&](cublasLtMatrixLayout_t *l, uint64_t rows, uint64_t cols,
                    int64_t ld, int64_t stride) {
    check(api.cublasLtMatrixLayoutCreate(l, CUDA_R_32F, rows, cols, ld),
          "cublasLtMatrixLayoutCreate");
    if (batch > 1) {
      int32_t count = int32_t(batch);
      check(api.cublasLtMatrixLayoutSetAttribute(
                *l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
            "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)");
      check(api.cublasLtMatrixLayoutSetAttribute(
                *l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                sizeof(stride)),
            "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)");
    }
  };
  layout(&p.a, tb ? k : n, tb ? n : k, ldb, sb);
  layout(&p.b, ta ? m : k, ta ? k : m, lda, sa);
  layout(&p.c, n, m, ldc, sc);
  cublasLtMatmulPreference_t pref;
  check(api.cublasLtMatmulPreferenceCreate(&pref),
        "cublasLtMatmulPreferenceCreate");
  check(api.cublasLtMatmulPreferenceSetAttribute(
            pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &s.workspaceBytes,
            sizeof(s.workspaceBytes)),
        "cublasLtMatmulPreferenceSetAttribute");
  // cuBLASLt's A is our B and its B our A (see above); C and D are c.
  const uint32_t aligns[4] = {uint32_t(key[kAlignB]), uint32_t(key[kAlignA]),
                              uint32_t(key[kAlignC]), uint32_t(key[kAlignC])};
  const cublasLtMatmulPreferenceAttributes_t alignAttrs[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int j = 0; j < 4; ++j)
    check(api.cublasLtMatmulPreferenceSetAttribute(
              pref, alignAttrs[j], &aligns[j], sizeof(aligns[j])),
          "cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT)");
  // Up to kCandidates answers: the first is cuBLASLt's own choice, the
  // others are what PFRT_CUDA_GEMM_TUNE may time against it.
  constexpr int kCandidates = 8;
  cublasLtMatmulHeuristicResult_t results[kCandidates] = {};
  GemmTuning &tuning = gemmTuning();
  int found = 0;
  cublasStatus_t heuristic = api.cublasLtMatmulAlgoGetHeuristic(
      s.lt, p.desc, p.a, p.b, p.c, p.c, pref, tuning.on() ? kCandidates : 1,
      results, &found);
  check(api.cublasLtMatmulPreferenceDestroy(pref),
        "cublasLtMatmulPreferenceDestroy");
  if (epilogue == PFRT_EPILOGUE_BGRADB &&
      (heuristic != CUBLAS_STATUS_SUCCESS || found < 1)) {
    p.unsupported = true;
    return s.plans[key] = p;
  }
  check(heuristic, "cublasLtMatmulAlgoGetHeuristic");
  if (found < 1)
    fatal("pfrt_cuda_gemm: cuBLASLt has no algorithm for %lld x %lld x %lld "
          "(epilogue %d)",
          (long long)m, (long long)n, (long long)k, epilogue);
  if (tuning.on()) {
    std::string name = gemmName(key);
    p.choice = tuning.recorded(name, found);
    if (p.choice < 0) {
      GemmShape shape{m, n, k, ta, tb, lda, ldb, ldc, batch, sa, sb, sc};
      p.choice = timeCandidates(p, results, found, shape, beta, epilogue, name);
      tuning.record(name, p.choice);
    }
  }
  p.algo = results[p.choice].algo;
  return s.plans[key] = p;
}

} // namespace

namespace pfrt {
namespace cuda {

bool deviceReady() { return gState.ready; }

bool streamCapturing() {
  CudaState &s = gState;
  requireReady("streamCapturing");
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  check(s.api.cuStreamIsCapturing(s.stream, &status), "cuStreamIsCapturing");
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

void *allocPersistent(int64_t bytes, const char *what) {
  CudaState &s = gState;
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
  CudaState &s = gState;
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

uint64_t syncCount() { return gState.syncs; }

namespace {
/// The trace's device timeline (PF_TRACE): timing events from a free list,
/// their times measured from a reference event the host waited for.
struct DeviceClock {
  std::vector<CUevent> free;
  CUevent reference = nullptr;
  double referenceUs = 0;
} gClock;

void *traceMark(void *stream) {
  CUevent e;
  if (gClock.free.empty()) {
    check(gState.api.cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate");
  } else {
    e = gClock.free.back();
    gClock.free.pop_back();
  }
  check(gState.api.cuEventRecord(e, stream ? static_cast<CUstream>(stream)
                                           : gState.stream),
        "cuEventRecord");
  return e;
}

double traceResolveUs(void *mark) {
  CUevent e = static_cast<CUevent>(mark);
  check(gState.api.cuEventSynchronize(e), "cuEventSynchronize");
  float ms = 0;
  check(gState.api.cuEventElapsedTime(&ms, gClock.reference, e),
        "cuEventElapsedTime");
  return gClock.referenceUs + double(ms) * 1000.0;
}

double traceElapsedUs(void *begin, void *end) {
  float ms = 0;
  check(gState.api.cuEventElapsedTime(&ms, static_cast<CUevent>(begin),
                                      static_cast<CUevent>(end)),
        "cuEventElapsedTime");
  return double(ms) * 1000.0;
}

void traceRelease(void *mark) {
  gClock.free.push_back(static_cast<CUevent>(mark));
}

/// Records the reference event, waits for it and notes the host's time.
void traceReanchor() {
  CudaState &s = gState;
  check(s.api.cuEventRecord(gClock.reference, s.stream), "cuEventRecord");
  check(s.api.cuEventSynchronize(gClock.reference), "cuEventSynchronize");
  gClock.referenceUs = monotonicUs();
}

} // namespace

DeviceCommScope::DeviceCommScope(const char *name, void *stream, int64_t bytes,
                                 int64_t groupSize)
    : name(name), stream(stream), bytes(bytes), groupSize(groupSize) {
  if (deviceTraceOn())
    begin = traceMark(stream);
}

DeviceCommScope::~DeviceCommScope() {
  if (begin)
    traceDeviceSpan(name, begin, traceMark(stream), bytes, groupSize);
}

namespace {
const DeviceTraceHooks kTraceHooks = {&traceMark, &traceResolveUs,
                                      &traceElapsedUs, &traceRelease,
                                      &traceReanchor};

/// With PF_TRACE, the ops' trace events get device times: the reference
/// event is recorded and waited for now, and its host time noted.
void startDeviceClock() {
  if (!traceOn())
    return;
  CudaState &s = gState;
  check(s.api.cuEventCreate(&gClock.reference, CU_EVENT_DEFAULT),
        "cuEventCreate");
  traceReanchor();
  setDeviceTraceHooks(&kTraceHooks);
}
} // namespace

void *openOptionalLibrary(const char *name, std::string *tried) {
  std::string where;
  void *h = tryOpenLibrary(name, where);
  if (tried)
    *tried = where;
  return h;
}

void *computeStream() {
  requireReady("computeStream");
  return gState.stream;
}

int64_t deviceIdentity() {
  requireReady("deviceIdentity");
  CUdevice dev;
  CUuuid uuid;
  check(gState.api.cuDeviceGet(&dev, gState.device), "cuDeviceGet");
  check(gState.api.cuDeviceGetUuid(&uuid, dev), "cuDeviceGetUuid");
  uint64_t h = 0xcbf29ce484222325ull;
  for (char b : uuid.bytes)
    h = (h ^ uint64_t(uint8_t(b))) * 0x100000001b3ull;
  return int64_t(h & 0x7fffffffffffffffull);
}

static bool gHostStaged = false;
void noteHostStagedCommunication() { gHostStaged = true; }
bool hostStagedCommunication() { return gHostStaged; }
void clearHostStagedCommunication() { gHostStaged = false; }

void *newStream(const char *what) {
  requireReady(what);
  CUstream stream = nullptr;
  check(gState.api.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING),
        "cuStreamCreate");
  return stream;
}

void *newEvent(const char *what) {
  requireReady(what);
  CUevent event = nullptr;
  check(gState.api.cuEventCreate(&event, CU_EVENT_DISABLE_TIMING),
        "cuEventCreate");
  return event;
}

void recordEvent(void *event, void *stream) {
  check(gState.api.cuEventRecord(static_cast<CUevent>(event),
                                 static_cast<CUstream>(stream)),
        "cuEventRecord");
}

void streamWaitEvent(void *stream, void *event) {
  check(gState.api.cuStreamWaitEvent(static_cast<CUstream>(stream),
                                     static_cast<CUevent>(event), 0),
        "cuStreamWaitEvent");
}

void copyToHostOn(void *dst, const void *src, int64_t bytes, void *stream) {
  requireReady("pfrt_cuda copy to the host");
  check(gState.api.cuMemcpyDtoHAsync(dst, reinterpret_cast<CUdeviceptr>(src),
                                     size_t(bytes),
                                     static_cast<CUstream>(stream)),
        "cuMemcpyDtoHAsync");
}

void copyToDeviceOn(void *dst, const void *src, int64_t bytes, void *stream) {
  requireReady("pfrt_cuda copy to the device");
  check(gState.api.cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(dst), src,
                                     size_t(bytes),
                                     static_cast<CUstream>(stream)),
        "cuMemcpyHtoDAsync");
}

void eventSynchronize(void *event) {
  check(gState.api.cuEventSynchronize(static_cast<CUevent>(event)),
        "cuEventSynchronize");
}

void copyToHostAsync(void *dst, const void *src, int64_t bytes) {
  requireReady("pfrt_cuda copy to the host");
  check(gState.api.cuMemcpyDtoHAsync(dst, reinterpret_cast<CUdeviceptr>(src),
                                     size_t(bytes), gState.stream),
        "cuMemcpyDtoHAsync");
}

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
  CudaState &s = gState;
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
  pfrt::cuda::startDeviceClock();
  pfrt::cuda::configureCollectives();
  return 0;
}

int pfrt_cuda_finalize(void) {
  if (gState.ready) {
    pfrt_cuda_synchronize();
    pfrt::traceResolveDevice();
    pfrt::cuda::stopCollectives();
    pfrt::cuda::checkKernelErrors();
  }
  return 0;
}

int pfrt_cuda_arena_init(int64_t bytes) {
  CudaState &s = gState;
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
  CudaState &s = gState;
  if (!s.arena)
    fatal("pfrt_cuda_arena_ptr: no device arena (pfrt_cuda_arena_init)");
  checkArenaRange("pfrt_cuda_arena_ptr", "device arena", offset, bytes,
                  s.arenaBytes, 1, s.highWater);
  return reinterpret_cast<void *>(s.arena + CUdeviceptr(offset));
}

int64_t pfrt_cuda_arena_high_water(void) { return gState.highWater; }

int pfrt_cuda_h2d(void *dst, const void *src, int64_t bytes) {
  requireReady("pfrt_cuda_h2d");
  check(gState.api.cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(dst), src,
                                     size_t(bytes), gState.stream),
        "cuMemcpyHtoDAsync");
  return 0;
}

int pfrt_cuda_d2h(void *dst, const void *src, int64_t bytes) {
  requireReady("pfrt_cuda_d2h");
  check(gState.api.cuMemcpyDtoHAsync(dst, reinterpret_cast<CUdeviceptr>(src),
                                     size_t(bytes), gState.stream),
        "cuMemcpyDtoHAsync");
  return pfrt_cuda_synchronize();
}

int pfrt_cuda_memset(void *dst, int32_t value, int64_t bytes) {
  requireReady("pfrt_cuda_memset");
  check(gState.api.cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(dst),
                                   (unsigned char)value, size_t(bytes),
                                   gState.stream),
        "cuMemsetD8Async");
  return 0;
}

int pfrt_cuda_synchronize(void) {
  requireReady("pfrt_cuda_synchronize");
  check(gState.api.cuStreamSynchronize(gState.stream), "cuStreamSynchronize");
  ++gState.syncs;
  return 0;
}

void *pfrt_cuda_module_load(const void *image) {
  requireReady("pfrt_cuda_module_load");
  CUmodule module;
  check(gState.api.cuModuleLoadData(&module, image), "cuModuleLoadData");
  return module;
}

void *pfrt_cuda_function(void *module, const char *name) {
  requireReady("pfrt_cuda_function");
  CUfunction fn;
  check(
      gState.api.cuModuleGetFunction(&fn, static_cast<CUmodule>(module), name),
      "cuModuleGetFunction");
  return fn;
}

int pfrt_cuda_launch(void *function, int64_t gx, int64_t gy, int64_t gz,
                     int64_t bx, int64_t by, int64_t bz, int64_t shared_bytes,
                     void **args) {
  requireReady("pfrt_cuda_launch");
  check(gState.api.cuLaunchKernel(
            static_cast<CUfunction>(function), unsigned(gx), unsigned(gy),
            unsigned(gz), unsigned(bx), unsigned(by), unsigned(bz),
            unsigned(shared_bytes), gState.stream, args, nullptr),
        "cuLaunchKernel");
  return 0;
}

int pfrt_cuda_gemm(int32_t ta, int32_t tb, int64_t m, int64_t n, int64_t k,
                   float alpha, const void *a, int64_t lda, const void *b,
                   int64_t ldb, float beta, void *c, int64_t ldc, int64_t batch,
                   int64_t stride_a, int64_t stride_b, int64_t stride_c,
                   int32_t epilogue, void *bias, const void *aux,
                   int32_t tf32) {
  const char *fn = "pfrt_cuda_gemm";
  requireReady(fn);
  if (m < 1 || n < 1 || k < 1 || batch < 1 || epilogue < 0 || epilogue > 5)
    fatal("%s: m, n, k, batch must be >= 1 and epilogue in [0, 5], got %lld "
          "%lld %lld %lld %d",
          fn, (long long)m, (long long)n, (long long)k, (long long)batch,
          epilogue);
  bool needsBias =
      epilogue == PFRT_EPILOGUE_BIAS || epilogue == PFRT_EPILOGUE_RELU_BIAS ||
      epilogue == PFRT_EPILOGUE_DRELU_BGRAD || epilogue == PFRT_EPILOGUE_BGRADB;
  if (needsBias != (bias != nullptr) ||
      (epilogue == PFRT_EPILOGUE_DRELU_BGRAD) != (aux != nullptr))
    fatal("%s: epilogue %d %s a bias and %s an aux pointer", fn, epilogue,
          needsBias ? "needs" : "takes no",
          epilogue == PFRT_EPILOGUE_DRELU_BGRAD ? "needs" : "takes no");
  // cuBLASLt's epilogues may read the bias (and DRELU's aux) in 16-byte
  // vectors, and no preference tells its heuristic otherwise: a less
  // aligned one is refused here (BGRADB's callers take their GEMM-and-
  // reduction path), not left to fault on the device.
  bool badBias = reinterpret_cast<uintptr_t>(bias) % 16 != 0,
       badAux = reinterpret_cast<uintptr_t>(aux) % 16 != 0;
  if (badBias || badAux) {
    if (epilogue == PFRT_EPILOGUE_BGRADB)
      return 1;
    fatal("%s: epilogue %d's %s pointer %p is not 16-byte aligned (cuBLASLt's "
          "epilogues read it in 16-byte vectors)",
          fn, epilogue, badBias ? "bias" : "aux", badBias ? bias : aux);
  }
  // TF32 only when asked: by the caller, or for the whole run
  // (PFRT_CUDA_TF32=1, pf-run --tf32); exact float32 otherwise.
  static const bool runTF32 = [] {
    const char *v = std::getenv("PFRT_CUDA_TF32");
    return v && std::strcmp(v, "1") == 0;
  }();
  if (runTF32)
    tf32 = 1;
  // How aligned each matrix is (its pointer and, batched, its stride; at
  // most 256 bytes, cuBLASLt's default assumption): told to the heuristic,
  // so that it answers only with algorithms these pointers can run (arena
  // buffers are 64-byte aligned, a group's slice of a convolution's
  // weight or a strided view of a projection less).
  auto alignment = [batch](const void *ptr, int64_t stride) {
    uint64_t v = uint64_t(reinterpret_cast<uintptr_t>(ptr)) | 256u;
    if (batch > 1 && stride != 0)
      v |= uint64_t(stride) * sizeof(float);
    return int64_t(v & (~v + 1)); // the lowest set bit
  };
  std::vector<int64_t> key = {ta,
                              tb,
                              m,
                              n,
                              k,
                              lda,
                              ldb,
                              ldc,
                              batch,
                              stride_a,
                              stride_b,
                              stride_c,
                              epilogue,
                              tf32,
                              alignment(a, stride_a),
                              alignment(b, stride_b),
                              alignment(c, stride_c)};
  Plan &p = planFor(key, ta, tb, m, n, k, lda, ldb, ldc, batch, stride_a,
                    stride_b, stride_c, beta, epilogue, tf32);
  if (p.unsupported)
    return 1; // BGRADB without an algorithm: the caller falls back
  const Api &api = gState.api;
  if (bias)
    check(api.cublasLtMatmulDescSetAttribute(
              p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)),
          "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
  if (aux)
    check(api.cublasLtMatmulDescSetAttribute(
              p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux,
              sizeof(aux)),
          "cublasLtMatmulDescSetAttribute(AUX_POINTER)");
  check(api.cublasLtMatmul(gState.lt, p.desc, &alpha, b, p.a, a, p.b, &beta, c,
                           p.c, c, p.c, &p.algo,
                           reinterpret_cast<void *>(gState.workspace),
                           gState.workspaceBytes, gState.stream),
        "cublasLtMatmul");
  return 0;
}

int pfrt_cuda_graphs_enabled(void) {
  // A traced GPU rank times every op with events on the stream, which a
  // replayed graph would not repeat: its steps run uncaptured.
  if (deviceTraceOn())
    return 0;
  const char *off = std::getenv("PFRT_NO_CUDA_GRAPH");
  return !(off && std::strcmp(off, "1") == 0);
}

int pfrt_cuda_graph_begin(void) {
  requireReady("pfrt_cuda_graph_begin");
  check(gState.api.cuStreamBeginCapture(gState.stream,
                                        CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
        "cuStreamBeginCapture");
  return 0;
}

int pfrt_cuda_graph_end(void) {
  requireReady("pfrt_cuda_graph_end");
  CUgraph graph;
  check(gState.api.cuStreamEndCapture(gState.stream, &graph),
        "cuStreamEndCapture");
  check(gState.api.cuGraphInstantiate(&gState.graph, graph, 0),
        "cuGraphInstantiate");
  return 0;
}

int pfrt_cuda_graph_launch(void) {
  requireReady("pfrt_cuda_graph_launch");
  if (!gState.graph)
    fatal("pfrt_cuda_graph_launch: no captured graph (pfrt_cuda_graph_end)");
  check(gState.api.cuGraphLaunch(gState.graph, gState.stream), "cuGraphLaunch");
  return 0;
}

} // extern "C"
