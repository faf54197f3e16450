//===- test_k_matmul.cpp - Batched matmul, all transposes, shared B -------===//

#include "KernelTest.h"

int main(int argc, char **argv) {
  kt::Harness h("k-matmul", argc, argv);
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
  // A Linear's weight and bias gradients in one call (BGRADB's host row).
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
  return 0;
}
