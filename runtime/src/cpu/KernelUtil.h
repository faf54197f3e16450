//===- KernelUtil.h - Helpers shared by the CPU kernels ---------*- C++ -*-===//
//
// Not installed; nothing here is part of the ABI. The argument checks are
// common/KernelArgs.h's (shared with the device twins). The loops here are
// written so that clang/GCC vectorize them at -O2/-O3 without -ffast-math:
// float64 sums keep a fixed set of independent accumulators (the SLP
// vectorizer turns them into vector adds, and the summation order does not
// depend on the target's vector width).
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_CPU_KERNELUTIL_H
#define PFRT_SRC_CPU_KERNELUTIL_H

#include "../common/Internal.h"
#include "../common/KernelArgs.h"
#include "../common/KernelMath.h"
#include "../common/ReduceOrder.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <vector>

#define PFRT_RESTRICT __restrict__

// "These loop iterations are independent": lets a loop whose output may be
// the SAME pointer as an input (exact in-place) vectorize without the
// runtime overlap check that would otherwise send it to the scalar path.
#if defined(__clang__)
#define PFRT_IVDEP _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define PFRT_IVDEP _Pragma("GCC ivdep")
#else
#define PFRT_IVDEP
#endif

// A loop whose body is one long dependent chain (a polynomial by Horner's
// rule, without FMA: the kernels build with -ffp-contract=off): run four
// vectors' chains side by side so their latencies overlap. Scheduling only:
// every element is computed exactly as before.
#if defined(__clang__)
#define PFRT_INTERLEAVE _Pragma("clang loop interleave_count(4)")
#else
#define PFRT_INTERLEAVE
#endif

// A condition the branch predictor cannot learn (e.g. a comparison of
// random data): keep selects on it as cmov/blend instead of branches.
#if defined(__has_builtin)
#if __has_builtin(__builtin_unpredictable)
#define PFRT_UNPREDICTABLE(c) __builtin_unpredictable(c)
#endif
#endif
#ifndef PFRT_UNPREDICTABLE
#define PFRT_UNPREDICTABLE(c) (c)
#endif

// Functions that everything in a multiversioned function calls must be
// inlined into it, so that they are compiled for the clone's ISA (and a
// baseline out-of-line copy is never shared with an AVX2 one).
#define PFRT_ALWAYS_INLINE inline __attribute__((always_inline))

// PFRT_MULTIVERSION: compile a hot loop nest for AVX-512, AVX2 and the
// baseline, picked once at load time (ifunc; GCC and clang on x86-64 ELF).
// Only self-contained functions get it. The clones compute bit-identical
// results: no FMA contraction (-ffp-contract=off) and every sum has a fixed
// accumulator pattern, whatever the vector width. -DPFRT_NO_MULTIVERSION
// turns it off and -DPFRT_MULTIVERSION_NO_AVX512 drops the AVX-512 clone,
// which is how the clones are tested against each other.
#if defined(PFRT_MULTIVERSION_NO_AVX512)
#define PFRT_MULTIVERSION_TARGETS "avx2", "default"
#else
#define PFRT_MULTIVERSION_TARGETS "avx512f", "avx2", "default"
#endif
#if defined(__x86_64__) && defined(__ELF__) &&                                 \
    !defined(PFRT_NO_MULTIVERSION) &&                                          \
    ((defined(__clang__) && __clang_major__ >= 14) ||                          \
     (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 8))
#define PFRT_MULTIVERSION                                                      \
  __attribute__((target_clones(PFRT_MULTIVERSION_TARGETS)))
#else
#define PFRT_MULTIVERSION
#endif

namespace pfrt {
namespace kern {

/// Per-kernel scratch memory: slot i is one 64-byte-aligned buffer that only
/// grows. Contents are undefined on return. Kernels are single-threaded and
/// never nest, so a slot is owned by one kernel call at a time.
void *scratch(int slot, int64_t bytes);
template <typename T> T *scratchOf(int slot, int64_t count) {
  return static_cast<T *>(scratch(slot, count * int64_t(sizeof(T))));
}

/// Eight float64 lanes: the kernels' fixed pattern of 8 accumulators
/// (element k + j of a row goes to lane j) written as one vector, so that
/// every build vectorizes it; each lane computes exactly what the scalar
/// form (the device twins' bodies, cuda/kernels/*Bodies.h) computes.
typedef double V8d __attribute__((vector_size(64), aligned(8)));
typedef float V8f __attribute__((vector_size(32), aligned(4), may_alias));

/// x[0..8) widened to float64 (a macro: a function returning V8d would
/// change the calling convention between the multiversioned clones).
#define PFRT_LOAD8(x)                                                          \
  __builtin_convertvector(*reinterpret_cast<const ::pfrt::kern::V8f *>(x),     \
                          ::pfrt::kern::V8d)

/// The lanes' sum in the kernels' order: ((0+4)+(1+5))+((2+6)+(3+7)).
PFRT_ALWAYS_INLINE double sum8(const V8d &a) {
  return ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]));
}

/// sum(x[0..n)) in float64.
PFRT_ALWAYS_INLINE double sumF64(const float *PFRT_RESTRICT x, int64_t n) {
  V8d acc = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    acc += PFRT_LOAD8(x + i);
  double tail = 0;
  for (; i < n; ++i)
    tail += double(x[i]);
  return sum8(acc) + tail;
}

/// acc[i] += x[i] in float64.
PFRT_ALWAYS_INLINE void accumulateRow(double *PFRT_RESTRICT acc,
                                      const float *PFRT_RESTRICT x, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    acc[i] += double(x[i]);
}

//===----------------------------------------------------------------------===//
// exp and softmax rows (softmax, the cross-entropies, the activations)
//===----------------------------------------------------------------------===//

/// One softmax row: returns mx = max(x) and the float64 sum of
/// e[i] = exp(x[i] - mx), which it stores.
PFRT_ALWAYS_INLINE double softmaxRowBody(const float *PFRT_RESTRICT x,
                                         int64_t n, double *PFRT_RESTRICT e,
                                         double *mxOut) {
  const double mx = double(rowMax(x, n));
  PFRT_INTERLEAVE
  for (int64_t i = 0; i < n; ++i)
    e[i] = expClamped(double(x[i]) - mx);
  // 32 interleaved lanes combined by a warp's shuffle tree: the GPU's
  // order (cuda/kernels/SoftmaxBodies.h softmaxRowSum), so both give the
  // same bits.
  // Lanes j, j + 8, j + 16, j + 24 are the four vectors' lane j.
  V8d lanes[4] = {{0, 0, 0, 0, 0, 0, 0, 0},
                  {0, 0, 0, 0, 0, 0, 0, 0},
                  {0, 0, 0, 0, 0, 0, 0, 0},
                  {0, 0, 0, 0, 0, 0, 0, 0}};
  int64_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int v = 0; v < 4; ++v) {
      V8d ev;
      std::memcpy(&ev, e + i + 8 * v, sizeof(ev));
      lanes[v] += ev;
    }
  double acc[32];
  std::memcpy(acc, lanes, sizeof(acc));
  for (int j = 0; i + j < n; ++j)
    acc[j] += e[i + j];
  for (int off = 16; off >= 1; off /= 2)
    for (int j = 0; j < off; ++j)
      acc[j] += acc[j + off];
  *mxOut = mx;
  return acc[0];
}

/// The sliding-window geometry conv2d and the pools share: for each kernel
/// column kw, the output columns [lo[kw], hi[kw]) whose input column
/// ow*stride + kw*dilation - pad lies in [0, W).
inline void validColumns(int64_t W, int64_t OW, int64_t KW, int64_t stride,
                         int64_t pad, int64_t dilation,
                         std::vector<int64_t> &lo, std::vector<int64_t> &hi) {
  auto floorDiv = [](int64_t a, int64_t b) { // b > 0
    return a >= 0 ? a / b : -((-a + b - 1) / b);
  };
  lo.resize(size_t(KW));
  hi.resize(size_t(KW));
  for (int64_t kw = 0; kw < KW; ++kw) {
    int64_t off = kw * dilation - pad;
    int64_t l = off >= 0 ? 0 : (-off + stride - 1) / stride;
    int64_t h = floorDiv(W - 1 - off, stride) + 1;
    h = h > OW ? OW : h < 0 ? 0 : h;
    lo[kw] = l < h ? l : h;
    hi[kw] = h;
  }
}

/// A window kernel's checked dims (Args: common/KernelArgs.h's ConvArgs or
/// PoolArgs) and, for each kernel column kw, the valid output-column range
/// [owLo[kw], owHi[kw]) (validColumns, with the kernel's column dilation).
template <typename Args> struct WindowDims : Args {
  std::vector<int64_t> owLo, owHi;
  WindowDims(const Args &a, int64_t dilation) : Args(a) {
    validColumns(this->W, this->OW, this->KW, this->sw, this->pw, dilation,
                 owLo, owHi);
  }
};

/// Checks dims and each tensor argument in the order given.
inline WindowDims<ConvArgs> checkedDims(const char *fn, const int64_t *dims,
                                        std::initializer_list<ConvBuf> args) {
  const ConvArgs a = checkConvArgs(fn, dims, args);
  return WindowDims<ConvArgs>(a, a.dw);
}
inline WindowDims<PoolArgs> checkedDims(const char *fn, const int64_t *dims,
                                        std::initializer_list<PoolBuf> args) {
  return WindowDims<PoolArgs>(checkPoolArgs(fn, dims, args), 1);
}

} // namespace kern
} // namespace pfrt

#endif // PFRT_SRC_CPU_KERNELUTIL_H
