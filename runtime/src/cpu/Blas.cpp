//===- Blas.cpp - Row-major SGEMM through OpenBLAS ------------------------===//

#include "../common/Internal.h"
#include "pfrt/pfrt.h"

#include <cblas.h>
#include <climits>

using namespace pfrt;

namespace {

void checkDim(int64_t v, const char *what, const char *fn) {
  if (v < 0 || v > INT_MAX)
    fatal("%s: %s = %lld is outside [0, INT_MAX] (32-bit BLAS)", fn, what,
          (long long)v);
}

void checkLd(int64_t ld, int64_t minCols, const char *what, const char *fn) {
  int64_t need = minCols > 1 ? minCols : 1;
  if (ld < need || ld > INT_MAX)
    fatal("%s: %s = %lld, need at least %lld (and at most INT_MAX)", fn, what,
          (long long)ld, (long long)need);
}

} // namespace

extern "C" {

int pfrt_sgemm(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K,
               float alpha, const float *A, int64_t lda, const float *B,
               int64_t ldb, float beta, float *C, int64_t ldc) {
  const char *fn = "pfrt_sgemm";
  checkDim(M, "M", fn);
  checkDim(N, "N", fn);
  checkDim(K, "K", fn);
  // Row-major: the stored row length of A is K (or M when transposed).
  checkLd(lda, trans_a ? M : K, "lda", fn);
  checkLd(ldb, trans_b ? K : N, "ldb", fn);
  checkLd(ldc, N, "ldc", fn);
  if (M == 0 || N == 0)
    return 0;
  if (!C || (K > 0 && (!A || !B)))
    fatal("%s: NULL matrix pointer", fn);
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, int(M), int(N), int(K),
              alpha, A, int(lda), B, int(ldb), beta, C, int(ldc));
  return 0;
}

int pfrt_set_num_threads(int n) {
  if (n < 1)
    fatal("pfrt_set_num_threads: %d < 1", n);
  openblas_set_num_threads(n);
  return 0;
}

} // extern "C"
