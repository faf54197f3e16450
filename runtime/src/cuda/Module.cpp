//===- Module.cpp - the twins' CUDA kernels: the embedded fatbin ----------===//
//
// See Module.h. The fatbin of kernels/Kernels.cu (bin2c, at build time) is
// loaded with the first kernel a twin launches, or at pfrt_cuda_arena_plan
// (so that no step, maybe captured in a graph, loads a module or
// allocates); PFRT_CUDA_NO_KERNELS builds say why there are none.
//
//===----------------------------------------------------------------------===//

#include "Module.h"

#include "../common/Internal.h"
#include "CudaInternal.h"
#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

#include <cstring>
#include <vector>

#ifndef PFRT_CUDA_NO_KERNELS
/// The fatbin of Kernels.cu (bin2c, at build time).
extern "C" unsigned char pfrt_cuda_kernels_fatbin[];
#endif

using pfrt::dev::DeviceError;
using pfrt::dev::kBlock;

namespace pfrt {
namespace twin {

namespace {

[[maybe_unused]] const char *const kKernelNames[] = {
#define PFRT_NAME(id, name) name,
    PFRT_CUDA_KERNELS(PFRT_NAME)
#undef PFRT_NAME
};

Module gModule;

} // namespace

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

/// Launches kernel k on `blocks` blocks of kBlock threads.
void launchBlocks(Kernel k, int64_t blocks, void **args, const char *fn) {
  if (blocks <= 0)
    return;
  Module &m = kernels(fn);
  pfrt_cuda_launch(m.fn[k], blocks, 1, 1, kBlock, 1, 1, 0, args);
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
  case dev::kErrVocabXentLabel:
  case dev::kErrVocabXentGradLabel:
    fatal("%s: label %lld at row %lld is outside [0, %lld) (found on the "
          "GPU, reported by %s)",
          e.code == dev::kErrVocabXentLabel
              ? "pfrt_cuda_softmax_xent_vocab"
              : "pfrt_cuda_softmax_xent_vocab_grad",
          (long long)e.value, (long long)e.row, (long long)e.bound, where);
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

} // namespace twin

namespace cuda {
void checkKernelErrors() { twin::checkErrors("pfrt_cuda_finalize"); }
} // namespace cuda

} // namespace pfrt
