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
#include "NcclComm.h"
#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
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
  X(SplitTF32, "pfrt_cuda_split_tf32")                                         \
  X(BiasAdd, "pfrt_cuda_bias_add")                                             \
  X(BiasRows, "pfrt_cuda_bias_rows")                                           \
  X(ReduceSum, "pfrt_cuda_reduce_sum")                                         \
  X(ReduceColumnPart, "pfrt_cuda_reduce_column_part")                          \
  X(ReduceRunPart, "pfrt_cuda_reduce_run_part")                                \
  X(ReducePartsSum, "pfrt_cuda_reduce_parts_sum")                              \
  X(XentRows, "pfrt_cuda_xent_rows")                                           \
  X(XentTotal, "pfrt_cuda_xent_total")                                         \
  X(XentCheckLabels, "pfrt_cuda_xent_check_labels")                            \
  X(XentStats, "pfrt_cuda_xent_stats")                                         \
  X(XentGrad, "pfrt_cuda_xent_grad")                                           \
  X(Sgd, "pfrt_cuda_sgd")                                                      \
  X(Adam, "pfrt_cuda_adam")                                                    \
  X(SgdMulti, "pfrt_cuda_sgd_multi")                                           \
  X(AdamMulti, "pfrt_cuda_adam_multi")                                         \
  X(Activation, "pfrt_cuda_activation")                                        \
  X(Transpose, "pfrt_cuda_transpose")                                          \
  X(Im2col, "pfrt_cuda_im2col")                                                \
  X(Col2im, "pfrt_cuda_col2im")                                                \
  X(SumImages, "pfrt_cuda_sum_images")                                         \
  X(MaxPool, "pfrt_cuda_max_pool")                                             \
  X(MaxPoolArg, "pfrt_cuda_max_pool_arg")                                      \
  X(MaxPoolGrad, "pfrt_cuda_max_pool_grad")                                    \
  X(AvgPool, "pfrt_cuda_avg_pool")                                             \
  X(AvgPoolGrad, "pfrt_cuda_avg_pool_grad")                                    \
  X(GlobalAvgPool, "pfrt_cuda_global_avg_pool")                                \
  X(GlobalAvgPoolGrad, "pfrt_cuda_global_avg_pool_grad")                       \
  X(BnRuns, "pfrt_cuda_bn_runs")                                               \
  X(BnTrainChannels, "pfrt_cuda_bn_train_channels")                            \
  X(BnEvalChannels, "pfrt_cuda_bn_eval_channels")                              \
  X(BnGradInputChannels, "pfrt_cuda_bn_grad_input_channels")                   \
  X(BnGradParamsChannels, "pfrt_cuda_bn_grad_params_channels")                 \
  X(BnAffine, "pfrt_cuda_bn_affine")                                           \
  X(BnGradInput, "pfrt_cuda_bn_grad_input")                                    \
  X(SetScalar, "pfrt_cuda_set_scalar")                                         \
  X(Sub, "pfrt_cuda_sub")                                                      \
  X(Div, "pfrt_cuda_div")                                                      \
  X(MaskedFill, "pfrt_cuda_masked_fill")                                       \
  X(Softmax, "pfrt_cuda_softmax")                                              \
  X(SoftmaxGrad, "pfrt_cuda_softmax_grad")                                     \
  X(LnStats, "pfrt_cuda_ln_stats")                                             \
  X(LnAffine, "pfrt_cuda_ln_affine")                                           \
  X(LnGradInput, "pfrt_cuda_ln_grad_input")                                    \
  X(LnGradParams, "pfrt_cuda_ln_grad_params")                                  \
  X(CopyElems, "pfrt_cuda_copy_elems")                                         \
  X(EmbeddingCheck, "pfrt_cuda_embedding_check")                               \
  X(Embedding, "pfrt_cuda_embedding")                                          \
  X(EmbeddingIndex, "pfrt_cuda_embedding_index")                               \
  X(EmbeddingGrad, "pfrt_cuda_embedding_grad")                                 \
  X(XentRowsIgnore, "pfrt_cuda_xent_rows_ignore")                              \
  X(XentTotalIgnore, "pfrt_cuda_xent_total_ignore")                            \
  X(XentGradScale, "pfrt_cuda_xent_grad_scale")                                \
  X(XentGradIgnore, "pfrt_cuda_xent_grad_ignore")                              \
  X(CountKept, "pfrt_cuda_count_kept")                                         \
  X(Dropout, "pfrt_cuda_dropout")

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
  // Dropout's data step in a captured step: a device slot, refreshed from
  // a page-locked host copy before each replay.
  int64_t *dataStep = nullptr; // device
  int64_t *dataStepHost = nullptr;
  // Grow-only scratch (per-row sums of the cross-entropy, column matrices
  // of the convolutions, max-pool arg-maxes, batch-norm sums). A smaller
  // buffer it replaces is kept: enqueued kernels or a captured graph may use
  // it.
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
  m.dataStep = static_cast<int64_t *>(
      cuda::allocPersistent(sizeof(int64_t), "pfrt_cuda dropout step"));
  m.dataStepHost = static_cast<int64_t *>(
      cuda::allocPinned(sizeof(int64_t), "the dropout's data step"));
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

/// How a twin's float32 GEMMs run (PFRT_CUDA_GEMM_PRECISION, pf-run
/// --gemm-precision): "fp32" (default) exact float32; "3xtf32" each GEMM as
/// three TF32 tensor-core GEMMs on the operands split into a TF32 part and
/// the rest (A B = As Bb + Ab Bs + Ab Bb, the small products first; the
/// dropped As Bs is below float32's rounding): float32's accuracy in
/// practice, at tensor-core speed. PFRT_CUDA_TF32=1 (plain TF32) wins.
bool threeTF32() {
  static const bool on = [] {
    const char *v = std::getenv("PFRT_CUDA_GEMM_PRECISION");
    if (!v || !*v || std::strcmp(v, "fp32") == 0)
      return false;
    if (std::strcmp(v, "3xtf32") == 0) {
      const char *t = std::getenv("PFRT_CUDA_TF32"); // plain TF32 asked
      return !(t && std::strcmp(t, "1") == 0);
    }
    fatal("PFRT_CUDA_GEMM_PRECISION=%s: expected fp32 or 3xtf32", v);
  }();
  return on;
}

/// The elements from a batched row-major operand's first to its last
/// (rows x cols, row stride ld, batch stride; a shared operand: 0).
int64_t operandExtent(int64_t rows, int64_t cols, int64_t ld, int64_t batch,
                      int64_t stride) {
  return (batch - 1) * stride + (rows - 1) * ld + cols;
}

/// A growing persistent device buffer (256-byte aligned). The old one is
/// kept: a captured graph may still read it.
struct GrowingBuffer {
  void *buf = nullptr;
  int64_t have = 0;
  float *get(int64_t floats, const char *fn) {
    if (floats > have) {
      int64_t want = floats > 2 * have ? floats : 2 * have;
      buf = cuda::allocPersistent(want * int64_t(sizeof(float)), fn);
      have = want;
    }
    return static_cast<float *>(buf);
  }
};

/// The 3xTF32 split's device buffers for one GEMM's operands (its own: a
/// twin's scratch may hold the GEMM's operand, as a convolution's columns
/// do).
float *splitBuffers(int64_t floats, const char *fn) {
  static GrowingBuffer b;
  return b.get(floats, fn);
}

/// Each piece of a split 256-byte aligned (whole float counts).
int64_t alignedFloats(int64_t floats) { return (floats + 63) / 64 * 64; }

/// Under 3xTF32, the operands a run of GEMMs shares, split once: while a
/// SplitOnce lives, gemm() takes an operand that lies inside one of its
/// ranges from that range's pieces instead of splitting it again (a
/// grouped convolution's GEMMs each read one group's slice of the same
/// weight and columns: one split a run, not one a group). Without 3xTF32
/// it does nothing. Not nested.
class SplitOnce {
public:
  struct Range {
    const float *base;
    int64_t floats;
  };
  SplitOnce(const char *fn, std::initializer_list<Range> ranges);
  ~SplitOnce() { gActive = nullptr; }
  SplitOnce(const SplitOnce &) = delete;
  SplitOnce &operator=(const SplitOnce &) = delete;

  /// The pieces (big, small) of [p, p + floats) if a range holds it.
  static bool find(const float *p, int64_t floats, const float *&big,
                   const float *&small);

private:
  struct Split {
    Range range;
    float *big, *small;
  };
  std::vector<Split> splits;
  static SplitOnce *gActive;
};

SplitOnce *SplitOnce::gActive = nullptr;

SplitOnce::SplitOnce(const char *fn, std::initializer_list<Range> ranges) {
  if (!threeTF32())
    return;
  if (gActive)
    fatal("%s: SplitOnce scopes do not nest", fn);
  static GrowingBuffer pieces;
  int64_t total = 0;
  for (const Range &r : ranges)
    total += 2 * alignedFloats(r.floats);
  float *at = pieces.get(total, fn);
  for (const Range &r : ranges) {
    Split s{r, at, at + alignedFloats(r.floats)};
    at = s.small + alignedFloats(r.floats);
    const float *src = r.base;
    int64_t n = r.floats;
    void *args[] = {&src, &s.big, &s.small, &n};
    launch(kSplitTF32, n, args, fn);
    splits.push_back(s);
  }
  gActive = this;
}

bool SplitOnce::find(const float *p, int64_t floats, const float *&big,
                     const float *&small) {
  if (!gActive)
    return false;
  for (const Split &s : gActive->splits)
    if (p >= s.range.base && p + floats <= s.range.base + s.range.floats) {
      big = s.big + (p - s.range.base);
      small = s.small + (p - s.range.base);
      return true;
    }
  return false;
}

/// pfrt_cuda_gemm as the twins call it: exact float32, or under
/// PFRT_CUDA_GEMM_PRECISION=3xtf32 three TF32 GEMMs (the last one carries
/// the epilogue; BGRADB, which sums B itself, reports no algorithm and the
/// caller takes its GEMM-and-reduction path).
int gemm(int32_t ta, int32_t tb, int64_t m, int64_t n, int64_t k, float alpha,
         const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
         float *c, int64_t ldc, int64_t batch, int64_t sa, int64_t sb,
         int64_t sc, int32_t epilogue, void *bias, const void *aux) {
  if (!threeTF32())
    return pfrt_cuda_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc,
                          batch, sa, sb, sc, epilogue, bias, aux, 0);
  if (epilogue == PFRT_EPILOGUE_BGRADB)
    return 1;
  const char *fn = "pfrt_cuda_gemm (3xtf32)";
  int64_t ea = operandExtent(ta ? k : m, ta ? m : k, lda, batch, sa);
  int64_t eb = operandExtent(tb ? n : k, tb ? k : n, ldb, batch, sb);
  const float *aBig, *aSmall, *bBig, *bSmall;
  bool haveA = SplitOnce::find(a, ea, aBig, aSmall);
  bool haveB = SplitOnce::find(b, eb, bBig, bSmall);
  if (!haveA || !haveB) {
    int64_t pa = haveA ? 0 : alignedFloats(ea),
            pb = haveB ? 0 : alignedFloats(eb);
    float *buf = splitBuffers(2 * (pa + pb), fn);
    if (!haveA) {
      float *big = buf, *small = buf + pa;
      void *args[] = {&a, &big, &small, &ea};
      launch(kSplitTF32, ea, args, fn);
      aBig = big;
      aSmall = small;
    }
    if (!haveB) {
      float *big = buf + 2 * pa, *small = big + pb;
      void *args[] = {&b, &big, &small, &eb};
      launch(kSplitTF32, eb, args, fn);
      bBig = big;
      bSmall = small;
    }
  }
  pfrt_cuda_gemm(ta, tb, m, n, k, alpha, aSmall, lda, bBig, ldb, beta, c, ldc,
                 batch, sa, sb, sc, PFRT_EPILOGUE_NONE, nullptr, nullptr, 1);
  pfrt_cuda_gemm(ta, tb, m, n, k, alpha, aBig, lda, bSmall, ldb, 1.0f, c, ldc,
                 batch, sa, sb, sc, PFRT_EPILOGUE_NONE, nullptr, nullptr, 1);
  return pfrt_cuda_gemm(ta, tb, m, n, k, alpha, aBig, lda, bBig, ldb, 1.0f, c,
                        ldc, batch, sa, sb, sc, epilogue, bias, aux, 1);
}

/// Launches kernel k on `blocks` blocks of kBlock threads.
void launchBlocks(Kernel k, int64_t blocks, void **args, const char *fn) {
  if (blocks <= 0)
    return;
  Module &m = kernels(fn);
  pfrt_cuda_launch(m.fn[k], blocks, 1, 1, kBlock, 1, 1, 0, args);
}

/// A multi-tensor update's tables (pfrt_k_sgd_multi's arguments) cut into
/// launches of at most kMultiTensors tensors (and 2^31 - 1 blocks): each
/// full table goes to `launchTable(table, blocks)`. Empty tensors are
/// skipped; `needed(k)` says whether pointer k may not be NULL.
template <int P, class Needed, class LaunchTable>
void multiUpdate(const char *fn, void *const *ptrs, const int64_t *n,
                 const int8_t *clear, int64_t count,
                 const char *const (&names)[P], Needed needed,
                 LaunchTable launchTable) {
  if (count < 0)
    fatal("%s: count = %lld must be >= 0", fn, (long long)count);
  if (count > 0 && (!ptrs || !n))
    fatal("%s: the pointer and size tables must not be NULL", fn);
  constexpr int64_t kMaxBlocks = (int64_t(1) << 31) - 1;
  dev::MultiTable<P> t{};
  int used = 0;
  int64_t blocks = 0;
  auto flush = [&] {
    if (!used)
      return;
    t.count = used;
    t.firstBlock[used] = blocks;
    launchTable(t, blocks);
    t = dev::MultiTable<P>{};
    used = 0;
    blocks = 0;
  };
  for (int64_t i = 0; i < count; ++i) {
    checkSize(fn, "n", n[i]);
    if (n[i] == 0)
      continue;
    for (int k = 0; k < P; ++k)
      if (needed(k))
        checkPtr(fn, names[k], ptrs[P * i + k], n[i]);
    int64_t nb = (n[i] + dev::kMultiChunk - 1) / dev::kMultiChunk;
    if (nb > kMaxBlocks)
      fatal("%s: tensor %lld has %lld elements, more than one launch takes", fn,
            (long long)i, (long long)n[i]);
    if (used == dev::kMultiTensors || blocks + nb > kMaxBlocks)
      flush();
    for (int k = 0; k < P; ++k)
      t.ptr[used][k] = static_cast<float *>(ptrs[P * i + k]);
    t.n[used] = n[i];
    t.firstBlock[used] = blocks;
    if (clear && clear[i])
      t.clear |= uint64_t(1) << used;
    blocks += nb;
    ++used;
  }
  flush();
}

/// Launches kernel k on one block of kBlock threads.
void launchBlock(Kernel k, void **args, const char *fn) {
  Module &m = kernels(fn);
  pfrt_cuda_launch(m.fn[k], 1, 1, 1, kBlock, 1, 1, 0, args);
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
  case dev::kErrXentIgnoreLabel:
  case dev::kErrXentGradIgnoreLabel:
  case dev::kErrXentSumLabel:
  case dev::kErrXentGradSumLabel: {
    const char *twin =
        e.code == dev::kErrXentIgnoreLabel ? "pfrt_cuda_k_softmax_xent_ignore"
        : e.code == dev::kErrXentGradIgnoreLabel
            ? "pfrt_cuda_k_softmax_xent_grad_ignore"
        : e.code == dev::kErrXentSumLabel ? "pfrt_cuda_k_softmax_xent_sum"
                                          : "pfrt_cuda_k_softmax_xent_grad_sum";
    fatal("%s: label %lld at row %lld is outside [0, %lld) (found on the "
          "GPU, reported by %s)",
          twin, (long long)e.value, (long long)e.row, (long long)e.bound,
          where);
  }
  case dev::kErrEmbeddingId:
  case dev::kErrEmbeddingGradId:
  case dev::kErrEmbeddingRowsId:
  case dev::kErrEmbeddingGradRowsId: {
    const char *twin = e.code == dev::kErrEmbeddingId ? "pfrt_cuda_k_embedding"
                       : e.code == dev::kErrEmbeddingGradId
                           ? "pfrt_cuda_k_embedding_grad"
                       : e.code == dev::kErrEmbeddingRowsId
                           ? "pfrt_cuda_k_embedding_rows"
                           : "pfrt_cuda_k_embedding_grad_rows";
    fatal("%s: id %lld at position %lld is outside [0, %lld) (found on the "
          "GPU, reported by %s)",
          twin, (long long)e.value, (long long)e.row, (long long)e.bound,
          where);
  }
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
  return cuda::allocPinned(bytes, fn);
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

/// The rank on this node: after pfrt_init, its rank among the job's ranks
/// that share the node's memory (MPI_COMM_TYPE_SHARED, right under any
/// launcher and rank placement); before it, the launcher's local rank
/// (Hydra, PMI, Open MPI, Slurm), else the world rank.
int64_t localRank() {
  auto launcher = []() -> int64_t {
    for (const char *var : {"MPI_LOCALRANKID", "PMI_LOCAL_RANK",
                            "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"}) {
      const char *v = std::getenv(var);
      if (v && *v) {
        char *end = nullptr;
        long long r = std::strtoll(v, &end, 10);
        if (end && *end == '\0' && r >= 0)
          return r;
      }
    }
    return -1;
  };
  if (state().initialized && !state().finalized) {
    // MPI alone on its node while the launcher says otherwise: ranks that
    // share no memory yet see the same GPUs (containers with their own IPC
    // namespaces); the launcher's count then says which GPU.
    int64_t l = launcher();
    if (state().localSize == 1 && l > 0)
      return l;
    return state().localRank;
  }
  if (int64_t l = launcher(); l >= 0)
    return l;
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
/// PFRT_CUDA_NO_FUSED_EPILOGUES=1: cuBLASLt's RELU_BIAS and BGRADB
/// epilogues are not used (a bias-only GEMM and a ReLU kernel; a GEMM and
/// a reduction), to measure what the fused epilogues gain or cost.
bool fusedEpilogues() {
  static const bool on = [] {
    const char *v = std::getenv("PFRT_CUDA_NO_FUSED_EPILOGUES");
    return !(v && std::strcmp(v, "1") == 0);
  }();
  return on;
}

void matmul(const char *fn, const float *a, const float *b, bool hasBias,
            const float *bias, float *c, int64_t batch, int64_t batch_b,
            int64_t m, int64_t n, int64_t k, int32_t ta, int32_t tb, float beta,
            bool relu = false) {
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
      if (relu)
        pfrt_cuda_k_relu(c, c, cTotal);
    } else if (beta == 0.0f) {
      pfrt_cuda_memset(c, 0, cTotal * int64_t(sizeof(float)));
    }
    return;
  }
  const int64_t lda = ta ? m : k, ldb = tb ? k : n;
  const bool reluKernel = relu && !fusedEpilogues();
  const int32_t epilogue = !hasBias              ? PFRT_EPILOGUE_NONE
                           : relu && !reluKernel ? PFRT_EPILOGUE_RELU_BIAS
                                                 : PFRT_EPILOGUE_BIAS;
  void *biasPtr = hasBias ? const_cast<float *>(bias) : nullptr;
  if (batch_b == 1 && !ta && batch > 1) {
    // A shared B and untransposed A: the batch folds into M (one GEMM), as
    // the CPU kernel does.
    gemm(0, tb, mulChecked(fn, batch, m), n, k, 1.0f, a, lda, b, ldb, beta, c,
         n, 1, 0, 0, 0, epilogue, biasPtr, nullptr);
    if (reluKernel)
      pfrt_cuda_k_relu(c, c, cTotal);
    return;
  }
  gemm(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, beta, c, n, batch, aSize,
       batch_b == 1 ? 0 : bSize, cSize, epilogue, biasPtr, nullptr);
  if (reluKernel)
    pfrt_cuda_k_relu(c, c, cTotal);
}

/// Carves device scratch into consecutive pieces, each 256-byte aligned.
struct ScratchLayout {
  int64_t bytes = 0;
  int64_t add(int64_t size) {
    int64_t at = bytes;
    bytes += (size + 255) / 256 * 256;
    return at;
  }
};
template <typename T> T *scratchAt(void *base, int64_t offset) {
  return reinterpret_cast<T *>(static_cast<char *>(base) + offset);
}

//===----------------------------------------------------------------------===//
// Convolution, pooling, batch norm: the CPU kernels' checks
//===----------------------------------------------------------------------===//

/// The device scratch a convolution may use for its column matrices (and
/// the weight gradient's per-image products): the images are processed in
/// runs that fit, at least one image a run. PFRT_CUDA_CONV_SCRATCH (bytes)
/// overrides it (read once; the tests make runs short with it).
int64_t convScratchBudget() {
  static const int64_t budget = [] {
    if (const char *v = std::getenv("PFRT_CUDA_CONV_SCRATCH")) {
      char *end = nullptr;
      long long b = std::strtoll(v, &end, 10);
      if (end && end != v && *end == '\0' && b > 0)
        return int64_t(b);
    }
    return int64_t(256) << 20;
  }();
  return budget;
}

/// Images per run when each needs `perImage` bytes of scratch.
int64_t imagesPerRun(int64_t perImage, int64_t images) {
  int64_t nb = perImage > 0 ? convScratchBudget() / perImage : images;
  if (nb > images)
    nb = images;
  if (nb > INT32_MAX) // cuBLASLt's batch count
    nb = INT32_MAX;
  return nb < 1 ? 1 : nb;
}

/// The tensors of a conv2d call: x [N][C][H][W], w [O][K], y [N][O][OH][OW],
/// or their gradients.
enum class ConvTensor { X, W, Y };
struct ConvArg {
  const char *name;
  const void *ptr;
  ConvTensor kind;
};

/// pfrt_k_conv2d's checks (Conv.cpp's parseDims, then each tensor in the
/// order given), naming the twin.
dev::ConvGeom checkConv(const char *fn, const int64_t *dims,
                        std::initializer_list<ConvArg> args) {
  if (!dims)
    fatal("%s: dims is NULL", fn);
  const int64_t N = dims[0], C = dims[1], H = dims[2], W = dims[3], O = dims[4],
                KH = dims[5], KW = dims[6], OH = dims[7], OW = dims[8],
                sh = dims[9], sw = dims[10], ph = dims[11], pw = dims[12],
                dh = dims[13], dw = dims[14], G = dims[15];
  auto bad = [&](const char *why) {
    fatal("%s: %s (dims N=%lld C=%lld H=%lld W=%lld O=%lld KH=%lld KW=%lld "
          "OH=%lld OW=%lld stride=%lldx%lld pad=%lldx%lld dilation=%lldx%lld "
          "groups=%lld)",
          fn, why, (long long)N, (long long)C, (long long)H, (long long)W,
          (long long)O, (long long)KH, (long long)KW, (long long)OH,
          (long long)OW, (long long)sh, (long long)sw, (long long)ph,
          (long long)pw, (long long)dh, (long long)dw, (long long)G);
  };
  if (N < 0 || C < 0 || H < 0 || W < 0 || O < 0)
    bad("negative size");
  if (KH < 1 || KW < 1)
    bad("kernel size must be >= 1");
  if (sh < 1 || sw < 1 || dh < 1 || dw < 1)
    bad("strides and dilations must be >= 1");
  if (ph < 0 || pw < 0)
    bad("padding must be >= 0");
  if (G < 1 || C % G != 0 || O % G != 0)
    bad("groups must be >= 1 and divide C and O");
  int64_t effH = dh * (KH - 1) + 1, effW = dw * (KW - 1) + 1;
  if (H + 2 * ph < effH || W + 2 * pw < effW)
    bad("the dilated kernel is larger than the padded input");
  if (OH != (H + 2 * ph - effH) / sh + 1 || OW != (W + 2 * pw - effW) / sw + 1)
    bad("OH/OW do not match (H + 2*pad - dil*(K-1) - 1) / stride + 1");
  int64_t K = mulChecked(fn, mulChecked(fn, C / G, KH), KW);
  int64_t P = mulChecked(fn, OH, OW);
  int64_t HW = mulChecked(fn, H, W);
  mulChecked(fn, mulChecked(fn, N, C), HW);
  mulChecked(fn, mulChecked(fn, N, O), P);
  mulChecked(fn, mulChecked(fn, K, P), G);
  dev::ConvGeom d = dev::makeConvGeom(dims);
  for (const ConvArg &a : args)
    checkPtr(fn, a.name, a.ptr,
             a.kind == ConvTensor::X   ? d.N * d.C * d.HW
             : a.kind == ConvTensor::W ? d.O * d.K
                                       : d.N * d.O * d.P);
  return d;
}

/// Enqueues the column matrices of images [n0, n0 + nb) of x into col.
void im2col(const char *fn, const dev::ConvGeom &d, const float *x, int64_t n0,
            int64_t nb, float *col) {
  const float *xs = x + n0 * d.C * d.HW;
  int64_t total = nb * d.C * d.KH * d.KW * d.P;
  dev::ConvGeom g = d;
  void *args[] = {&xs, &col, &g, &total};
  launch(kIm2col, total, args, fn);
}

/// pfrt_k_max_pool2d's checks (Pool.cpp's parseDims), naming the twin.
dev::PoolGeom checkPool(const char *fn, const int64_t *dims) {
  if (!dims)
    fatal("%s: dims is NULL", fn);
  const int64_t N = dims[0], C = dims[1], H = dims[2], W = dims[3],
                OH = dims[4], OW = dims[5], KH = dims[6], KW = dims[7],
                sh = dims[8], sw = dims[9], ph = dims[10], pw = dims[11];
  auto bad = [&](const char *why) {
    fatal("%s: %s (dims N=%lld C=%lld H=%lld W=%lld OH=%lld OW=%lld "
          "kernel=%lldx%lld stride=%lldx%lld pad=%lldx%lld)",
          fn, why, (long long)N, (long long)C, (long long)H, (long long)W,
          (long long)OH, (long long)OW, (long long)KH, (long long)KW,
          (long long)sh, (long long)sw, (long long)ph, (long long)pw);
  };
  if (N < 0 || C < 0 || H < 0 || W < 0)
    bad("negative size");
  if (KH < 1 || KW < 1 || sh < 1 || sw < 1)
    bad("kernel sizes and strides must be >= 1");
  if (ph < 0 || pw < 0 || 2 * ph > KH || 2 * pw > KW)
    bad("padding must be in [0, kernel / 2]");
  if (H + 2 * ph < KH || W + 2 * pw < KW)
    bad("the kernel is larger than the padded input");
  if (OH != (H + 2 * ph - KH) / sh + 1 || OW != (W + 2 * pw - KW) / sw + 1)
    bad("OH/OW do not match (H + 2*pad - kernel) / stride + 1");
  int64_t planes = mulChecked(fn, N, C);
  int64_t HW = mulChecked(fn, H, W), P = mulChecked(fn, OH, OW);
  mulChecked(fn, planes, HW);
  mulChecked(fn, planes, P);
  return dev::makePoolGeom(dims);
}

/// Norm.cpp's checkArgs, naming the twin.
void checkBatchNorm(const char *fn, const float *x, int64_t n, int64_t c,
                    int64_t hw, double eps) {
  checkSize(fn, "n", n);
  checkSize(fn, "c", c);
  checkSize(fn, "hw", hw);
  int64_t m = mulChecked(fn, n, hw);
  checkPtr(fn, "x", x, mulChecked(fn, m, c));
  if (c > 0 && m < 2)
    fatal("%s: batch norm needs more than one value per channel in "
          "training (N*HW = %lld)",
          fn, (long long)m);
  if (!(eps >= 0.0))
    fatal("%s: eps = %g must be >= 0", fn, eps);
}

/// Scratch for a batch norm: the per-run sums (hw > 1) and the
/// per-channel coefficients; enqueues the run sums.
struct BnScratch {
  double *runs = nullptr, *co = nullptr;
};
BnScratch bnScratch(const char *fn, const float *x, const float *dy, int64_t n,
                    int64_t c, int64_t hw) {
  ScratchLayout l;
  int64_t nruns = hw > 1 ? n * c : 0;
  int64_t runsAt = l.add(nruns * 4 * int64_t(sizeof(double)));
  int64_t coAt = l.add(c * 4 * int64_t(sizeof(double)));
  void *base = scratch(l.bytes, fn);
  BnScratch s;
  s.runs = scratchAt<double>(base, runsAt);
  s.co = scratchAt<double>(base, coAt);
  if (nruns > 0) {
    double *runs = s.runs;
    void *args[] = {&x, &dy, &runs, &c, &hw, &nruns};
    launch(kBnRuns, nruns, args, fn);
  }
  return s;
}

/// y = f(x) (grad false, dy unused) or dx = f'(x) dy.
void activation(const char *fn, bool grad, int32_t kind, const float *x,
                const float *dy, float *out, int64_t n) {
  if (kind < 0 || kind > 3)
    fatal("%s: kind %d is not one of 0 (gelu), 1 (gelu_tanh), 2 (tanh), 3 "
          "(sigmoid)",
          fn, kind);
  checkSize(fn, "n", n);
  checkPtr(fn, "x", x, n);
  if (grad)
    checkPtr(fn, "dy", dy, n);
  else
    dy = nullptr;
  checkPtr(fn, grad ? "dx" : "y", out, n);
  void *args[] = {&kind, &x, &dy, &out, &n};
  launch(kActivation, n, args, fn);
}

void checkXent(const char *fn, const float *logits, const int64_t *labels,
               int64_t n, int64_t c) {
  if (n < 1 || c < 1)
    fatal("%s: n = %lld and c = %lld must be >= 1", fn, (long long)n,
          (long long)c);
  checkPtr(fn, "logits", logits, mulChecked(fn, n, c));
  checkPtr(fn, "labels", labels, n);
}

/// The embedding twins: the ids' check on the device, then one thread per
/// element of y.
void embedding(const char *fn, int32_t code, const float *table,
               const int64_t *ids, float *y, int64_t n, int64_t v, int64_t d,
               int64_t row0, int64_t vocab) {
  checkEmbeddingArgs(fn, ids, n, v, d, row0, vocab);
  checkPtr(fn, "table", table, mulChecked(fn, v, d));
  int64_t total = mulChecked(fn, n, d);
  checkPtr(fn, "y", y, total);
  if (n == 0)
    return;
  DeviceError *err = kernels(fn).err;
  void *args1[] = {&ids, &n, &vocab, &code, &err};
  launchSingle(kEmbeddingCheck, args1, fn);
  void *args2[] = {&table, &ids, &y, &v, &d, &row0, &total};
  launch(kEmbedding, total, args2, fn);
}

/// The gradients: the ids' check, each row's positions in order (one
/// thread, in scratch), then one thread per element of dtable.
void embeddingGrad(const char *fn, int32_t code, const int64_t *ids,
                   const float *dy, float *dtable, int64_t n, int64_t v,
                   int64_t d, int64_t row0, int64_t vocab) {
  checkEmbeddingArgs(fn, ids, n, v, d, row0, vocab);
  checkPtr(fn, "dy", dy, mulChecked(fn, n, d));
  int64_t total = mulChecked(fn, v, d);
  checkPtr(fn, "dtable", dtable, total);
  if (total == 0)
    return;
  if (n == 0) {
    pfrt_cuda_memset(dtable, 0, total * int64_t(sizeof(float)));
    return;
  }
  DeviceError *err = kernels(fn).err;
  void *args1[] = {&ids, &n, &vocab, &code, &err};
  launchSingle(kEmbeddingCheck, args1, fn);
  ScratchLayout l;
  const int64_t startAt = l.add((v + 1) * int64_t(sizeof(int64_t)));
  const int64_t cursorAt = l.add(v * int64_t(sizeof(int64_t)));
  const int64_t posAt = l.add(n * int64_t(sizeof(int64_t)));
  void *base = scratch(l.bytes, fn);
  int64_t *start = scratchAt<int64_t>(base, startAt),
          *cursor = scratchAt<int64_t>(base, cursorAt),
          *pos = scratchAt<int64_t>(base, posAt);
  void *args2[] = {&ids, &n, &v, &row0, &start, &cursor, &pos};
  launchSingle(kEmbeddingIndex, args2, fn);
  void *args3[] = {&start, &pos, &dy, &dtable, &d, &total};
  launch(kEmbeddingGrad, total, args3, fn);
}

/// The cross-entropy twins with ignore_index (mean of the kept rows, or
/// the sum when !mean).
void xentIgnore(const char *fn, int32_t code, const float *logits,
                const int64_t *labels, float *loss, int64_t n, int64_t c,
                int64_t ignore, int32_t mean) {
  checkXent(fn, logits, labels, n, c);
  checkPtr(fn, "loss", loss, 1);
  double *rows = static_cast<double *>(scratch(n * 8, fn));
  void *args1[] = {&logits, &labels, &rows, &n, &c, &ignore};
  launch(kXentRowsIgnore, mulChecked(fn, n, dev::kRowLanes), args1, fn);
  DeviceError *err = gModule.err;
  void *args2[] = {&rows, &labels, &loss, &n, &c, &ignore, &mean, &code, &err};
  launchSingle(kXentTotalIgnore, args2, fn);
}

void xentGradIgnore(const char *fn, int32_t code, const float *logits,
                    const int64_t *labels, const float *dloss, float *dlogits,
                    int64_t n, int64_t c, int64_t ignore, int32_t mean) {
  checkXent(fn, logits, labels, n, c);
  checkPtr(fn, "dloss", dloss, 1);
  int64_t total = mulChecked(fn, n, c);
  checkPtr(fn, "dlogits", dlogits, total);
  ScratchLayout l;
  const int64_t statsAt = l.add(mulChecked(fn, n, 16));
  const int64_t scaleAt = l.add(int64_t(sizeof(double)));
  void *base = scratch(l.bytes, fn);
  double *stats = scratchAt<double>(base, statsAt),
         *scale = scratchAt<double>(base, scaleAt);
  DeviceError *err = gModule.err;
  void *args1[] = {&labels, &dloss, &scale, &n,  &c,
                   &ignore, &mean,  &code,  &err};
  launchSingle(kXentGradScale, args1, fn);
  void *args2[] = {&logits, &stats, &n, &c};
  launch(kXentStats, mulChecked(fn, n, dev::kRowLanes), args2, fn);
  void *args3[] = {&logits,  &labels, &scale,  &stats,
                   &dlogits, &c,      &ignore, &total};
  launch(kXentGradIgnore, total, args3, fn);
}

} // namespace

namespace pfrt {
namespace cuda {
void checkKernelErrors() { checkErrors("pfrt_cuda_finalize"); }
} // namespace cuda
} // namespace pfrt

namespace {
/// pfrt_k_layer_norm's argument checks, with the twin's name.
void lnCheck(const char *fn, int64_t rows, int64_t c, double eps) {
  checkSize(fn, "rows", rows);
  checkSize(fn, "c", c);
  if (c < 1 || !(eps > 0.0))
    fatal("%s: c = %lld must be >= 1 and eps = %g > 0", fn, (long long)c, eps);
}

/// Each row's mean and inverse standard deviation (2 doubles a row) in
/// scratch; rows > 0.
const double *lnStats(const char *fn, const float *x, int64_t rows, int64_t c,
                      double eps) {
  double *stats = static_cast<double *>(scratch(mulChecked(fn, rows, 16), fn));
  void *args[] = {&x, &stats, &c, &eps, &rows};
  launch(kLnStats, rows, args, fn);
  return stats;
}
} // namespace

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
  int64_t device = count > 0 ? localRank() % count : 0;
  if (const char *v = std::getenv("PFRT_CUDA_VERBOSE"); v && *v == '1')
    std::fprintf(stderr,
                 "pfrt: rank %d: GPU %lld of the %d this rank sees (local "
                 "rank %lld of %d on this node)\n",
                 state().rank, (long long)device, count, (long long)localRank(),
                 state().localSize);
  pfrt_cuda_init(device);
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

int pfrt_cuda_zero_partial_input(void *buf, int64_t bytes) {
  const char *fn = "pfrt_cuda_zero_partial_input";
  if (bytes < 0 || (bytes > 0 && !buf))
    fatal("%s: bad buffer (%lld bytes)", fn, (long long)bytes);
  requireDevice(fn);
  // The host row's rule: a partial-sum input's synthetic data lives on its
  // first rank only; user inputs are each rank's own.
  if (!userInputsInUse() && bytes > 0)
    pfrt_cuda_memset(buf, 0, bytes);
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
  // A step communicating through the host (StagedComm.cpp) waits for it in
  // the middle: it is never captured.
  // After it, point-to-point may move from the host to NCCL (Nccl.cpp:
  // every rank's call), and the steps are captured if nothing else is
  // staged. Each step ends joining its NCCL sends' streams.
  if (!pfrt_cuda_graphs_enabled() || (w.steps == 0 && !w.captured) ||
      cuda::hostStagedCommunication()) {
    step(k);
    nccl::joinSends();
    pfrt_cuda_synchronize();
    traceResolveDevice();
    checkErrors(fn);
    if (w.steps == 0 && nccl::setupPointToPoint() &&
        !nccl::stagedBesidesPointToPoint())
      cuda::clearHostStagedCommunication();
    ++w.steps;
    return 0;
  }
  if (!w.captured) {
    pfrt_cuda_graph_begin();
    step(k);
    nccl::joinSends();
    pfrt_cuda_graph_end();
    w.captured = true;
    if (const char *v = std::getenv("PFRT_CUDA_VERBOSE"); v && *v == '1')
      std::fprintf(stderr,
                   "pfrt: rank %d: step %lld captured as a CUDA graph (%zu "
                   "host loads before and %zu reports after each replay)\n",
                   pfrt_rank(), (long long)k, w.before.size(), w.after.size());
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
  if (!slot)
    slot = static_cast<float *>(cuda::allocPersistent(sizeof(float), fn));
  if (cuda::streamCapturing()) {
    // A copy node from a page-locked mirror, which the host work before
    // each replay sets to the scalar's value as it is then.
    auto *mirror = static_cast<float *>(pinnedBuffer(sizeof(float), fn));
    *mirror = *host;
    gCaptured.before.push_back([mirror, host] { *mirror = *host; });
    pfrt_cuda_h2d(slot, mirror, sizeof(float));
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

void pfrt_cuda_k_sub(const float *a, const float *b, float *out, int64_t n) {
  elementwise2(kSub, "pfrt_cuda_k_sub", "a", "b", "out", a, b, out, n);
}

void pfrt_cuda_k_div(const float *a, const float *b, float *out, int64_t n) {
  elementwise2(kDiv, "pfrt_cuda_k_div", "a", "b", "out", a, b, out, n);
}

void pfrt_cuda_k_masked_fill(const float *x, const void *mask, float *y,
                             int64_t n, int32_t mask_i64, double value) {
  const char *fn = "pfrt_cuda_k_masked_fill";
  checkSize(fn, "n", n);
  checkPtr(fn, "x", x, n);
  checkPtr(fn, "mask", mask, n);
  checkPtr(fn, "y", y, n);
  float v = static_cast<float>(value);
  void *args[] = {&x, &mask, &y, &mask_i64, &v, &n};
  launch(kMaskedFill, n, args, fn);
}

void pfrt_cuda_k_softmax(const float *x, float *y, int64_t outer, int64_t n,
                         int64_t inner, int32_t log) {
  const char *fn = "pfrt_cuda_k_softmax";
  checkSize(fn, "outer", outer);
  checkSize(fn, "n", n);
  checkSize(fn, "inner", inner);
  int64_t total = mulChecked(fn, mulChecked(fn, outer, n), inner);
  checkPtr(fn, "x", x, total);
  checkPtr(fn, "y", y, total);
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
  checkSize(fn, "outer", outer);
  checkSize(fn, "n", n);
  checkSize(fn, "inner", inner);
  int64_t total = mulChecked(fn, mulChecked(fn, outer, n), inner);
  checkPtr(fn, "y", y, total);
  checkPtr(fn, "dy", dy, total);
  checkPtr(fn, "dx", dx, total);
  int64_t lines = outer * inner;
  if (lines == 0)
    return;
  void *args[] = {&y, &dy, &dx, &n, &inner, &log, &lines};
  launch(kSoftmaxGrad, lines, args, fn);
}

void pfrt_cuda_k_layer_norm(const float *x, const float *gamma,
                            const float *beta, float *y, int64_t rows,
                            int64_t c, double eps) {
  const char *fn = "pfrt_cuda_k_layer_norm";
  lnCheck(fn, rows, c, eps);
  int64_t n = mulChecked(fn, rows, c);
  checkPtr(fn, "x", x, n);
  checkPtr(fn, "y", y, n);
  checkPtr(fn, "gamma", gamma, c);
  checkPtr(fn, "beta", beta, c);
  if (n == 0)
    return;
  const double *stats = lnStats(fn, x, rows, c, eps);
  void *args[] = {&x, &gamma, &beta, &y, &stats, &c, &n};
  launch(kLnAffine, n, args, fn);
}

void pfrt_cuda_k_layer_norm_grad_input(const float *x, const float *gamma,
                                       const float *dy, float *dx, int64_t rows,
                                       int64_t c, double eps) {
  const char *fn = "pfrt_cuda_k_layer_norm_grad_input";
  lnCheck(fn, rows, c, eps);
  int64_t n = mulChecked(fn, rows, c);
  checkPtr(fn, "x", x, n);
  checkPtr(fn, "dy", dy, n);
  checkPtr(fn, "dx", dx, n);
  checkPtr(fn, "gamma", gamma, c);
  if (n == 0)
    return;
  const double *stats = lnStats(fn, x, rows, c, eps);
  void *args[] = {&x, &gamma, &dy, &dx, &stats, &c, &rows};
  launch(kLnGradInput, rows, args, fn);
}

void pfrt_cuda_k_layer_norm_grad_params(const float *x, const float *dy,
                                        float *dgamma, float *dbeta,
                                        int64_t rows, int64_t c, double eps) {
  const char *fn = "pfrt_cuda_k_layer_norm_grad_params";
  lnCheck(fn, rows, c, eps);
  int64_t n = mulChecked(fn, rows, c);
  checkPtr(fn, "x", x, n);
  checkPtr(fn, "dy", dy, n);
  checkPtr(fn, "dgamma", dgamma, c);
  checkPtr(fn, "dbeta", dbeta, c);
  const double *stats = nullptr;
  if (rows > 0)
    stats = lnStats(fn, x, rows, c, eps);
  // rows == 0: every column's sums are empty, 0 (stats unread).
  void *args[] = {&x, &dy, &stats, &dgamma, &dbeta, &rows, &c};
  launch(kLnGradParams, c, args, fn);
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
    if (plan.parts > 0) {
      // Its own buffer: the caller's x may lie in the twins' scratch.
      static GrowingBuffer partBuffer;
      int64_t n = mulChecked(fn, plan.parts, plan.outTotal);
      auto *part =
          reinterpret_cast<double *>(partBuffer.get(mulChecked(fn, n, 2), fn));
      void *partArgs[] = {&x, &part, &plan, &n};
      launch(plan.chunk > 0 ? kReduceColumnPart : kReduceRunPart, n, partArgs,
             fn);
      void *sumArgs[] = {&part, &y, &plan.outTotal, &plan.parts};
      launch(kReducePartsSum, plan.outTotal, sumArgs, fn);
      return;
    }
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

void pfrt_cuda_k_matmul_bgrad(const float *a, const float *b, float *c,
                              float *dbias, int64_t m, int64_t n, int64_t k,
                              int32_t accumulate) {
  const char *fn = "pfrt_cuda_k_matmul_bgrad";
  checkSize(fn, "m", m);
  checkSize(fn, "n", n);
  checkSize(fn, "k", k);
  checkPtr(fn, "a", a, mulChecked(fn, k, m));
  checkPtr(fn, "b", b, mulChecked(fn, k, n));
  checkPtr(fn, "c", c, mulChecked(fn, m, n));
  checkPtr(fn, "dbias", dbias, m);
  const int64_t shape[2] = {k, m};
  const int8_t rows[2] = {1, 0};
  if (m > 0 && n > 0 && k > 0 && fusedEpilogues() &&
      gemm(1, 0, m, n, k, 1.0f, a, m, b, n, accumulate ? 1.0f : 0.0f, c, n, 1,
           0, 0, 0, PFRT_EPILOGUE_BGRADB, dbias, nullptr) == 0)
    return;
  // k = 0 (C zeros or unchanged, dbias zeros), no BGRADB algorithm, or
  // PFRT_CUDA_NO_FUSED_EPILOGUES=1.
  static bool said = false;
  const char *v = std::getenv("PFRT_CUDA_VERBOSE");
  if (k > 0 && fusedEpilogues() && !threeTF32() && !said && v && *v == '1') {
    said = true;
    std::fprintf(stderr,
                 "pfrt: cuBLASLt has no BGRADB algorithm for %lld x %lld x "
                 "%lld: GEMM and reduction instead\n",
                 (long long)m, (long long)n, (long long)k);
  }
  pfrt_cuda_k_reduce_sum(a, dbias, 2, shape, rows);
  if (accumulate)
    pfrt_cuda_k_matmul_acc(a, b, c, 1, 1, m, n, k, 1, 0);
  else
    pfrt_cuda_k_matmul(a, b, c, 1, 1, m, n, k, 1, 0);
}

void pfrt_cuda_k_matmul_bias_relu(const float *a, const float *b,
                                  const float *bias, float *c, int64_t batch,
                                  int64_t batch_b, int64_t m, int64_t n,
                                  int64_t k, int32_t ta, int32_t tb) {
  matmul("pfrt_cuda_k_matmul_bias_relu", a, b, true, bias, c, batch, batch_b, m,
         n, k, ta, tb, 0.0f, /*relu=*/true);
}

void pfrt_cuda_k_softmax_xent(const float *logits, const int64_t *labels,
                              float *loss, int64_t n, int64_t c) {
  const char *fn = "pfrt_cuda_k_softmax_xent";
  checkXent(fn, logits, labels, n, c);
  checkPtr(fn, "loss", loss, 1);
  double *rows = static_cast<double *>(scratch(n * 8, fn));
  void *args1[] = {&logits, &labels, &rows, &n, &c};
  launch(kXentRows, mulChecked(fn, n, dev::kRowLanes), args1, fn);
  DeviceError *err = gModule.err;
  void *args2[] = {&rows, &labels, &loss, &n, &c, &err};
  launchBlock(kXentTotal, args2, fn);
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
  launchBlock(kXentCheckLabels, args1, fn);
  void *args2[] = {&logits, &stats, &n, &c};
  launch(kXentStats, mulChecked(fn, n, dev::kRowLanes), args2, fn);
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
  checkAdamArgs(fn, p, g, m, v, lr, step, new_p, new_m, new_v, n);
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

void pfrt_cuda_k_sgd_multi(void *const *ptrs, const int64_t *n,
                           const int8_t *clear_grad, int64_t count,
                           const float *lr, const float *step, double momentum,
                           double dampening, double weight_decay,
                           int32_t nesterov) {
  const char *fn = "pfrt_cuda_k_sgd_multi";
  checkPtr(fn, "lr", lr, 1);
  if (nesterov && (momentum <= 0.0 || dampening != 0.0))
    fatal("%s: Nesterov momentum requires a momentum and zero dampening", fn);
  if (momentum != 0.0)
    checkPtr(fn, "step", step, 1);
  dev::SgdParams q =
      dev::makeSgdParams(momentum, dampening, weight_decay, nesterov);
  // p, g, new_p always; buf and new_buf with momentum (buf even at step 1,
  // as pfrt_cuda_k_sgd).
  static const char *const kNames[] = {"p", "g", "buf", "new_p", "new_buf"};
  multiUpdate<5>(
      fn, ptrs, n, clear_grad, count, kNames,
      [&](int k) { return momentum != 0.0 || (k != 2 && k != 4); },
      [&](dev::MultiTable<5> &t, int64_t blocks) {
        void *args[] = {&t, &lr, &step, &q};
        launchBlocks(kSgdMulti, blocks, args, fn);
      });
}

void pfrt_cuda_k_adam_multi(void *const *ptrs, const int64_t *n,
                            const int8_t *clear_grad, int64_t count,
                            const float *lr, const float *step, double beta1,
                            double beta2, double eps, double weight_decay,
                            int32_t decoupled, int32_t bias_correction) {
  const char *fn = "pfrt_cuda_k_adam_multi";
  checkPtr(fn, "lr", lr, 1);
  checkPtr(fn, "step", step, 1);
  static const char *const kNames[] = {"p",     "g",     "m",    "v",
                                       "new_p", "new_m", "new_v"};
  DeviceError *err = count > 0 ? kernels(fn).err : nullptr;
  multiUpdate<7>(
      fn, ptrs, n, clear_grad, count, kNames, [](int) { return true; },
      [&](dev::MultiTable<7> &t, int64_t blocks) {
        void *args[] = {
            &t,   &lr,           &step,      &beta1,           &beta2,
            &eps, &weight_decay, &decoupled, &bias_correction, &err};
        launchBlocks(kAdamMulti, blocks, args, fn);
      });
}

void pfrt_cuda_k_activation(int32_t kind, const float *x, float *y, int64_t n) {
  activation("pfrt_cuda_k_activation", false, kind, x, nullptr, y, n);
}

void pfrt_cuda_k_activation_grad(int32_t kind, const float *x, const float *dy,
                                 float *dx, int64_t n) {
  activation("pfrt_cuda_k_activation_grad", true, kind, x, dy, dx, n);
}

void pfrt_cuda_k_transpose(const float *x, float *y, int64_t rank,
                           const int64_t *shape, const int64_t *perm) {
  const char *fn = "pfrt_cuda_k_transpose";
  int64_t total = checkTransposeArgs(fn, x, y, rank, shape, perm);
  if (total == 0)
    return;
  dev::TransposePlan plan;
  dev::makeTransposePlan(rank, shape, perm, &plan);
  void *args[] = {&x, &y, &plan};
  launch(kTranspose, plan.total, args, fn);
}

// Convolutions: the CPU's im2col + SGEMM per image and group, with the
// column matrices of a run of images built at once in device scratch and
// one strided-batched GEMM (exact float32) per group and run; the direct
// path (1x1, stride 1, no padding) reads x itself.

void pfrt_cuda_k_conv2d(const float *x, const float *w, float *y,
                        const int64_t dims[16]) {
  const char *fn = "pfrt_cuda_k_conv2d";
  dev::ConvGeom d = checkConv(fn, dims,
                              {{"x", x, ConvTensor::X},
                               {"w", w, ConvTensor::W},
                               {"y", y, ConvTensor::Y}});
  const int64_t yTotal = d.N * d.O * d.P;
  if (yTotal == 0)
    return;
  if (d.K == 0) { // no input channel: an empty sum
    pfrt_cuda_memset(y, 0, yTotal * int64_t(sizeof(float)));
    return;
  }
  const int64_t colImage = d.G * d.K * d.P; // floats of one image's columns
  const int64_t nb =
      imagesPerRun(d.direct ? 0 : colImage * int64_t(sizeof(float)), d.N);
  float *col = d.direct ? nullptr
                        : static_cast<float *>(scratch(
                              nb * colImage * int64_t(sizeof(float)), fn));
  for (int64_t n0 = 0; n0 < d.N; n0 += nb) {
    const int64_t m = nb < d.N - n0 ? nb : d.N - n0;
    const float *b = x + n0 * d.C * d.HW;
    int64_t strideB = d.C * d.HW;
    if (!d.direct) {
      im2col(fn, d, x, n0, m, col);
      b = col;
      strideB = colImage;
    }
    // Under 3xTF32 the groups' GEMMs share one split of w and the run.
    std::optional<SplitOnce> once;
    if (d.G > 1)
      once.emplace(fn, std::initializer_list<SplitOnce::Range>{
                           {w, d.O * d.K}, {b, m * strideB}});
    for (int64_t g = 0; g < d.G; ++g)
      gemm(0, 0, d.Og, d.P, d.K, 1.0f, w + g * d.Og * d.K, d.K,
           b + g * d.K * d.P, d.P, 0.0f, y + (n0 * d.O + g * d.Og) * d.P, d.P,
           m, 0, strideB, d.O * d.P, PFRT_EPILOGUE_NONE, nullptr, nullptr);
  }
}

void pfrt_cuda_k_conv2d_grad_input(const float *dy, const float *w, float *dx,
                                   const int64_t dims[16]) {
  const char *fn = "pfrt_cuda_k_conv2d_grad_input";
  dev::ConvGeom d = checkConv(fn, dims,
                              {{"dy", dy, ConvTensor::Y},
                               {"w", w, ConvTensor::W},
                               {"dx", dx, ConvTensor::X}});
  const int64_t dxTotal = d.N * d.C * d.HW;
  if (dxTotal == 0)
    return;
  if (d.Og == 0) { // no output channel: an empty sum
    pfrt_cuda_memset(dx, 0, dxTotal * int64_t(sizeof(float)));
    return;
  }
  const int64_t colImage = d.G * d.K * d.P;
  const int64_t nb =
      imagesPerRun(d.direct ? 0 : colImage * int64_t(sizeof(float)), d.N);
  float *col = d.direct ? nullptr
                        : static_cast<float *>(scratch(
                              nb * colImage * int64_t(sizeof(float)), fn));
  for (int64_t n0 = 0; n0 < d.N; n0 += nb) {
    const int64_t m = nb < d.N - n0 ? nb : d.N - n0;
    // Under 3xTF32 the groups' GEMMs share one split of w and the run's dy.
    std::optional<SplitOnce> once;
    if (d.G > 1)
      once.emplace(fn,
                   std::initializer_list<SplitOnce::Range>{
                       {w, d.O * d.K}, {dy + n0 * d.O * d.P, m * d.O * d.P}});
    if (d.direct) {
      // dx_g = w_g^T dy_g straight into dx (col2im is the identity).
      for (int64_t g = 0; g < d.G; ++g)
        gemm(1, 0, d.K, d.P, d.Og, 1.0f, w + g * d.Og * d.K, d.K,
             dy + (n0 * d.O + g * d.Og) * d.P, d.P, 0.0f,
             dx + (n0 * d.C + g * d.Cg) * d.HW, d.P, m, 0, d.O * d.P,
             d.C * d.HW, PFRT_EPILOGUE_NONE, nullptr, nullptr);
      continue;
    }
    // dcol_g = w_g^T dy_g for each image of the run, then one thread per
    // input element gathers its column entries (no atomics).
    for (int64_t g = 0; g < d.G; ++g)
      gemm(1, 0, d.K, d.P, d.Og, 1.0f, w + g * d.Og * d.K, d.K,
           dy + (n0 * d.O + g * d.Og) * d.P, d.P, 0.0f, col + g * d.K * d.P,
           d.P, m, 0, d.O * d.P, colImage, PFRT_EPILOGUE_NONE, nullptr,
           nullptr);
    float *dxs = dx + n0 * d.C * d.HW;
    int64_t total = m * d.C * d.HW;
    void *args[] = {&col, &dxs, &d, &total};
    launch(kCol2im, total, args, fn);
  }
}

void pfrt_cuda_k_conv2d_grad_weight(const float *x, const float *dy, float *dw,
                                    const int64_t dims[16]) {
  const char *fn = "pfrt_cuda_k_conv2d_grad_weight";
  dev::ConvGeom d = checkConv(fn, dims,
                              {{"x", x, ConvTensor::X},
                               {"dy", dy, ConvTensor::Y},
                               {"dw", dw, ConvTensor::W}});
  const int64_t dwTotal = d.O * d.K;
  if (dwTotal == 0)
    return;
  if (d.N == 0 || d.P == 0) { // an empty sum
    pfrt_cuda_memset(dw, 0, dwTotal * int64_t(sizeof(float)));
    return;
  }
  // Each image's dy_g col^T into `part` (a strided-batched GEMM per group),
  // then summed over the images in order in float32, as the CPU's SGEMMs
  // accumulate them (beta = 1 after the first image).
  const int64_t colImage = d.direct ? 0 : d.G * d.K * d.P;
  const int64_t nb =
      imagesPerRun((colImage + dwTotal) * int64_t(sizeof(float)), d.N);
  ScratchLayout l;
  const int64_t colAt = l.add(nb * colImage * int64_t(sizeof(float)));
  const int64_t partAt = l.add(nb * dwTotal * int64_t(sizeof(float)));
  void *base = scratch(l.bytes, fn);
  float *col = scratchAt<float>(base, colAt),
        *part = scratchAt<float>(base, partAt);
  for (int64_t n0 = 0; n0 < d.N; n0 += nb) {
    int64_t m = nb < d.N - n0 ? nb : d.N - n0;
    const float *b = x + n0 * d.C * d.HW;
    int64_t strideB = d.C * d.HW;
    if (!d.direct) {
      im2col(fn, d, x, n0, m, col);
      b = col;
      strideB = colImage;
    }
    // Under 3xTF32 the groups' GEMMs share one split of the run's dy and
    // columns.
    std::optional<SplitOnce> once;
    if (d.G > 1)
      once.emplace(fn,
                   std::initializer_list<SplitOnce::Range>{
                       {dy + n0 * d.O * d.P, m * d.O * d.P}, {b, m * strideB}});
    for (int64_t g = 0; g < d.G; ++g)
      gemm(0, 1, d.Og, d.K, d.P, 1.0f, dy + (n0 * d.O + g * d.Og) * d.P, d.P,
           b + g * d.K * d.P, d.P, 0.0f, part + g * d.Og * d.K, d.K, m,
           d.O * d.P, strideB, dwTotal, PFRT_EPILOGUE_NONE, nullptr, nullptr);
    int64_t stride = dwTotal, total = dwTotal;
    int32_t first = n0 == 0;
    void *args[] = {&part, &dw, &m, &stride, &first, &total};
    launch(kSumImages, total, args, fn);
  }
}

// Pooling: one thread per output element for the forwards; the gradients
// gather, one thread per input element, from the windows that hold it, in
// the order the CPU scatters (no atomics).

void pfrt_cuda_k_max_pool2d(const float *x, float *y, const int64_t dims[12]) {
  const char *fn = "pfrt_cuda_k_max_pool2d";
  dev::PoolGeom d = checkPool(fn, dims);
  checkPtr(fn, "x", x, d.planes * d.HW);
  checkPtr(fn, "y", y, d.planes * d.P);
  int64_t total = d.planes * d.P;
  void *args[] = {&x, &y, &d, &total};
  launch(kMaxPool, total, args, fn);
}

void pfrt_cuda_k_max_pool2d_grad(const float *x, const float *dy, float *dx,
                                 const int64_t dims[12]) {
  const char *fn = "pfrt_cuda_k_max_pool2d_grad";
  dev::PoolGeom d = checkPool(fn, dims);
  checkPtr(fn, "x", x, d.planes * d.HW);
  checkPtr(fn, "dy", dy, d.planes * d.P);
  checkPtr(fn, "dx", dx, d.planes * d.HW);
  if (d.HW > INT32_MAX)
    fatal("%s: a plane of %lld elements is too large", fn, (long long)d.HW);
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
  const char *fn = "pfrt_cuda_k_avg_pool2d";
  dev::PoolGeom d = checkPool(fn, dims);
  checkPtr(fn, "x", x, d.planes * d.HW);
  checkPtr(fn, "y", y, d.planes * d.P);
  int64_t total = d.planes * d.P;
  void *args[] = {&x, &y, &d, &total};
  launch(kAvgPool, total, args, fn);
}

void pfrt_cuda_k_avg_pool2d_grad(const float *dy, float *dx,
                                 const int64_t dims[12]) {
  const char *fn = "pfrt_cuda_k_avg_pool2d_grad";
  dev::PoolGeom d = checkPool(fn, dims);
  checkPtr(fn, "dy", dy, d.planes * d.P);
  checkPtr(fn, "dx", dx, d.planes * d.HW);
  int64_t total = d.planes * d.HW;
  void *args[] = {&dy, &dx, &d, &total};
  launch(kAvgPoolGrad, total, args, fn);
}

void pfrt_cuda_k_global_avg_pool(const float *x, float *y, int64_t n, int64_t c,
                                 int64_t hw) {
  const char *fn = "pfrt_cuda_k_global_avg_pool";
  checkSize(fn, "n", n);
  checkSize(fn, "c", c);
  checkSize(fn, "hw", hw);
  int64_t planes = mulChecked(fn, n, c);
  checkPtr(fn, "x", x, mulChecked(fn, planes, hw));
  checkPtr(fn, "y", y, planes);
  if (planes > 0 && hw == 0)
    fatal("%s: hw = 0 (mean of an empty plane)", fn);
  void *args[] = {&x, &y, &hw, &planes};
  launch(kGlobalAvgPool, planes, args, fn);
}

void pfrt_cuda_k_global_avg_pool_grad(const float *dy, float *dx, int64_t n,
                                      int64_t c, int64_t hw) {
  const char *fn = "pfrt_cuda_k_global_avg_pool_grad";
  checkSize(fn, "n", n);
  checkSize(fn, "c", c);
  checkSize(fn, "hw", hw);
  int64_t planes = mulChecked(fn, n, c);
  checkPtr(fn, "dy", dy, planes);
  int64_t total = mulChecked(fn, planes, hw);
  checkPtr(fn, "dx", dx, total);
  void *args[] = {&dy, &dx, &hw, &total};
  launch(kGlobalAvgPoolGrad, total, args, fn);
}

// Batch norm: a channel's statistics are summed by one thread in the CPU's
// order and precision (float64; for hw > 1 each (row, channel) run of hw
// values is first summed by its own thread with the CPU's 4 accumulators),
// then one thread per element applies the per-channel coefficients.
// Correctness first: the per-channel loop over the rows is serial.

void pfrt_cuda_k_batch_norm(const float *x, const float *gamma,
                            const float *beta, const float *rmean,
                            const float *rvar, float *y, float *new_mean,
                            float *new_var, int64_t n, int64_t c, int64_t hw,
                            double eps, double momentum) {
  const char *fn = "pfrt_cuda_k_batch_norm";
  checkBatchNorm(fn, x, n, c, hw, eps);
  checkPtr(fn, "y", y, n * c * hw);
  if (!rmean != !new_mean || !rvar != !new_var)
    fatal("%s: rmean/new_mean and rvar/new_var must both be given or both "
          "be NULL",
          fn);
  if (c == 0)
    return;
  BnScratch s = bnScratch(fn, x, nullptr, n, c, hw);
  double *runs = s.runs, *co = s.co;
  void *args1[] = {&x,       &runs, &gamma, &beta, &rmean, &rvar, &new_mean,
                   &new_var, &co,   &n,     &c,    &hw,    &eps,  &momentum};
  launch(kBnTrainChannels, c, args1, fn);
  int64_t total = n * c * hw;
  void *args2[] = {&x, &y, &co, &c, &hw, &total};
  launch(kBnAffine, total, args2, fn);
}

void pfrt_cuda_k_batch_norm_eval(const float *x, const float *gamma,
                                 const float *beta, const float *rmean,
                                 const float *rvar, float *y, int64_t n,
                                 int64_t c, int64_t hw, double eps) {
  const char *fn = "pfrt_cuda_k_batch_norm_eval";
  checkBatchNorm(fn, x, n, c, hw, eps);
  checkPtr(fn, "y", y, n * c * hw);
  checkPtr(fn, "rmean", rmean, c);
  checkPtr(fn, "rvar", rvar, c);
  if (c == 0)
    return;
  double *co =
      static_cast<double *>(scratch(c * 4 * int64_t(sizeof(double)), fn));
  void *args1[] = {&gamma, &beta, &rmean, &rvar, &co, &c, &eps};
  launch(kBnEvalChannels, c, args1, fn);
  int64_t total = n * c * hw;
  void *args2[] = {&x, &y, &co, &c, &hw, &total};
  launch(kBnAffine, total, args2, fn);
}

void pfrt_cuda_k_batch_norm_grad_input(const float *x, const float *gamma,
                                       const float *dy, float *dx, int64_t n,
                                       int64_t c, int64_t hw, double eps) {
  const char *fn = "pfrt_cuda_k_batch_norm_grad_input";
  checkBatchNorm(fn, x, n, c, hw, eps);
  checkPtr(fn, "dy", dy, n * c * hw);
  checkPtr(fn, "dx", dx, n * c * hw);
  if (c == 0)
    return;
  BnScratch s = bnScratch(fn, x, dy, n, c, hw);
  double *runs = s.runs, *co = s.co;
  void *args1[] = {&x, &dy, &runs, &gamma, &co, &n, &c, &hw, &eps};
  launch(kBnGradInputChannels, c, args1, fn);
  int64_t total = n * c * hw;
  void *args2[] = {&x, &dy, &dx, &co, &c, &hw, &total};
  launch(kBnGradInput, total, args2, fn);
}

void pfrt_cuda_k_batch_norm_grad_params(const float *x, const float *dy,
                                        float *dgamma, float *dbeta, int64_t n,
                                        int64_t c, int64_t hw, double eps) {
  const char *fn = "pfrt_cuda_k_batch_norm_grad_params";
  checkBatchNorm(fn, x, n, c, hw, eps);
  checkPtr(fn, "dy", dy, n * c * hw);
  checkPtr(fn, "dgamma", dgamma, c);
  checkPtr(fn, "dbeta", dbeta, c);
  if (c == 0)
    return;
  BnScratch s = bnScratch(fn, x, dy, n, c, hw);
  double *runs = s.runs;
  void *args[] = {&x, &dy, &runs, &dgamma, &dbeta, &n, &c, &hw, &eps};
  launch(kBnGradParamsChannels, c, args, fn);
}

// GPT-shaped programs: embeddings, broadcasts, slices and pads
// (pfrt_copy_box), the cross-entropy with ignore_index or summed, the
// count of kept rows, and dropout.

void pfrt_cuda_k_embedding(const float *table, const int64_t *ids, float *y,
                           int64_t n, int64_t v, int64_t d) {
  embedding("pfrt_cuda_k_embedding", dev::kErrEmbeddingId, table, ids, y, n, v,
            d, 0, v);
}

void pfrt_cuda_k_embedding_grad(const int64_t *ids, const float *dy,
                                float *dtable, int64_t n, int64_t v,
                                int64_t d) {
  embeddingGrad("pfrt_cuda_k_embedding_grad", dev::kErrEmbeddingGradId, ids, dy,
                dtable, n, v, d, 0, v);
}

void pfrt_cuda_k_embedding_rows(const float *table, const int64_t *ids,
                                float *y, int64_t n, int64_t v, int64_t d,
                                int64_t row0, int64_t vocab) {
  embedding("pfrt_cuda_k_embedding_rows", dev::kErrEmbeddingRowsId, table, ids,
            y, n, v, d, row0, vocab);
}

void pfrt_cuda_k_embedding_grad_rows(const int64_t *ids, const float *dy,
                                     float *dtable, int64_t n, int64_t v,
                                     int64_t d, int64_t row0, int64_t vocab) {
  embeddingGrad("pfrt_cuda_k_embedding_grad_rows", dev::kErrEmbeddingGradRowsId,
                ids, dy, dtable, n, v, d, row0, vocab);
}

void pfrt_cuda_k_broadcast(const void *x, void *y, int64_t rank,
                           const int64_t *in_shape, const int64_t *out_shape,
                           int64_t elem_bytes) {
  const char *fn = "pfrt_cuda_k_broadcast";
  int64_t total =
      checkBroadcastArgs(fn, x, y, rank, in_shape, out_shape, elem_bytes);
  if (total == 0)
    return;
  dev::BoxMap m;
  dev::makeBroadcastMap(rank, in_shape, out_shape, &m);
  int32_t es = int32_t(elem_bytes);
  void *args[] = {&x, &y, &m, &es};
  launch(kCopyElems, m.total, args, fn);
}

int pfrt_cuda_copy_box(const void *src, const int64_t *src_shape,
                       const int64_t *src_offset, void *dst,
                       const int64_t *dst_shape, const int64_t *dst_offset,
                       const int64_t *sizes, int64_t ndim, int32_t dtype) {
  const char *fn = "pfrt_cuda_copy_box";
  int64_t es;
  if (checkCopyBoxArgs(fn, src, src_shape, src_offset, dst, dst_shape,
                       dst_offset, sizes, ndim, dtype, &es) == 0)
    return 0;
  dev::BoxMap m;
  dev::makeCopyBoxMap(ndim, src_shape, src_offset, dst_shape, dst_offset, sizes,
                      &m);
  int32_t es32 = int32_t(es);
  void *args[] = {&src, &dst, &m, &es32};
  launch(kCopyElems, m.total, args, fn);
  return 0;
}

void pfrt_cuda_k_softmax_xent_ignore(const float *logits, const int64_t *labels,
                                     float *loss, int64_t n, int64_t c,
                                     int64_t ignore_index) {
  xentIgnore("pfrt_cuda_k_softmax_xent_ignore", dev::kErrXentIgnoreLabel,
             logits, labels, loss, n, c, ignore_index, 1);
}

void pfrt_cuda_k_softmax_xent_grad_ignore(const float *logits,
                                          const int64_t *labels,
                                          const float *dloss, float *dlogits,
                                          int64_t n, int64_t c,
                                          int64_t ignore_index) {
  xentGradIgnore("pfrt_cuda_k_softmax_xent_grad_ignore",
                 dev::kErrXentGradIgnoreLabel, logits, labels, dloss, dlogits,
                 n, c, ignore_index, 1);
}

void pfrt_cuda_k_softmax_xent_sum(const float *logits, const int64_t *labels,
                                  float *loss, int64_t n, int64_t c,
                                  int64_t ignore_index) {
  xentIgnore("pfrt_cuda_k_softmax_xent_sum", dev::kErrXentSumLabel, logits,
             labels, loss, n, c, ignore_index, 0);
}

void pfrt_cuda_k_softmax_xent_grad_sum(const float *logits,
                                       const int64_t *labels,
                                       const float *dloss, float *dlogits,
                                       int64_t n, int64_t c,
                                       int64_t ignore_index) {
  xentGradIgnore("pfrt_cuda_k_softmax_xent_grad_sum", dev::kErrXentGradSumLabel,
                 logits, labels, dloss, dlogits, n, c, ignore_index, 0);
}

void pfrt_cuda_k_count_kept(const int64_t *labels, float *count, int64_t n,
                            int64_t ignore_index) {
  const char *fn = "pfrt_cuda_k_count_kept";
  checkSize(fn, "n", n);
  checkPtr(fn, "labels", labels, n);
  checkPtr(fn, "count", count, 1);
  void *args[] = {&labels, &count, &n, &ignore_index};
  launchSingle(kCountKept, args, fn);
}

/// The mask of pfrt_k_dropout, drawn on the device from the same Philox
/// stream (the uniform initialiser at each element's logical index, on the
/// sub-stream of the data step and micro-batch): the same bits. The data
/// step is read when the kernel runs: uncaptured it is the current one,
/// passed at launch; in a captured step a device slot holds it, copied
/// before each replay from a page-locked host value the replay's host work
/// sets.
int pfrt_cuda_k_dropout(const float *x, float *y, int64_t n, double p,
                        uint64_t seed, uint64_t stream, int64_t microbatch,
                        int64_t rank_ndim, const int64_t *logical_shape,
                        const int64_t *offset, const int64_t *shape) {
  const char *fn = "pfrt_cuda_k_dropout";
  checkDropoutArgs(fn, x, y, n, p, rank_ndim, logical_shape, offset, shape);
  if (n == 0)
    return 0;
  Module &mod = kernels(fn);
  dev::DropoutParams q;
  q.seed = seed;
  q.stream = stream;
  q.microbatch = microbatch;
  q.scale = p < 1.0 ? float(1.0 / (1.0 - p)) : 0.0f;
  q.threshold = float(p);
  dev::BoxMap m;
  dev::makeShardMap(rank_ndim, logical_shape, offset, shape, &m);
  const int64_t *slot = nullptr;
  int64_t step = currentDataStep();
  if (cuda::streamCapturing()) {
    static bool registered = false;
    if (!registered) {
      int64_t *host = mod.dataStepHost;
      gCaptured.before.push_back([host] { *host = currentDataStep(); });
      registered = true;
    }
    *mod.dataStepHost = step;
    pfrt_cuda_h2d(mod.dataStep, mod.dataStepHost, sizeof(int64_t));
    slot = mod.dataStep;
  }
  void *args[] = {&x, &y, &q, &m, &slot, &step};
  launch(kDropout, n, args, fn);
  return 0;
}

} // extern "C"
