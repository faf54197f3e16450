//===- AttentionTyped.cpp - attention on bf16/f16 tensors, on the host ----===//
//
// pfrt_k_attention_typed(_grad) (pfrt.h): the operands widened exactly to
// float32, pfrt_k_attention(_grad), the outputs rounded once to their
// dtype (to nearest even). The reference of the device twins, cuDNN's
// fused flash attention (src/cuda/Cudnn.cpp).
//
//===----------------------------------------------------------------------===//

#include "../common/HalfMath.h"
#include "../common/Internal.h"
#include "pfrt/pfrt.h"

#include <cstdint>
#include <vector>

using namespace pfrt;

namespace {

/// The element counts of q, k, v and out of `dims`, after the checks.
struct Sizes {
  int64_t q, k, v, o, rows;
};

Sizes check(const char *fn, const int64_t *dims, int32_t dtype) {
  if (!dims)
    fatal("%s: dims is NULL", fn);
  for (int i = 0; i < 6; ++i)
    if (dims[i] <= 0)
      fatal("%s: dims[%d] = %lld must be positive", fn, i, (long long)dims[i]);
  if (dtype != PFRT_DTYPE_BF16 && dtype != PFRT_DTYPE_F16)
    fatal("%s: dtype %d is not bf16 or f16", fn, int(dtype));
  const int64_t bh = dims[0] * dims[1];
  return {bh * dims[2] * dims[4], bh * dims[3] * dims[4],
          bh * dims[3] * dims[5], bh * dims[2] * dims[5], bh * dims[2]};
}

std::vector<float> widen(const void *p, int64_t n, int32_t dtype) {
  const auto *h = static_cast<const uint16_t *>(p);
  std::vector<float> f(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    f[size_t(i)] = dtype == PFRT_DTYPE_BF16 ? half::bf16ToFloat(h[i])
                                            : half::f16ToFloat(h[i]);
  return f;
}

void round(const std::vector<float> &f, void *p, int32_t dtype) {
  auto *h = static_cast<uint16_t *>(p);
  for (size_t i = 0; i < f.size(); ++i)
    h[i] = dtype == PFRT_DTYPE_BF16 ? half::floatToBf16(f[i])
                                    : half::floatToF16(f[i]);
}

} // namespace

extern "C" {

int pfrt_k_attention_typed(const void *q, const void *k, const void *v,
                           const float *mask, const int64_t *maskStrides,
                           void *out, float *lse, const int64_t *dims,
                           int32_t dtype, double scale, int32_t causal) {
  const Sizes n = check("pfrt_k_attention_typed", dims, dtype);
  std::vector<float> qf = widen(q, n.q, dtype), kf = widen(k, n.k, dtype),
                     vf = widen(v, n.v, dtype);
  std::vector<float> of(static_cast<size_t>(n.o));
  pfrt_k_attention(qf.data(), kf.data(), vf.data(), mask, PFRT_DTYPE_F32,
                   maskStrides, of.data(), lse, dims, scale, causal, 0.0, 0, 0,
                   0, nullptr);
  round(of, out, dtype);
  return 0;
}

int pfrt_k_attention_typed_grad(const void *q, const void *k, const void *v,
                                const float *mask, const int64_t *maskStrides,
                                const void *out, const float *lse,
                                const void *dout, void *dq, void *dk, void *dv,
                                const int64_t *dims, int32_t dtype,
                                double scale, int32_t causal) {
  const Sizes n = check("pfrt_k_attention_typed_grad", dims, dtype);
  std::vector<float> qf = widen(q, n.q, dtype), kf = widen(k, n.k, dtype),
                     vf = widen(v, n.v, dtype), of = widen(out, n.o, dtype),
                     gf = widen(dout, n.o, dtype);
  std::vector<float> dqf(qf.size()), dkf(kf.size()), dvf(vf.size());
  pfrt_k_attention_grad(qf.data(), kf.data(), vf.data(), mask, PFRT_DTYPE_F32,
                        maskStrides, of.data(), lse, gf.data(), dqf.data(),
                        dkf.data(), dvf.data(), dims, scale, causal, 0.0, 0, 0,
                        0, nullptr);
  round(dqf, dq, dtype);
  round(dkf, dk, dtype);
  round(dvf, dv, dtype);
  return 0;
}

} // extern "C"
