//===- DeviceTwins.cpp - the device twins of host rows (pfrt_device.def) --===//
//
// What a GPU rank calls where a CPU rank calls the host row of the same
// name: memory, parameters, state, scalars, inputs and results go through
// the host rows and pfrt_cuda_h2d/d2h; kernels launch Kernels.cu's
// functions (the embedded fatbin, loaded once) on the compute stream, and
// GEMMs go through pfrt_cuda_gemm. Every check the CPU kernel makes on its
// arguments is made here on the host, with the twin's name; the only
// checks left to the device are those on data (an out-of-range label, a
// step < 1 for Adam's bias correction), which a kernel records in a device
// error record that pfrt_cuda_report_loss, pfrt_cuda_report_output and
// pfrt_cuda_finalize turn into a fatal error.
//
//===----------------------------------------------------------------------===//

#include "../common/Internal.h"
#include "../cpu/KernelUtil.h"
#include "CudaInternal.h"
#include "DeviceBodies.h"
#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#ifndef PFRT_CUDA_NO_KERNELS
/// The fatbin of Kernels.cu (bin2c, at build time).
extern "C" unsigned char pfrt_cuda_kernels_fatbin[];
#endif

using namespace pfrt;
using namespace pfrt::kern;
using pfrt::dev::DeviceError;
using pfrt::dev::kBlock;

namespace {

//===----------------------------------------------------------------------===//
// The kernel module
//===----------------------------------------------------------------------===//

#define PFRT_CUDA_KERNELS(X)                                                   \
  X(Relu, "pfrt_cuda_relu")                                                    \
  X(ReluGrad, "pfrt_cuda_relu_grad")                                           \
  X(Add, "pfrt_cuda_add")                                                      \
  X(Mul, "pfrt_cuda_mul")                                                      \
  X(Scale, "pfrt_cuda_scale")                                                  \
  X(Copy, "pfrt_cuda_copy")                                                    \
  X(Fill, "pfrt_cuda_fill")                                                    \
  X(BiasAdd, "pfrt_cuda_bias_add")                                             \
  X(BiasRows, "pfrt_cuda_bias_rows")                                           \
  X(ReduceSum, "pfrt_cuda_reduce_sum")                                         \
  X(XentRows, "pfrt_cuda_xent_rows")                                           \
  X(XentTotal, "pfrt_cuda_xent_total")                                         \
  X(XentCheckLabels, "pfrt_cuda_xent_check_labels")                            \
  X(XentStats, "pfrt_cuda_xent_stats")                                         \
  X(XentGrad, "pfrt_cuda_xent_grad")                                           \
  X(Sgd, "pfrt_cuda_sgd")                                                      \
  X(Adam, "pfrt_cuda_adam")                                                    \
  X(SetScalar, "pfrt_cuda_set_scalar")

enum Kernel {
#define PFRT_ENUM(id, name) k##id,
  PFRT_CUDA_KERNELS(PFRT_ENUM)
#undef PFRT_ENUM
      kNumKernels
};

[[maybe_unused]] const char *const kKernelNames[] = {
#define PFRT_NAME(id, name) name,
    PFRT_CUDA_KERNELS(PFRT_NAME)
#undef PFRT_NAME
};

struct Module {
  bool loaded = false;
  void *fn[kNumKernels] = {};
  DeviceError *err = nullptr; // device
  // Grow-only scratch (per-row sums of the cross-entropy). A smaller buffer
  // it replaces is kept: enqueued kernels or a captured graph may use it.
  void *scratch = nullptr;
  int64_t scratchBytes = 0;
} gModule;

void requireDevice(const char *fn) {
  if (!cuda::deviceReady())
    fatal("%s: the GPU is not initialised (pfrt_cuda_arena_plan or "
          "pfrt_cuda_init first)",
          fn);
}

/// Loads the kernels and allocates the error record (once; the device must
/// be initialised).
Module &kernels(const char *fn) {
  Module &m = gModule;
  if (m.loaded)
    return m;
  requireDevice(fn);
#ifdef PFRT_CUDA_NO_KERNELS
  fatal("%s: libpfrt was built without its CUDA kernels (no nvcc when it "
        "was configured)",
        fn);
#else
  const unsigned char *image = pfrt_cuda_kernels_fatbin;
  std::vector<uint64_t> aligned;
  if (reinterpret_cast<uintptr_t>(image) % 8 != 0) {
    // The fatbin header holds 64-bit fields: hand the driver an aligned copy
    // (its size is in the header: 8 + 8 bytes, then the payload size).
    uint64_t payload;
    std::memcpy(&payload, image + 8, 8);
    aligned.resize(size_t((16 + payload + 7) / 8));
    std::memcpy(aligned.data(), image, size_t(16 + payload));
    image = reinterpret_cast<const unsigned char *>(aligned.data());
  }
  void *module = pfrt_cuda_module_load(image);
  for (int k = 0; k < kNumKernels; ++k)
    m.fn[k] = pfrt_cuda_function(module, kKernelNames[k]);
  m.err = static_cast<DeviceError *>(
      cuda::allocPersistent(sizeof(DeviceError), "pfrt_cuda kernel errors"));
  pfrt_cuda_memset(m.err, 0, sizeof(DeviceError));
  m.loaded = true;
  return m;
#endif
}

/// Device scratch of at least `bytes` bytes (stream-ordered reuse).
void *scratch(int64_t bytes, const char *fn) {
  Module &m = kernels(fn);
  if (bytes > m.scratchBytes) {
    int64_t want = bytes > 2 * m.scratchBytes ? bytes : 2 * m.scratchBytes;
    if (want < (int64_t(1) << 16))
      want = int64_t(1) << 16;
    m.scratch = cuda::allocPersistent(want, fn);
    m.scratchBytes = want;
  }
  return m.scratch;
}

/// Launches kernel k with kBlock threads a block over n items (grid-stride
/// beyond 2^20 blocks); n == 0 launches nothing.
void launch(Kernel k, int64_t n, void **args, const char *fn) {
  if (n <= 0)
    return;
  Module &m = kernels(fn);
  int64_t blocks = (n + kBlock - 1) / kBlock;
  if (blocks > (int64_t(1) << 20))
    blocks = int64_t(1) << 20;
  pfrt_cuda_launch(m.fn[k], blocks, 1, 1, kBlock, 1, 1, 0, args);
}

/// Launches kernel k on one thread.
void launchSingle(Kernel k, void **args, const char *fn) {
  Module &m = kernels(fn);
  pfrt_cuda_launch(m.fn[k], 1, 1, 1, 1, 1, 1, 0, args);
}

/// Reads the device error record (waits for the stream) and makes a
/// recorded error fatal, naming the twin that found it and `where`.
void checkErrors(const char *where) {
  Module &m = gModule;
  if (!m.loaded)
    return;
  DeviceError e;
  pfrt_cuda_d2h(&e, m.err, sizeof(e));
  switch (e.code) {
  case dev::kErrNone:
    return;
  case dev::kErrXentLabel:
  case dev::kErrXentGradLabel:
    fatal("%s: label %lld at row %lld is outside [0, %lld) (found on the "
          "GPU, reported by %s)",
          e.code == dev::kErrXentLabel ? "pfrt_cuda_k_softmax_xent"
                                       : "pfrt_cuda_k_softmax_xent_grad",
          (long long)e.value, (long long)e.row, (long long)e.bound, where);
  case dev::kErrAdamStep:
    fatal("pfrt_cuda_k_adam: step = %g must be >= 1 with bias correction "
          "(found on the GPU, reported by %s)",
          e.real, where);
  default:
    fatal("%s: unknown device error code %d", where, int(e.code));
  }
}

//===----------------------------------------------------------------------===//
// Host staging of inputs
//===----------------------------------------------------------------------===//

/// One persistent host buffer per (row, input, device buffer, size): the
/// host rows load into it exactly as into a CPU rank's buffer (their
/// resident synthetic batch is keyed by the buffer, so it must be the same
/// buffer every time), then it is copied. Before a buffer is refilled, a
/// copy from it that may still be pending is waited for.
struct Staging {
  std::vector<char> host;
  bool pending = false;
  uint64_t copiedAt = 0; // cuda::syncCount() when the copy was enqueued
};

Staging &stagingFor(int kind, int64_t index, void *out, int64_t bytes) {
  static std::map<std::tuple<int, int64_t, void *, int64_t>, Staging> m;
  Staging &s = m[std::make_tuple(kind, index, out, bytes)];
  if (s.pending && cuda::syncCount() <= s.copiedAt)
    pfrt_cuda_synchronize();
  s.pending = false;
  if (s.host.size() != size_t(bytes > 0 ? bytes : 1))
    s.host.resize(size_t(bytes > 0 ? bytes : 1));
  return s;
}

void copyStaged(Staging &s, void *out, int64_t bytes) {
  if (bytes <= 0)
    return;
  pfrt_cuda_h2d(out, s.host.data(), bytes);
  s.pending = true;
  s.copiedAt = cuda::syncCount();
}

void checkInputBuffer(const char *fn, int64_t index, void *out, int64_t bytes) {
  if (bytes < 0 || (bytes > 0 && !out))
    fatal("%s: input %lld: bad buffer (%lld bytes)", fn, (long long)index,
          (long long)bytes);
}

//===----------------------------------------------------------------------===//
// Host work of a captured step
//===----------------------------------------------------------------------===//

/// A captured step's host side. While the step is captured, a twin that
/// needs the host (loading an input, reporting a loss or an output) records
/// the copy on the stream, from or to a page-locked host buffer of its own,
/// and leaves the host part here: input loads run before each replay (the
/// previous replay has finished: the buffers are free), reports after it
/// (the copies are done). All of it runs on the calling thread, between
/// replays, so the runtime stays single-threaded.
struct CapturedHostWork {
  std::vector<std::function<void()>> before, after;
  bool captured = false;
  int64_t steps = 0;
};
CapturedHostWork gCaptured;
/// Whether pfrt_cuda_arena_plan ran: the program runs on this GPU.
bool gPlanned = false;

/// A page-locked host buffer of `bytes` for the captured copy keyed by
/// `key` (one per call site of the step, which runs once while captured).
void *pinnedBuffer(int64_t bytes, const char *fn) {
  static std::vector<std::unique_ptr<std::vector<char>>> buffers;
  buffers.push_back(
      std::make_unique<std::vector<char>>(size_t(bytes > 0 ? bytes : 1)));
  void *p = buffers.back()->data();
  if (!cuda::pinHostRange(p, bytes > 0 ? bytes : 1))
    fatal("%s: cannot page-lock %lld bytes of host memory for a captured "
          "copy (run with PFRT_NO_CUDA_GRAPH=1)",
          fn, (long long)bytes);
  return p;
}

/// While captured: the host load `load(host)` runs before each replay into
/// a page-locked buffer the captured copy reads.
void captureInput(void *out, int64_t bytes, const char *fn,
                  std::function<void(void *)> load) {
  void *host = pinnedBuffer(bytes, fn);
  gCaptured.before.push_back([host, load] { load(host); });
  if (bytes > 0)
    pfrt_cuda_h2d(out, host, bytes);
}

/// The rank on this node: the launcher's local rank, else the world rank.
int64_t localRank() {
  for (const char *var :
       {"MPI_LOCALRANKID", "PMI_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"}) {
    const char *v = std::getenv(var);
    if (v && *v) {
      char *end = nullptr;
      long long r = std::strtoll(v, &end, 10);
      if (end && *end == '\0' && r >= 0)
        return r;
    }
  }
  if (state().initialized && !state().finalized)
    return state().rank;
  if (const char *v = std::getenv("PMI_RANK")) {
    long long r = std::atoll(v);
    if (r >= 0)
      return r;
  }
  return 0;
}

//===----------------------------------------------------------------------===//
// Kernel helpers
//===----------------------------------------------------------------------===//

void elementwise1(Kernel k, const char *fn, const float *x, float *y,
                  int64_t n) {
  checkSize(fn, "n", n);
  checkPtr(fn, "x", x, n);
  checkPtr(fn, "y", y, n);
  void *args[] = {&x, &y, &n};
  launch(k, n, args, fn);
}

void elementwise2(Kernel k, const char *fn, const char *na, const char *nb,
                  const char *nout, const float *a, const float *b, float *out,
                  int64_t n) {
  checkSize(fn, "n", n);
  checkPtr(fn, na, a, n);
  checkPtr(fn, nb, b, n);
  checkPtr(fn, nout, out, n);
  void *args[] = {&a, &b, &out, &n};
  launch(k, n, args, fn);
}

void biasAdd(const char *fn, const float *x, const float *b, float *y,
             int64_t outer, int64_t c, int64_t inner, int32_t relu) {
  checkSize(fn, "outer", outer);
  checkSize(fn, "c", c);
  checkSize(fn, "inner", inner);
  int64_t total = mulChecked(fn, mulChecked(fn, outer, c), inner);
  checkPtr(fn, "x", x, total);
  checkPtr(fn, "y", y, total);
  checkPtr(fn, "b", b, total > 0 ? c : 0);
  void *args[] = {&x, &b, &y, &c, &inner, &relu, &total};
  launch(kBiasAdd, total, args, fn);
}

/// C = op(A) op(B) (+ bias per column) + beta C through pfrt_cuda_gemm, with
/// pfrt_k_matmul's shapes and checks.
void matmul(const char *fn, const float *a, const float *b, bool hasBias,
            const float *bias, float *c, int64_t batch, int64_t batch_b,
            int64_t m, int64_t n, int64_t k, int32_t ta, int32_t tb,
            float beta) {
  checkSize(fn, "batch", batch);
  checkSize(fn, "m", m);
  checkSize(fn, "n", n);
  checkSize(fn, "k", k);
  if (batch_b != batch && batch_b != 1)
    fatal("%s: batch_b = %lld must be 1 or batch = %lld", fn,
          (long long)batch_b, (long long)batch);
  int64_t aSize = mulChecked(fn, m, k), bSize = mulChecked(fn, k, n),
          cSize = mulChecked(fn, m, n);
  int64_t cTotal = mulChecked(fn, batch, cSize);
  if (hasBias)
    checkPtr(fn, "bias", bias, n);
  checkPtr(fn, "a", a, mulChecked(fn, batch, aSize));
  checkPtr(fn, "b", b, mulChecked(fn, batch_b, bSize));
  checkPtr(fn, "c", c, cTotal);
  if (batch == 0 || cSize == 0)
    return;
  if (k == 0) { // C = bias rows, zeros, or unchanged (beta = 1)
    if (hasBias) {
      void *args[] = {&bias, &c, &n, &cTotal};
      launch(kBiasRows, cTotal, args, fn);
    } else if (beta == 0.0f) {
      pfrt_cuda_memset(c, 0, cTotal * int64_t(sizeof(float)));
    }
    return;
  }
  const int64_t lda = ta ? m : k, ldb = tb ? k : n;
  const int32_t epilogue = hasBias ? PFRT_EPILOGUE_BIAS : PFRT_EPILOGUE_NONE;
  void *biasPtr = hasBias ? const_cast<float *>(bias) : nullptr;
  if (batch_b == 1 && !ta && batch > 1) {
    // A shared B and untransposed A: the batch folds into M (one GEMM), as
    // the CPU kernel does.
    pfrt_cuda_gemm(0, tb, mulChecked(fn, batch, m), n, k, 1.0f, a, lda, b, ldb,
                   beta, c, n, 1, 0, 0, 0, epilogue, biasPtr, nullptr, 0);
    return;
  }
  pfrt_cuda_gemm(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, beta, c, n, batch,
                 aSize, batch_b == 1 ? 0 : bSize, cSize, epilogue, biasPtr,
                 nullptr, 0);
}

void checkXent(const char *fn, const float *logits, const int64_t *labels,
               int64_t n, int64_t c) {
  if (n < 1 || c < 1)
    fatal("%s: n = %lld and c = %lld must be >= 1", fn, (long long)n,
          (long long)c);
  checkPtr(fn, "logits", logits, mulChecked(fn, n, c));
  checkPtr(fn, "labels", labels, n);
}

} // namespace

namespace pfrt {
namespace cuda {
void checkKernelErrors() { checkErrors("pfrt_cuda_finalize"); }
} // namespace cuda
} // namespace pfrt

extern "C" {

//===----------------------------------------------------------------------===//
// Memory, parameters, state, scalars, results, inputs
//===----------------------------------------------------------------------===//

int pfrt_cuda_arena_plan(int64_t bytes) {
  bool &planned = gPlanned;
  static int64_t plannedBytes = 0;
  if (bytes < 0)
    fatal("pfrt_cuda_arena_plan: negative size %lld", (long long)bytes);
  if (planned) {
    if (bytes > plannedBytes)
      fatal("pfrt_cuda_arena_plan: the device arena was planned with %lld "
            "bytes, now %lld are asked",
            (long long)plannedBytes, (long long)bytes);
    return 0;
  }
  // Without a driver or a device pfrt_cuda_init exits with status 2 and
  // one line saying what is missing.
  int count = pfrt_cuda_device_count();
  pfrt_cuda_init(count > 0 ? localRank() % count : 0);
  pfrt_cuda_arena_init(bytes);
#ifndef PFRT_CUDA_NO_KERNELS
  // Loaded now, so that no kernel call of a step (maybe captured in a
  // graph) loads a module or allocates.
  kernels("pfrt_cuda_arena_plan");
#endif
  planned = true;
  plannedBytes = bytes;
  return 0;
}

int pfrt_cuda_init_param(float *out, int32_t kind, double a, double b,
                         uint64_t seed, uint64_t stream, int64_t rank_ndim,
                         const int64_t *logical_shape,
                         const int64_t *shard_offset,
                         const int64_t *shard_shape) {
  const char *fn = "pfrt_cuda_init_param";
  ShardSpec s =
      makeShard(fn, rank_ndim, logical_shape, shard_offset, shard_shape);
  std::vector<float> host(size_t(s.shardElems > 0 ? s.shardElems : 1));
  pfrt_init_param(host.data(), kind, a, b, seed, stream, rank_ndim,
                  logical_shape, shard_offset, shard_shape);
  if (s.shardElems == 0)
    return 0;
  if (!out)
    fatal("%s: out is NULL", fn);
  pfrt_cuda_h2d(out, host.data(), s.shardElems * int64_t(sizeof(float)));
  pfrt_cuda_synchronize(); // before `host` goes away
  return 0;
}

int pfrt_cuda_active(void) { return gPlanned ? 1 : 0; }

int pfrt_cuda_run_step(void (*step)(int64_t), int64_t k) {
  const char *fn = "pfrt_cuda_run_step";
  if (!step)
    fatal("%s: no step function", fn);
  requireDevice(fn);
  CapturedHostWork &w = gCaptured;
  // The first step runs uncaptured: it allocates what a capture may not
  // (scratch, scalar slots, cuBLASLt's plans). The second is captured.
  if (!pfrt_cuda_graphs_enabled() || (w.steps == 0 && !w.captured)) {
    step(k);
    pfrt_cuda_synchronize();
    checkErrors(fn);
    ++w.steps;
    return 0;
  }
  if (!w.captured) {
    pfrt_cuda_graph_begin();
    step(k);
    pfrt_cuda_graph_end();
    w.captured = true;
  }
  for (auto &load : w.before)
    load();
  pfrt_cuda_graph_launch();
  pfrt_cuda_synchronize();
  checkErrors(fn);
  for (auto &report : w.after)
    report();
  ++w.steps;
  return 0;
}

int pfrt_cuda_state_register(const char *name, int32_t dtype, int64_t rank_ndim,
                             const int64_t *logical_shape,
                             const int64_t *offset, const int64_t *box_shape,
                             void *data) {
  pfrt_state_register(name, dtype, rank_ndim, logical_shape, offset, box_shape,
                      data);
  markStateOnDevice(name);
  return 0;
}

float *pfrt_cuda_scalar(const char *name) {
  const char *fn = "pfrt_cuda_scalar";
  float *host = pfrt_scalar(name); // checks the name
  requireDevice(fn);
  static std::unordered_map<std::string, float *> slots;
  float *&slot = slots[name];
  if (!slot) {
    slot = static_cast<float *>(cuda::allocPersistent(sizeof(float), fn));
    // Page-locked, so that a captured copy re-reads it at each replay.
    cuda::pinHostRange(host, sizeof(float));
  }
  if (cuda::streamCapturing()) {
    // A copy node: each replay reads the host value as it is then.
    pfrt_cuda_h2d(slot, host, sizeof(float));
  } else {
    // Uncaptured: the value now, as the kernel argument (the host may
    // change the scalar before the stream gets here).
    float value = *host;
    void *args[] = {&slot, &value};
    launchSingle(kSetScalar, args, fn);
  }
  return slot;
}

void pfrt_cuda_report_loss(const float *loss, int32_t microbatch) {
  if (!loss)
    pfrt_report_loss(nullptr, microbatch); // fatal, with its message
  if (cuda::streamCapturing()) {
    using pfrt::cuda::copyToHostAsync;
    // The copy is captured; the report follows each replay.
    auto *host = static_cast<float *>(
        pinnedBuffer(sizeof(float), "pfrt_cuda_report_loss"));
    copyToHostAsync(host, loss, sizeof(float));
    gCaptured.after.push_back(
        [host, microbatch] { pfrt_report_loss(host, microbatch); });
    return;
  }
  checkErrors("pfrt_cuda_report_loss");
  float value;
  pfrt_cuda_d2h(&value, loss, sizeof(float));
  pfrt_report_loss(&value, microbatch);
}

void pfrt_cuda_report_output(int32_t index, const void *data, int64_t bytes) {
  if (bytes <= 0 || !data) {
    pfrt_report_output(index, data, bytes); // nothing to copy, or fatal
    return;
  }
  if (cuda::streamCapturing()) {
    using pfrt::cuda::copyToHostAsync;
    void *host = pinnedBuffer(bytes, "pfrt_cuda_report_output");
    copyToHostAsync(host, data, bytes);
    gCaptured.after.push_back(
        [index, host, bytes] { pfrt_report_output(index, host, bytes); });
    return;
  }
  checkErrors("pfrt_cuda_report_output");
  std::vector<char> host(static_cast<size_t>(bytes));
  pfrt_cuda_d2h(host.data(), data, bytes);
  pfrt_report_output(index, host.data(), bytes);
}

int pfrt_cuda_load_input(int64_t index, void *out, int64_t bytes, int32_t dtype,
                         int64_t num_classes, uint64_t seed, uint64_t stream,
                         int64_t ndim, const int64_t *shape) {
  checkInputBuffer("pfrt_cuda_load_input", index, out, bytes);
  if (cuda::streamCapturing()) {
    captureInput(out, bytes, "pfrt_cuda_load_input", [=](void *host) {
      pfrt_load_input(index, host, bytes, dtype, num_classes, seed, stream,
                      ndim, shape);
    });
    return 0;
  }
  Staging &s = stagingFor(0, index, out, bytes);
  pfrt_load_input(index, s.host.data(), bytes, dtype, num_classes, seed, stream,
                  ndim, shape);
  copyStaged(s, out, bytes);
  return 0;
}

int pfrt_cuda_load_input_boxes(int64_t index, void *out, int64_t bytes,
                               int32_t dtype, int64_t num_classes,
                               uint64_t seed, uint64_t stream, int64_t ndim,
                               const int64_t *logical_shape, int64_t num_boxes,
                               const int64_t *offsets,
                               const int64_t *box_shape) {
  checkInputBuffer("pfrt_cuda_load_input_boxes", index, out, bytes);
  if (cuda::streamCapturing()) {
    captureInput(out, bytes, "pfrt_cuda_load_input_boxes", [=](void *host) {
      pfrt_load_input_boxes(index, host, bytes, dtype, num_classes, seed,
                            stream, ndim, logical_shape, num_boxes, offsets,
                            box_shape);
    });
    return 0;
  }
  Staging &s = stagingFor(0, index, out, bytes);
  pfrt_load_input_boxes(index, s.host.data(), bytes, dtype, num_classes, seed,
                        stream, ndim, logical_shape, num_boxes, offsets,
                        box_shape);
  copyStaged(s, out, bytes);
  return 0;
}

int pfrt_cuda_load_input_part(int64_t index, void *out, int64_t bytes,
                              int64_t part, int64_t num_parts, int32_t dtype,
                              int64_t num_classes, uint64_t seed,
                              uint64_t stream, int64_t ndim,
                              const int64_t *logical_shape, int64_t num_boxes,
                              const int64_t *offsets,
                              const int64_t *box_shape) {
  checkInputBuffer("pfrt_cuda_load_input_part", index, out, bytes);
  if (cuda::streamCapturing()) {
    captureInput(out, bytes, "pfrt_cuda_load_input_part", [=](void *host) {
      pfrt_load_input_part(index, host, bytes, part, num_parts, dtype,
                           num_classes, seed, stream, ndim, logical_shape,
                           num_boxes, offsets, box_shape);
    });
    return 0;
  }
  Staging &s = stagingFor(1, index, out, bytes);
  pfrt_load_input_part(index, s.host.data(), bytes, part, num_parts, dtype,
                       num_classes, seed, stream, ndim, logical_shape,
                       num_boxes, offsets, box_shape);
  copyStaged(s, out, bytes);
  return 0;
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

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

void pfrt_cuda_k_scale(const float *x, float *y, int64_t n, double s) {
  const char *fn = "pfrt_cuda_k_scale";
  checkSize(fn, "n", n);
  checkPtr(fn, "x", x, n);
  checkPtr(fn, "y", y, n);
  float f = float(s);
  void *args[] = {&x, &y, &f, &n};
  launch(kScale, n, args, fn);
}

void pfrt_cuda_k_copy(const float *x, float *y, int64_t n) {
  const char *fn = "pfrt_cuda_k_copy";
  checkSize(fn, "n", n);
  checkPtr(fn, "x", x, n);
  checkPtr(fn, "y", y, n);
  if (x == y)
    return;
  void *args[] = {&x, &y, &n};
  launch(kCopy, n, args, fn);
}

void pfrt_cuda_k_fill(float *y, int64_t n, double v) {
  const char *fn = "pfrt_cuda_k_fill";
  checkSize(fn, "n", n);
  checkPtr(fn, "y", y, n);
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

void pfrt_cuda_k_reduce_sum(const float *x, float *y, int64_t rank,
                            const int64_t *shape, const int8_t *reduce) {
  const char *fn = "pfrt_cuda_k_reduce_sum";
  if (rank < 0 || rank > kMaxRank)
    fatal("%s: rank %lld is outside [0, %lld]", fn, (long long)rank,
          (long long)kMaxRank);
  checkPtr(fn, "shape", shape, rank);
  checkPtr(fn, "reduce", reduce, rank);
  int64_t total = 1, outTotal = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (shape[d] < 0)
      fatal("%s: shape %s has a negative dimension", fn,
            shapeToString(rank, shape).c_str());
    total = mulChecked(fn, total, shape[d]);
    if (!reduce[d])
      outTotal = mulChecked(fn, outTotal, shape[d]);
  }
  checkPtr(fn, "x", x, total);
  checkPtr(fn, "y", y, outTotal);
  dev::ReducePlan plan;
  switch (dev::makeReducePlan(rank, shape, reduce, &plan)) {
  case dev::kReduceNothing:
    return;
  case dev::kReduceZeros:
    pfrt_cuda_memset(y, 0, outTotal * int64_t(sizeof(float)));
    return;
  case dev::kReduceCopy: {
    void *args[] = {&x, &y, &total};
    launch(kCopy, total, args, fn);
    return;
  }
  case dev::kReduceSum: {
    void *args[] = {&x, &y, &plan};
    launch(kReduceSum, plan.outTotal, args, fn);
    return;
  }
  }
}

void pfrt_cuda_k_matmul(const float *a, const float *b, float *c, int64_t batch,
                        int64_t batch_b, int64_t m, int64_t n, int64_t k,
                        int32_t ta, int32_t tb) {
  matmul("pfrt_cuda_k_matmul", a, b, false, nullptr, c, batch, batch_b, m, n, k,
         ta, tb, 0.0f);
}

void pfrt_cuda_k_matmul_acc(const float *a, const float *b, float *c,
                            int64_t batch, int64_t batch_b, int64_t m,
                            int64_t n, int64_t k, int32_t ta, int32_t tb) {
  matmul("pfrt_cuda_k_matmul_acc", a, b, false, nullptr, c, batch, batch_b, m,
         n, k, ta, tb, 1.0f);
}

void pfrt_cuda_k_matmul_bias(const float *a, const float *b, const float *bias,
                             float *c, int64_t batch, int64_t batch_b,
                             int64_t m, int64_t n, int64_t k, int32_t ta,
                             int32_t tb) {
  matmul("pfrt_cuda_k_matmul_bias", a, b, true, bias, c, batch, batch_b, m, n,
         k, ta, tb, 0.0f);
}

void pfrt_cuda_k_softmax_xent(const float *logits, const int64_t *labels,
                              float *loss, int64_t n, int64_t c) {
  const char *fn = "pfrt_cuda_k_softmax_xent";
  checkXent(fn, logits, labels, n, c);
  checkPtr(fn, "loss", loss, 1);
  double *rows = static_cast<double *>(scratch(n * 8, fn));
  void *args1[] = {&logits, &labels, &rows, &n, &c};
  launch(kXentRows, n, args1, fn);
  DeviceError *err = gModule.err;
  void *args2[] = {&rows, &labels, &loss, &n, &c, &err};
  launchSingle(kXentTotal, args2, fn);
}

void pfrt_cuda_k_softmax_xent_grad(const float *logits, const int64_t *labels,
                                   const float *dloss, float *dlogits,
                                   int64_t n, int64_t c) {
  const char *fn = "pfrt_cuda_k_softmax_xent_grad";
  checkXent(fn, logits, labels, n, c);
  checkPtr(fn, "dloss", dloss, 1);
  int64_t total = mulChecked(fn, n, c);
  checkPtr(fn, "dlogits", dlogits, total);
  double *stats = static_cast<double *>(scratch(mulChecked(fn, n, 16), fn));
  DeviceError *err = gModule.err;
  void *args1[] = {&labels, &n, &c, &err};
  launchSingle(kXentCheckLabels, args1, fn);
  void *args2[] = {&logits, &stats, &n, &c};
  launch(kXentStats, n, args2, fn);
  void *args3[] = {&logits, &labels, &dloss, &stats, &dlogits, &n, &c, &total};
  launch(kXentGrad, total, args3, fn);
}

void pfrt_cuda_k_sgd(const float *p, const float *g, const float *lr,
                     const float *buf, const float *step, float *new_p,
                     float *new_buf, int64_t n, double momentum,
                     double dampening, double weight_decay, int32_t nesterov) {
  const char *fn = "pfrt_cuda_k_sgd";
  checkSize(fn, "n", n);
  checkPtr(fn, "p", p, n);
  checkPtr(fn, "g", g, n);
  checkPtr(fn, "new_p", new_p, n);
  checkPtr(fn, "lr", lr, 1);
  if (nesterov && (momentum <= 0.0 || dampening != 0.0))
    fatal("%s: Nesterov momentum requires a momentum and zero dampening", fn);
  if (momentum != 0.0) {
    checkPtr(fn, "step", step, 1);
    checkPtr(fn, "new_buf", new_buf, n);
    // Whether this is the first step is only known on the device, so buf
    // must be given even then (its contents are ignored at step 1).
    checkPtr(fn, "buf", buf, n);
  }
  dev::SgdParams q =
      dev::makeSgdParams(momentum, dampening, weight_decay, nesterov);
  void *args[] = {&p, &g, &lr, &buf, &step, &new_p, &new_buf, &q, &n};
  launch(kSgd, n, args, fn);
}

void pfrt_cuda_k_adam(const float *p, const float *g, const float *m,
                      const float *v, const float *lr, const float *step,
                      float *new_p, float *new_m, float *new_v, int64_t n,
                      double beta1, double beta2, double eps,
                      double weight_decay, int32_t decoupled,
                      int32_t bias_correction) {
  const char *fn = "pfrt_cuda_k_adam";
  checkSize(fn, "n", n);
  checkPtr(fn, "p", p, n);
  checkPtr(fn, "g", g, n);
  checkPtr(fn, "m", m, n);
  checkPtr(fn, "v", v, n);
  checkPtr(fn, "new_p", new_p, n);
  checkPtr(fn, "new_m", new_m, n);
  checkPtr(fn, "new_v", new_v, n);
  checkPtr(fn, "lr", lr, 1);
  checkPtr(fn, "step", step, 1);
  DeviceError *err = n > 0 ? kernels(fn).err : nullptr;
  void *args[] = {&p,         &g,
                  &m,         &v,
                  &lr,        &step,
                  &new_p,     &new_m,
                  &new_v,     &n,
                  &beta1,     &beta2,
                  &eps,       &weight_decay,
                  &decoupled, &bias_correction,
                  &err};
  launch(kAdam, n, args, fn);
}

} // extern "C"
