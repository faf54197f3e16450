//===- Matmul.cpp - batched, biased and strided matrix products -----------===//
//
// pfrt_k_matmul and its variants (accumulating, with a bias row, its bias
// gradient, with ReLU, over strided batches) through pfrt_sgemm (Blas.cpp):
// one SGEMM per batch, or one for the whole batch when B is shared.
//
//===----------------------------------------------------------------------===//

#include "../common/HalfMath.h"
#include "KernelUtil.h"
#include "pfrt/pfrt.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <vector>

using namespace pfrt;
using namespace pfrt::kern;

namespace {
/// C = op(A) op(B) + beta C for beta in {0, 1}.
void matmulBeta(const char *fn, const float *a, const float *b, float *c,
                int64_t batch, int64_t batchB, int64_t m, int64_t n, int64_t k,
                int32_t ta, int32_t tb, float beta) {
  const MatmulSizes s = checkMatmulArgs(fn, a, b, c, batch, batchB, m, n, k);
  const int64_t aSize = s.aSize, bSize = s.bSize, cSize = s.cSize;
  if (batch == 0 || cSize == 0)
    return;
  const int64_t lda = ta ? m : k, ldb = tb ? k : n;
  if (k == 0) {
    if (beta == 0.0f)
      std::memset(c, 0, size_t(batch * cSize) * sizeof(float));
    return;
  }
  // A shared B and untransposed A: the batch folds into M (one GEMM).
  if (batchB == 1 && !ta && batch > 1 && batch * m <= INT_MAX) {
    pfrt_sgemm(0, tb, batch * m, n, k, 1.0f, a, lda, b, ldb, beta, c, n);
    return;
  }
  for (int64_t i = 0; i < batch; ++i)
    pfrt_sgemm(ta, tb, m, n, k, 1.0f, a + i * aSize, lda,
               b + (batchB == 1 ? 0 : i * bSize), ldb, beta, c + i * cSize, n);
}
} // namespace

extern "C" {

void pfrt_k_matmul(const float *a, const float *b, float *c, int64_t batch,
                   int64_t batchB, int64_t m, int64_t n, int64_t k, int32_t ta,
                   int32_t tb) {
  matmulBeta("pfrt_k_matmul", a, b, c, batch, batchB, m, n, k, ta, tb, 0.0f);
}

void pfrt_k_matmul_acc(const float *a, const float *b, float *c, int64_t batch,
                       int64_t batchB, int64_t m, int64_t n, int64_t k,
                       int32_t ta, int32_t tb) {
  matmulBeta("pfrt_k_matmul_acc", a, b, c, batch, batchB, m, n, k, ta, tb,
             1.0f);
}

void pfrt_k_matmul_bias(const float *a, const float *b, const float *bias,
                        float *c, int64_t batch, int64_t batchB, int64_t m,
                        int64_t n, int64_t k, int32_t ta, int32_t tb) {
  const char *fn = "pfrt_k_matmul_bias";
  checkSize(fn, "batch", batch);
  checkSize(fn, "m", m);
  checkSize(fn, "n", n);
  int64_t rows = mulChecked(fn, batch, m);
  checkPtr(fn, "bias", bias, n);
  checkPtr(fn, "c", c, mulChecked(fn, rows, n));
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(c + r * n, bias, size_t(n) * sizeof(float));
  matmulBeta(fn, a, b, c, batch, batchB, m, n, k, ta, tb, 1.0f);
}

void pfrt_k_matmul_bgrad(const float *a, const float *b, float *c, float *dbias,
                         int64_t m, int64_t n, int64_t k, int32_t accumulate) {
  // The bias gradient first, as the CPU lowering orders a Linear's
  // reduce_sum and its weight-gradient GEMM.
  const int64_t shape[2] = {k, m};
  const int8_t rows[2] = {1, 0};
  pfrt_k_reduce_sum(a, dbias, 2, shape, rows);
  if (accumulate)
    pfrt_k_matmul_acc(a, b, c, 1, 1, m, n, k, 1, 0);
  else
    pfrt_k_matmul(a, b, c, 1, 1, m, n, k, 1, 0);
}

void pfrt_k_matmul_bias_relu(const float *a, const float *b, const float *bias,
                             float *c, int64_t batch, int64_t batchB, int64_t m,
                             int64_t n, int64_t k, int32_t ta, int32_t tb) {
  pfrt_k_matmul_bias(a, b, bias, c, batch, batchB, m, n, k, ta, tb);
  pfrt_k_relu(c, c, batch * m * n);
}

void pfrt_k_matmul_strided(const float *a, const float *b, float *c,
                           int64_t rank, const int64_t *batch_shape,
                           const int64_t *a_strides, const int64_t *b_strides,
                           const int64_t *c_strides, int64_t m, int64_t n,
                           int64_t k) {
  const char *fn = "pfrt_k_matmul_strided";
  if (rank < 0 || rank > 8)
    fatal("%s: rank %lld is not in [0, 8]", fn, (long long)rank);
  checkSize(fn, "m", m);
  checkSize(fn, "n", n);
  checkSize(fn, "k", k);
  checkPtr(fn, "a_strides", a_strides, rank + 2);
  checkPtr(fn, "b_strides", b_strides, rank + 2);
  checkPtr(fn, "c_strides", c_strides, rank + 2);
  checkPtr(fn, "batch_shape", batch_shape, rank);
  int64_t batch = 1;
  for (int64_t d = 0; d < rank; ++d) {
    checkSize(fn, "batch_shape", batch_shape[d]);
    batch = mulChecked(fn, batch, batch_shape[d]);
  }
  for (int64_t d = 0; d < rank + 2; ++d)
    if (a_strides[d] < 0 || b_strides[d] < 0 || c_strides[d] < 0)
      fatal("%s: negative stride at axis %lld", fn, (long long)d);
  // Each matrix as (transposed?, leading dimension) for pfrt_sgemm.
  auto layout = [&](const char *what, const int64_t *s, int64_t rows,
                    int64_t cols, int32_t *trans, int64_t *ld) {
    int64_t rs = s[rank], cs = s[rank + 1];
    if (cs == 1 || cols <= 1) {
      *trans = 0;
      *ld = rows <= 1 ? std::max<int64_t>(cols, 1) : rs;
      if (*ld < cols)
        fatal("%s: %s's rows overlap (row stride %lld < %lld columns)", fn,
              what, (long long)*ld, (long long)cols);
    } else if (rs == 1 || rows <= 1) {
      *trans = 1;
      *ld = cols <= 1 ? std::max<int64_t>(rows, 1) : cs;
      if (*ld < rows)
        fatal("%s: %s's columns overlap (column stride %lld < %lld rows)", fn,
              what, (long long)*ld, (long long)rows);
    } else {
      fatal("%s: %s's matrix strides (%lld, %lld) have no unit stride", fn,
            what, (long long)rs, (long long)cs);
    }
  };
  int32_t ta, tb, tc;
  int64_t lda, ldb, ldc;
  layout("a", a_strides, m, k, &ta, &lda);
  layout("b", b_strides, k, n, &tb, &ldb);
  layout("c", c_strides, m, n, &tc, &ldc);
  if (batch == 0 || m == 0 || n == 0)
    return;
  checkPtr(fn, "a", a, m * k);
  checkPtr(fn, "b", b, k * n);
  checkPtr(fn, "c", c, m * n);
  int64_t index[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int64_t i = 0; i < batch; ++i) {
    int64_t ao = 0, bo = 0, co = 0;
    for (int64_t d = 0; d < rank; ++d) {
      ao += index[d] * a_strides[d];
      bo += index[d] * b_strides[d];
      co += index[d] * c_strides[d];
    }
    if (k == 0) {
      for (int64_t r = 0; r < (tc ? n : m); ++r)
        std::memset(c + co + r * ldc, 0, size_t(tc ? m : n) * sizeof(float));
    } else if (!tc) {
      pfrt_sgemm(ta, tb, m, n, k, 1.0f, a + ao, lda, b + bo, ldb, 0.0f, c + co,
                 ldc);
    } else { // C column-major: C^T = op(B)^T op(A)^T, row-major
      pfrt_sgemm(!tb, !ta, n, m, k, 1.0f, b + bo, ldb, a + ao, lda, 0.0f,
                 c + co, ldc);
    }
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++index[d] < batch_shape[d])
        break;
      index[d] = 0;
    }
  }
}

void pfrt_k_matmul_typed(const void *a, const void *b, void *c, int64_t batch,
                         int64_t batchB, int64_t m, int64_t n, int64_t k,
                         int32_t ta, int32_t tb, int32_t abDtype,
                         int32_t cDtype, int32_t accumulate) {
  const char *fn = "pfrt_k_matmul_typed";
  auto low = [](int32_t t) {
    return t == PFRT_DTYPE_BF16 || t == PFRT_DTYPE_F16;
  };
  if ((abDtype != PFRT_DTYPE_F32 && !low(abDtype)) ||
      (cDtype != PFRT_DTYPE_F32 && cDtype != abDtype))
    fatal("%s: A and B f32, bf16 or f16, C f32 or A's type (cuBLASLt's "
          "combinations), got dtypes %d and %d",
          fn, abDtype, cDtype);
  const MatmulSizes s = checkMatmulArgs(fn, a, b, c, batch, batchB, m, n, k);
  // Each operand widened exactly to float32, the float32 GEMM, then C
  // rounded once to its type.
  auto toFloats = [](const void *p, int64_t count, int32_t t) {
    std::vector<float> v(static_cast<size_t>(count));
    const auto *h = static_cast<const uint16_t *>(p);
    for (int64_t i = 0; i < count; ++i)
      v[size_t(i)] = t == PFRT_DTYPE_F32    ? static_cast<const float *>(p)[i]
                     : t == PFRT_DTYPE_BF16 ? half::bf16ToFloat(h[i])
                                            : half::f16ToFloat(h[i]);
    return v;
  };
  std::vector<float> wa = toFloats(a, batch * s.aSize, abDtype),
                     wb = toFloats(b, batchB * s.bSize, abDtype),
                     wc = accumulate ? toFloats(c, s.cTotal, cDtype)
                                     : std::vector<float>(size_t(s.cTotal));
  (accumulate ? pfrt_k_matmul_acc : pfrt_k_matmul)(
      wa.data(), wb.data(), wc.data(), batch, batchB, m, n, k, ta, tb);
  for (int64_t i = 0; i < s.cTotal; ++i) {
    float v = wc[size_t(i)];
    if (cDtype == PFRT_DTYPE_F32)
      static_cast<float *>(c)[i] = v;
    else
      static_cast<uint16_t *>(c)[i] = cDtype == PFRT_DTYPE_BF16
                                          ? half::floatToBf16(v)
                                          : half::floatToF16(v);
  }
}

} // extern "C"
