//===- test_cuda_generated.cpp - the compiler's GPU kernels on a GPU ------===//
//
// pfrt-test-cuda-generated IMAGE. IMAGE is the cubin (or PTX) of the
// compiler's element-wise kernels, made by pf-opt -pf-gpu-kernels and the
// NVVM pipeline and written by pf-translate --pf-emit-gpu-binary (see
// test/Integration/gpu-kernels-device.test). Without a CUDA device it exits
// 77. With one: every kernel of Kernels/Elementwise.h (add, mul, relu and
// its gradient, each activation and its gradient) runs over n elements (n
// not a multiple of the block) of fresh random data and is compared with
// libpfrt's CPU kernel: equal within 1e-6 relative (the activations round
// from double on both sides; add, mul and relu are exact), and two launches
// give identical bits.
//
//===----------------------------------------------------------------------===//

#include "CudaTestUtil.h"
#include "TestUtil.h"
#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace {

uint64_t gSeed;
constexpr int64_t kN = 100003;
constexpr int64_t kBlock = 256; // kernels::kBlockSize

std::vector<float> randomVector(uint64_t stream) {
  std::vector<float> v(kN);
  for (int64_t i = 0; i < kN; ++i)
    v[i] = 3.0f * pt_value(gSeed, stream, 0, uint64_t(i));
  return v;
}

struct Case {
  std::string name;
  unsigned inputs;
  std::function<void(const std::vector<std::vector<float>> &, float *)> cpu;
};

std::vector<Case> cases() {
  std::vector<Case> all = {
      {"pf_ew_add", 2,
       [](auto &in, float *out) {
         pfrt_k_add(in[0].data(), in[1].data(), out, kN);
       }},
      {"pf_ew_mul", 2,
       [](auto &in, float *out) {
         pfrt_k_mul(in[0].data(), in[1].data(), out, kN);
       }},
      {"pf_ew_relu", 1,
       [](auto &in, float *out) { pfrt_k_relu(in[0].data(), out, kN); }},
      {"pf_ew_relu_grad", 2,
       [](auto &in, float *out) {
         pfrt_k_relu_grad(in[0].data(), in[1].data(), out, kN);
       }},
  };
  const char *kinds[] = {"gelu", "gelu_tanh", "tanh", "sigmoid"};
  for (int32_t k = 0; k < 4; ++k) {
    all.push_back({std::string("pf_ew_activation_") + kinds[k], 1,
                   [k](auto &in, float *out) {
                     pfrt_k_activation(k, in[0].data(), out, kN);
                   }});
    all.push_back({std::string("pf_ew_activation_grad_") + kinds[k], 2,
                   [k](auto &in, float *out) {
                     pfrt_k_activation_grad(k, in[0].data(), in[1].data(), out,
                                            kN);
                   }});
  }
  return all;
}

std::vector<float> launch(void *fn, const std::vector<std::vector<float>> &in) {
  const int64_t bytes = kN * int64_t(sizeof(float));
  std::vector<void *> ptrs;
  void *out = pfrt_cuda_arena_ptr(0, bytes);
  for (size_t j = 0; j < in.size(); ++j) {
    ptrs.push_back(pfrt_cuda_arena_ptr(int64_t(j + 1) * (1 << 20), bytes));
    pfrt_cuda_h2d(ptrs.back(), in[j].data(), bytes);
  }
  pfrt_cuda_memset(out, 0xff, bytes); // NaNs where a thread writes nothing
  int64_t n = kN;
  std::vector<void *> args = {&out};
  for (void *&p : ptrs)
    args.push_back(&p);
  args.push_back(&n);
  pfrt_cuda_launch(fn, (kN + kBlock - 1) / kBlock, 1, 1, kBlock, 1, 1, 0,
                   args.data());
  std::vector<float> got(kN);
  pfrt_cuda_d2h(got.data(), out, bytes);
  return got;
}

} // namespace

int main(int argc, char **argv) {
  pt::skipWithoutDevice("cuda-generated");
  pfrt_init(&argc, &argv);
  gSeed = pt_seed("cuda-generated");
  pfrt_cuda_init(0);
  pfrt_cuda_arena_init(int64_t(8) << 20);
  std::ifstream f(argc > 1 ? argv[1] : "", std::ios::binary);
  CHECK(f.good(), "cannot read the kernels' image %s",
        argc > 1 ? argv[1] : "(none)");
  std::stringstream image;
  image << f.rdbuf();
  std::string bytes = image.str();
  void *module = pfrt_cuda_module_load(bytes.data());
  int checked = 0;
  for (const Case &c : cases()) {
    std::vector<std::vector<float>> in;
    for (unsigned j = 0; j < c.inputs; ++j)
      in.push_back(randomVector(uint64_t(10 * checked + j)));
    std::vector<float> want(kN);
    c.cpu(in, want.data());
    void *fn = pfrt_cuda_function(module, c.name.c_str());
    std::vector<float> got = launch(fn, in), again = launch(fn, in);
    CHECK(std::memcmp(got.data(), again.data(), size_t(kN) * 4) == 0,
          "%s: two launches differ in their bits", c.name.c_str());
    double worst = 0.0;
    for (int64_t i = 0; i < kN; ++i) {
      double err = std::fabs(double(got[i]) - double(want[i])) /
                   std::max(1.0, std::fabs(double(want[i])));
      CHECK(std::isfinite(got[i]), "%s: element %lld not written (%g)",
            c.name.c_str(), (long long)i, double(got[i]));
      worst = std::max(worst, err);
    }
    CHECK(worst <= 1e-6, "%s: relative error %g against the CPU kernel",
          c.name.c_str(), worst);
    printf("cuda-generated: %-32s max relative error %.3g\n", c.name.c_str(),
           worst);
    ++checked;
  }
  printf("cuda-generated: %d kernels equal the CPU's\n", checked);
  pfrt_finalize();
  return 0;
}
