//===- test_cuda_twins_gpt.cpp - the GPT family's twins -------------------===//
//
// Part of pfrt-test-cuda-twins (test_cuda_twins.cpp says what it checks):
// sub, div, masked fill, softmax, layer norm, and the GPT-shaped twins.
//
//===----------------------------------------------------------------------===//

#include "CudaTwinsTest.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

using namespace cudatwins;

namespace {

void tensorOpsAndSoftmaxes() {
  for (int64_t n : {int64_t(1), int64_t(257), int64_t(100003)}) {
    std::string at = " n=" + std::to_string(n);
    auto a = uniform(n), b = uniform(n);
    b[0] = 0.0f;
    std::vector<float> maskF(static_cast<size_t>(n));
    std::vector<int64_t> maskI(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      maskI[size_t(i)] = (i * 7) % 3 == 0 ? 1 : 0;
      maskF[size_t(i)] = (i * 5) % 4 == 0 ? 1.0f : 0.0f;
    }
    float *da = upload(a), *db = upload(b), *dmf = upload(maskF);
    int64_t *dmi = upload(maskI);
    float *dout = static_cast<float *>(dalloc(n * 4));
    std::vector<float> want(static_cast<size_t>(n));
    expectBinaryTwins({{"sub", pfrt_cuda_k_sub, pfrt_k_sub},
                       {"div", pfrt_cuda_k_div, pfrt_k_div}},
                      a, b, da, db, dout, at);
    pfrt_cuda_k_masked_fill(da, dmf, dout, n, 0, -1e9);
    pfrt_k_masked_fill(a.data(), maskF.data(), want.data(), n, 0, -1e9);
    expectBits(download(dout, n), want, "masked_fill float" + at);
    pfrt_cuda_k_masked_fill(da, dmi, dout, n, 1, 0.25);
    pfrt_k_masked_fill(a.data(), maskI.data(), want.data(), n, 1, 0.25);
    expectBits(download(dout, n), want, "masked_fill int64" + at);
    pfrt_cuda_k_masked_fill(da, dmi, da, n, 1, 0.25); // in place
    expectBits(download(da, n), want, "masked_fill in place" + at);
  }
  struct Case {
    int64_t outer, n, inner;
  };
  const Case cases[] = {
      {1, 1, 1}, {64, 257, 1}, {3, 9, 1}, {2, 5, 3}, {4, 33, 65}};
  for (const Case &cs : cases) {
    int64_t total = cs.outer * cs.n * cs.inner;
    auto x = uniform(total, -8.0f, 8.0f), dy = uniform(total);
    x[0] = -1e9f;
    float *dxin = upload(x), *ddy = upload(dy);
    float *dyout = static_cast<float *>(dalloc(total * 4));
    float *ddx = static_cast<float *>(dalloc(total * 4));
    for (int32_t lg = 0; lg < 2; ++lg) {
      std::string at = " [" + std::to_string(cs.outer) + "," +
                       std::to_string(cs.n) + "," + std::to_string(cs.inner) +
                       "] log=" + std::to_string(lg);
      std::vector<float> want(static_cast<size_t>(total)),
          wantDx(static_cast<size_t>(total));
      pfrt_cuda_k_softmax(dxin, dyout, cs.outer, cs.n, cs.inner, lg);
      pfrt_k_softmax(x.data(), want.data(), cs.outer, cs.n, cs.inner, lg);
      auto y = download(dyout, total);
      expectClose(y, want, 1e-6, "softmax" + at);
      // The gradient from the same y on both sides.
      pfrt_cuda_k_softmax_grad(dyout, ddy, ddx, cs.outer, cs.n, cs.inner, lg);
      pfrt_k_softmax_grad(y.data(), dy.data(), wantDx.data(), cs.outer, cs.n,
                          cs.inner, lg);
      expectClose(download(ddx, total), wantDx, 1e-6, "softmax_grad" + at);
    }
  }
}

void layerNorms() {
  const double eps = 1e-5;
  struct Case {
    int64_t rows, c;
  };
  const Case cases[] = {{1, 1}, {3, 9}, {64, 768}, {1000, 33}, {0, 4}};
  for (const Case &cs : cases) {
    std::string at =
        " [" + std::to_string(cs.rows) + "," + std::to_string(cs.c) + "]";
    int64_t n = cs.rows * cs.c;
    auto x = uniform(n, -4.0f, 4.0f), dy = uniform(n);
    auto gamma = uniform(cs.c, 0.5f, 1.5f), beta = uniform(cs.c);
    float *dxin = upload(x), *ddy = upload(dy), *dg = upload(gamma),
          *dbeta = upload(beta);
    float *dout = static_cast<float *>(dalloc(n * 4));
    float *ddg = static_cast<float *>(dalloc(cs.c * 4));
    float *ddb = static_cast<float *>(dalloc(cs.c * 4));
    std::vector<float> want(static_cast<size_t>(n)),
        wantDg(static_cast<size_t>(cs.c)), wantDb(static_cast<size_t>(cs.c));
    pfrt_cuda_k_layer_norm(dxin, dg, dbeta, dout, cs.rows, cs.c, eps);
    pfrt_k_layer_norm(x.data(), gamma.data(), beta.data(), want.data(), cs.rows,
                      cs.c, eps);
    expectBits(download(dout, n), want, "layer_norm" + at);
    pfrt_cuda_k_layer_norm_grad_input(dxin, dg, ddy, dout, cs.rows, cs.c, eps);
    pfrt_k_layer_norm_grad_input(x.data(), gamma.data(), dy.data(), want.data(),
                                 cs.rows, cs.c, eps);
    expectBits(download(dout, n), want, "layer_norm_grad_input" + at);
    pfrt_cuda_k_layer_norm_grad_params(dxin, ddy, ddg, ddb, cs.rows, cs.c, eps);
    pfrt_k_layer_norm_grad_params(x.data(), dy.data(), wantDg.data(),
                                  wantDb.data(), cs.rows, cs.c, eps);
    expectBits(download(ddg, cs.c), wantDg, "layer_norm dgamma" + at);
    expectBits(download(ddb, cs.c), wantDb, "layer_norm dbeta" + at);
  }
}

// The twins of GPT-shaped programs have their host rows' signatures (as
// pfrt_device.def's rows assert in src/common/AbiCheck.cpp).
#define PFRT_SAME_SIGNATURE(HOST, DEVICE)                                      \
  static_assert(std::is_same_v<decltype(HOST), decltype(DEVICE)>,              \
                #DEVICE " does not have the signature of " #HOST)
PFRT_SAME_SIGNATURE(pfrt_k_embedding, pfrt_cuda_k_embedding);
PFRT_SAME_SIGNATURE(pfrt_k_embedding_grad, pfrt_cuda_k_embedding_grad);
PFRT_SAME_SIGNATURE(pfrt_k_embedding_rows, pfrt_cuda_k_embedding_rows);
PFRT_SAME_SIGNATURE(pfrt_k_embedding_grad_rows,
                    pfrt_cuda_k_embedding_grad_rows);
PFRT_SAME_SIGNATURE(pfrt_k_broadcast, pfrt_cuda_k_broadcast);
PFRT_SAME_SIGNATURE(pfrt_copy_box, pfrt_cuda_copy_box);
PFRT_SAME_SIGNATURE(pfrt_k_softmax_xent_ignore,
                    pfrt_cuda_k_softmax_xent_ignore);
PFRT_SAME_SIGNATURE(pfrt_k_softmax_xent_grad_ignore,
                    pfrt_cuda_k_softmax_xent_grad_ignore);
PFRT_SAME_SIGNATURE(pfrt_k_softmax_xent_sum, pfrt_cuda_k_softmax_xent_sum);
PFRT_SAME_SIGNATURE(pfrt_k_softmax_xent_grad_sum,
                    pfrt_cuda_k_softmax_xent_grad_sum);
PFRT_SAME_SIGNATURE(pfrt_k_count_kept, pfrt_cuda_k_count_kept);
PFRT_SAME_SIGNATURE(pfrt_k_dropout, pfrt_cuda_k_dropout);
#undef PFRT_SAME_SIGNATURE

/// embeddings (whole table and a block of rows, repeated ids), broadcast,
/// copy_box (f32, i64; slices, pads), the cross-entropy with ignore_index
/// or summed and its gradient, count_kept, dropout: bit for bit.
void gptTwins() {
  struct EmbCase {
    int64_t n, vocab, d, row0, v;
  };
  const EmbCase embs[] = {{16, 256, 64, 0, 256},
                          {40, 10, 17, 0, 10},
                          {33, 20, 8, 5, 7},
                          {1000, 300, 33, 0, 300},
                          {0, 4, 3, 0, 4}};
  for (const EmbCase &e : embs) {
    std::string at = " n=" + std::to_string(e.n) +
                     " vocab=" + std::to_string(e.vocab) + " rows from " +
                     std::to_string(e.row0);
    bool whole = e.row0 == 0 && e.v == e.vocab;
    auto table = uniform(e.v * e.d), dy = uniform(e.n * e.d);
    std::vector<int64_t> ids(static_cast<size_t>(e.n));
    for (auto &id : ids)
      id = randint(0, e.vocab - 1);
    float *dtable = upload(table), *ddy = upload(dy);
    int64_t *dids = upload(ids);
    float *dout = static_cast<float *>(dalloc(e.n * e.d * 4));
    float *dgrad = static_cast<float *>(dalloc(e.v * e.d * 4));
    std::vector<float> want(static_cast<size_t>(e.n * e.d)),
        wantG(static_cast<size_t>(e.v * e.d));
    if (whole) {
      pfrt_cuda_k_embedding(dtable, dids, dout, e.n, e.v, e.d);
      pfrt_k_embedding(table.data(), ids.data(), want.data(), e.n, e.v, e.d);
      pfrt_cuda_k_embedding_grad(dids, ddy, dgrad, e.n, e.v, e.d);
      pfrt_k_embedding_grad(ids.data(), dy.data(), wantG.data(), e.n, e.v, e.d);
    } else {
      pfrt_cuda_k_embedding_rows(dtable, dids, dout, e.n, e.v, e.d, e.row0,
                                 e.vocab);
      pfrt_k_embedding_rows(table.data(), ids.data(), want.data(), e.n, e.v,
                            e.d, e.row0, e.vocab);
      pfrt_cuda_k_embedding_grad_rows(dids, ddy, dgrad, e.n, e.v, e.d, e.row0,
                                      e.vocab);
      pfrt_k_embedding_grad_rows(ids.data(), dy.data(), wantG.data(), e.n, e.v,
                                 e.d, e.row0, e.vocab);
    }
    expectBits(download(dout, e.n * e.d), want, "embedding" + at);
    expectBits(download(dgrad, e.v * e.d), wantG, "embedding_grad" + at);
  }
  // Broadcasts of f32 and i64 (the causal mask).
  {
    const int64_t in[3] = {1, 8, 64}, out[3] = {2, 8, 64};
    auto x = uniform(8 * 64);
    float *dx = upload(x), *dy = static_cast<float *>(dalloc(2 * 8 * 64 * 4));
    std::vector<float> want(2 * 8 * 64);
    pfrt_cuda_k_broadcast(dx, dy, 3, in, out, 4);
    pfrt_k_broadcast(x.data(), want.data(), 3, in, out, 4);
    expectBits(download(dy, 2 * 8 * 64), want, "broadcast f32");
    const int64_t in4[4] = {1, 1, 8, 8}, out4[4] = {2, 4, 8, 8};
    std::vector<int64_t> mask(64), wantM(2 * 4 * 64), gotM(2 * 4 * 64);
    for (auto &v : mask)
      v = randint(-3, 3);
    int64_t *dm = upload(mask);
    int64_t *dmo = static_cast<int64_t *>(dalloc(2 * 4 * 64 * 8));
    pfrt_cuda_k_broadcast(dm, dmo, 4, in4, out4, 8);
    pfrt_k_broadcast(mask.data(), wantM.data(), 4, in4, out4, 8);
    pfrt_cuda_d2h(gotM.data(), dmo, 2 * 4 * 64 * 8);
    CHECK(gotM == wantM, "broadcast i64 differs from the host row");
  }
  // copy_box: a slice of the last axis, a pad, an i64 box.
  for (int rep = 0; rep < 6; ++rep) {
    const int64_t ndim = 3;
    int64_t src[3], dst[3], sizes[3], so[3], dof[3], srcN = 1, dstN = 1;
    for (int d = 0; d < 3; ++d) {
      sizes[d] = randint(1, 9);
      src[d] = sizes[d] + randint(0, 5);
      dst[d] = sizes[d] + randint(0, 5);
      so[d] = randint(0, src[d] - sizes[d]);
      dof[d] = randint(0, dst[d] - sizes[d]);
      srcN *= src[d];
      dstN *= dst[d];
    }
    int32_t dtype = rep % 2 ? PFRT_DTYPE_I64 : PFRT_DTYPE_F32;
    int64_t words = dtype == PFRT_DTYPE_I64 ? 2 : 1;
    auto x = uniform(srcN * words), init = uniform(dstN * words);
    float *dx = upload(x), *dd = upload(init);
    std::vector<float> want = init;
    pfrt_cuda_copy_box(dx, src, so, dd, dst, dof, sizes, ndim, dtype);
    pfrt_copy_box(x.data(), src, so, want.data(), dst, dof, sizes, ndim, dtype);
    expectBits(download(dd, dstN * words), want,
               "copy_box " + std::to_string(rep));
  }
  // The cross-entropy with ignore_index / summed, its gradient, count_kept.
  for (int mean = 0; mean < 2; ++mean)
    for (int64_t n : {int64_t(1), int64_t(16), int64_t(300)}) {
      const int64_t c = 97, ignore = -1;
      std::string at =
          std::string(mean ? " ignore" : " sum") + " n=" + std::to_string(n);
      auto x = uniform(n * c, -5.0f, 5.0f);
      std::vector<int64_t> labels(static_cast<size_t>(n));
      for (auto &l : labels)
        l = randint(0, 3) == 0 ? ignore : randint(0, c - 1);
      labels[0] = randint(0, c - 1);
      float *dx = upload(x);
      int64_t *dl = upload(labels);
      float *dloss = static_cast<float *>(dalloc(4));
      std::vector<float> want(1), g = {0.75f}, wantD(size_t(n * c)), cnt(1);
      float *dg = upload(g), *dd = static_cast<float *>(dalloc(n * c * 4));
      // The mean over the kept rows or the sum: the same signatures.
      auto *twin =
          mean ? pfrt_cuda_k_softmax_xent_ignore : pfrt_cuda_k_softmax_xent_sum;
      auto *twinGrad = mean ? pfrt_cuda_k_softmax_xent_grad_ignore
                            : pfrt_cuda_k_softmax_xent_grad_sum;
      auto *cpu = mean ? pfrt_k_softmax_xent_ignore : pfrt_k_softmax_xent_sum;
      auto *cpuGrad =
          mean ? pfrt_k_softmax_xent_grad_ignore : pfrt_k_softmax_xent_grad_sum;
      twin(dx, dl, dloss, n, c, ignore);
      cpu(x.data(), labels.data(), want.data(), n, c, ignore);
      twinGrad(dx, dl, dg, dd, n, c, ignore);
      cpuGrad(x.data(), labels.data(), g.data(), wantD.data(), n, c, ignore);
      // The GPU's log and exp may differ from the host's in the last bit.
      expectClose(download(dloss, 1), want, 1e-6, "softmax_xent" + at);
      expectClose(download(dd, n * c), wantD, 1e-6, "softmax_xent_grad" + at);
      float *dcnt = static_cast<float *>(dalloc(4));
      pfrt_cuda_k_count_kept(dl, dcnt, n, ignore);
      pfrt_k_count_kept(labels.data(), cnt.data(), n, ignore);
      expectBits(download(dcnt, 1), cnt, "count_kept" + at);
    }
  // Dropout on a shard, at two data steps (different masks).
  {
    const int64_t logical[3] = {4, 8, 64}, off[3] = {2, 0, 0},
                  shape[3] = {2, 8, 64}, n = 2 * 8 * 64;
    auto x = uniform(n);
    float *dx = upload(x), *dy = static_cast<float *>(dalloc(n * 4));
    std::vector<float> first;
    for (int64_t step : {int64_t(3), int64_t(4)}) {
      pfrt_set_data_step(step);
      std::vector<float> want(static_cast<size_t>(n));
      pfrt_cuda_k_dropout(dx, dy, n, 0.25, gSeed, 99, 1, 3, logical, off,
                          shape);
      pfrt_k_dropout(x.data(), want.data(), n, 0.25, gSeed, 99, 1, 3, logical,
                     off, shape);
      auto got = download(dy, n);
      expectBits(got, want, "dropout step " + std::to_string(step));
      CHECK(first.empty() || got != first,
            "dropout: the same mask at two data steps");
      first = got;
    }
    pfrt_set_data_step(0);
  }
}

} // namespace

void cudatwins::gptFamilyTwins() {
  tensorOpsAndSoftmaxes();
  layerNorms();
  gptTwins();
}
