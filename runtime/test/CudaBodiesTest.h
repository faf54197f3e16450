//===- CudaBodiesTest.h - pfrt-test-cuda-bodies' shared helpers -*- C++ -*-===//
//
// pfrt-test-cuda-bodies is three files, one a group of kernel families
// (test_cuda_bodies.cpp: element-wise, reduce_sum, cross-entropy,
// optimizers; test_cuda_bodies_conv.cpp: activations, transposes,
// convolutions, pooling, batch norm; test_cuda_bodies_gpt.cpp: the GPT
// family), sharing the random data and the comparisons here. main runs the
// groups in that order, so a seed replays the same data.
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_TEST_CUDABODIESTEST_H
#define PFRT_TEST_CUDABODIESTEST_H

#include "TestUtil.h"
#include "pfrt/pfrt.h"

#include "../src/cpu/KernelUtil.h"
#include "../src/cuda/kernels/DeviceBodies.h"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace cudabodies {

/// The run's seed, the running state of randint and uniform1, the tag of
/// the next uniform vector, and the comparisons passed.
extern uint64_t gSeed;
extern uint64_t gState;
extern uint64_t gTag;
extern int gChecks;

/// Fresh uniform floats in [lo, hi).
std::vector<float> uniform(int64_t n, float lo = -3.0f, float hi = 3.0f);
int64_t randint(int64_t lo, int64_t hi);
double uniform1(double lo, double hi);
/// A few special values at random places (relu and friends pass them on).
void sprinkle(std::vector<float> &v);
/// Every element's bits equal; or equal within 1e-6 relative.
void expectBits(const std::vector<float> &got, const std::vector<float> &want,
                const std::string &what);
void expectClose(const std::vector<float> &got, const std::vector<float> &want,
                 const std::string &what);

/// The groups of families of test_cuda_bodies_conv.cpp and
/// test_cuda_bodies_gpt.cpp.
/// body(out, i) for every i in [0, n) against cpu(out) (n floats each):
/// the same bits.
template <typename Body, typename Cpu>
void expectBodyBits(int64_t n, Body body, Cpu cpu, const std::string &what) {
  std::vector<float> got(static_cast<size_t>(n)), want(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    body(got.data(), i);
  cpu(want.data());
  expectBits(got, want, what);
}

/// An element-wise body of two float inputs and its CPU kernel.
struct BinaryBody {
  const char *name;
  void (*body)(const float *, const float *, float *, int64_t);
  void (*cpu)(const float *, const float *, float *, int64_t);
};

/// Each body run over every element of (a, b) gives its CPU kernel's bits.
void expectBinaryBodies(std::initializer_list<BinaryBody> ops,
                        const std::vector<float> &a,
                        const std::vector<float> &b, const std::string &at);

void convFamilies();
void gptFamilies();

} // namespace cudabodies

#endif // PFRT_TEST_CUDABODIESTEST_H
