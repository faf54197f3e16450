//===- test_cuda_bodies_gpt.cpp - the GPT family's bodies -----------------===//
//
// Part of pfrt-test-cuda-bodies (test_cuda_bodies.cpp says what it checks):
// sub, div, masked fill, softmax, layer norm, embeddings, broadcasts,
// copy_box, the cross-entropy with ignore_index and dropout.
//
//===----------------------------------------------------------------------===//

#include "CudaBodiesTest.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

using namespace pfrt::dev;
using namespace cudabodies;

namespace {

//===----------------------------------------------------------------------===//
// sub, div, masked fill, softmax
//===----------------------------------------------------------------------===//

void tensorOps() {
  std::vector<int64_t> sizes = {1, 7, 8, 9, 257, 1031, randint(1, 5000)};
  for (int64_t n : sizes) {
    std::string at = " n=" + std::to_string(n);
    auto a = uniform(n), b = uniform(n);
    sprinkle(a);
    sprinkle(b);
    b[size_t(randint(0, n - 1))] = 0.0f; // a division by zero
    std::vector<float> got(static_cast<size_t>(n)),
        want(static_cast<size_t>(n));
    expectBinaryBodies({{"sub", subAt, pfrt_k_sub}, {"div", divAt, pfrt_k_div}},
                       a, b, at);
    std::vector<float> maskF(static_cast<size_t>(n));
    std::vector<int64_t> maskI(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      int64_t r = randint(0, 3);
      maskI[size_t(i)] = r == 0 ? 0 : (r == 1 ? -5 : 1);
      maskF[size_t(i)] = r == 0 ? (randint(0, 1) ? -0.0f : 0.0f) : 1.0f;
    }
    double v = randint(0, 1) ? -1e9 : uniform1(-3.0, 3.0);
    float vf = float(v);
    for (int64_t i = 0; i < n; ++i)
      maskedFillAt(a.data(), maskF.data(), got.data(), 0, vf, i);
    pfrt_k_masked_fill(a.data(), maskF.data(), want.data(), n, 0, v);
    expectBits(got, want, "masked_fill float mask" + at);
    for (int64_t i = 0; i < n; ++i)
      maskedFillAt(a.data(), maskI.data(), got.data(), 1, vf, i);
    pfrt_k_masked_fill(a.data(), maskI.data(), want.data(), n, 1, v);
    expectBits(got, want, "masked_fill int64 mask" + at);
  }
}

void softmaxCase(int64_t outer, int64_t n, int64_t inner, bool masked) {
  int64_t total = outer * n * inner, lines = outer * inner;
  auto x = uniform(total, -8.0f, 8.0f), dy = uniform(total);
  if (masked) // a causal mask's -1e9 fills
    for (int64_t i = 0; i < total; ++i)
      if (randint(0, 2) == 0)
        x[size_t(i)] = -1e9f;
  for (int32_t lg = 0; lg < 2; ++lg) {
    std::string at = " [" + std::to_string(outer) + "," + std::to_string(n) +
                     "," + std::to_string(inner) +
                     "] log=" + std::to_string(lg);
    std::vector<float> got(static_cast<size_t>(total)),
        want(static_cast<size_t>(total));
    for (int64_t j = 0; j < lines; ++j)
      softmaxLineAt(x.data(), got.data(), n, inner, lg, j);
    pfrt_k_softmax(x.data(), want.data(), outer, n, inner, lg);
    expectBits(got, want, "softmax" + at);
    std::vector<float> gotDx(static_cast<size_t>(total)),
        wantDx(static_cast<size_t>(total));
    for (int64_t j = 0; j < lines; ++j)
      softmaxGradLineAt(want.data(), dy.data(), gotDx.data(), n, inner, lg, j);
    pfrt_k_softmax_grad(want.data(), dy.data(), wantDx.data(), outer, n, inner,
                        lg);
    expectBits(gotDx, wantDx, "softmax_grad" + at);
  }
}

void softmaxes() {
  softmaxCase(1, 1, 1, false);
  softmaxCase(1, 7, 1, false);
  softmaxCase(5, 9, 1, true);
  softmaxCase(3, 257, 1, false);
  softmaxCase(2, 5, 3, false);
  softmaxCase(4, 8, 7, true);
  softmaxCase(1, 13, 1031, false);
  softmaxCase(randint(1, 6), randint(1, 70), randint(1, 9), randint(0, 1));
}

void layerNormCase(int64_t rows, int64_t c) {
  std::string at = " [" + std::to_string(rows) + "," + std::to_string(c) + "]";
  const double eps = 1e-5;
  int64_t n = rows * c;
  auto x = uniform(n, -4.0f, 4.0f), dy = uniform(n);
  auto gamma = uniform(c, 0.5f, 1.5f), beta = uniform(c);
  if (n > 0)
    x[size_t(randint(0, n - 1))] += 1000.0f; // a row with a large outlier
  std::vector<double> stats(static_cast<size_t>(2 * rows));
  for (int64_t r = 0; r < rows; ++r)
    lnRowStatsAt(x.data(), stats.data(), c, eps, r);
  std::vector<float> got(static_cast<size_t>(n)), want(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    lnAffineAt(x.data(), gamma.data(), beta.data(), got.data(), stats.data(), c,
               i);
  pfrt_k_layer_norm(x.data(), gamma.data(), beta.data(), want.data(), rows, c,
                    eps);
  expectBits(got, want, "layer_norm" + at);
  for (int64_t r = 0; r < rows; ++r)
    lnGradInputRowAt(x.data(), gamma.data(), dy.data(), got.data(),
                     stats.data(), c, r);
  pfrt_k_layer_norm_grad_input(x.data(), gamma.data(), dy.data(), want.data(),
                               rows, c, eps);
  expectBits(got, want, "layer_norm_grad_input" + at);
  std::vector<float> dg(static_cast<size_t>(c)), db(static_cast<size_t>(c)),
      wantDg(static_cast<size_t>(c)), wantDb(static_cast<size_t>(c));
  for (int64_t k = 0; k < c; ++k)
    lnGradParamsColAt(x.data(), dy.data(), stats.data(), dg.data(), db.data(),
                      rows, c, k);
  pfrt_k_layer_norm_grad_params(x.data(), dy.data(), wantDg.data(),
                                wantDb.data(), rows, c, eps);
  expectBits(dg, wantDg, "layer_norm_grad_params dgamma" + at);
  expectBits(db, wantDb, "layer_norm_grad_params dbeta" + at);
}

void layerNorms() {
  layerNormCase(1, 1);
  layerNormCase(1, 7);
  layerNormCase(3, 8);
  layerNormCase(5, 9);
  layerNormCase(17, 64);
  layerNormCase(4, 1031);
  layerNormCase(0, 5);
  layerNormCase(randint(1, 40), randint(1, 300));
}

//===----------------------------------------------------------------------===//
// GPT-shaped programs: embeddings, broadcast, copy_box, the cross-entropy
// with ignore_index or summed, count_kept, dropout
//===----------------------------------------------------------------------===//

std::vector<int64_t> randomIds(int64_t n, int64_t vocab) {
  std::vector<int64_t> ids(static_cast<size_t>(n));
  for (auto &id : ids)
    id = randint(0, vocab - 1);
  return ids;
}

/// The whole table (row0 = 0, v = vocab) or a block of its rows.
void embeddingCase(int64_t n, int64_t vocab, int64_t d, int64_t row0,
                   int64_t v) {
  std::string at = " n=" + std::to_string(n) +
                   " vocab=" + std::to_string(vocab) +
                   " d=" + std::to_string(d) + " rows=[" +
                   std::to_string(row0) + "," + std::to_string(row0 + v) + ")";
  bool whole = row0 == 0 && v == vocab;
  auto table = uniform(v * d), dy = uniform(n * d);
  sprinkle(table);
  auto ids = randomIds(n, vocab); // repeats when vocab < n
  DeviceError err{};
  embeddingCheckIds(ids.data(), n, vocab, kErrEmbeddingId, &err);
  CHECK(err.code == kErrNone, "embedding%s: error %d recorded", at.c_str(),
        int(err.code));
  std::vector<float> got(static_cast<size_t>(n * d)),
      want(static_cast<size_t>(n * d), 7.0f);
  for (int64_t i = 0; i < n * d; ++i)
    embeddingAt(table.data(), ids.data(), got.data(), v, d, row0, i);
  if (whole)
    pfrt_k_embedding(table.data(), ids.data(), want.data(), n, v, d);
  else
    pfrt_k_embedding_rows(table.data(), ids.data(), want.data(), n, v, d, row0,
                          vocab);
  expectBits(got, want, "embedding" + at);
  // The gradient: the positions of each row, then one thread per element.
  std::vector<int64_t> start(static_cast<size_t>(v + 1)),
      cursor(static_cast<size_t>(v > 0 ? v : 1)),
      pos(static_cast<size_t>(n > 0 ? n : 1));
  embeddingIndex(ids.data(), n, v, row0, start.data(), cursor.data(),
                 pos.data());
  std::vector<float> gotD(static_cast<size_t>(v * d)),
      wantD(static_cast<size_t>(v * d), 7.0f);
  for (int64_t i = 0; i < v * d; ++i)
    embeddingGradAt(start.data(), pos.data(), dy.data(), gotD.data(), d, i);
  if (whole)
    pfrt_k_embedding_grad(ids.data(), dy.data(), wantD.data(), n, v, d);
  else
    pfrt_k_embedding_grad_rows(ids.data(), dy.data(), wantD.data(), n, v, d,
                               row0, vocab);
  expectBits(gotD, wantD, "embedding_grad" + at);
}

void embeddings() {
  embeddingCase(1, 1, 1, 0, 1);
  embeddingCase(9, 3, 5, 0, 3); // every row repeated
  embeddingCase(64, 256, 64, 0, 256);
  embeddingCase(40, 10, 17, 0, 10);
  embeddingCase(33, 20, 8, 5, 7); // a block of rows: other ids give zeros
  embeddingCase(50, 12, 3, 6, 6);
  embeddingCase(0, 4, 3, 0, 4);
  int64_t vocab = randint(1, 300);
  int64_t v = randint(0, vocab);
  embeddingCase(randint(1, 200), vocab, randint(1, 40), randint(0, vocab - v),
                v);
  // The first bad id (in order) is recorded, and the forward body never
  // reads outside the table for it.
  std::vector<int64_t> ids = {0, 3, 5, -1, 9};
  DeviceError err{};
  embeddingCheckIds(ids.data(), 5, 5, kErrEmbeddingGradRowsId, &err);
  CHECK(err.code == kErrEmbeddingGradRowsId && err.row == 2 && err.value == 5 &&
            err.bound == 5,
        "embedding ids: recorded code %d row %lld value %lld bound %lld",
        int(err.code), (long long)err.row, (long long)err.value,
        (long long)err.bound);
  auto table = uniform(5 * 2);
  std::vector<float> y(10);
  for (int64_t i = 0; i < 10; ++i)
    embeddingAt(table.data(), ids.data(), y.data(), 5, 2, 0, i);
  CHECK(y[4] == 0.0f && y[6] == 0.0f, "a bad id must give zeros");
  ++gChecks;
}

void broadcastCase(const std::vector<int64_t> &in,
                   const std::vector<int64_t> &out, int64_t es) {
  int64_t rank = int64_t(out.size()), inTotal = 1, total = 1;
  std::string at = " es=" + std::to_string(es) + " [";
  for (int64_t d = 0; d < rank; ++d) {
    inTotal *= in[size_t(d)];
    total *= out[size_t(d)];
    at += std::to_string(in[size_t(d)]) + "->" +
          std::to_string(out[size_t(d)]) + (d + 1 < rank ? "," : "]");
  }
  // 8-byte elements: pairs of random floats (their bits).
  auto x = uniform(inTotal * es / 4);
  std::vector<float> got(static_cast<size_t>(total * es / 4)),
      want(static_cast<size_t>(total * es / 4), 5.0f);
  BoxMap m;
  makeBroadcastMap(rank, in.data(), out.data(), &m);
  CHECK(m.total == total, "broadcast%s: %lld elements", at.c_str(),
        (long long)m.total);
  for (int64_t o = 0; o < m.total; ++o)
    copyElemAt(x.data(), got.data(), m, int32_t(es), o);
  pfrt_k_broadcast(x.data(), want.data(), rank, in.data(), out.data(), es);
  expectBits(got, want, "broadcast" + at);
}

void broadcasts() {
  broadcastCase({}, {}, 4);
  broadcastCase({1}, {7}, 4);
  broadcastCase({1, 8, 64}, {2, 8, 64}, 4); // gpt: the positions' embeddings
  broadcastCase({1, 1, 8, 8}, {2, 4, 8, 8}, 8); // gpt: the causal mask
  broadcastCase({3, 1, 5}, {3, 4, 5}, 4);
  broadcastCase({1, 6, 1}, {5, 6, 3}, 8);
  broadcastCase({2, 3}, {2, 3}, 4);
  std::vector<int64_t> in, out;
  int64_t rank = randint(1, 5);
  for (int64_t d = 0; d < rank; ++d) {
    out.push_back(randint(1, 6));
    in.push_back(randint(0, 1) ? 1 : out.back());
  }
  broadcastCase(in, out, randint(0, 1) ? 4 : 8);
}

void copyBoxCase(int64_t rank, int32_t dtype, bool offsets) {
  const size_t r = static_cast<size_t>(rank);
  std::vector<int64_t> src(r), dst(r), sizes(r), so(r), dof(r);
  int64_t srcTotal = 1, dstTotal = 1;
  std::string at = " dtype=" + std::to_string(dtype) + " src [";
  for (int64_t d = 0; d < rank; ++d) {
    sizes[size_t(d)] = randint(0, 4) == 0 ? 1 : randint(1, 7);
    src[size_t(d)] = sizes[size_t(d)] + (offsets ? randint(0, 3) : 0);
    dst[size_t(d)] = sizes[size_t(d)] + (offsets ? randint(0, 3) : 0);
    so[size_t(d)] = randint(0, src[size_t(d)] - sizes[size_t(d)]);
    dof[size_t(d)] = randint(0, dst[size_t(d)] - sizes[size_t(d)]);
    srcTotal *= src[size_t(d)];
    dstTotal *= dst[size_t(d)];
    at += std::to_string(src[size_t(d)]) + (d + 1 < rank ? "," : "");
  }
  at += "]";
  int64_t words = dtype == PFRT_DTYPE_I64 ? 2 : 1;
  auto x = uniform(srcTotal * words);
  auto init = uniform(dstTotal * words);
  std::vector<float> got = init, want = init;
  const int64_t *sop = offsets ? so.data() : nullptr;
  const int64_t *dop = offsets ? dof.data() : nullptr;
  BoxMap m;
  makeCopyBoxMap(rank, src.data(), sop, dst.data(), dop, sizes.data(), &m);
  for (int64_t o = 0; o < m.total; ++o)
    copyElemAt(x.data(), got.data(), m, int32_t(4 * words), o);
  pfrt_copy_box(x.data(), src.data(), sop, want.data(), dst.data(), dop,
                sizes.data(), rank, dtype);
  expectBits(got, want, "copy_box" + at);
}

void copyBoxes() {
  for (int32_t dtype : {PFRT_DTYPE_F32, PFRT_DTYPE_I64, PFRT_DTYPE_I32})
    for (int64_t rank = 0; rank <= 4; ++rank)
      for (int rep = 0; rep < 3; ++rep)
        copyBoxCase(rank, dtype, rep > 0);
}

void xentIgnoreCase(int64_t n, int64_t c, int64_t ignore, int ignored,
                    bool mean) {
  auto x = uniform(n * c, -4.0f, 4.0f);
  std::vector<int64_t> labels(static_cast<size_t>(n));
  for (auto &l : labels)
    l = randint(0, 3) < ignored ? ignore : randint(0, c - 1);
  char what[160];
  snprintf(what, sizeof(what), "softmax_xent_%s n=%lld c=%lld ignore=%lld",
           mean ? "ignore" : "sum", (long long)n, (long long)c,
           (long long)ignore);
  int32_t code = mean ? kErrXentIgnoreLabel : kErrXentSumLabel;
  std::vector<double> rowLoss(static_cast<size_t>(n));
  for (int64_t r = 0; r < n; ++r)
    xentRowLossIgnoreAt(x.data(), labels.data(), rowLoss.data(), c, ignore, r);
  DeviceError err{};
  std::vector<float> got(1), want(1);
  xentTotalIgnore(rowLoss.data(), labels.data(), got.data(), n, c, ignore, mean,
                  code, &err);
  CHECK(err.code == kErrNone, "%s: error %d recorded", what, int(err.code));
  if (mean)
    pfrt_k_softmax_xent_ignore(x.data(), labels.data(), want.data(), n, c,
                               ignore);
  else
    pfrt_k_softmax_xent_sum(x.data(), labels.data(), want.data(), n, c, ignore);
  expectBits(got, want, what);
  std::vector<float> dloss = uniform(1, 0.25f, 2.0f);
  std::vector<double> stats(static_cast<size_t>(2 * n));
  double scale = 0.0;
  xentGradScale(labels.data(), dloss.data(), &scale, n, c, ignore, mean,
                code + 1, &err);
  CHECK(err.code == kErrNone, "%s grad: error %d recorded", what,
        int(err.code));
  for (int64_t r = 0; r < n; ++r)
    xentRowStatsAt(x.data(), stats.data(), c, r);
  std::vector<float> gotD(static_cast<size_t>(n * c)),
      wantD(static_cast<size_t>(n * c), 3.0f);
  for (int64_t i = 0; i < n * c; ++i)
    xentGradIgnoreAt(x.data(), labels.data(), &scale, stats.data(), gotD.data(),
                     c, ignore, i);
  if (mean)
    pfrt_k_softmax_xent_grad_ignore(x.data(), labels.data(), dloss.data(),
                                    wantD.data(), n, c, ignore);
  else
    pfrt_k_softmax_xent_grad_sum(x.data(), labels.data(), dloss.data(),
                                 wantD.data(), n, c, ignore);
  expectBits(gotD, wantD, std::string(what) + " (grad)");
  // count_kept.
  std::vector<float> cnt(1), wantCnt(1);
  countKept(labels.data(), cnt.data(), n, ignore);
  pfrt_k_count_kept(labels.data(), wantCnt.data(), n, ignore);
  expectBits(cnt, wantCnt, std::string(what) + " count_kept");
}

void xentIgnores() {
  for (int mean = 0; mean < 2; ++mean) {
    xentIgnoreCase(1, 1, -1, 0, mean);
    xentIgnoreCase(7, 10, -1, 1, mean);
    xentIgnoreCase(16, 256, -1, 2, mean); // gpt's vocabulary head
    xentIgnoreCase(9, 5, 2, 1, mean);     // ignore_index a class
    xentIgnoreCase(33, 100, -100, 3, mean);
    xentIgnoreCase(6, 4, -1, 4, mean); // every row ignored (mean: NaN)
    xentIgnoreCase(randint(1, 40), randint(1, 300), -1, int(randint(0, 3)),
                   mean);
  }
  // The first kept row with a bad label is recorded; ignored rows are not.
  std::vector<int64_t> labels = {-1, 2, 9, -1, 4, -7};
  auto x = uniform(6 * 5);
  std::vector<double> rowLoss(6);
  for (int64_t r = 0; r < 6; ++r)
    xentRowLossIgnoreAt(x.data(), labels.data(), rowLoss.data(), 5, -1, r);
  DeviceError err{};
  float loss;
  xentTotalIgnore(rowLoss.data(), labels.data(), &loss, 6, 5, -1, 1,
                  kErrXentIgnoreLabel, &err);
  CHECK(err.code == kErrXentIgnoreLabel && err.row == 2 && err.value == 9,
        "xent_ignore: recorded code %d row %lld value %lld", int(err.code),
        (long long)err.row, (long long)err.value);
  DeviceError err2{};
  double scale;
  float dloss = 1.0f;
  xentGradScale(labels.data() + 3, &dloss, &scale, 3, 5, -1, 0,
                kErrXentGradSumLabel, &err2);
  CHECK(err2.code == kErrXentGradSumLabel && err2.row == 2 && err2.value == -7,
        "xent_grad_sum: recorded code %d row %lld value %lld", int(err2.code),
        (long long)err2.row, (long long)err2.value);
  ++gChecks;
}

void dropoutCase(const std::vector<int64_t> &logical,
                 const std::vector<int64_t> &offset,
                 const std::vector<int64_t> &shape, double p, int64_t step,
                 int64_t microbatch) {
  int64_t rank = int64_t(logical.size()), n = 1;
  for (int64_t s : shape)
    n *= s;
  std::string at = " p=" + std::to_string(p) + " step=" + std::to_string(step) +
                   " mb=" + std::to_string(microbatch) +
                   " n=" + std::to_string(n);
  auto x = uniform(n);
  uint64_t seed = pt_mix(gSeed ^ uint64_t(step)), stream = pt_mix(gState);
  DropoutParams q;
  q.seed = seed;
  q.stream = stream;
  q.microbatch = microbatch;
  q.scale = p < 1.0 ? float(1.0 / (1.0 - p)) : 0.0f;
  q.threshold = float(p);
  BoxMap m;
  const int64_t *off = offset.empty() ? nullptr : offset.data();
  makeShardMap(rank, logical.data(), off, shape.data(), &m);
  CHECK(m.total == n, "dropout%s: %lld elements", at.c_str(),
        (long long)m.total);
  std::vector<float> got(static_cast<size_t>(n)),
      want(static_cast<size_t>(n), 9.0f);
  uint64_t sub = dropoutStream(q, step);
  CHECK(sub == pfrt_stream_for_step(pfrt_stream_for_step(stream, step),
                                    uint64_t(microbatch)),
        "dropout%s: the sub-stream differs from pfrt_stream_for_step's",
        at.c_str());
  for (int64_t i = 0; i < n; ++i)
    dropoutAt(x.data(), got.data(), q, m, sub, i);
  pfrt_set_data_step(step);
  pfrt_k_dropout(x.data(), want.data(), n, p, seed, stream, microbatch, rank,
                 logical.data(), off, shape.data());
  expectBits(got, want, "dropout" + at);
  // The uniform values themselves, against the initialiser's.
  std::vector<float> u(static_cast<size_t>(n)), wantU(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int64_t li, unused;
    boxOffsets(m, i, &li, &unused);
    u[size_t(i)] = uniformAt(seed, sub, li);
  }
  pfrt_init_param(wantU.data(), PFRT_INIT_UNIFORM, 0.0, 1.0, seed, sub, rank,
                  logical.data(), off, shape.data());
  expectBits(u, wantU, "dropout's uniform values" + at);
}

void dropouts() {
  dropoutCase({1000}, {}, {1000}, 0.1, 0, 0);
  dropoutCase({2, 8, 64}, {}, {2, 8, 64}, 0.5, 3, 1);
  dropoutCase({6, 10, 12}, {2, 0, 4}, {3, 10, 5}, 0.3, 17, 0); // a shard
  dropoutCase({5, 7}, {0, 3}, {5, 4}, 0.0, 1, 2);
  dropoutCase({5, 7}, {1, 0}, {4, 7}, 1.0, 2, 0);
  dropoutCase({}, {}, {}, 0.25, 5, 0);
  dropoutCase({int64_t(1) << 33}, {(int64_t(1) << 33) - 300}, {300}, 0.2,
              int64_t(1) << 40, 3); // logical indices above 2^32
  int64_t len = randint(1, 3000), off = randint(0, len - 1);
  dropoutCase({len}, {off}, {randint(1, len - off)}, uniform1(0.0, 1.0),
              randint(0, 100000), randint(0, 7));
  pfrt_set_data_step(0);
}

} // namespace

void cudabodies::gptFamilies() {
  tensorOps();
  softmaxes();
  layerNorms();
  embeddings();
  broadcasts();
  copyBoxes();
  xentIgnores();
  dropouts();
}
