//===- Matmul.cpp - device twins of the matrix products -------------------===//
//
// pfrt_cuda_k_matmul and its variants through cuBLASLt (gemm(), Twin.h):
// the CPU kernel's shapes and checks; a shared B with an untransposed A
// folds the batch into M as the CPU does; bias and ReLU ride cuBLASLt's
// epilogues (BIAS, RELU_BIAS, BGRADB) unless PFRT_CUDA_NO_FUSED_EPILOGUES.
//
//===----------------------------------------------------------------------===//

#include "Twin.h"

#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

#include <cstdio>
#include <cstdlib>

using namespace pfrt;
using namespace pfrt::kern;
using namespace pfrt::twin;

namespace {

/// C = op(A) op(B) (+ bias per column) + beta C through pfrt_cuda_gemm, with
/// pfrt_k_matmul's shapes and checks.
void matmul(const char *fn, const float *a, const float *b, bool hasBias,
            const float *bias, float *c, int64_t batch, int64_t batchB,
            int64_t m, int64_t n, int64_t k, int32_t ta, int32_t tb, float beta,
            bool relu = false) {
  const MatmulSizes s =
      checkMatmulArgs(fn, a, b, c, batch, batchB, m, n, k, hasBias, bias);
  const int64_t aSize = s.aSize, bSize = s.bSize, cSize = s.cSize;
  int64_t cTotal = s.cTotal;
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
  if (batchB == 1 && !ta && batch > 1) {
    // A shared B and untransposed A: the batch folds into M (one GEMM), as
    // the CPU kernel does.
    gemm(0, tb, mulChecked(fn, batch, m), n, k, 1.0f, a, lda, b, ldb, beta, c,
         n, 1, 0, 0, 0, epilogue, biasPtr, nullptr);
    if (reluKernel)
      pfrt_cuda_k_relu(c, c, cTotal);
    return;
  }
  gemm(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, beta, c, n, batch, aSize,
       batchB == 1 ? 0 : bSize, cSize, epilogue, biasPtr, nullptr);
  if (reluKernel)
    pfrt_cuda_k_relu(c, c, cTotal);
}

} // namespace

extern "C" {

void pfrt_cuda_k_matmul(const float *a, const float *b, float *c, int64_t batch,
                        int64_t batchB, int64_t m, int64_t n, int64_t k,
                        int32_t ta, int32_t tb) {
  matmul("pfrt_cuda_k_matmul", a, b, false, nullptr, c, batch, batchB, m, n, k,
         ta, tb, 0.0f);
}

void pfrt_cuda_k_matmul_acc(const float *a, const float *b, float *c,
                            int64_t batch, int64_t batchB, int64_t m, int64_t n,
                            int64_t k, int32_t ta, int32_t tb) {
  matmul("pfrt_cuda_k_matmul_acc", a, b, false, nullptr, c, batch, batchB, m, n,
         k, ta, tb, 1.0f);
}

void pfrt_cuda_k_matmul_bias(const float *a, const float *b, const float *bias,
                             float *c, int64_t batch, int64_t batchB, int64_t m,
                             int64_t n, int64_t k, int32_t ta, int32_t tb) {
  matmul("pfrt_cuda_k_matmul_bias", a, b, true, bias, c, batch, batchB, m, n, k,
         ta, tb, 0.0f);
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
                                  int64_t batchB, int64_t m, int64_t n,
                                  int64_t k, int32_t ta, int32_t tb) {
  matmul("pfrt_cuda_k_matmul_bias_relu", a, b, true, bias, c, batch, batchB, m,
         n, k, ta, tb, 0.0f, /*relu=*/true);
}

void pfrt_cuda_k_matmul_typed(const void *a, const void *b, void *c,
                              int64_t batch, int64_t batchB, int64_t m,
                              int64_t n, int64_t k, int32_t ta, int32_t tb,
                              int32_t abDtype, int32_t cDtype,
                              int32_t accumulate) {
  const char *fn = "pfrt_cuda_k_matmul_typed";
  const MatmulSizes s =
      checkMatmulArgs(fn, a, b, c, batch, batchB, m, n, k, false, nullptr);
  if (batch == 0 || s.cSize == 0)
    return;
  const int64_t cBytes = cDtype == PFRT_DTYPE_F32 ? 4 : 2;
  if (k == 0) { // C zeros, or unchanged (accumulate)
    if (!accumulate)
      pfrt_cuda_memset(c, 0, s.cTotal * cBytes);
    return;
  }
  const int64_t lda = ta ? m : k, ldb = tb ? k : n;
  const float beta = accumulate ? 1.0f : 0.0f;
  // A shared B and untransposed A: the batch folds into M (one GEMM).
  if (batchB == 1 && !ta && batch > 1)
    pfrt_cuda_gemm_typed(abDtype, cDtype, 0, tb, mulChecked(fn, batch, m), n, k,
                         1.0f, a, lda, b, ldb, beta, c, n, 1, 0, 0, 0,
                         PFRT_EPILOGUE_NONE, nullptr, nullptr, 0);
  else
    pfrt_cuda_gemm_typed(abDtype, cDtype, ta, tb, m, n, k, 1.0f, a, lda, b, ldb,
                         beta, c, n, batch, s.aSize, batchB == 1 ? 0 : s.bSize,
                         s.cSize, PFRT_EPILOGUE_NONE, nullptr, nullptr, 0);
}

} // extern "C"
