//===- cublaslt_probe.cpp - what this GPU's cuBLASLt offers float32 -------===//
//
// A stand-alone probe (not part of the build or the tests) that answers,
// on the GPU it runs on, the questions the GPU lowering's choices rest on:
//
//  1. Does cuBLASLt have float32 (CUBLAS_COMPUTE_32F) algorithms for the
//     ReLU mask epilogues (RELU_AUX_BIAS forward, DRELU and DRELU_BGRAD
//     backward), and do they compute what the docs say (checked against a
//     double-precision host reference on fresh random data)? What does
//     the mask look like (the docs call it opaque)?
//  2. What do they cost against the plain GEMM on the wide MLP's shape?
//  3. Is CUBLAS_COMPUTE_32F_EMULATED_16BFX9 (float32 through BF16x9) offered
//     on this GPU, how fast, and how accurate; and TF32's rate for scale.
//
// Build (here, no GPU needed):
//   clang++-22 -O2 -std=c++17 -I/usr/local/cuda/include \
//     bench/probes/cublaslt_probe.cpp -L/usr/local/cuda/lib64 \
//     -lcublasLt -lcudart -Wl,-rpath,'$ORIGIN' -o build/cublaslt-probe
// Run on the GPU machine with the wheels' lib directories on
// LD_LIBRARY_PATH. Prints one line per finding.
//
//===----------------------------------------------------------------------===//

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

namespace {

#define CK(x)                                                                  \
  do {                                                                         \
    cudaError_t e_ = (x);                                                      \
    if (e_ != cudaSuccess) {                                                   \
      std::printf("FATAL %s: %s\n", #x, cudaGetErrorString(e_));               \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

cublasLtHandle_t gLt;
void *gWork = nullptr;
size_t gWorkBytes = size_t(64) << 20;

struct Gemm {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  int found = 0;
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
};

/// Column-major D (m x n) = A (m x k) B (k x n), no transposes.
Gemm plan(int64_t m, int64_t n, int64_t k, cublasComputeType_t compute,
          cublasLtEpilogue_t ep, void *bias, void *aux, int64_t auxLd) {
  Gemm g;
  cublasLtMatmulDescCreate(&g.desc, compute, CUDA_R_32F);
  cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &ep,
                                 sizeof(ep));
  if (bias)
    cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                   &bias, sizeof(bias));
  if (aux) {
    cublasLtMatmulDescSetAttribute(
        g.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof(aux));
    cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD,
                                   &auxLd, sizeof(auxLd));
  }
  cublasLtMatrixLayoutCreate(&g.a, CUDA_R_32F, m, k, m);
  cublasLtMatrixLayoutCreate(&g.b, CUDA_R_32F, k, n, k);
  cublasLtMatrixLayoutCreate(&g.c, CUDA_R_32F, m, n, m);
  cublasLtMatmulPreference_t pref;
  cublasLtMatmulPreferenceCreate(&pref);
  cublasLtMatmulPreferenceSetAttribute(pref,
                                       CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                       &gWorkBytes, sizeof(gWorkBytes));
  cublasLtMatmulHeuristicResult_t r[4] = {};
  g.status = cublasLtMatmulAlgoGetHeuristic(gLt, g.desc, g.a, g.b, g.c, g.c,
                                            pref, 4, r, &g.found);
  if (g.status == CUBLAS_STATUS_SUCCESS && g.found > 0)
    g.algo = r[0].algo;
  else
    g.found = 0;
  cublasLtMatmulPreferenceDestroy(pref);
  return g;
}

cublasStatus_t run(Gemm &g, const float *a, const float *b, float *d) {
  float one = 1.0f, zero = 0.0f;
  return cublasLtMatmul(gLt, g.desc, &one, a, g.a, b, g.b, &zero, d, g.c, d,
                        g.c, &g.algo, gWork, gWorkBytes, 0);
}

float *dev(const std::vector<float> &h) {
  float *p;
  CK(cudaMalloc(&p, h.size() * sizeof(float)));
  CK(cudaMemcpy(p, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice));
  return p;
}
std::vector<float> host(const float *p, size_t n) {
  std::vector<float> h(n);
  CK(cudaMemcpy(h.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost));
  return h;
}

std::vector<float> rnd(size_t n, std::mt19937 &gen) {
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (float &x : v)
    x = d(gen);
  return v;
}

/// Double-precision column-major A B.
std::vector<double> ref(const std::vector<float> &a,
                        const std::vector<float> &b, int64_t m, int64_t n,
                        int64_t k) {
  std::vector<double> d(size_t(m * n), 0.0);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t q = 0; q < k; ++q) {
      double bv = b[size_t(q + j * k)];
      for (int64_t i = 0; i < m; ++i)
        d[size_t(i + j * m)] += double(a[size_t(i + q * m)]) * bv;
    }
  return d;
}

double msTime(Gemm &g, const float *a, const float *b, float *d, int reps) {
  cudaEvent_t s, e;
  cudaEventCreate(&s);
  cudaEventCreate(&e);
  run(g, a, b, d);
  cudaEventRecord(s, 0);
  for (int i = 0; i < reps; ++i)
    run(g, a, b, d);
  cudaEventRecord(e, 0);
  cudaEventSynchronize(e);
  float ms = 0;
  cudaEventElapsedTime(&ms, s, e);
  return ms / reps;
}

void epilogues() {
  const int64_t m = 384, n = 256, k = 320; // D is m x n (column-major)
  const int64_t auxLd = (m + 127) / 128 * 128;
  std::mt19937 gen(std::random_device{}());
  auto ha = rnd(size_t(m * k), gen), hb = rnd(size_t(k * n), gen),
       hbias = rnd(size_t(m), gen);
  float *a = dev(ha), *b = dev(hb), *bias = dev(hbias), *d;
  CK(cudaMalloc(&d, size_t(m * n) * sizeof(float)));
  void *mask;
  size_t maskBytes = size_t(auxLd * n / 8);
  CK(cudaMalloc(&mask, maskBytes));
  CK(cudaMemset(mask, 0xA5, maskBytes));
  std::vector<double> z = ref(ha, hb, m, n, k);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i)
      z[size_t(i + j * m)] += hbias[size_t(i)];

  // Forward: RELU_AUX_BIAS.
  Gemm f = plan(m, n, k, CUBLAS_COMPUTE_32F, CUBLASLT_EPILOGUE_RELU_AUX_BIAS,
                bias, mask, auxLd);
  std::printf("fp32 RELU_AUX_BIAS: heuristic status %d, %d algorithms\n",
              int(f.status), f.found);
  if (!f.found)
    return;
  cublasStatus_t st = run(f, a, b, d);
  CK(cudaDeviceSynchronize());
  std::vector<float> y = host(d, size_t(m * n));
  double worst = 0;
  for (size_t i = 0; i < y.size(); ++i)
    worst = std::max(worst, std::fabs(y[i] - std::max(z[i], 0.0)) /
                                (1.0 + std::fabs(z[i])));
  std::printf("fp32 RELU_AUX_BIAS: run status %d, max rel error %.3g\n",
              int(st), worst);
  std::vector<uint8_t> bits(maskBytes);
  CK(cudaMemcpy(bits.data(), mask, maskBytes, cudaMemcpyDeviceToHost));
  // Hypothesis: bit (i + j * auxLd), LSB first in each byte, is z > 0.
  int64_t agree = 0, total = 0, agreeMsb = 0;
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) {
      int64_t bit = i + j * auxLd;
      bool want = y[size_t(i + j * m)] > 0;
      bool lsb = (bits[size_t(bit / 8)] >> (bit % 8)) & 1;
      bool msb = (bits[size_t(bit / 8)] >> (7 - bit % 8)) & 1;
      agree += lsb == want;
      agreeMsb += msb == want;
      ++total;
    }
  std::printf("mask layout: bit i + j*ld LSB-first agrees %lld/%lld, "
              "MSB-first %lld/%lld; first bytes %02x %02x %02x %02x\n",
              (long long)agree, (long long)total, (long long)agreeMsb,
              (long long)total, bits[0], bits[1], bits[2], bits[3]);

  // Backward: G = A2 B2 (m x n), then DRELU with the mask, and DRELU_BGRAD.
  auto ha2 = rnd(size_t(m * k), gen), hb2 = rnd(size_t(k * n), gen);
  float *a2 = dev(ha2), *b2 = dev(hb2), *dbias;
  CK(cudaMalloc(&dbias, size_t(m) * sizeof(float)));
  std::vector<double> g = ref(ha2, hb2, m, n, k);
  for (cublasLtEpilogue_t ep :
       {CUBLASLT_EPILOGUE_DRELU, CUBLASLT_EPILOGUE_DRELU_BGRAD}) {
    bool bgrad = ep == CUBLASLT_EPILOGUE_DRELU_BGRAD;
    const char *name = bgrad ? "DRELU_BGRAD" : "DRELU";
    Gemm bw = plan(m, n, k, CUBLAS_COMPUTE_32F, ep, bgrad ? dbias : nullptr,
                   mask, auxLd);
    std::printf("fp32 %s: heuristic status %d, %d algorithms\n", name,
                int(bw.status), bw.found);
    if (!bw.found)
      continue;
    CK(cudaMemset(dbias, 0, size_t(m) * sizeof(float)));
    st = run(bw, a2, b2, d);
    CK(cudaDeviceSynchronize());
    std::vector<float> dz = host(d, size_t(m * n));
    std::vector<float> db = host(dbias, size_t(m));
    double w = 0, wb = 0;
    std::vector<double> sums(size_t(m), 0.0);
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < m; ++i) {
        size_t at = size_t(i + j * m);
        double want = z[at] > 0 ? g[at] : 0.0;
        sums[size_t(i)] += want;
        w = std::max(w, std::fabs(dz[at] - want) / (1.0 + std::fabs(want)));
      }
    for (int64_t i = 0; i < m; ++i)
      wb = std::max(wb, std::fabs(db[size_t(i)] - sums[size_t(i)]) /
                            (1.0 + std::fabs(sums[size_t(i)])));
    std::printf("fp32 %s: run status %d, max rel error %.3g%s\n", name, int(st),
                w, bgrad ? "" : "");
    if (bgrad)
      std::printf("fp32 DRELU_BGRAD: bias gradient (row sums of the masked "
                  "product) max rel error %.3g\n",
                  wb);
  }
}

void timings() {
  // The wide MLP's GEMM: 1024 x 4096 activations times a 4096 x 4096
  // weight (column-major: m = 4096 features, n = 1024 rows, k = 4096).
  const int64_t m = 4096, n = 1024, k = 4096, auxLd = m;
  std::mt19937 gen(7);
  float *a = dev(rnd(size_t(m * k), gen)), *b = dev(rnd(size_t(k * n), gen)),
        *bias = dev(rnd(size_t(m), gen)), *d, *dbias;
  CK(cudaMalloc(&d, size_t(m * n) * sizeof(float)));
  CK(cudaMalloc(&dbias, size_t(m) * sizeof(float)));
  void *mask;
  CK(cudaMalloc(&mask, size_t(auxLd * n / 8)));
  double flops = 2.0 * double(m) * double(n) * double(k);
  struct Case {
    const char *name;
    cublasComputeType_t compute;
    cublasLtEpilogue_t ep;
    bool bias, aux;
  } cases[] = {
      {"fp32 DEFAULT", CUBLAS_COMPUTE_32F, CUBLASLT_EPILOGUE_DEFAULT, 0, 0},
      {"fp32 RELU_BIAS", CUBLAS_COMPUTE_32F, CUBLASLT_EPILOGUE_RELU_BIAS, 1, 0},
      {"fp32 RELU_AUX_BIAS", CUBLAS_COMPUTE_32F,
       CUBLASLT_EPILOGUE_RELU_AUX_BIAS, 1, 1},
      {"fp32 DRELU", CUBLAS_COMPUTE_32F, CUBLASLT_EPILOGUE_DRELU, 0, 1},
      {"fp32 DRELU_BGRAD", CUBLAS_COMPUTE_32F, CUBLASLT_EPILOGUE_DRELU_BGRAD, 1,
       1},
      {"tf32 DEFAULT", CUBLAS_COMPUTE_32F_FAST_TF32, CUBLASLT_EPILOGUE_DEFAULT,
       0, 0},
      {"bf16x9 DEFAULT", CUBLAS_COMPUTE_32F_EMULATED_16BFX9,
       CUBLASLT_EPILOGUE_DEFAULT, 0, 0},
  };
  for (Case &c : cases) {
    Gemm g = plan(m, n, k, c.compute, c.ep,
                  c.bias ? (c.ep == CUBLASLT_EPILOGUE_DRELU_BGRAD
                                ? static_cast<void *>(dbias)
                                : static_cast<void *>(bias))
                         : nullptr,
                  c.aux ? mask : nullptr, auxLd);
    if (!g.found) {
      std::printf("time %s: no algorithm (status %d)\n", c.name, int(g.status));
      continue;
    }
    double ms = msTime(g, a, b, d, 20);
    cudaError_t e = cudaDeviceSynchronize();
    std::printf("time %s: %.3f ms, %.1f TFLOP/s (%s)\n", c.name, ms,
                flops / ms / 1e9, cudaGetErrorString(e));
  }
}

void emulationAccuracy() {
  const int64_t m = 512, n = 512, k = 512;
  std::mt19937 gen(std::random_device{}());
  auto ha = rnd(size_t(m * k), gen), hb = rnd(size_t(k * n), gen);
  float *a = dev(ha), *b = dev(hb), *d;
  CK(cudaMalloc(&d, size_t(m * n) * sizeof(float)));
  std::vector<double> want = ref(ha, hb, m, n, k);
  for (auto [name, compute] :
       {std::pair{"fp32", CUBLAS_COMPUTE_32F},
        std::pair{"tf32", CUBLAS_COMPUTE_32F_FAST_TF32},
        std::pair{"bf16x9", CUBLAS_COMPUTE_32F_EMULATED_16BFX9}}) {
    Gemm g =
        plan(m, n, k, compute, CUBLASLT_EPILOGUE_DEFAULT, nullptr, nullptr, 0);
    if (!g.found) {
      std::printf("accuracy %s: no algorithm\n", name);
      continue;
    }
    run(g, a, b, d);
    CK(cudaDeviceSynchronize());
    std::vector<float> got = host(d, size_t(m * n));
    double w = 0, sum = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      double e = std::fabs(got[i] - want[i]) / (1.0 + std::fabs(want[i]));
      w = std::max(w, e);
      sum += e;
    }
    std::printf("accuracy %s (512^3, against double): max %.3g, mean %.3g\n",
                name, w, sum / double(got.size()));
  }
}

} // namespace

int main() {
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  std::printf("device %s (sm_%d%d), cuBLASLt %zu\n", p.name, p.major, p.minor,
              cublasLtGetVersion());
  if (cublasLtCreate(&gLt) != CUBLAS_STATUS_SUCCESS) {
    std::printf("FATAL cublasLtCreate\n");
    return 1;
  }
  CK(cudaMalloc(&gWork, gWorkBytes));
  epilogues();
  emulationAccuracy();
  timings();
  std::printf("done\n");
  return 0;
}
