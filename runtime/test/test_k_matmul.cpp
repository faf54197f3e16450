//===- test_k_matmul.cpp - Batched matmul, all transposes, shared B -------===//

#include "KernelTest.h"

#include <cmath>

namespace {

/// pfrt_k_matmul, with a bias and with its ReLU, on every transpose, batch
/// and shared B.
void batchedMatmuls(kt::Harness &h) {
  const int64_t sizes[][3] = {{1, 1, 1},   {7, 13, 5}, {33, 17, 65},
                              {2, 100, 3}, {9, 1, 31}, {4, 6, 0}};
  for (const auto &s : sizes)
    for (int64_t batch : {int64_t(1), int64_t(3)})
      for (int shared = 0; shared < 2; ++shared)
        for (int ta = 0; ta < 2; ++ta)
          for (int tb = 0; tb < 2; ++tb) {
            if (batch == 1 && shared)
              continue;
            const int64_t m = s[0], n = s[1], k = s[2];
            const int64_t bb = shared ? 1 : batch;
            std::string id = h.newCase();
            auto a = h.uniform(batch * m * k), b = h.uniform(bb * k * n);
            std::vector<float> c(size_t(batch * m * n), 123.0f);
            pfrt_k_matmul(a.data(), b.data(), c.data(), batch, bb, m, n, k, ta,
                          tb);
            h.save(id, "a", {batch, ta ? k : m, ta ? m : k}, a);
            h.save(id, "b", {bb, tb ? n : k, tb ? k : n}, b);
            h.save(id, "c", {batch, m, n}, c);
            h.record("matmul", id,
                     "batch=%lld batch_b=%lld m=%lld n=%lld k=%lld ta=%d "
                     "tb=%d",
                     (long long)batch, (long long)bb, (long long)m,
                     (long long)n, (long long)k, ta, tb);

            // The same with the bias rows added (a Linear's GEMM + bias):
            // c's stale contents must not leak in.
            std::string bid = h.newCase();
            auto bias = h.uniform(n);
            std::vector<float> cb(size_t(batch * m * n), 123.0f);
            pfrt_k_matmul_bias(a.data(), b.data(), bias.data(), cb.data(),
                               batch, bb, m, n, k, ta, tb);
            h.save(bid, "a", {batch, ta ? k : m, ta ? m : k}, a);
            h.save(bid, "b", {bb, tb ? n : k, tb ? k : n}, b);
            h.save(bid, "bias", {n}, bias);
            h.save(bid, "c", {batch, m, n}, cb);
            h.record("matmul_bias", bid,
                     "batch=%lld batch_b=%lld m=%lld n=%lld k=%lld ta=%d "
                     "tb=%d",
                     (long long)batch, (long long)bb, (long long)m,
                     (long long)n, (long long)k, ta, tb);

            // And its ReLU (the GPU's RELU_BIAS epilogue's host row).
            std::string rid = h.newCase();
            std::vector<float> cr(size_t(batch * m * n), -5.0f);
            pfrt_k_matmul_bias_relu(a.data(), b.data(), bias.data(), cr.data(),
                                    batch, bb, m, n, k, ta, tb);
            h.save(rid, "a", {batch, ta ? k : m, ta ? m : k}, a);
            h.save(rid, "b", {bb, tb ? n : k, tb ? k : n}, b);
            h.save(rid, "bias", {n}, bias);
            h.save(rid, "c", {batch, m, n}, cr);
            h.record("matmul_bias_relu", rid,
                     "batch=%lld batch_b=%lld m=%lld n=%lld k=%lld ta=%d "
                     "tb=%d",
                     (long long)batch, (long long)bb, (long long)m,
                     (long long)n, (long long)k, ta, tb);
          }
}

/// Strided views (pfrt_k_matmul_strided) against a float64 loop over the
/// same strides: attention's q k^T with q and k column ranges of one
/// [B, T, 3C] projection (heads to the front, k read transposed), a B
/// shared over the batch (stride 0), a transposed A, C written into every
/// other column pair of a wider buffer (the rest must stay), C written
/// column-major, and k = 0.
void stridedMatmuls(kt::Harness &h) {
  struct Strided {
    int64_t rank, shape[2], m, n, k;
    int64_t as[4], bs[4], cs[4];
    int64_t aOff, bOff, aLen, bLen, cLen;
  };
  const int64_t B = 2, T = 5, H = 2, D = 3, C = H * D, W = 3 * C;
  // clang-format off
  const Strided cases[] = {
      // S[b,h] = q[b,h] k[b,h]^T, q (t, d) at b*T*W + t*W + h*D + d.
      {2, {B, H}, T, T, D, {T * W, D, W, 1}, {T * W, D, 1, W},
       {H * T * T, T * T, T, 1}, 0, C, B * T * W, B * T * W, B * H * T * T},
      // One B for every batch entry, A row-major with a longer row.
      {1, {3, 1}, 4, 6, 5, {40, 10, 1, 0}, {0, 6, 1, 0}, {24, 6, 1, 0},
       0, 0, 120, 30, 72},
      // A transposed (element (i, j) at j * 7 + i), C rows 10 apart.
      {1, {2, 1}, 4, 3, 5, {35, 1, 7, 0}, {15, 3, 1, 0}, {40, 10, 1, 0},
       0, 0, 70, 30, 80},
      // C column-major (element (i, j) at i + 4 j): computed as B^T A^T;
      // then with A transposed, B transposed, both, and k = 0.
      {1, {2, 1}, 4, 3, 5, {20, 5, 1, 0}, {15, 3, 1, 0}, {12, 1, 4, 0},
       0, 0, 40, 30, 24},
      {1, {2, 1}, 4, 3, 5, {20, 1, 4, 0}, {15, 3, 1, 0}, {12, 1, 4, 0},
       0, 0, 40, 30, 24},
      {1, {2, 1}, 4, 3, 5, {20, 5, 1, 0}, {15, 1, 5, 0}, {12, 1, 4, 0},
       0, 0, 40, 30, 24},
      {1, {2, 1}, 4, 3, 5, {20, 1, 4, 0}, {15, 1, 5, 0}, {12, 1, 4, 0},
       0, 0, 40, 30, 24},
      {1, {2, 1}, 4, 3, 0, {20, 5, 1, 0}, {15, 3, 1, 0}, {12, 1, 4, 0},
       0, 0, 40, 30, 24},
      // k = 0: C is zeroed.
      {0, {1, 1}, 3, 4, 0, {0, 1, 0, 0}, {4, 1, 0, 0}, {4, 1, 0, 0},
       0, 0, 1, 1, 12}};
  // clang-format on
  for (const Strided &t : cases) {
    auto a = h.uniform(t.aLen), b = h.uniform(t.bLen);
    std::vector<float> c(size_t(t.cLen), 55.0f);
    int64_t r = t.rank;
    std::vector<int64_t> as(t.as, t.as + r + 2), bs(t.bs, t.bs + r + 2),
        cs(t.cs, t.cs + r + 2);
    if (r == 0) { // the matrix strides only
      as = {t.as[1], t.as[2]};
      bs = {t.bs[0], t.bs[1]};
      cs = {t.cs[0], t.cs[1]};
    }
    pfrt_k_matmul_strided(a.data() + t.aOff, b.data() + t.bOff, c.data(), r,
                          t.shape, as.data(), bs.data(), cs.data(), t.m, t.n,
                          t.k);
    std::vector<char> written(size_t(t.cLen), 0);
    int64_t batch =
        r == 0 ? 1 : (r == 1 ? t.shape[0] : t.shape[0] * t.shape[1]);
    for (int64_t q = 0; q < batch; ++q) {
      int64_t i0 = r == 2 ? q / t.shape[1] : q,
              i1 = r == 2 ? q % t.shape[1] : 0;
      auto off = [&](const std::vector<int64_t> &st) {
        return r == 0 ? 0 : i0 * st[0] + (r == 2 ? i1 * st[1] : 0);
      };
      for (int64_t i = 0; i < t.m; ++i)
        for (int64_t j = 0; j < t.n; ++j) {
          double want = 0, scale = 0;
          for (int64_t l = 0; l < t.k; ++l) {
            double x = a[t.aOff + off(as) + i * as[r] + l * as[r + 1]];
            double y = b[t.bOff + off(bs) + l * bs[r] + j * bs[r + 1]];
            want += x * y;
            scale += std::fabs(x * y);
          }
          int64_t at = off(cs) + i * cs[r] + j * cs[r + 1];
          written[at] = 1;
          CHECK(std::fabs(c[at] - want) <= 1e-5 * scale + 1e-30,
                "matmul_strided m=%lld n=%lld k=%lld: c[%lld] = %g, want %g",
                (long long)t.m, (long long)t.n, (long long)t.k, (long long)at,
                double(c[at]), want);
        }
    }
    for (int64_t i = 0; i < t.cLen; ++i)
      CHECK(written[i] || c[i] == 55.0f,
            "matmul_strided wrote c[%lld] outside its view", (long long)i);
  }
}

/// A Linear's weight and bias gradients in one call (BGRADB's host row).
void biasGradients(kt::Harness &h) {
  for (int64_t k : {int64_t(1), int64_t(40)})
    for (int accumulate = 0; accumulate < 2; ++accumulate) {
      const int64_t m = 13, n = 21;
      std::string id = h.newCase();
      auto a = h.uniform(k * m), b = h.uniform(k * n), c0 = h.uniform(m * n);
      std::vector<float> c = c0, dbias(size_t(m), 77.0f);
      pfrt_k_matmul_bgrad(a.data(), b.data(), c.data(), dbias.data(), m, n, k,
                          accumulate);
      h.save(id, "a", {k, m}, a);
      h.save(id, "b", {k, n}, b);
      h.save(id, "c0", {m, n}, c0);
      h.save(id, "c", {m, n}, c);
      h.save(id, "dbias", {m}, dbias);
      h.record("matmul_bgrad", id, "m=%lld n=%lld k=%lld accumulate=%d",
               (long long)m, (long long)n, (long long)k, accumulate);
    }
}

} // namespace

int main(int argc, char **argv) {
  kt::Harness h("k-matmul", argc, argv);
  batchedMatmuls(h);
  stridedMatmuls(h);
  biasGradients(h);
  return 0;
}
