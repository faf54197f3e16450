//===- TwinGemm.cpp - the twins' GEMMs: exact float32 or 3xTF32 -----------===//
//
// See Twin.h.
//
//===----------------------------------------------------------------------===//

#include "Twin.h"

#include "../../common/Internal.h"
#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

#include <cstdlib>
#include <cstring>

namespace pfrt {
namespace twin {

namespace {

/// The elements from a batched row-major operand's first to its last
/// (rows x cols, row stride ld, batch stride; a shared operand: 0).
int64_t operandExtent(int64_t rows, int64_t cols, int64_t ld, int64_t batch,
                      int64_t stride) {
  return (batch - 1) * stride + (rows - 1) * ld + cols;
}

/// The 3xTF32 split's device buffers for one GEMM's operands (its own: a
/// twin's scratch may hold the GEMM's operand, as a convolution's columns
/// do).
float *splitBuffers(int64_t floats, const char *fn) {
  static GrowingBuffer b;
  return b.get(floats, fn);
}

/// Each piece of a split 256-byte aligned (whole float counts).
int64_t alignedFloats(int64_t floats) { return (floats + 63) / 64 * 64; }

} // namespace

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

bool fusedEpilogues() {
  static const bool on = [] {
    const char *v = std::getenv("PFRT_CUDA_NO_FUSED_EPILOGUES");
    return !(v && std::strcmp(v, "1") == 0);
  }();
  return on;
}

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

} // namespace twin
} // namespace pfrt
