//===- bench_kernels.cpp - Timings of the pfrt_k_* kernels ----------------===//
//
// pfrt-bench-kernels [FILTER]: times each workload (median of repeated runs
// after a warm-up, one BLAS thread) and prints `<name> <ms>` lines. The
// workloads are the ops of a training step of an MLP (batch 128,
// 784-512-10) and of a CIFAR-sized CNN (batch 32); bench_torch.py times the
// same ops with PyTorch at one thread, so the two outputs line up by name.
//
//===----------------------------------------------------------------------===//

#include "pfrt/pfrt.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

std::vector<float> rnd(int64_t n, uint64_t seed, float lo = -1, float hi = 1) {
  std::vector<float> v(static_cast<size_t>(n));
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  for (auto &x : v) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    x = lo + (hi - lo) * float(double(s >> 11) * (1.0 / 9007199254740992.0));
  }
  return v;
}

double timeMs(const std::function<void()> &fn) {
  fn(); // warm-up (scratch buffers, page faults)
  std::vector<double> t;
  double total = 0;
  while (t.size() < 5 || (total < 300.0 && t.size() < 200)) {
    double t0 = pfrt_now_us();
    fn();
    double ms = (pfrt_now_us() - t0) * 1e-3;
    t.push_back(ms);
    total += ms;
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct Bench {
  std::string filter;
  void run(const std::string &name, const std::function<void()> &fn) {
    if (!filter.empty() && name.find(filter) == std::string::npos)
      return;
    printf("%-28s %10.4f\n", name.c_str(), timeMs(fn));
    fflush(stdout);
  }
};

void conv(Bench &b, const char *name, int64_t N, int64_t C, int64_t H,
          int64_t O, int64_t K, int64_t s, int64_t p, int64_t g) {
  int64_t OH = (H + 2 * p - K) / s + 1;
  const int64_t dims[16] = {N, C, H, H, O, K, K, OH, OH, s, s, p, p, 1, 1, g};
  auto x = rnd(N * C * H * H, 1), w = rnd(O * (C / g) * K * K, 2),
       dy = rnd(N * O * OH * OH, 3);
  std::vector<float> y(dy.size()), dx(x.size()), dw(w.size());
  std::string n = name;
  b.run(n + ".fwd", [&] { pfrt_k_conv2d(x.data(), w.data(), y.data(), dims); });
  b.run(n + ".dgrad", [&] {
    pfrt_k_conv2d_grad_input(dy.data(), w.data(), dx.data(), dims);
  });
  b.run(n + ".wgrad", [&] {
    pfrt_k_conv2d_grad_weight(x.data(), dy.data(), dw.data(), dims);
  });
}

/// An MLP's step, batch 128: its GEMMs, bias, ReLU, the cross-entropies and
/// the optimizers.
void mlpOps(Bench &b) {
  const int64_t B = 128, I = 784, H = 512;
  auto x = rnd(B * I, 4), w = rnd(H * I, 5), dy = rnd(B * H, 6),
       bias = rnd(H, 7);
  std::vector<float> y(B * H), dx(B * I), dw(H * I), db(H);
  b.run("mlp.linear.fwd", [&] {
    pfrt_k_matmul(x.data(), w.data(), y.data(), 1, 1, B, H, I, 0, 1);
  });
  b.run("mlp.linear.dgrad", [&] {
    pfrt_k_matmul(dy.data(), w.data(), dx.data(), 1, 1, B, I, H, 0, 0);
  });
  b.run("mlp.linear.wgrad", [&] {
    pfrt_k_matmul(dy.data(), x.data(), dw.data(), 1, 1, H, I, B, 1, 0);
  });
  b.run("mlp.bias_add",
        [&] { pfrt_k_bias_add(y.data(), bias.data(), y.data(), B, H, 1); });
  const int8_t red[2] = {1, 0};
  const int64_t shp[2] = {B, H};
  b.run("mlp.bias_grad",
        [&] { pfrt_k_reduce_sum(dy.data(), db.data(), 2, shp, red); });
  b.run("mlp.relu", [&] { pfrt_k_relu(dy.data(), y.data(), B * H); });
  b.run("mlp.relu_grad",
        [&] { pfrt_k_relu_grad(y.data(), dy.data(), dx.data(), B * H); });
  for (int64_t C : {int64_t(10), int64_t(1000)}) {
    auto logits = rnd(B * C, 8, -3, 3);
    std::vector<int64_t> labels(B);
    for (int64_t i = 0; i < B; ++i)
      labels[i] = (i * 7) % C;
    std::vector<float> dl(B * C);
    float loss = 0, one = 1;
    std::string n = "xent" + std::to_string(C);
    b.run(n + ".fwd+bwd", [&] {
      pfrt_k_softmax_xent(logits.data(), labels.data(), &loss, B, C);
      pfrt_k_softmax_xent_grad(logits.data(), labels.data(), &one, dl.data(), B,
                               C);
    });
  }
  const int64_t n = H * I;
  auto p = rnd(n, 9), g = rnd(n, 10), m = rnd(n, 11), v = rnd(n, 12, 0, 1);
  float lr = 0.01f, step = 3;
  b.run("optim.sgd_momentum", [&] {
    pfrt_k_sgd(p.data(), g.data(), &lr, m.data(), &step, p.data(), m.data(), n,
               0.9, 0, 0, 0);
  });
  b.run("optim.adam", [&] {
    pfrt_k_adam(p.data(), g.data(), m.data(), v.data(), &lr, &step, p.data(),
                m.data(), v.data(), n, 0.9, 0.999, 1e-8, 0, 0, 1);
  });
  b.run("optim.adamw", [&] {
    pfrt_k_adam(p.data(), g.data(), m.data(), v.data(), &lr, &step, p.data(),
                m.data(), v.data(), n, 0.9, 0.999, 1e-8, 0.01, 1, 1);
  });
}

/// A CIFAR-sized CNN's step, batch 32: its convolutions.
void cnnConvs(Bench &b) {
  conv(b, "conv.c3_64_32x32", 32, 3, 32, 64, 3, 1, 1, 1);
  conv(b, "conv.c64_64_32x32", 32, 64, 32, 64, 3, 1, 1, 1);
  conv(b, "conv.c64_128_s2", 32, 64, 32, 128, 3, 2, 1, 1);
  conv(b, "conv.c128_128_16x16", 32, 128, 16, 128, 3, 1, 1, 1);
  conv(b, "conv.c256_256_8x8", 32, 256, 8, 256, 3, 1, 1, 1);
  conv(b, "conv.1x1_128_256_16x16", 32, 128, 16, 256, 1, 1, 0, 1);
  conv(b, "conv.dw64_32x32", 32, 64, 32, 64, 3, 1, 1, 64);
}

/// The CNN's other ops: batch norm, element-wise, layout, pooling.
void cnnOps(Bench &b) {
  const int64_t N = 32, C = 64, HW = 32 * 32, total = N * C * HW;
  auto x = rnd(total, 13), dy = rnd(total, 14), x2 = rnd(total, 15);
  auto gamma = rnd(C, 16, 0.5f, 1.5f), beta = rnd(C, 17);
  std::vector<float> rm(C, 0.0f), rv(C, 1.0f), y(total), dx(total), dg(C),
      dbt(C);
  b.run("bn.fwd", [&] {
    pfrt_k_batch_norm(x.data(), gamma.data(), beta.data(), rm.data(), rv.data(),
                      y.data(), rm.data(), rv.data(), N, C, HW, 1e-5, 0.1);
  });
  b.run("bn.bwd", [&] {
    pfrt_k_batch_norm_grad_input(x.data(), gamma.data(), dy.data(), dx.data(),
                                 N, C, HW, 1e-5);
    pfrt_k_batch_norm_grad_params(x.data(), dy.data(), dg.data(), dbt.data(), N,
                                  C, HW, 1e-5);
  });
  b.run("ew.relu_2M", [&] { pfrt_k_relu(x.data(), y.data(), total); });
  b.run("ew.relu_grad_2M",
        [&] { pfrt_k_relu_grad(x.data(), dy.data(), dx.data(), total); });
  b.run("ew.add_2M", [&] { pfrt_k_add(x.data(), x2.data(), y.data(), total); });
  b.run("ew.add_inplace_2M",
        [&] { pfrt_k_add(y.data(), x2.data(), y.data(), total); });
  b.run("ew.copy_2M", [&] { pfrt_k_copy(x.data(), y.data(), total); });
  b.run("ew.scale_2M", [&] { pfrt_k_scale(x.data(), y.data(), total, 0.5); });
  const int64_t shp[3] = {N, C, HW}, perm[3] = {0, 2, 1};
  b.run("layout.transpose_021",
        [&] { pfrt_k_transpose(x.data(), y.data(), 3, shp, perm); });
  const int8_t red[3] = {1, 0, 1};
  b.run("reduce.conv_bias_grad",
        [&] { pfrt_k_reduce_sum(dy.data(), dg.data(), 3, shp, red); });
  b.run("bias_add.conv",
        [&] { pfrt_k_bias_add(x.data(), beta.data(), y.data(), N, C, HW); });
  for (int k = 2; k <= 3; ++k) {
    int64_t s = 2, p = k == 3 ? 1 : 0, OH = (32 + 2 * p - k) / s + 1;
    const int64_t pd[12] = {N, C, 32, 32, OH, OH, k, k, s, s, p, p};
    std::string n = "pool.max" + std::to_string(k) + "x" + std::to_string(k);
    b.run(n + ".fwd", [&] { pfrt_k_max_pool2d(x.data(), y.data(), pd); });
    b.run(n + ".bwd",
          [&] { pfrt_k_max_pool2d_grad(x.data(), dy.data(), dx.data(), pd); });
  }
  const int64_t pd[12] = {N, C, 32, 32, 16, 16, 2, 2, 2, 2, 0, 0};
  b.run("pool.avg2x2.fwd", [&] { pfrt_k_avg_pool2d(x.data(), y.data(), pd); });
  b.run("pool.avg2x2.bwd",
        [&] { pfrt_k_avg_pool2d_grad(dy.data(), dx.data(), pd); });
  b.run("pool.global.fwd",
        [&] { pfrt_k_global_avg_pool(x.data(), y.data(), N, C, HW); });
  b.run("pool.global.bwd",
        [&] { pfrt_k_global_avg_pool_grad(dy.data(), dx.data(), N, C, HW); });
}

/// The GPT of bench/gpt_bench.py: 1024 tokens of 128, MLP 512, 4 heads of
/// 64 x 64 attention scores a sequence, batch 16.
void gptOps(Bench &b) {
  const int64_t R = 1024, C = 128, F = 4 * C, S = 16 * 4 * 64, T = 64;
  auto x = rnd(R * C, 30), dy = rnd(R * C, 31), gamma = rnd(C, 32, 0.5, 1.5),
       beta = rnd(C, 33);
  std::vector<float> y(R * C), dx(R * C), dg(C), db(C);
  b.run("gpt.layer_norm.fwd", [&] {
    pfrt_k_layer_norm(x.data(), gamma.data(), beta.data(), y.data(), R, C,
                      1e-5);
  });
  b.run("gpt.layer_norm.bwd", [&] {
    pfrt_k_layer_norm_grad_input(x.data(), gamma.data(), dy.data(), dx.data(),
                                 R, C, 1e-5);
    pfrt_k_layer_norm_grad_params(x.data(), dy.data(), dg.data(), db.data(), R,
                                  C, 1e-5);
  });
  auto h = rnd(R * F, 34, -3, 3), dh = rnd(R * F, 35);
  std::vector<float> g(R * F), dgh(R * F);
  b.run("gpt.gelu.fwd",
        [&] { pfrt_k_activation(0, h.data(), g.data(), R * F); });
  b.run("gpt.gelu.bwd", [&] {
    pfrt_k_activation_grad(0, h.data(), dh.data(), dgh.data(), R * F);
  });
  auto att = rnd(S * T, 36, -4, 4), datt = rnd(S * T, 37);
  std::vector<float> p(S * T), dp(S * T);
  b.run("gpt.softmax.fwd",
        [&] { pfrt_k_softmax(att.data(), p.data(), S, T, 1, 0); });
  b.run("gpt.softmax.bwd", [&] {
    pfrt_k_softmax_grad(p.data(), datt.data(), dp.data(), S, T, 1, 0);
  });
}

/// Attention's forward and backward at B=4, H=12, T=S=1024, D=64, no mask:
/// the flash kernels (pfrt_k_attention(_grad), no [T, S] buffer) against
/// the materialised path (batched GEMMs around pfrt_k_softmax_masked and
/// pfrt_k_softmax_grad_scaled through [T, S] scores, probabilities and
/// their gradients). A step is 12 B H T S D flops (4 forward, 8 backward;
/// the flash backward's recomputed scores not counted); the causal flash
/// step skips the key tiles above the diagonal.
void attentionOps(Bench &b) {
  const int64_t nb = 4, nh = 12, nt = 1024, ns = 1024, nd = 64, bh = nb * nh;
  const double scale = 0.125;
  const int64_t dims[6] = {nb, nh, nt, ns, nd, nd};
  auto q = rnd(bh * nt * nd, 40), k = rnd(bh * ns * nd, 41),
       v = rnd(bh * ns * nd, 42), dout = rnd(bh * nt * nd, 43);
  std::vector<float> out(q.size()), lse(bh * nt), dq(q.size()), dk(k.size()),
      dv(v.size());
  for (int32_t causal = 0; causal < 2; ++causal)
    b.run(causal ? "attn.flash_causal.fwd+bwd" : "attn.flash.fwd+bwd", [&] {
      pfrt_k_attention(q.data(), k.data(), v.data(), nullptr, 0, nullptr,
                       out.data(), lse.data(), dims, scale, causal, 0.0, 0, 0,
                       0, nullptr);
      pfrt_k_attention_grad(q.data(), k.data(), v.data(), nullptr, 0, nullptr,
                            out.data(), lse.data(), dout.data(), dq.data(),
                            dk.data(), dv.data(), dims, scale, causal, 0.0, 0,
                            0, 0, nullptr);
    });
  std::vector<float> sc(bh * nt * ns), pr(bh * nt * ns), ds(bh * nt * ns);
  b.run("attn.materialised.fwd+bwd", [&] {
    pfrt_k_matmul(q.data(), k.data(), sc.data(), bh, bh, nt, ns, nd, 0, 1);
    pfrt_k_softmax_masked(sc.data(), nullptr, 0, 1, scale, 0.0, pr.data(),
                          bh * nt, ns, 0);
    pfrt_k_matmul(pr.data(), v.data(), out.data(), bh, bh, nt, nd, ns, 0, 0);
    pfrt_k_matmul(dout.data(), v.data(), sc.data(), bh, bh, nt, ns, nd, 0, 1);
    pfrt_k_matmul(pr.data(), dout.data(), dv.data(), bh, bh, ns, nd, nt, 1, 0);
    pfrt_k_softmax_grad_scaled(pr.data(), sc.data(), ds.data(), bh * nt, ns, 0,
                               scale);
    pfrt_k_matmul(ds.data(), k.data(), dq.data(), bh, bh, nt, nd, ns, 0, 0);
    pfrt_k_matmul(ds.data(), q.data(), dk.data(), bh, bh, ns, nd, nt, 1, 0);
  });
}

} // namespace

int main(int argc, char **argv) {
  pfrt_init(&argc, &argv);
  pfrt_set_num_threads(1);
  Bench b;
  if (argc > 1)
    b.filter = argv[1];
  mlpOps(b);
  cnnConvs(b);
  cnnOps(b);
  gptOps(b);
  attentionOps(b);
  pfrt_finalize();
  return 0;
}
