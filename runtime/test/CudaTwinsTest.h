//===- CudaTwinsTest.h - pfrt-test-cuda-twins' shared helpers ---*- C++ -*-===//
//
// pfrt-test-cuda-twins is four files, one a group of twins
// (test_cuda_twins.cpp: element-wise, reduce_sum, cross-entropy,
// optimizers, matmuls and the GEMMs; test_cuda_twins_conv.cpp: the
// conv-network family; test_cuda_twins_gpt.cpp: the GPT family;
// test_cuda_twins_host.cpp: host rows, state, graphs, pfrt_cuda_run_step),
// sharing the random data, the device buffers and the comparisons here.
// main runs the groups in that order, so a seed replays the same data.
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_TEST_CUDATWINSTEST_H
#define PFRT_TEST_CUDATWINSTEST_H

#include "CudaTestUtil.h"
#include "TestUtil.h"
#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace cudatwins {

/// The run's seed, randint's running state, the tag of the next uniform
/// vector, and the test's buffers in the device arena.
extern uint64_t gSeed, gState, gTag;
constexpr int64_t kArena = int64_t(256) << 20;
extern pt::DeviceArena gArena;

/// Fresh uniform floats in [lo, hi).
std::vector<float> uniform(int64_t n, float lo = -3.0f, float hi = 3.0f);
int64_t randint(int64_t lo, int64_t hi);

/// A fresh device buffer of `bytes` (the test's own bump allocation).
inline void *dalloc(int64_t bytes) { return gArena.alloc(bytes); }

/// A fresh device copy of `h`.
template <typename T> T *upload(const std::vector<T> &h) {
  return gArena.upload(h.data(), int64_t(h.size()));
}

using pt::download;

/// Every element's bits equal; or equal within tol (relative above 1).
void expectBits(const std::vector<float> &got, const std::vector<float> &want,
                const std::string &what);
void expectClose(const std::vector<float> &got, const std::vector<float> &want,
                 double tol, const std::string &what);

/// An element-wise twin of two float inputs and its CPU kernel.
struct BinaryTwin {
  const char *name;
  void (*twin)(const float *, const float *, float *, int64_t);
  void (*cpu)(const float *, const float *, float *, int64_t);
};

/// Each op on the device copies (da, db, into dout) and on the host (a, b)
/// gives the same bits.
void expectBinaryTwins(std::initializer_list<BinaryTwin> ops,
                       const std::vector<float> &a, const std::vector<float> &b,
                       const float *da, const float *db, float *dout,
                       const std::string &at);

/// The groups of the other files: the convolutions, the rest of the
/// conv-network family, the GPT family, and the host rows, state, graphs
/// and pfrt_cuda_run_step (files under `dir`).
void convTwins();
void convNetTwins();
void gptFamilyTwins();
void hostTwins(const std::string &dir);

} // namespace cudatwins

#endif // PFRT_TEST_CUDATWINSTEST_H
