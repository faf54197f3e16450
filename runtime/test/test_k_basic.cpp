//===- test_k_basic.cpp - Element-wise, bias_add, reduce_sum, transpose ---===//
//
// pfrt-test-k-basic DIR; check_kernels.py DIR checks the results. Covers
// in-place (aliased) calls where the header allows them, odd sizes, unit
// and empty dimensions.
//
//===----------------------------------------------------------------------===//

#include "KernelTest.h"

#include <algorithm>
#include <cmath>
#include <cstring>

using kt::Shape;

namespace {

void elementwise(kt::Harness &h) {
  for (int64_t n : {int64_t(1), int64_t(7), int64_t(1003), int64_t(4099)}) {
    std::string id = h.newCase();
    auto x = h.uniform(n), y0 = h.uniform(n), dy = h.uniform(n);
    auto a = h.uniform(n, -3, 3), b = h.uniform(n, -3, 3);
    std::vector<float> y(n), yin = x, dx(n), out(n), outA = a, outB = b,
                             outAA = a, sc(n), scIn = x, cp(n), fl(n),
                             rgIn = dy;
    pfrt_k_relu(x.data(), y.data(), n);
    pfrt_k_relu(yin.data(), yin.data(), n);
    // relu_grad takes the relu OUTPUT; use one with exact zeros.
    pfrt_k_relu_grad(y.data(), dy.data(), dx.data(), n);
    pfrt_k_relu_grad(y.data(), rgIn.data(), rgIn.data(), n);
    std::vector<float> prod(n), prodIn = a;
    pfrt_k_mul(a.data(), b.data(), prod.data(), n);
    pfrt_k_mul(prodIn.data(), b.data(), prodIn.data(), n);
    pfrt_k_add(a.data(), b.data(), out.data(), n);
    pfrt_k_add(outA.data(), b.data(), outA.data(), n);
    pfrt_k_add(a.data(), outB.data(), outB.data(), n);
    pfrt_k_add(outAA.data(), outAA.data(), outAA.data(), n);
    double s = h.uniform1(-3, 3);
    pfrt_k_scale(x.data(), sc.data(), n, s);
    pfrt_k_scale(scIn.data(), scIn.data(), n, s);
    pfrt_k_copy(a.data(), cp.data(), n);
    std::vector<float> cpIn = a;
    pfrt_k_copy(cpIn.data(), cpIn.data(), n);
    double v = h.uniform1(-10, 10);
    pfrt_k_fill(fl.data(), n, v);
    h.saveAll(id, {n},
              {{"x", x},
               {"dy", dy},
               {"a", a},
               {"b", b},
               {"relu", y},
               {"relu_inplace", yin},
               {"relu_grad", dx},
               {"relu_grad_inplace", rgIn},
               {"add", out},
               {"mul", prod},
               {"mul_inplace", prodIn},
               {"add_out_a", outA},
               {"add_out_b", outB},
               {"add_all_same", outAA},
               {"scale", sc},
               {"scale_inplace", scIn},
               {"copy", cp},
               {"copy_inplace", cpIn},
               {"fill", fl}});
    h.record("elementwise", id, "n=%lld s=%.17g v=%.17g", (long long)n, s, v);
  }
}

/// GELU (both forms), tanh and sigmoid and their gradients; x spans the
/// curved part and both tails, and in-place calls give the same bits.
void activations(kt::Harness &h) {
  for (int32_t kind = 0; kind < 4; ++kind)
    for (int64_t n : {int64_t(1), int64_t(1001)}) {
      std::string id = h.newCase();
      auto x = h.uniform(n, -6, 6), dy = h.uniform(n);
      std::vector<float> y(n), yin = x, dx(n), dxIn = dy;
      pfrt_k_activation(kind, x.data(), y.data(), n);
      pfrt_k_activation(kind, yin.data(), yin.data(), n);
      pfrt_k_activation_grad(kind, x.data(), dy.data(), dx.data(), n);
      pfrt_k_activation_grad(kind, x.data(), dxIn.data(), dxIn.data(), n);
      CHECK(std::memcmp(y.data(), yin.data(), n * sizeof(float)) == 0 &&
                std::memcmp(dx.data(), dxIn.data(), n * sizeof(float)) == 0,
            "activation %d: in-place differs", kind);
      h.save(id, "x", {n}, x);
      h.save(id, "dy", {n}, dy);
      h.save(id, "y", {n}, y);
      h.save(id, "dx", {n}, dx);
      h.record("activation", id, "kind=%d n=%lld", kind, (long long)n);
    }
}

/// Softmax and log-softmax along the middle axis of [outer, n, inner].
void softmaxes(kt::Harness &h) {
  const int64_t shapes[][3] = {{3, 5, 1}, {2, 7, 3}, {1, 1, 4}, {4, 33, 2}};
  for (const auto &s : shapes)
    for (int32_t log = 0; log < 2; ++log) {
      std::string id = h.newCase();
      int64_t total = s[0] * s[1] * s[2];
      auto x = h.uniform(total, -8, 8), dy = h.uniform(total);
      std::vector<float> y(total), dx(total);
      pfrt_k_softmax(x.data(), y.data(), s[0], s[1], s[2], log);
      pfrt_k_softmax_grad(y.data(), dy.data(), dx.data(), s[0], s[1], s[2],
                          log);
      h.saveAll(id, {s[0], s[1], s[2]},
                {{"x", x}, {"dy", dy}, {"y", y}, {"dx", dx}});
      h.record("softmax", id, "log=%d", log);
    }
}

/// The fused attention softmax against the separate kernels it stands for
/// (scale, masked_fill of the mask broadcast over leading rows, softmax;
/// softmax_grad then scale): the same bits, for fresh random scores, with
/// and without a mask (int64 and float), causal and random masks, rows of
/// 1, 7, 64 and 65, and log-softmax.
void fusedSoftmaxes(kt::Harness &h) {
  struct Case {
    int64_t rows, n, maskRows; // maskRows 0: no mask
    int32_t maskI64, log;
    bool causal;
  };
  const Case cases[] = {{12, 3, 3, 1, 0, true},    {8, 7, 0, 0, 0, false},
                        {128, 64, 64, 1, 0, true}, {6, 65, 2, 0, 1, false},
                        {5, 1, 5, 1, 0, false},    {70, 64, 70, 0, 0, true}};
  for (const Case &c : cases) {
    int64_t total = c.rows * c.n;
    auto x = h.uniform(total, -6, 6), dy = h.uniform(total);
    double scale = h.uniform1(0.1, 2.0);
    double fill = c.causal ? -INFINITY : -1e9;
    std::vector<int64_t> maskI(std::max<int64_t>(c.maskRows, 1) * c.n);
    std::vector<float> maskF(maskI.size());
    auto coin = h.uniform(int64_t(maskI.size()));
    for (int64_t i = 0; i < int64_t(maskI.size()); ++i) {
      int64_t r = i / c.n, k = i % c.n;
      // Causal: row r of the period sees columns <= r (always one).
      bool masked = c.causal ? k > r % c.n : (coin[i] > 0.6f && k != 0);
      maskI[i] = masked ? 1 : 0;
      maskF[i] = masked ? 1.0f : 0.0f;
    }
    // The separate kernels, the mask broadcast to every row first.
    std::vector<float> scaled(total), filled(total), want(total);
    pfrt_k_scale(x.data(), scaled.data(), total, scale);
    const void *mask = nullptr;
    if (c.maskRows) {
      std::vector<int64_t> bigI(total);
      std::vector<float> bigF(total);
      for (int64_t i = 0; i < total; ++i) {
        int64_t at = ((i / c.n) % c.maskRows) * c.n + i % c.n;
        bigI[i] = maskI[at];
        bigF[i] = maskF[at];
      }
      if (c.maskI64)
        pfrt_k_masked_fill(scaled.data(), bigI.data(), filled.data(), total, 1,
                           fill);
      else
        pfrt_k_masked_fill(scaled.data(), bigF.data(), filled.data(), total, 0,
                           fill);
      mask = c.maskI64 ? static_cast<const void *>(maskI.data())
                       : static_cast<const void *>(maskF.data());
    } else {
      filled = scaled;
    }
    pfrt_k_softmax(filled.data(), want.data(), c.rows, c.n, 1, c.log);
    std::vector<float> got(total);
    pfrt_k_softmax_masked(x.data(), mask, c.maskI64, c.maskRows, scale, fill,
                          got.data(), c.rows, c.n, c.log);
    CHECK(std::memcmp(got.data(), want.data(), total * sizeof(float)) == 0,
          "softmax_masked rows=%lld n=%lld mask_rows=%lld log=%d differs from "
          "scale + masked_fill + softmax",
          (long long)c.rows, (long long)c.n, (long long)c.maskRows, c.log);
    std::vector<float> dxWant(total), dxScaled(total), dxGot(total);
    pfrt_k_softmax_grad(want.data(), dy.data(), dxWant.data(), c.rows, c.n, 1,
                        c.log);
    pfrt_k_scale(dxWant.data(), dxScaled.data(), total, scale);
    pfrt_k_softmax_grad_scaled(want.data(), dy.data(), dxGot.data(), c.rows,
                               c.n, c.log, scale);
    CHECK(std::memcmp(dxGot.data(), dxScaled.data(), total * sizeof(float)) ==
              0,
          "softmax_grad_scaled rows=%lld n=%lld log=%d differs from "
          "softmax_grad + scale",
          (long long)c.rows, (long long)c.n, c.log);
    // Not a copy of its input: the rows sum to 1 (softmax).
    if (!c.log) {
      double sum = 0;
      for (int64_t k = 0; k < c.n; ++k)
        sum += got[k];
      CHECK(std::fabs(sum - 1.0) < 1e-5, "softmax_masked row 0 sums to %g",
            sum);
    }
  }
}

/// Empty tensors: nothing to do, whatever the mask's rows (0 here).
void emptyFusedSoftmax() {
  int64_t mask[1] = {1};
  float x[1] = {0}, y[1] = {7.0f};
  pfrt_k_softmax_masked(x, mask, 1, 0, 1.0, -1.0, y, 0, 4, 0);
  pfrt_k_softmax_masked(x, mask, 1, 0, 1.0, -1.0, y, 3, 0, 0);
  CHECK(y[0] == 7.0f, "an empty softmax_masked wrote its output");
}

/// Layer norm over the last axis: forward and both gradients.
void layerNorms(kt::Harness &h) {
  const int64_t shapes[][2] = {{3, 5}, {7, 1}, {2, 64}, {1, 33}};
  for (const auto &s : shapes) {
    std::string id = h.newCase();
    int64_t rows = s[0], c = s[1], n = rows * c;
    auto x = h.uniform(n, -2, 4), dy = h.uniform(n);
    auto gamma = h.uniform(c, 0.5, 1.5), beta = h.uniform(c);
    std::vector<float> y(n), dx(n), dg(c), db(c);
    double eps = 1e-5;
    pfrt_k_layer_norm(x.data(), gamma.data(), beta.data(), y.data(), rows, c,
                      eps);
    pfrt_k_layer_norm_grad_input(x.data(), gamma.data(), dy.data(), dx.data(),
                                 rows, c, eps);
    pfrt_k_layer_norm_grad_params(x.data(), dy.data(), dg.data(), db.data(),
                                  rows, c, eps);
    h.save(id, "x", {rows, c}, x);
    h.save(id, "dy", {rows, c}, dy);
    h.save(id, "gamma", {c}, gamma);
    h.save(id, "beta", {c}, beta);
    h.save(id, "y", {rows, c}, y);
    h.save(id, "dx", {rows, c}, dx);
    h.save(id, "dgamma", {c}, dg);
    h.save(id, "dbeta", {c}, db);
    h.record("layer_norm", id, "eps=%.17g", eps);
  }
}

/// Embedding lookups with repeated ids, and the scatter-add gradient.
void embeddings(kt::Harness &h) {
  const int64_t shapes[][3] = {{5, 7, 3}, {40, 4, 8}, {1, 1, 1}};
  for (const auto &s : shapes) {
    std::string id = h.newCase();
    int64_t n = s[0], v = s[1], d = s[2];
    auto table = h.uniform(v * d), dy = h.uniform(n * d);
    auto u = h.uniform(n, 0, float(v));
    std::vector<int64_t> ids(n);
    for (int64_t i = 0; i < n; ++i)
      ids[i] = std::min<int64_t>(v - 1, int64_t(u[i]));
    std::vector<float> y(n * d), dt(v * d, 7.0f), idsF(ids.begin(), ids.end());
    pfrt_k_embedding(table.data(), ids.data(), y.data(), n, v, d);
    pfrt_k_embedding_grad(ids.data(), dy.data(), dt.data(), n, v, d);
    h.save(id, "table", {v, d}, table);
    h.save(id, "ids", {n}, idsF);
    h.save(id, "dy", {n, d}, dy);
    h.save(id, "y", {n, d}, y);
    h.save(id, "dtable", {v, d}, dt);
    h.record("embedding", id, "n=%lld", (long long)n);
    if (v < 2)
      continue;
    // Vocabulary-parallel: the table's rows [0, r0) and [r0, v) on two
    // "ranks"; the lookups add up, the gradients are the halves.
    std::string rid = h.newCase();
    int64_t r0 = v / 2;
    std::vector<float> ya(n * d, 7.0f), yb(n * d, 7.0f), da(r0 * d, 7.0f),
        db((v - r0) * d, 7.0f);
    pfrt_k_embedding_rows(table.data(), ids.data(), ya.data(), n, r0, d, 0, v);
    pfrt_k_embedding_rows(table.data() + r0 * d, ids.data(), yb.data(), n,
                          v - r0, d, r0, v);
    pfrt_k_embedding_grad_rows(ids.data(), dy.data(), da.data(), n, r0, d, 0,
                               v);
    pfrt_k_embedding_grad_rows(ids.data(), dy.data(), db.data(), n, v - r0, d,
                               r0, v);
    h.save(rid, "table", {v, d}, table);
    h.save(rid, "ids", {n}, idsF);
    h.save(rid, "dy", {n, d}, dy);
    h.save(rid, "ya", {n, d}, ya);
    h.save(rid, "yb", {n, d}, yb);
    h.save(rid, "da", {r0, d}, da);
    h.save(rid, "db", {v - r0, d}, db);
    h.record("embedding_rows", rid, "r0=%lld", (long long)r0);
  }
}

void biasAdd(kt::Harness &h) {
  const int64_t shapes[][3] = {{5, 7, 1},  {3, 13, 17}, {1, 1, 1},
                               {4, 3, 33}, {2, 130, 1}, {1, 9, 49}};
  for (const auto &s : shapes) {
    std::string id = h.newCase();
    int64_t n = s[0] * s[1] * s[2];
    auto x = h.uniform(n), b = h.uniform(s[1], -2, 2);
    std::vector<float> y(n), yin = x;
    pfrt_k_bias_add(x.data(), b.data(), y.data(), s[0], s[1], s[2]);
    pfrt_k_bias_add(yin.data(), b.data(), yin.data(), s[0], s[1], s[2]);
    // The fused bias + ReLU is bit for bit relu(bias_add) (NaN included).
    {
      std::vector<float> xs = x, sum(n), want(n), fused(n), fusedIn;
      xs[0] = std::nanf("");
      pfrt_k_bias_add(xs.data(), b.data(), sum.data(), s[0], s[1], s[2]);
      pfrt_k_relu(sum.data(), want.data(), n);
      pfrt_k_bias_add_relu(xs.data(), b.data(), fused.data(), s[0], s[1], s[2]);
      fusedIn = xs;
      pfrt_k_bias_add_relu(fusedIn.data(), b.data(), fusedIn.data(), s[0], s[1],
                           s[2]);
      CHECK(std::memcmp(fused.data(), want.data(), n * sizeof(float)) == 0 &&
                std::memcmp(fusedIn.data(), want.data(), n * sizeof(float)) ==
                    0,
            "bias_add_relu differs from relu(bias_add) for shape %lld x %lld x "
            "%lld",
            (long long)s[0], (long long)s[1], (long long)s[2]);
    }
    h.save(id, "x", {s[0], s[1], s[2]}, x);
    h.save(id, "b", {s[1]}, b);
    h.save(id, "y", {s[0], s[1], s[2]}, y);
    h.save(id, "y_inplace", {s[0], s[1], s[2]}, yin);
    h.record("bias_add", id, "outer=%lld c=%lld inner=%lld", (long long)s[0],
             (long long)s[1], (long long)s[2]);
  }
}

/// Saves a case of a kernel taking x (shape) to y (out) under one list
/// parameter, recorded as `shape=<shape> <param>=<value>`.
void saveReshaping(kt::Harness &h, const std::string &id, const char *kernel,
                   const Shape &shape, const std::vector<float> &x,
                   const Shape &out, const std::vector<float> &y,
                   const char *param, const Shape &value) {
  h.save(id, "x", shape, x.data());
  h.save(id, "y", out, y.data());
  h.record(kernel, id, "shape=%s %s=%s", kt::join(shape).c_str(), param,
           kt::join(value).c_str());
}

void reduceCase(kt::Harness &h, const Shape &shape,
                const std::vector<int8_t> &red) {
  std::string id = h.newCase();
  int64_t n = kt::numel(shape);
  Shape out;
  Shape flags;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!red[d])
      out.push_back(shape[d]);
    flags.push_back(red[d] ? 1 : 0);
  }
  // Offset data: float32 accumulation would visibly lose digits.
  auto x = h.uniform(n, -1.0f, 3.0f);
  std::vector<float> y(size_t(std::max<int64_t>(kt::numel(out), 1)), -7.0f);
  pfrt_k_reduce_sum(x.data(), y.data(), int64_t(shape.size()), shape.data(),
                    red.data());
  saveReshaping(h, id, "reduce_sum", shape, x, out, y, "reduce", flags);
}

void reduceSum(kt::Harness &h) {
  reduceCase(h, {37, 129}, {1, 0});
  reduceCase(h, {37, 129}, {0, 1});
  reduceCase(h, {4, 6, 5, 7}, {1, 0, 1, 1}); // conv bias gradient
  reduceCase(h, {3, 1, 5, 1, 2}, {1, 1, 0, 0, 1});
  reduceCase(h, {5, 4, 3}, {1, 1, 1});
  reduceCase(h, {5, 4, 3}, {0, 0, 0});
  reduceCase(h, {20000}, {1});
  reduceCase(h, {}, {});
  reduceCase(h, {3, 0, 4}, {0, 1, 0}); // empty reduced extent -> zeros
  reduceCase(h, {1, 1}, {1, 0});
  for (int i = 0; i < 14; ++i) {
    int64_t rank = h.randint(1, 6);
    Shape s;
    std::vector<int8_t> r;
    for (int64_t d = 0; d < rank; ++d) {
      s.push_back(h.randint(0, 4) == 0 ? 1 : h.randint(2, 9));
      r.push_back(int8_t(h.randint(0, 1)));
    }
    reduceCase(h, s, r);
  }
}

void transposeCase(kt::Harness &h, const Shape &shape, const Shape &perm) {
  std::string id = h.newCase();
  int64_t n = kt::numel(shape);
  Shape out;
  for (int64_t p : perm)
    out.push_back(shape[size_t(p)]);
  auto x = h.uniform(n);
  std::vector<float> y(size_t(std::max<int64_t>(n, 1)));
  pfrt_k_transpose(x.data(), y.data(), int64_t(shape.size()), shape.data(),
                   perm.data());
  saveReshaping(h, id, "transpose", shape, x, out, y, "perm", perm);
}

void transpose(kt::Harness &h) {
  transposeCase(h, {67, 131}, {1, 0});
  transposeCase(h, {3, 1, 5, 1, 2}, {4, 2, 1, 0, 3});
  transposeCase(h, {4, 5, 6}, {0, 2, 1});
  transposeCase(h, {4, 5, 6}, {1, 0, 2});       // innermost stays: row copies
  transposeCase(h, {2, 3, 4, 5}, {2, 3, 0, 1}); // merges into a 2-D swap
  transposeCase(h, {6, 7}, {0, 1});
  transposeCase(h, {}, {});
  transposeCase(h, {3, 0, 2}, {2, 0, 1});
  for (int i = 0; i < 14; ++i) {
    int64_t rank = h.randint(1, 6);
    Shape s, p;
    for (int64_t d = 0; d < rank; ++d) {
      s.push_back(h.randint(0, 5) == 0 ? 1
                                       : h.randint(2, 7 + 30 * (rank <= 2)));
      p.push_back(d);
    }
    for (int64_t d = rank - 1; d > 0; --d)
      std::swap(p[size_t(d)], p[size_t(h.randint(0, d))]);
    transposeCase(h, s, p);
  }
}

/// sub and div (also in place), masked_fill with float and int64 masks.
void tensorElementwise(kt::Harness &h) {
  for (int64_t n : {int64_t(1), int64_t(7), int64_t(1003)}) {
    std::string id = h.newCase();
    auto a = h.uniform(n, -3, 3), b = h.uniform(n, 0.5f, 3.0f);
    std::vector<float> sub(n), div(n), subIn = a, divIn = a, fillF(n), fillI(n);
    pfrt_k_sub(a.data(), b.data(), sub.data(), n);
    pfrt_k_sub(subIn.data(), b.data(), subIn.data(), n);
    pfrt_k_div(a.data(), b.data(), div.data(), n);
    pfrt_k_div(divIn.data(), b.data(), divIn.data(), n);
    std::vector<float> maskF(n);
    std::vector<int64_t> maskI(n);
    for (int64_t i = 0; i < n; ++i) {
      maskF[size_t(i)] = h.randint(0, 1) ? 1.0f : 0.0f;
      maskI[size_t(i)] = h.randint(0, 2) - 1; // -1, 0 or 1
    }
    double v = h.uniform1(-10, 10);
    pfrt_k_masked_fill(a.data(), maskF.data(), fillF.data(), n, 0, v);
    pfrt_k_masked_fill(a.data(), maskI.data(), fillI.data(), n, 1, v);
    std::vector<float> maskIF(maskI.begin(), maskI.end());
    h.saveAll(id, {n},
              {{"a", a},
               {"b", b},
               {"sub", sub},
               {"sub_inplace", subIn},
               {"div", div},
               {"div_inplace", divIn},
               {"mask_f", maskF},
               {"mask_i", maskIF},
               {"fill_f", fillF},
               {"fill_i", fillI}});
    h.record("tensor_elementwise", id, "n=%lld v=%.17g", (long long)n, v);
  }
}

void broadcastCase(kt::Harness &h, Shape in, const Shape &out) {
  in.insert(in.begin(), out.size() - in.size(), 1); // padded to out's rank
  std::string id = h.newCase();
  auto x = h.uniform(kt::numel(in));
  std::vector<float> y(size_t(std::max<int64_t>(kt::numel(out), 1)), -7.0f);
  pfrt_k_broadcast(x.data(), y.data(), int64_t(out.size()), in.data(),
                   out.data(), 4);
  // int64 elements: the same pattern of values, 8 bytes each.
  std::vector<int64_t> xi(x.size()), yi(y.size(), -7);
  for (size_t i = 0; i < x.size(); ++i)
    xi[i] = int64_t(x[i] * 1000);
  pfrt_k_broadcast(xi.data(), yi.data(), int64_t(out.size()), in.data(),
                   out.data(), 8);
  std::vector<float> yiF(yi.begin(), yi.end());
  h.save(id, "y_i64", out, yiF);
  saveReshaping(h, id, "broadcast", in, x, out, y, "out", out);
}

void broadcast(kt::Harness &h) {
  broadcastCase(h, {1, 5}, {4, 5});
  broadcastCase(h, {4, 1}, {4, 5});
  broadcastCase(h, {1, 3, 1}, {2, 3, 4});
  broadcastCase(h, {1, 1, 6, 6}, {2, 3, 6, 6});
  broadcastCase(h, {3, 4}, {3, 4});
  broadcastCase(h, {1}, {0, 3});
  for (int i = 0; i < 8; ++i) {
    int64_t rank = h.randint(1, 5);
    Shape in, out;
    for (int64_t d = 0; d < rank; ++d) {
      out.push_back(h.randint(1, 6));
      in.push_back(h.randint(0, 1) ? 1 : out.back());
    }
    broadcastCase(h, in, out);
  }
}

} // namespace

int main(int argc, char **argv) {
  kt::Harness h("k-basic", argc, argv);
  elementwise(h);
  activations(h);
  softmaxes(h);
  fusedSoftmaxes(h);
  emptyFusedSoftmax();
  layerNorms(h);
  embeddings(h);
  biasAdd(h);
  reduceSum(h);
  transpose(h);
  tensorElementwise(h);
  broadcast(h);
  return 0;
}
