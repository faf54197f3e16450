/* pfrt-test-sgemm: pfrt_sgemm against a naive double-precision loop, for all
 * four transpose combinations, odd sizes, padded leading dimensions and
 * non-trivial alpha/beta (C starts non-zero, so beta matters). */

#include "TestUtil.h"

#include <float.h>
#include <math.h>

static float *randomMatrix(uint64_t seed, uint64_t tag, int64_t n) {
  float *m = (float *)malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
  for (int64_t i = 0; i < n; ++i)
    m[i] = pt_value(seed, tag, 0, (uint64_t)i);
  return m;
}

static void runCase(uint64_t seed, uint64_t tag, int ta, int tb, int64_t M,
                    int64_t N, int64_t K, int64_t pad) {
  /* Stored shapes (row-major): A is M x K or K x M when transposed. */
  int64_t aRows = ta ? K : M, aCols = ta ? M : K;
  int64_t bRows = tb ? N : K, bCols = tb ? K : N;
  /* BLAS wants ld >= max(1, row length), also when K == 0. */
  int64_t lda = (aCols > 0 ? aCols : 1) + pad;
  int64_t ldb = (bCols > 0 ? bCols : 1) + pad;
  int64_t ldc = (N > 0 ? N : 1) + pad;
  float *A = randomMatrix(seed, tag * 4 + 0, aRows * lda);
  float *B = randomMatrix(seed, tag * 4 + 1, bRows * ldb);
  float *C = randomMatrix(seed, tag * 4 + 2, M * ldc);
  float *C0 = (float *)malloc((size_t)(M * ldc + 1) * sizeof(float));
  memcpy(C0, C, (size_t)(M * ldc) * sizeof(float));
  float alpha = 0.5f + pt_value(seed, tag, 7, 0);
  float beta = pt_value(seed, tag, 7, 1);

  pfrt_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);

  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      if (j >= N) { /* padding columns must be untouched */
        CHECK(C[i * ldc + j] == C0[i * ldc + j], "padding of C changed");
        continue;
      }
      double acc = 0, mag = 0;
      for (int64_t k = 0; k < K; ++k) {
        double a = ta ? A[k * lda + i] : A[i * lda + k];
        double b = tb ? B[j * ldb + k] : B[k * ldb + j];
        acc += a * b;
        mag += fabs(a * b);
      }
      double ref = alpha * acc + beta * (double)C0[i * ldc + j];
      double tol = (K + 4) * FLT_EPSILON *
                       (fabs(alpha) * mag + fabs(beta * C0[i * ldc + j])) +
                   1e-30;
      CHECK(fabs(C[i * ldc + j] - ref) <= tol,
            "ta=%d tb=%d M=%lld N=%lld K=%lld: C[%lld][%lld] = %.8g, "
            "reference %.8g",
            ta, tb, (long long)M, (long long)N, (long long)K, (long long)i,
            (long long)j, C[i * ldc + j], ref);
    }
  }
  free(A);
  free(B);
  free(C);
  free(C0);
}

int main(int argc, char **argv) {
  pfrt_init(&argc, &argv);
  uint64_t seed = pt_seed("sgemm");
  pfrt_set_num_threads(1);
  const int64_t dims[][3] = {{1, 1, 1},    {3, 5, 7},     {17, 1, 33},
                             {64, 64, 64}, {65, 31, 129}, {2, 100, 3},
                             {5, 4, 0}};
  uint64_t tag = 0;
  int cases = 0;
  for (size_t d = 0; d < sizeof(dims) / sizeof(dims[0]); ++d)
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb)
        for (int64_t pad = 0; pad <= 3; pad += 3) {
          runCase(seed, ++tag, ta, tb, dims[d][0], dims[d][1], dims[d][2], pad);
          ++cases;
        }
  /* Threads beyond one must give the same kind of answer. */
  pfrt_set_num_threads(2);
  runCase(seed, ++tag, 0, 1, 200, 150, 170, 1);
  pfrt_finalize();
  printf("sgemm ok: %d cases\n", cases + 1);
  return 0;
}
