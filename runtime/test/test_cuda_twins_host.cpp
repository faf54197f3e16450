//===- test_cuda_twins_host.cpp - host rows, state, graphs ----------------===//
//
// Part of pfrt-test-cuda-twins (test_cuda_twins.cpp says what it checks):
// the twins of the host rows, device-resident state, graph capture and
// replay, and pfrt_cuda_run_step.
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

void hostRows() {
  // init_param: a shard of a normal initialiser, bit for bit.
  const int64_t logical[2] = {10, 12}, off[2] = {3, 4}, shape[2] = {5, 6};
  float *dp = static_cast<float *>(dalloc(30 * 4));
  pfrt_cuda_init_param(dp, PFRT_INIT_NORMAL, 0.0, 0.02, gSeed, 7, 2, logical,
                       off, shape);
  std::vector<float> want(30);
  pfrt_init_param(want.data(), PFRT_INIT_NORMAL, 0.0, 0.02, gSeed, 7, 2,
                  logical, off, shape);
  expectBits(download(dp, 30), want, "init_param");
  float *ds = static_cast<float *>(dalloc(4));
  pfrt_cuda_init_param(ds, PFRT_INIT_CONSTANT, 2.5, 0.0, gSeed, 8, 0, nullptr,
                       nullptr, nullptr);
  expectBits(download(ds, 1), {2.5f}, "init_param rank 0");
  // Synthetic inputs, twice (the second load is the resident batch).
  const int64_t ishape[2] = {4, 8};
  float *din = static_cast<float *>(dalloc(32 * 4));
  std::vector<float> host(32);
  for (int rep = 0; rep < 2; ++rep) {
    pfrt_cuda_load_input(0, din, 128, PFRT_DTYPE_F32, 0, gSeed, 11, 2, ishape);
    pfrt_synthetic_batch(host.data(), gSeed, 11, 0, 2, ishape, nullptr,
                         nullptr);
    expectBits(download(din, 32), host, "load_input");
  }
  // Parts: two micro-batches of the rows.
  const int64_t zero[2] = {0, 0};
  float *dpart = static_cast<float *>(dalloc(16 * 4));
  for (int64_t part = 0; part < 2; ++part) {
    pfrt_cuda_load_input_part(1, dpart, 64, part, 2, PFRT_DTYPE_F32, 0, gSeed,
                              12, 2, ishape, 1, zero, ishape);
    std::vector<float> w(16);
    pfrt_load_input_part(1, w.data(), 64, part, 2, PFRT_DTYPE_F32, 0, gSeed, 12,
                         2, ishape, 1, zero, ishape);
    expectBits(download(dpart, 16), w, "load_input_part");
  }
  // Results through the host.
  pfrt_arena_reset();
  std::vector<float> loss = {1.25f}, out = uniform(9);
  pfrt_cuda_report_loss(upload(loss), 0);
  pfrt_cuda_report_output(1, upload(out), 36);
  pfrt_end_step();
  CHECK(pfrt_loss_count() == 1 && pfrt_loss_value(0) == 1.25f,
        "report_loss: %d losses", pfrt_loss_count());
  std::vector<float> back(9);
  CHECK(pfrt_output_bytes(1) == 36, "report_output: %lld bytes",
        (long long)pfrt_output_bytes(1));
  pfrt_output_copy(1, back.data(), 36);
  expectBits(back, out, "report_output");
}

void state(const std::string &dir) {
  const int64_t logical[2] = {6, 5};
  auto v = uniform(30);
  float *dv = upload(v);
  pfrt_cuda_state_register("w", PFRT_DTYPE_F32, 2, logical, nullptr, nullptr,
                           dv);
  std::vector<float> got(30);
  pfrt_state_gather("w", got.data(), 120);
  expectBits(got, v, "state_gather of device state");
  auto v2 = uniform(30);
  pfrt_state_set("w", v2.data(), 120);
  expectBits(download(dv, 30), v2, "state_set of device state");
  pfrt_state_save(dir.c_str(), 5);
  pfrt_cuda_k_fill(dv, 30, 0.0);
  int64_t step = -1;
  pfrt_state_load(dir.c_str(), &step);
  CHECK(step == 5, "state_load: step %lld", (long long)step);
  expectBits(download(dv, 30), v2, "state_load of device state");
  pfrt_state_clear();
}

/// A captured graph (the raw API): SGD with a device scalar; replayed, it
/// must give the uncaptured run's bits, twice. (The host work around a
/// replay, such as refreshing a scalar the host changed, is
/// pfrt_cuda_run_step's: runStep checks it.)
void graphs() {
  if (!pfrt_cuda_graphs_enabled())
    return;
  const int64_t n = 4099;
  auto p0 = uniform(n), g = uniform(n);
  float *dp = upload(p0), *dg = upload(g);
  *pfrt_scalar("lr") = 0.5f;
  float *dlr = pfrt_cuda_scalar("lr"); // uncaptured: set now
  auto run = [&] {
    pfrt_cuda_k_sgd(dp, dg, dlr, nullptr, nullptr, dp, nullptr, n, 0.0, 0.0,
                    0.0, 0);
  };
  run(); // uncaptured: p1 = p0 - 0.5 g
  auto p1 = download(dp, n);
  std::vector<float> want(static_cast<size_t>(n));
  float half = 0.5f;
  pfrt_k_sgd(p0.data(), g.data(), &half, nullptr, nullptr, want.data(), nullptr,
             n, 0.0, 0.0, 0.0, 0);
  expectBits(p1, want, "uncaptured SGD");
  pfrt_cuda_h2d(dp, p0.data(), n * 4);
  pfrt_cuda_graph_begin();
  run();
  pfrt_cuda_graph_end();
  pfrt_cuda_graph_launch();
  expectBits(download(dp, n), p1, "graph replay");
  pfrt_cuda_h2d(dp, p0.data(), n * 4);
  pfrt_cuda_graph_launch();
  expectBits(download(dp, n), p1, "second graph replay");
}

/// pfrt_cuda_run_step: a step that loads a user input, scales it by the
/// scalar lr (SGD of zeros with gradient -x), sums it and reports the sum
/// as its loss. Step 0 runs uncaptured, step 1 is captured and replayed,
/// steps 2-4 replay: every step must see its own input and lr (loaded and
/// refreshed around each replay) and report its own loss, equal to the
/// uncaptured kernels' bits.
constexpr int64_t kStepN = 1000;
float *gStepX, *gStepY, *gStepLoss;
void stepFn(int64_t) {
  const int64_t shape[1] = {kStepN};
  pfrt_cuda_load_input(0, gStepX, kStepN * 4, PFRT_DTYPE_F32, 0, gSeed, 13, 1,
                       shape);
  pfrt_cuda_k_fill(gStepY, kStepN, 0.0);
  // In place; a replay must draw its own step's mask.
  pfrt_cuda_k_dropout(gStepX, gStepX, kStepN, 0.4, gSeed, 31, 0, 1, shape,
                      nullptr, shape);
  pfrt_cuda_k_scale(gStepX, gStepX, kStepN, -1.0);
  pfrt_cuda_k_sgd(gStepY, gStepX, pfrt_cuda_scalar("lr"), nullptr, nullptr,
                  gStepY, nullptr, kStepN, 0.0, 0.0, 0.0, 0);
  const int8_t reduce[1] = {1};
  pfrt_cuda_k_reduce_sum(gStepY, gStepLoss, 1, shape, reduce);
  pfrt_cuda_report_loss(gStepLoss, 0);
}

void runStep() {
  gStepX = static_cast<float *>(dalloc(kStepN * 4));
  gStepY = static_cast<float *>(dalloc(kStepN * 4));
  gStepLoss = static_cast<float *>(dalloc(4));
  pfrt_use_user_inputs(1);
  float previous = 0.0f;
  for (int64_t k = 0; k < 5; ++k) {
    auto x = uniform(kStepN);
    float lr = 0.5f + 0.25f * float(k);
    pfrt_begin_step(k);
    *pfrt_scalar("lr") = lr;
    pfrt_set_input(0, x.data(), kStepN * 4);
    pfrt_cuda_run_step(stepFn, k);
    pfrt_end_step();
    // The host kernels on the same data.
    std::vector<float> y(static_cast<size_t>(kStepN), 0.0f);
    std::vector<float> nx(static_cast<size_t>(kStepN));
    const int64_t dshape[1] = {kStepN};
    pfrt_k_dropout(x.data(), x.data(), kStepN, 0.4, gSeed, 31, 0, 1, dshape,
                   nullptr, dshape);
    pfrt_k_scale(x.data(), nx.data(), kStepN, -1.0);
    pfrt_k_sgd(y.data(), nx.data(), &lr, nullptr, nullptr, y.data(), nullptr,
               kStepN, 0.0, 0.0, 0.0, 0);
    float want = 0.0f;
    const int64_t shape[1] = {kStepN};
    const int8_t reduce[1] = {1};
    pfrt_k_reduce_sum(y.data(), &want, 1, shape, reduce);
    CHECK(pfrt_loss_count() == 1, "run_step %lld: %d losses", (long long)k,
          pfrt_loss_count());
    float got = pfrt_loss_value(0);
    CHECK(std::memcmp(&got, &want, 4) == 0,
          "run_step %lld: loss %.9g, the host kernels give %.9g", (long long)k,
          double(got), double(want));
    CHECK(k == 0 || got != previous, "run_step %lld: the loss did not change",
          (long long)k);
    previous = got;
  }
  pfrt_use_user_inputs(0);
}

} // namespace

void cudatwins::hostTwins(const std::string &dir) {
  hostRows();
  state(dir);
  graphs();
  runStep();
}
