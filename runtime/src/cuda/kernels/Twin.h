//===- Twin.h - what the device twins of the kernels share -----*- C++ -*-===//
//
// Not installed; nothing here is part of the ABI. The kernel twins
// (pfrt_cuda_k_*, one file a family as in src/cpu) check their arguments
// with the CPU kernels' own checks (common/KernelArgs.h, naming the twin),
// launch Kernels.cu's kernels through ../Module.h, and run their GEMMs
// through gemm() below: pfrt_cuda_gemm in exact float32, or as 3xTF32
// (PFRT_CUDA_GEMM_PRECISION). The only checks left to the device are those
// on data (an out-of-range label or id, a step < 1 for Adam's bias
// correction), which a kernel records in the device error record that
// pfrt_cuda_report_loss, pfrt_cuda_report_output and pfrt_cuda_finalize
// turn into a fatal error.
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_CUDA_KERNELS_TWIN_H
#define PFRT_SRC_CUDA_KERNELS_TWIN_H

#include "../../common/KernelArgs.h"
#include "../CudaInternal.h"
#include "../Module.h"

#include <cstdint>
#include <initializer_list>
#include <vector>

namespace pfrt {
namespace twin {

//===----------------------------------------------------------------------===//
// GEMMs (TwinGemm.cpp)
//===----------------------------------------------------------------------===//

/// How a twin's float32 GEMMs run (PFRT_CUDA_GEMM_PRECISION, pf-run
/// --gemm-precision): "fp32" (default) exact float32; "3xtf32" each GEMM as
/// three TF32 tensor-core GEMMs on the operands split into a TF32 part and
/// the rest (A B = As Bb + Ab Bs + Ab Bb, the small products first; the
/// dropped As Bs is below float32's rounding): float32's accuracy in
/// practice, at tensor-core speed. PFRT_CUDA_TF32=1 (plain TF32) wins.
bool threeTF32();

/// PFRT_CUDA_NO_FUSED_EPILOGUES=1: cuBLASLt's RELU_BIAS and BGRADB
/// epilogues are not used (a bias-only GEMM and a ReLU kernel; a GEMM and
/// a reduction), to measure what the fused epilogues gain or cost.
bool fusedEpilogues();

/// pfrt_cuda_gemm as the twins call it: exact float32, or under
/// PFRT_CUDA_GEMM_PRECISION=3xtf32 three TF32 GEMMs (the last one carries
/// the epilogue; BGRADB, which sums B itself, reports no algorithm and the
/// caller takes its GEMM-and-reduction path).
int gemm(int32_t ta, int32_t tb, int64_t m, int64_t n, int64_t k, float alpha,
         const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
         float *c, int64_t ldc, int64_t batch, int64_t sa, int64_t sb,
         int64_t sc, int32_t epilogue, void *bias, const void *aux);

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

//===----------------------------------------------------------------------===//
// Device buffers
//===----------------------------------------------------------------------===//

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
// Dropout's data step (Tensor.cpp)
//===----------------------------------------------------------------------===//

/// The data step a kernel drawing dropout reads when it runs: *step is the
/// current one (passed at launch); in a captured step the result is a
/// device slot holding it, copied before each replay from a page-locked
/// host value the replay's host work sets, else null. Without `draws` (no
/// dropout in this call) the slot is null too.
const int64_t *dataStepSlot(const char *fn, bool draws, int64_t *step);

} // namespace twin
} // namespace pfrt

#endif // PFRT_SRC_CUDA_KERNELS_TWIN_H
