//===- FakeDevice.cpp - a host emulation of the CUDA driver and cuBLASLt --===//
//
// See FakeDevice.h. Everything runs on the calling thread, in stream order:
// an enqueued operation runs at once, or, while the stream is captured, is
// recorded as a closure that every launch of the instantiated graph runs.
//
//===----------------------------------------------------------------------===//

#include "FakeDevice.h"

#include "../../common/HalfMath.h"
#include "../../common/Internal.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace pfrt {
namespace fake {

Dim3 threadIdx, blockIdx, blockDim, gridDim;

bool enabled() {
  const char *v = std::getenv("PFRT_CUDA_FAKE");
  return v && std::strcmp(v, "1") == 0;
}

int physicalDevices() {
  static const int n = [] {
    const char *v = std::getenv("PFRT_CUDA_FAKE_DEVICES");
    if (!v || !*v)
      return 1;
    char *end = nullptr;
    long k = std::strtol(v, &end, 10);
    if (*end || k < 1 || k > 64) {
      std::fprintf(stderr,
                   "pfrt: PFRT_CUDA_FAKE_DEVICES=%s: expected 1 to 64\n", v);
      std::exit(2);
    }
    return int(k);
  }();
  return n;
}

const std::vector<int> &visibleDevices() {
  static const std::vector<int> visible = [] {
    std::vector<int> v;
    const char *list = std::getenv("CUDA_VISIBLE_DEVICES");
    if (!list) {
      for (int d = 0; d < physicalDevices(); ++d)
        v.push_back(d);
      return v;
    }
    // As CUDA reads it: indices up to the first invalid or repeated one.
    for (const char *c = list; *c;) {
      char *end = nullptr;
      long d = std::strtol(c, &end, 10);
      if (end == c || d < 0 || d >= physicalDevices() ||
          std::find(v.begin(), v.end(), int(d)) != v.end())
        break;
      v.push_back(int(d));
      if (*end != ',')
        break;
      c = end + 1;
    }
    return v;
  }();
  return visible;
}

namespace {

/// The operations of the stream being captured (null when not capturing).
std::vector<std::function<void()>> *gRecording = nullptr;
/// Instantiated graphs: each a list of operations.
std::vector<std::unique_ptr<std::vector<std::function<void()>>>> gGraphs;

/// Runs `op` now, or records it while the stream is captured.
CUresult enqueue(std::function<void()> op) {
  if (gRecording)
    gRecording->push_back(std::move(op));
  else
    op();
  return CUDA_SUCCESS;
}

void *address(CUdeviceptr p) { return reinterpret_cast<void *>(p); }

struct Desc {
  cublasOperation_t transA = CUBLAS_OP_N, transB = CUBLAS_OP_N;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void *bias = nullptr; // of D's type (cuBLASLt's default)
  bool tf32 = false;          // inputs rounded to TF32 (10 mantissa bits)
};

/// x rounded to TF32's 10 mantissa bits (to nearest), as tensor cores read
/// float32 operands under CUBLAS_COMPUTE_32F_FAST_TF32.
float toTF32(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if ((bits & 0x7f800000u) != 0x7f800000u) // finite
    bits = (bits + 0x1000u) & ~0x1fffu;
  std::memcpy(&x, &bits, 4);
  return x;
}
struct Layout {
  cudaDataType type = CUDA_R_32F; // CUDA_R_32F, CUDA_R_16BF or CUDA_R_16F
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0;
  int32_t batch = 1;
  int64_t stride = 0;
};

size_t elementBytes(cudaDataType t) { return t == CUDA_R_32F ? 4 : 2; }

/// Element i of a matrix of type t (exact in float32).
float loadAs(cudaDataType t, const void *p, int64_t i) {
  if (t == CUDA_R_16BF)
    return half::bf16ToFloat(static_cast<const uint16_t *>(p)[i]);
  if (t == CUDA_R_16F)
    return half::f16ToFloat(static_cast<const uint16_t *>(p)[i]);
  return static_cast<const float *>(p)[i];
}

/// v rounded to t (to nearest even) and stored as element i.
void storeAs(cudaDataType t, void *p, int64_t i, float v) {
  if (t == CUDA_R_16BF)
    static_cast<uint16_t *>(p)[i] = half::floatToBf16(v);
  else if (t == CUDA_R_16F)
    static_cast<uint16_t *>(p)[i] = half::floatToF16(v);
  else
    static_cast<float *>(p)[i] = v;
}

/// cuBLASLt's table of cublasLtMatmul's type combinations for
/// CUBLAS_COMPUTE_32F (scale type CUDA_R_32F), the part emulated: A and
/// B of one type, C and D of one type; A/B 32F with C/D 32F, A/B 16BF
/// with C/D 16BF or 32F, A/B 16F with C/D 16F or 32F. TF32 math
/// (CUBLAS_COMPUTE_32F_FAST_TF32) takes 32F only.
bool supportedTypes(bool tf32, cudaDataType a, cudaDataType b, cudaDataType c,
                    cudaDataType d) {
  if (a != b || c != d)
    return false;
  if (a == CUDA_R_32F || tf32)
    return a == CUDA_R_32F && c == CUDA_R_32F;
  return c == CUDA_R_32F || c == a;
}

} // namespace

void enqueueHostOp(std::function<void()> op) { enqueue(std::move(op)); }

namespace {
/// An emulated stream: its count of operations, and during a capture
/// whether it joined it and has work the captured stream did not wait for.
struct FakeStream {
  uint64_t ops = 0, lastWork = 0;
  bool joined = false, unjoined = false;
};
/// An emulated event: the stream and its operation count when recorded,
/// and whether it was recorded in a capture.
struct FakeEvent {
  FakeStream *stream = nullptr;
  uint64_t at = 0;
  bool captured = false;
  /// gClockMs when recorded (outside a capture, where work runs at once).
  double clockMs = 0;
};
/// An emulated clock for cuEventElapsedTime: only cublasLtMatmul moves it,
/// by a cost its algorithm's first word picks (so a test of the GEMM tuner
/// knows which candidate is fastest: the heuristic's answer 1).
double gClockMs = 0;
constexpr double kFakeAlgoMs[] = {3.0, 1.0, 2.0};
std::vector<std::unique_ptr<FakeStream>> gStreams;
FakeStream *gCaptureOrigin = nullptr;

FakeStream *asStream(CUstream s) { return reinterpret_cast<FakeStream *>(s); }
bool inCapture(const FakeStream *s) {
  return gRecording && (s == gCaptureOrigin || s->joined);
}
} // namespace

CUresult enqueueHostOpOn(CUstream stream, std::function<void()> op) {
  FakeStream *s = asStream(stream);
  if (!s)
    return CUDA_ERROR_INVALID_HANDLE;
  if (gRecording && !inCapture(s))
    return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
  s->lastWork = ++s->ops;
  if (gRecording && s != gCaptureOrigin)
    s->unjoined = true;
  return enqueue(std::move(op));
}

CUresult cuEventCreate(CUevent *event, unsigned int) {
  static std::vector<std::unique_ptr<FakeEvent>> events;
  events.emplace_back(new FakeEvent());
  *event = reinterpret_cast<CUevent>(events.back().get());
  return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent event, CUstream stream) {
  auto *e = reinterpret_cast<FakeEvent *>(event);
  FakeStream *s = asStream(stream);
  if (!e || !s)
    return CUDA_ERROR_INVALID_HANDLE;
  if (gRecording && !inCapture(s))
    return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
  *e = {s, s->ops, gRecording != nullptr, gClockMs};
  return CUDA_SUCCESS;
}

CUresult cuEventSynchronize(CUevent event) {
  return event ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuEventElapsedTime(float *ms, CUevent start, CUevent end) {
  auto *a = reinterpret_cast<FakeEvent *>(start),
       *b = reinterpret_cast<FakeEvent *>(end);
  if (!a || !b || !a->stream || !b->stream)
    return CUDA_ERROR_INVALID_HANDLE;
  if (a->captured || b->captured)
    return CUDA_ERROR_INVALID_VALUE;
  *ms = float(b->clockMs - a->clockMs);
  return CUDA_SUCCESS;
}

CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned int) {
  auto *e = reinterpret_cast<FakeEvent *>(event);
  FakeStream *s = asStream(stream);
  if (!e || !s)
    return CUDA_ERROR_INVALID_HANDLE;
  if (gRecording && e->captured && e->stream && inCapture(e->stream)) {
    if (s != gCaptureOrigin)
      s->joined = true; // a fork: s joins the capture
    else if (e->stream != s && e->at >= e->stream->lastWork)
      e->stream->unjoined = false; // a join of all its work so far
  }
  return CUDA_SUCCESS;
}

CUresult cuInit(unsigned int) { return CUDA_SUCCESS; }

CUresult cuGetErrorName(CUresult error, const char **name) {
  *name = error == CUDA_SUCCESS ? "CUDA_SUCCESS" : "CUDA_ERROR (emulated)";
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count) {
  *count = int(visibleDevices().size());
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  *device = ordinal;
  return ordinal >= 0 && size_t(ordinal) < visibleDevices().size()
             ? CUDA_SUCCESS
             : CUDA_ERROR_INVALID_DEVICE;
}

CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice device) {
  if (device < 0 || size_t(device) >= visibleDevices().size())
    return CUDA_ERROR_INVALID_DEVICE;
  std::memset(uuid->bytes, 0, sizeof(uuid->bytes));
  std::memcpy(uuid->bytes, "pfrt-fake-gpu", 13);
  uuid->bytes[15] = char(visibleDevices()[size_t(device)]);
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice) {
  static int context;
  *ctx = reinterpret_cast<CUcontext>(&context);
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext) { return CUDA_SUCCESS; }

CUresult cuStreamCreate(CUstream *stream, unsigned int) {
  gStreams.emplace_back(new FakeStream());
  *stream = reinterpret_cast<CUstream>(gStreams.back().get());
  return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream) {
  return gRecording ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

CUresult cuStreamIsCapturing(CUstream, CUstreamCaptureStatus *status) {
  *status = gRecording ? CU_STREAM_CAPTURE_STATUS_ACTIVE
                       : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}

CUresult cuMemAlloc(CUdeviceptr *p, size_t bytes) {
  if (gRecording)
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  // Fresh device memory is not zero: 0xff bytes (NaN floats), so that a
  // test cannot pass by reading memory nobody wrote.
  void *mem = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!mem)
    return CUDA_ERROR_OUT_OF_MEMORY;
  std::memset(mem, 0xff, bytes);
  *p = reinterpret_cast<CUdeviceptr>(mem);
  return CUDA_SUCCESS;
}

CUresult cuMemFree(CUdeviceptr p) {
  if (gRecording)
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  std::free(address(p));
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice device) {
  if (device < 0 || size_t(device) >= visibleDevices().size() || len < 1)
    return CUDA_ERROR_INVALID_VALUE;
  std::snprintf(name, size_t(len), "pfrt host emulation");
  return CUDA_SUCCESS;
}

size_t cublasLtGetVersion() { return 130000; }

CUresult cuMemGetInfo(size_t *free, size_t *total) {
  // PFRT_CUDA_FAKE_MEMORY bytes (16 GiB by default): the front end's
  // pipeflow.config.gpu_memory reads the same variable.
  size_t bytes = size_t(1) << 34;
  if (const char *text = std::getenv("PFRT_CUDA_FAKE_MEMORY")) {
    char *end = nullptr;
    unsigned long long v = std::strtoull(text, &end, 10);
    if (end != text && *end == '\0' && v > 0)
      bytes = size_t(v);
  }
  *free = *total = bytes;
  return CUDA_SUCCESS;
}

/// The page-locked host allocations (start -> bytes), kept for the
/// process's life, as the runtime keeps its page-locked buffers.
std::map<uintptr_t, size_t> gPinned;

CUresult cuMemAllocHost(void **p, size_t bytes) {
  *p = std::calloc(1, bytes > 0 ? bytes : 1);
  if (!*p)
    return CUDA_ERROR_OUT_OF_MEMORY;
  gPinned[reinterpret_cast<uintptr_t>(*p)] = bytes > 0 ? bytes : 1;
  return CUDA_SUCCESS;
}

/// A captured copy's host range may be pageable memory or lie inside one
/// page-locked allocation, not run from one into other memory (on an H200
/// the driver refused such copies, page-locked page by page, with
/// CUDA_ERROR_INVALID_VALUE).
bool capturedHostRangeOk(const void *host, size_t bytes) {
  if (!gRecording || bytes == 0)
    return true;
  auto at = reinterpret_cast<uintptr_t>(host);
  auto next = gPinned.upper_bound(at);
  if (next != gPinned.begin()) {
    auto it = std::prev(next);
    if (at < it->first + it->second)
      return at + bytes <= it->first + it->second;
  }
  return next == gPinned.end() || next->first >= at + bytes;
}

CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode) {
  static CUstreamCaptureMode current = CU_STREAM_CAPTURE_MODE_GLOBAL;
  std::swap(current, *mode);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t bytes,
                           CUstream) {
  if (!capturedHostRangeOk(src, bytes))
    return CUDA_ERROR_INVALID_VALUE;
  return enqueue([=] { std::memcpy(address(dst), src, bytes); });
}

CUresult cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t bytes, CUstream) {
  if (!capturedHostRangeOk(dst, bytes))
    return CUDA_ERROR_INVALID_VALUE;
  return enqueue([=] { std::memcpy(dst, address(src), bytes); });
}

CUresult cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                           CUstream) {
  return enqueue([=] { std::memmove(address(dst), address(src), bytes); });
}

CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t bytes,
                         CUstream) {
  return enqueue([=] { std::memset(address(dst), value, bytes); });
}

CUresult cuModuleLoadData(CUmodule *module, const void *image) {
  if (!image)
    return CUDA_ERROR_INVALID_IMAGE;
  static int theModule;
  *module = reinterpret_cast<CUmodule>(&theModule);
  return CUDA_SUCCESS;
}

namespace {
/// Kernels registered at run time (registerPackedKernel), by name; map
/// nodes stay put, so a function handle stays valid.
std::map<std::string, HostKernel> &packedKernels() {
  static std::map<std::string, HostKernel> kernels;
  return kernels;
}
} // namespace

void registerPackedKernel(const char *name, unsigned numPointers,
                          void (*twin)(void **, int64_t)) {
  HostKernel &k = packedKernels()[name];
  k.name = packedKernels().find(name)->first.c_str();
  k.wholeGrid = true;
  k.bind = [numPointers, twin](void **args) -> std::function<void()> {
    // The argument values now: cuLaunchKernel copies them at the call.
    std::vector<void *> buffers(numPointers);
    for (unsigned j = 0; j < numPointers; ++j)
      buffers[j] = *static_cast<void **>(args[j]);
    int64_t n = *static_cast<int64_t *>(args[numPointers]);
    return [twin, buffers, n]() mutable { twin(buffers.data(), n); };
  };
}

CUresult cuModuleGetFunction(CUfunction *fn, CUmodule, const char *name) {
  for (const HostKernel *k = kHostKernels; k->name; ++k)
    if (std::strcmp(k->name, name) == 0) {
      *fn = reinterpret_cast<CUfunction>(const_cast<HostKernel *>(k));
      return CUDA_SUCCESS;
    }
  auto it = packedKernels().find(name);
  if (it != packedKernels().end()) {
    *fn = reinterpret_cast<CUfunction>(&it->second);
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_NOT_FOUND;
}

CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                        unsigned bx, unsigned by, unsigned bz, unsigned,
                        CUstream, void **params, void **) {
  const HostKernel *k = reinterpret_cast<const HostKernel *>(f);
  if (!k || gx * gy * gz == 0 || bx * by * bz == 0 || bx * by * bz > 1024)
    return CUDA_ERROR_INVALID_VALUE;
  std::function<void()> thread = k->bind(params);
  if (k->wholeGrid)
    return enqueue(thread);
  // The whole grid, one thread after another (thread 0 of a block first,
  // which is what the kernels' one-thread setup before __syncthreads needs).
  return enqueue([=] {
    gridDim = {gx, gy, gz};
    blockDim = {bx, by, bz};
    for (unsigned z = 0; z < gz; ++z)
      for (unsigned y = 0; y < gy; ++y)
        for (unsigned x = 0; x < gx; ++x) {
          blockIdx = {x, y, z};
          for (unsigned tz = 0; tz < bz; ++tz)
            for (unsigned ty = 0; ty < by; ++ty)
              for (unsigned tx = 0; tx < bx; ++tx) {
                threadIdx = {tx, ty, tz};
                thread();
              }
        }
  });
}

CUresult cuStreamBeginCapture(CUstream stream, CUstreamCaptureMode) {
  if (gRecording)
    return CUDA_ERROR_ILLEGAL_STATE;
  gRecording = new std::vector<std::function<void()>>();
  gCaptureOrigin = asStream(stream);
  return CUDA_SUCCESS;
}

CUresult cuStreamEndCapture(CUstream, CUgraph *graph) {
  if (!gRecording)
    return CUDA_ERROR_ILLEGAL_STATE;
  bool unjoined = false;
  for (auto &s : gStreams) {
    unjoined |= s->joined && s->unjoined;
    s->joined = s->unjoined = false;
  }
  gCaptureOrigin = nullptr;
  gGraphs.emplace_back(gRecording);
  gRecording = nullptr;
  if (unjoined)
    return CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
  *graph = reinterpret_cast<CUgraph>(gGraphs.back().get());
  return CUDA_SUCCESS;
}

CUresult cuGraphInstantiate(CUgraphExec *exec, CUgraph graph,
                            unsigned long long) {
  *exec = reinterpret_cast<CUgraphExec>(graph);
  return CUDA_SUCCESS;
}

CUresult cuGraphLaunch(CUgraphExec exec, CUstream) {
  auto *ops = reinterpret_cast<std::vector<std::function<void()>> *>(exec);
  if (!ops || gRecording)
    return CUDA_ERROR_INVALID_VALUE;
  for (auto &op : *ops)
    op();
  return CUDA_SUCCESS;
}

//===----------------------------------------------------------------------===//
// cuBLASLt: descriptors are host structs; cublasLtMatmul computes
// D = alpha op(A) op(B) + beta C (column-major, strided batches) in float64,
// then the epilogue (bias per row of D, ReLU).
//===----------------------------------------------------------------------===//

cublasStatus_t cublasLtCreate(cublasLtHandle_t *handle) {
  static int theHandle;
  *handle = reinterpret_cast<cublasLtHandle_t>(&theHandle);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *desc,
                                        cublasComputeType_t compute,
                                        cudaDataType_t scale) {
  if (scale != CUDA_R_32F || (compute != CUBLAS_COMPUTE_32F &&
                              compute != CUBLAS_COMPUTE_32F_FAST_TF32))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  auto *d = new Desc();
  d->tf32 = compute == CUBLAS_COMPUTE_32F_FAST_TF32;
  *desc = reinterpret_cast<cublasLtMatmulDesc_t>(d);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                              cublasLtMatmulDescAttributes_t a,
                                              const void *buf, size_t size) {
  Desc &d = *reinterpret_cast<Desc *>(desc);
  switch (a) {
  case CUBLASLT_MATMUL_DESC_TRANSA:
    std::memcpy(&d.transA, buf, sizeof(d.transA));
    break;
  case CUBLASLT_MATMUL_DESC_TRANSB:
    std::memcpy(&d.transB, buf, sizeof(d.transB));
    break;
  case CUBLASLT_MATMUL_DESC_EPILOGUE:
    std::memcpy(&d.epilogue, buf, sizeof(d.epilogue));
    break;
  case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
    std::memcpy(&d.bias, buf, sizeof(d.bias));
    break;
  default:
    return CUBLAS_STATUS_NOT_SUPPORTED; // nothing else is emulated
  }
  (void)size;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *layout,
                                          cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
  if ((type != CUDA_R_32F && type != CUDA_R_16BF && type != CUDA_R_16F) ||
      ld < int64_t(rows))
    return CUBLAS_STATUS_INVALID_VALUE;
  auto *l = new Layout();
  l->type = type;
  l->rows = rows;
  l->cols = cols;
  l->ld = ld;
  *layout = reinterpret_cast<cublasLtMatrixLayout_t>(l);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout,
                                 cublasLtMatrixLayoutAttribute_t a,
                                 const void *buf, size_t) {
  Layout &l = *reinterpret_cast<Layout *>(layout);
  if (a == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT)
    std::memcpy(&l.batch, buf, sizeof(l.batch));
  else if (a == CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET)
    std::memcpy(&l.stride, buf, sizeof(l.stride));
  else
    return CUBLAS_STATUS_NOT_SUPPORTED;
  return CUBLAS_STATUS_SUCCESS;
}

/// A preference: the least alignment (bytes) the caller promises for A,
/// B, C and D. cuBLASLt's default is 256; its heuristic may answer with
/// algorithms that need all of it. The emulation's answers need exactly
/// what was promised, and cublasLtMatmul refuses a pointer (or a batch
/// stride) aligned less (CUBLAS_STATUS_NOT_SUPPORTED), so a caller that
/// does not say how its pointers are aligned fails here as it may on a GPU.
struct Preference {
  uint32_t align[4] = {256, 256, 256, 256};
};

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p) {
  *p = reinterpret_cast<cublasLtMatmulPreference_t>(new Preference());
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) {
  delete reinterpret_cast<Preference *>(p);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                     cublasLtMatmulPreferenceAttributes_t a,
                                     const void *buf, size_t size) {
  Preference &p = *reinterpret_cast<Preference *>(pref);
  int which = a == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES   ? 0
              : a == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES ? 1
              : a == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES ? 2
              : a == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES ? 3
                                                                : -1;
  if (which >= 0) {
    if (size != sizeof(uint32_t))
      return CUBLAS_STATUS_INVALID_VALUE;
    std::memcpy(&p.align[which], buf, sizeof(uint32_t));
  }
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t adesc,
    cublasLtMatrixLayout_t bdesc, cublasLtMatrixLayout_t cdesc,
    cublasLtMatrixLayout_t ddesc, cublasLtMatmulPreference_t pref,
    int requested, cublasLtMatmulHeuristicResult_t results[], int *found) {
  if (requested < 1)
    return CUBLAS_STATUS_INVALID_VALUE;
  auto type = [](cublasLtMatrixLayout_t l) {
    return reinterpret_cast<const Layout *>(l)->type;
  };
  const Desc &de = *reinterpret_cast<const Desc *>(desc);
  if (!supportedTypes(de.tf32, type(adesc), type(bdesc), type(cdesc),
                      type(ddesc)) ||
      (type(ddesc) != CUDA_R_32F && de.epilogue != CUBLASLT_EPILOGUE_DEFAULT &&
       de.epilogue != CUBLASLT_EPILOGUE_RELU &&
       de.epilogue != CUBLASLT_EPILOGUE_BIAS &&
       de.epilogue != CUBLASLT_EPILOGUE_RELU_BIAS) ||
      (type(adesc) != CUDA_R_32F && de.epilogue == CUBLASLT_EPILOGUE_BGRADB)) {
    *found = 0;
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  // PFRT_CUDA_FAKE_NO_BGRADB=1: a cuBLASLt without BGRADB algorithms (the
  // test of libpfrt's fallback).
  const char *noBgrad = std::getenv("PFRT_CUDA_FAKE_NO_BGRADB");
  if (noBgrad && *noBgrad == '1' &&
      reinterpret_cast<Desc *>(desc)->epilogue == CUBLASLT_EPILOGUE_BGRADB) {
    *found = 0;
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  // Three answers, told apart by their first word (kFakeAlgoMs).
  *found = std::min(requested, 3);
  // Each needs the alignments the preference promised (data[1..4]).
  const Preference &pr = *reinterpret_cast<const Preference *>(pref);
  for (int i = 0; i < *found; ++i) {
    results[i] = cublasLtMatmulHeuristicResult_t{};
    results[i].algo.data[0] = uint64_t(i);
    for (int j = 0; j < 4; ++j)
      results[i].algo.data[1 + j] = pr.align[j];
  }
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t, cublasLtMatmulDesc_t desc,
                              const void *alpha, const void *A,
                              cublasLtMatrixLayout_t adesc, const void *B,
                              cublasLtMatrixLayout_t bdesc, const void *beta,
                              const void *C, cublasLtMatrixLayout_t cdesc,
                              void *D, cublasLtMatrixLayout_t ddesc,
                              const cublasLtMatmulAlgo_t *algo, void *, size_t,
                              cudaStream_t) {
  if (!algo || algo->data[0] > 2)
    return CUBLAS_STATUS_INVALID_VALUE;
  // The algorithm's alignments (what its preference promised): each
  // matrix's pointer, and with a batch its stride, at least so aligned.
  {
    const void *ptrs[4] = {A, B, C, D};
    cublasLtMatrixLayout_t lays[4] = {adesc, bdesc, cdesc, ddesc};
    for (int j = 0; j < 4; ++j) {
      const Layout &l = *reinterpret_cast<const Layout *>(lays[j]);
      uint64_t need = algo->data[1 + j];
      uint64_t at = reinterpret_cast<uintptr_t>(ptrs[j]);
      if (need == 0 || at % need != 0 ||
          (l.batch > 1 &&
           (uint64_t(l.stride) * elementBytes(l.type)) % need != 0))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
  }
  double costMs = kFakeAlgoMs[algo->data[0]];
  // The descriptors as they are now (a captured call keeps them).
  Desc d = *reinterpret_cast<Desc *>(desc);
  // An epilogue's bias read in 16-byte vectors, as cuBLASLt's may.
  if (reinterpret_cast<uintptr_t>(d.bias) % 16 != 0)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  Layout la = *reinterpret_cast<Layout *>(adesc),
         lb = *reinterpret_cast<Layout *>(bdesc),
         lc = *reinterpret_cast<Layout *>(cdesc),
         ld = *reinterpret_cast<Layout *>(ddesc);
  if (!supportedTypes(d.tf32, la.type, lb.type, lc.type, ld.type))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  float al, be;
  std::memcpy(&al, alpha, sizeof(al));
  std::memcpy(&be, beta, sizeof(be));
  bool ta = d.transA == CUBLAS_OP_T, tb = d.transB == CUBLAS_OP_T;
  uint64_t m = ta ? la.cols : la.rows, k = ta ? la.rows : la.cols;
  uint64_t kb = tb ? lb.cols : lb.rows, n = tb ? lb.rows : lb.cols;
  if (k != kb || ld.rows != m || ld.cols != n || lc.rows != m || lc.cols != n ||
      la.batch != ld.batch || lb.batch != ld.batch || lc.batch != ld.batch)
    return CUBLAS_STATUS_INVALID_VALUE;
  bool bias = d.epilogue == CUBLASLT_EPILOGUE_BIAS ||
              d.epilogue == CUBLASLT_EPILOGUE_RELU_BIAS;
  bool relu = d.epilogue == CUBLASLT_EPILOGUE_RELU ||
              d.epilogue == CUBLASLT_EPILOGUE_RELU_BIAS;
  // BGRADB: bias[j] = the sum over k of op(B)[., j] (one batch).
  bool bgradb = d.epilogue == CUBLASLT_EPILOGUE_BGRADB;
  if (d.epilogue != CUBLASLT_EPILOGUE_DEFAULT && !bias && !relu && !bgradb)
    return CUBLAS_STATUS_NOT_SUPPORTED; // DRELU_BGRAD and the others
  if ((bias || bgradb) && !d.bias)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (bgradb && (ld.batch != 1 || la.type != CUDA_R_32F))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  // Each matrix read and written in its layout's type; a bf16/f16 D is
  // the float32 result rounded to nearest even, the bias of D's type.
  const cudaDataType typeA = la.type, typeB = lb.type, typeC = lc.type,
                     typeD = ld.type;
  const char *a = static_cast<const char *>(A),
             *b = static_cast<const char *>(B),
             *c = static_cast<const char *>(C);
  char *out = static_cast<char *>(D);
  enqueue([=] {
    gClockMs += costMs;
    std::vector<float> result(size_t(m * n));
    for (int32_t p = 0; p < ld.batch; ++p) {
      const char *ap = a + p * la.stride * elementBytes(typeA),
                 *bp = b + p * lb.stride * elementBytes(typeB),
                 *cp = c + p * lc.stride * elementBytes(typeC);
      char *dp = out + p * ld.stride * elementBytes(typeD);
      for (uint64_t j = 0; j < n; ++j)
        for (uint64_t i = 0; i < m; ++i) {
          double sum = 0;
          for (uint64_t q = 0; q < k; ++q) {
            float x = loadAs(typeA, ap, ta ? q + i * la.ld : i + q * la.ld);
            float y = loadAs(typeB, bp, tb ? j + q * lb.ld : q + j * lb.ld);
            if (d.tf32) {
              x = toTF32(x);
              y = toTF32(y);
            }
            sum += double(x) * double(y);
          }
          float v = float(double(al) * sum);
          if (be != 0.0f)
            v += be * loadAs(typeC, cp, i + j * lc.ld);
          if (bias)
            v += loadAs(typeD, d.bias, i);
          if (relu && !(v > 0.0f))
            v = 0.0f;
          result[size_t(i + j * m)] = v;
        }
      // Written after the whole product: D may alias C.
      for (uint64_t j = 0; j < n; ++j)
        for (uint64_t i = 0; i < m; ++i)
          storeAs(typeD, dp, i + j * ld.ld, result[size_t(i + j * m)]);
      if (bgradb)
        for (uint64_t j = 0; j < n; ++j) {
          double sum = 0;
          for (uint64_t q = 0; q < k; ++q)
            sum += loadAs(typeB, bp, tb ? j + q * lb.ld : q + j * lb.ld);
          const_cast<float *>(static_cast<const float *>(d.bias))[j] =
              float(sum);
        }
    }
  });
  return CUBLAS_STATUS_SUCCESS;
}

} // namespace fake
} // namespace pfrt
