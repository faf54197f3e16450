//===- test_cuda_nccl.cpp - the NCCL collective twins against host rows ---===//
//
// pfrt-test-cuda-nccl [MODE], under mpiexec (2 or more ranks), with
// PFRT_CUDA_COMM=nccl (on real GPUs: one per rank; in CI PFRT_CUDA_FAKE=1,
// whose emulated NCCL runs the host rows over MPI). Without a CUDA device
// (or the emulation) it exits 77. It starts as a compiled GPU rank does
// (pfrt_cuda_arena_plan) and runs, on fresh random data, in every group
// (the world, the world reversed, sub-groups such as {0, 2} of 3, {r} for
// each rank):
//   - pfrt_cuda_all_reduce_sum (also in place), _all_gather,
//     _reduce_scatter_sum, _all_to_all (grouped sends and receives over
//     NCCL), _broadcast (every member as the root) and
//     _reduce_sum (the last member as the root, also in place), each
//     against its host row on the same inputs;
//   - a CUDA graph capturing an all-reduce, an all-gather and a broadcast,
//     replayed over new data (the host-staged transport cannot be captured:
//     a capture that works went over NCCL).
// Comparison: bit for bit under the emulation (the host rows do the
// arithmetic). On real NCCL the sums are in NCCL's order, not MPI's: each
// element may differ from the host row's by n * 2^-22 times the sum of
// the absolute values of its terms (gathers and broadcasts stay exact).
// Then, on 2 or more ranks, point to point through pfrt_cuda_run_step:
// a ring of tracked, untracked and blocking sends, receives and a batch,
// fresh data each of 4 steps (the first host-staged, the others over NCCL
// and captured, under PFRT_CUDA_COMM=nccl), bit for bit.
// MODE "staged" runs the comparisons without the graph (any transport);
// "nccl_error" makes one all-reduce, which must fail naming the call;
// "p2p_order" has rank 1 receive rank 0's two messages in the other order
// (fatal under PFRT_CUDA_COMM=nccl: NCCL matches them in order);
// "p2p_new_peer" (3 ranks) has rank 0 message rank 2 from the second step
// on, a peer the first step did not have (fatal once over NCCL).
// MODE "p2p_plan" hands pfrt_cuda_p2p_plan the ring's messages first (the
// start-up a compiled GPU rank makes) and runs only the point to point:
// every step over NCCL, the first included (no host round-trip, no MPI
// message in the counters); "p2p_plan_staged" the same where the plan
// cannot go over NCCL (ranks that share a GPU): correct, host-staged in
// every step. "p2p_plan_disagree" (rank 1's plan lists another count),
// "p2p_plan_deviate" (the step posts another message than planned),
// "p2p_plan_short" (the step posts fewer) and "p2p_plan_bad" (a table of 3
// entries) must fail.
// MODE "split" first hands the groups of two or more ranks to
// pfrt_cuda_comm_groups (the start-up a compiled GPU rank makes: their
// communicators split from the world's), then runs the same comparisons;
// "groups_bad_rank", "groups_mismatch" (rank 1 holds another table) and
// "groups_again" (a second, other table) must fail.
//
//===----------------------------------------------------------------------===//

#include "CudaTestUtil.h"
#include "TestUtil.h"
#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

uint64_t gSeed, gTag;
int gRank, gSize;
bool gExact = true;
const int64_t kArena = int64_t(32) << 20;
pt::DeviceArena gArena(kArena);

std::vector<float> uniform(int64_t n, uint64_t salt) {
  return pt::uniformValues(gSeed, ++gTag, salt, n, -4.0f, 4.0f);
}

float *dalloc(int64_t elems) {
  return static_cast<float *>(gArena.alloc(elems * 4));
}

float *upload(const std::vector<float> &h) {
  return gArena.upload(h.data(), int64_t(h.size()));
}

using pt::download;

/// Garbage (NaN) in a device output, so the twin must write every element.
void poison(float *d, int64_t n) {
  if (n > 0)
    pfrt_cuda_memset(d, 0xff, n * 4);
}

/// got against want; `scale` (same length, or empty for exact) bounds the
/// difference of a sum on real NCCL (see the file comment).
void expectSame(const std::vector<float> &got, const std::vector<float> &want,
                const std::vector<float> &scale, int64_t n,
                const std::string &what) {
  CHECK(got.size() == want.size(), "%s: %zu elements, want %zu", what.c_str(),
        got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (gExact || scale.empty()) {
      CHECK(std::memcmp(&got[i], &want[i], 4) == 0,
            "%s: element %zu is %.9g, the host row gives %.9g", what.c_str(), i,
            double(got[i]), double(want[i]));
      continue;
    }
    double tol = double(n) * std::ldexp(1.0, -22) * double(scale[i]);
    CHECK(std::fabs(double(got[i]) - double(want[i])) <= tol,
          "%s: element %zu is %.9g, the host row gives %.9g (tolerance %g)",
          what.c_str(), i, double(got[i]), double(want[i]), tol);
  }
}

/// A summing host row's result on `in` and the scale of its rounding
/// error (the row on |in|), `outs` floats each: row(in, out).
struct HostSums {
  std::vector<float> want, scale;
};
template <typename Row>
HostSums hostSums(const std::vector<float> &in, int64_t outs, Row row) {
  HostSums h{std::vector<float>(static_cast<size_t>(outs)),
             std::vector<float>(static_cast<size_t>(outs))};
  row(in.data(), h.want.data());
  std::vector<float> mag = in;
  for (float &x : mag)
    x = std::fabs(x);
  row(mag.data(), h.scale.data());
  return h;
}

std::string name(const char *fn, const std::vector<int64_t> &g, int64_t count) {
  std::string s = std::string(fn) + " group [";
  for (size_t i = 0; i < g.size(); ++i)
    s += (i ? "," : "") + std::to_string(g[i]);
  return s + "] count " + std::to_string(count);
}

/// A twin's output: `in` uploaded, a poisoned device output of `outs`
/// floats, twin(din, dout) returning 0, and the output downloaded.
template <typename Twin>
std::vector<float> twinOutput(const std::vector<float> &in, int64_t outs,
                              Twin twin) {
  float *din = upload(in), *dout = dalloc(outs);
  poison(dout, outs);
  CHECK(twin(din, dout) == 0, "rc");
  return download(dout, outs);
}

/// Every collective twin in group g (this rank a member) on `count`
/// elements per block, against the host rows.
/// The run's transport mode ("staged": PFRT_CUDA_COMM=staged).
bool gStaged = false;

void collectives(const std::vector<int64_t> &g, int64_t count) {
  const int64_t *r = g.data();
  int64_t n = int64_t(g.size()), pos = 0;
  while (g[size_t(pos)] != gRank)
    ++pos;
  std::vector<float> none;

  // all-reduce, out of place and in place.
  {
    std::vector<float> in = uniform(count, uint64_t(gRank));
    const auto [want, scale] =
        hostSums(in, count, [&](const float *i, float *o) {
          pfrt_all_reduce_sum(i, o, count, r, n);
        });
    float *din = upload(in), *dout = dalloc(count);
    poison(dout, count);
    CHECK(pfrt_cuda_all_reduce_sum(din, dout, count, r, n) == 0, "rc");
    expectSame(download(dout, count), want, scale, n,
               name("pfrt_cuda_all_reduce_sum", g, count));
    CHECK(pfrt_cuda_all_reduce_sum(din, din, count, r, n) == 0, "rc");
    expectSame(download(din, count), want, scale, n,
               name("pfrt_cuda_all_reduce_sum in place", g, count));
    // Split (start, wait): two in flight, waited for in the other order.
    float *din2 = upload(in), *dout2 = dalloc(count), *din3 = upload(in);
    poison(dout2, count);
    CHECK(pfrt_cuda_all_reduce_start(din2, dout2, count, r, n, 7) == 0, "rc");
    CHECK(pfrt_cuda_all_reduce_start(din3, din3, count, r, n, 8) == 0, "rc");
    if (gStaged && count > 0 && n > 1) {
      // Host-staged, the sums wait for the waits: nothing written yet.
      std::vector<float> early = download(dout2, count);
      CHECK(std::isnan(early[0]) && std::isnan(early[size_t(count - 1)]),
            "a staged split all-reduce wrote its output before its wait");
    }
    CHECK(pfrt_cuda_all_reduce_wait(8) == 0, "rc");
    CHECK(pfrt_cuda_all_reduce_wait(7) == 0, "rc");
    expectSame(download(dout2, count), want, scale, n,
               name("pfrt_cuda_all_reduce_start", g, count));
    expectSame(download(din3, count), want, scale, n,
               name("pfrt_cuda_all_reduce_start in place", g, count));
    // Another collective between a start and its wait runs after the
    // started sum (a staged one is finished first, in start order), and
    // both are right.
    float *din4 = upload(in), *dout4 = dalloc(count), *din5 = upload(in);
    poison(dout4, count);
    CHECK(pfrt_cuda_all_reduce_start(din4, dout4, count, r, n, 9) == 0, "rc");
    CHECK(pfrt_cuda_all_reduce_sum(din5, din5, count, r, n) == 0, "rc");
    CHECK(pfrt_cuda_all_reduce_wait(9) == 0, "rc");
    expectSame(
        download(dout4, count), want, scale, n,
        name("pfrt_cuda_all_reduce_start around a blocking sum", g, count));
    expectSame(download(din5, count), want, scale, n,
               name("pfrt_cuda_all_reduce_sum inside a split one", g, count));
  }
  // all-gather.
  {
    std::vector<float> in = uniform(count, uint64_t(gRank));
    std::vector<float> want(static_cast<size_t>(n * count));
    pfrt_all_gather(in.data(), want.data(), count, r, n);
    auto got = twinOutput(in, n * count, [&](float *i, float *o) {
      return pfrt_cuda_all_gather(i, o, count, r, n);
    });
    expectSame(got, want, none, n, name("pfrt_cuda_all_gather", g, count));
  }
  // reduce-scatter.
  {
    std::vector<float> in = uniform(n * count, uint64_t(gRank));
    const auto [want, scale] =
        hostSums(in, count, [&](const float *i, float *o) {
          pfrt_reduce_scatter_sum(i, o, count, r, n);
        });
    auto got = twinOutput(in, count, [&](float *i, float *o) {
      return pfrt_cuda_reduce_scatter_sum(i, o, count, r, n);
    });
    expectSame(got, want, scale, n,
               name("pfrt_cuda_reduce_scatter_sum", g, count));
  }
  // all_to_all (exact: a permutation of blocks).
  {
    std::vector<float> in = uniform(n * count, uint64_t(gRank));
    std::vector<float> want(static_cast<size_t>(n * count));
    pfrt_all_to_all(in.data(), want.data(), count, r, n);
    auto got = twinOutput(in, n * count, [&](float *i, float *o) {
      return pfrt_cuda_all_to_all(i, o, count, r, n);
    });
    expectSame(got, want, none, n, name("pfrt_cuda_all_to_all", g, count));
  }
  // broadcast from every member.
  for (int64_t root : g) {
    std::vector<float> mine = uniform(count, uint64_t(gRank));
    std::vector<float> want = mine;
    pfrt_broadcast(want.data(), count, root, r, n);
    float *d = upload(mine);
    CHECK(pfrt_cuda_broadcast(d, count, root, r, n) == 0, "rc");
    expectSame(download(d, count), want, none, n,
               name("pfrt_cuda_broadcast", g, count) + " root " +
                   std::to_string(root));
  }
  // reduce to the last member, out of place and in place on the root.
  {
    int64_t root = g.back();
    bool isRoot = root == gRank;
    std::vector<float> in = uniform(count, uint64_t(gRank));
    const auto [want, scale] =
        hostSums(in, isRoot ? count : 0, [&](const float *i, float *o) {
          pfrt_reduce_sum(i, isRoot ? o : nullptr, count, root, r, n);
        });
    float *din = upload(in), *dout = isRoot ? dalloc(count) : nullptr;
    if (isRoot)
      poison(dout, count);
    CHECK(pfrt_cuda_reduce_sum(din, dout, count, root, r, n) == 0, "rc");
    if (isRoot)
      expectSame(download(dout, count), want, scale, n,
                 name("pfrt_cuda_reduce_sum", g, count));
    CHECK(pfrt_cuda_reduce_sum(din, din, count, root, r, n) == 0, "rc");
    if (isRoot)
      expectSame(download(din, count), want, scale, n,
                 name("pfrt_cuda_reduce_sum in place", g, count));
  }
  (void)pos;
}

/// A graph capturing three collectives of the world, replayed over new
/// inputs written before each launch.
void graphReplay() {
  std::vector<int64_t> world;
  for (int r = 0; r < gSize; ++r)
    world.push_back(r);
  const int64_t *r = world.data();
  int64_t n = gSize, count = 300, root = gSize - 1;
  float *a = dalloc(count), *asum = dalloc(count), *b = dalloc(count),
        *ball = dalloc(n * count), *c = dalloc(count);
  pfrt_cuda_synchronize();
  pfrt_cuda_graph_begin();
  pfrt_cuda_all_reduce_sum(a, asum, count, r, n);
  pfrt_cuda_all_gather(b, ball, count, r, n);
  pfrt_cuda_broadcast(c, count, root, r, n);
  pfrt_cuda_graph_end();
  for (int replay = 0; replay < 3; ++replay) {
    std::vector<float> ha = uniform(count, uint64_t(gRank)),
                       hb = uniform(count, uint64_t(gRank)),
                       hc = uniform(count, uint64_t(gRank));
    pfrt_cuda_h2d(a, ha.data(), count * 4);
    pfrt_cuda_h2d(b, hb.data(), count * 4);
    pfrt_cuda_h2d(c, hc.data(), count * 4);
    poison(asum, count);
    poison(ball, n * count);
    pfrt_cuda_graph_launch();
    pfrt_cuda_synchronize();
    const auto [wa, sa] = hostSums(ha, count, [&](const float *i, float *o) {
      pfrt_all_reduce_sum(i, o, count, r, n);
    });
    std::vector<float> wb(static_cast<size_t>(n * count)), wc = hc;
    pfrt_all_gather(hb.data(), wb.data(), count, r, n);
    pfrt_broadcast(wc.data(), count, root, r, n);
    std::string at = " (graph replay " + std::to_string(replay) + ")";
    expectSame(download(asum, count), wa, sa, n, "all_reduce_sum" + at);
    expectSame(download(ball, n * count), wb, {}, n, "all_gather" + at);
    expectSame(download(c, count), wc, {}, n, "broadcast" + at);
  }
}

/// Point to point through pfrt_cuda_run_step, as a compiled step does it:
/// the first step host-staged (and recorded), then over NCCL, captured and
/// replayed (under PFRT_CUDA_COMM=nccl). Each step sends fresh data,
/// written to the send buffers before it; a ring (next = r + 1) of
/// tracked, untracked and blocking sends, receives and a batch with an
/// empty message each way.
struct P2PBuffers {
  float *a, *b, *c, *e, *g, *h, *i, *d0, *f0;
} gP;
const int64_t kA = 37, kC = 1000, kG = 5, kH = 11;

int next() { return (gRank + 1) % gSize; }
int prev() { return (gRank + gSize - 1) % gSize; }

void p2pStep(int64_t) {
  int64_t h = pfrt_cuda_isend_tracked(gP.a, kA, next(), 1);
  pfrt_cuda_recv(gP.b, kA, prev(), 1);
  pfrt_cuda_wait_send(h);
  pfrt_p2p_op ops[4] = {{1, next(), 2, gP.c, kC},
                        {1, prev(), 3, gP.d0, 0},
                        {0, prev(), 2, gP.e, kC},
                        {0, next(), 3, gP.f0, 0}};
  pfrt_cuda_p2p_batch(ops, 4);
  // Blocking: rank 0 sends, rank 1 receives (a safe order under NCCL too).
  if (gRank == 0)
    pfrt_cuda_send(gP.g, kG, 1, 4);
  else if (gRank == 1)
    pfrt_cuda_recv(gP.g, kG, 0, 4);
  pfrt_cuda_isend(gP.h, kH, prev(), 5);
  pfrt_cuda_recv(gP.i, kH, next(), 5);
  pfrt_cuda_wait_sends();
}

/// What rank r sends at step k in buffer `which`.
std::vector<float> sent(int r, int64_t k, int which, int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j)
    v[size_t(j)] = 4.0f * pt_value(gSeed, 1000 + uint64_t(k),
                                   uint64_t(r * 16 + which), uint64_t(j));
  return v;
}

void pointToPoint() {
  gP = {dalloc(kA), dalloc(kA), dalloc(kC), dalloc(kC), dalloc(kG),
        dalloc(kH), dalloc(kH), dalloc(1),  dalloc(1)};
  for (int64_t k = 0; k < 4; ++k) {
    std::vector<float> a = sent(gRank, k, 0, kA), c = sent(gRank, k, 1, kC),
                       g = sent(gRank, k, 2, kG), h = sent(gRank, k, 3, kH);
    pfrt_cuda_h2d(gP.a, a.data(), kA * 4);
    pfrt_cuda_h2d(gP.c, c.data(), kC * 4);
    pfrt_cuda_h2d(gP.g, g.data(), kG * 4);
    pfrt_cuda_h2d(gP.h, h.data(), kH * 4);
    poison(gP.b, kA);
    poison(gP.e, kC);
    poison(gP.i, kH);
    pfrt_cuda_synchronize();
    pfrt_cuda_run_step(p2pStep, k);
    std::string at = " (step " + std::to_string(k) + ")";
    expectSame(download(gP.b, kA), sent(prev(), k, 0, kA), {}, 1,
               "tracked isend/recv" + at);
    expectSame(download(gP.e, kC), sent(prev(), k, 1, kC), {}, 1,
               "p2p_batch" + at);
    if (gRank == 1)
      expectSame(download(gP.g, kG), sent(0, k, 2, kG), {}, 1,
                 "blocking send/recv" + at);
    expectSame(download(gP.i, kH), sent(next(), k, 3, kH), {}, 1,
               "isend/wait_sends" + at);
  }
}

/// Rank 0 sends two messages that rank 1 receives in the other order (MPI
/// matches them by tag; NCCL, in order, cannot).
void p2pOrderStep(int64_t) {
  float *x = gP.a, *y = gP.c;
  if (gRank == 0) {
    pfrt_cuda_isend(x, 3, 1, 1);
    pfrt_cuda_isend(y, 5, 1, 2);
  } else if (gRank == 1) {
    pfrt_cuda_recv(y, 5, 0, 2);
    pfrt_cuda_recv(x, 3, 0, 1);
  }
  pfrt_cuda_wait_sends();
}

/// Step 0: rank 0 sends to rank 1; later steps also to rank 2 (a peer
/// the first step did not have: an error once over NCCL).
void p2pNewPeerStep(int64_t k) {
  if (gRank == 0) {
    pfrt_cuda_isend(gP.a, 3, 1, 1);
    if (k > 0)
      pfrt_cuda_isend(gP.c, 3, 2, 2);
  } else if (gRank == 1) {
    pfrt_cuda_recv(gP.a, 3, 0, 1);
  } else if (gRank == 2 && k > 0) {
    pfrt_cuda_recv(gP.c, 3, 0, 2);
  }
  pfrt_cuda_wait_sends();
}

/// The ring step's messages in the order p2pStep posts them, as the
/// compiler plans a step's (pfrt_cuda_p2p_plan: peer, is_send, tag, count).
std::vector<int64_t> ringPlan() {
  std::vector<int64_t> t = {next(), 1, 1, kA, prev(), 0, 1, kA,
                            next(), 1, 2, kC, prev(), 1, 3, 0,
                            prev(), 0, 2, kC, next(), 0, 3, 0};
  if (gRank == 0)
    t.insert(t.end(), {1, 1, 4, kG});
  else if (gRank == 1)
    t.insert(t.end(), {0, 0, 4, kG});
  t.insert(t.end(), {prev(), 1, 5, kH, next(), 0, 5, kH});
  return t;
}

/// The plan modes (see the file comment).
void planModes(const std::string &mode) {
  if (mode == "p2p_plan" || mode == "p2p_plan_staged") {
    std::vector<int64_t> plan = ringPlan();
    pfrt_cuda_p2p_plan(plan.data(), int64_t(plan.size()));
    // Again with the same plan: nothing (a checkpoint load).
    pfrt_cuda_p2p_plan(plan.data(), int64_t(plan.size()));
    pfrt_comm_counters_reset();
    pointToPoint();
    pfrt_comm_counters c;
    pfrt_comm_counters_get(&c);
    long long trips = c.host_round_trips,
              mpi = c.mpi_calls[PFRT_COMM_SEND] + c.mpi_calls[PFRT_COMM_RECV],
              nccl =
                  c.nccl_calls[PFRT_COMM_SEND] + c.nccl_calls[PFRT_COMM_RECV];
    std::printf("rank %d: p2p plan: %lld host round-trips, %lld MPI and %lld "
                "NCCL messages\n",
                gRank, trips, mpi, nccl);
    bool device = trips == 0 && mpi == 0 && nccl > 0;
    bool staged = trips > 0 && mpi > 0 && nccl == 0;
    // The exposed time's device half: the waits of the uncaptured first
    // step timed (the emulation's clock stands still: 0 ms), none on the
    // host-staged path, whose receives are host time instead.
    pfrt_comm_exposed x;
    pfrt_comm_exposed_get(&x);
    std::printf("rank %d: exposed: %lld device waits timed in %lld steps, "
                "%.3f ms host receive time\n",
                gRank, (long long)x.device_spans, (long long)x.device_steps,
                x.host_us[PFRT_COMM_RECV] * 1e-3);
    CHECK(mode == "p2p_plan" ? x.device_steps == 1 && x.device_spans >= 3
                             : x.device_steps == 4 && x.device_spans == 0 &&
                                   x.host_us[PFRT_COMM_RECV] > 0,
          "%s: rank %d: %lld device waits timed in %lld steps", mode.c_str(),
          gRank, (long long)x.device_spans, (long long)x.device_steps);
    CHECK(mode == "p2p_plan" ? device : staged,
          "%s: rank %d: %lld host round-trips, %lld MPI and %lld NCCL "
          "messages over the 4 steps (expected %s)",
          mode.c_str(), gRank, trips, mpi, nccl,
          mode == "p2p_plan" ? "NCCL only, the first step included"
                             : "host-staged only");
    return;
  }
  // Rank 0 sends 3 floats (tag 1) then 5 (tag 2) to rank 1 (p2pOrderStep's
  // rank 0), which receives them in that order.
  std::vector<int64_t> plan;
  if (gRank == 0)
    plan = {1, 1, 1, 3, 1, 1, 2, 5};
  else if (gRank == 1)
    plan = {0, 0, 1, 3, 0, 0, 2, 5};
  if (mode == "p2p_plan_disagree" && gRank == 1)
    plan[3] = 4;
  if (mode == "p2p_plan_deviate") // planned the other way round
    plan = gRank == 0   ? std::vector<int64_t>{1, 1, 2, 5, 1, 1, 1, 3}
           : gRank == 1 ? std::vector<int64_t>{0, 0, 2, 5, 0, 0, 1, 3}
                        : plan;
  if (mode == "p2p_plan_short") // a third message the step never posts
    plan.insert(plan.end(),
                gRank == 0   ? std::initializer_list<int64_t>{1, 1, 3, 7}
                : gRank == 1 ? std::initializer_list<int64_t>{0, 0, 3, 7}
                             : std::initializer_list<int64_t>{});
  pfrt_cuda_p2p_plan(
      plan.data(), mode == "p2p_plan_bad" ? int64_t(3) : int64_t(plan.size()));
  gP.a = dalloc(8);
  gP.c = dalloc(8);
  gP.b = dalloc(8);
  for (int64_t k = 0; k < 2; ++k)
    pfrt_cuda_run_step(
        [](int64_t) {
          if (gRank == 0) {
            pfrt_cuda_isend(gP.a, 3, 1, 1);
            pfrt_cuda_isend(gP.c, 5, 1, 2);
          } else if (gRank == 1) {
            pfrt_cuda_recv(gP.a, 3, 0, 1);
            pfrt_cuda_recv(gP.c, 5, 0, 2);
          }
          pfrt_cuda_wait_sends();
        },
        k);
}

} // namespace

int main(int argc, char **argv) {
  pt::skipWithoutDevice("cuda-nccl");
  gSeed = pt_start(&argc, &argv, "cuda-nccl", &gRank, &gSize);
  std::string mode = argc > 1 ? argv[1] : "";
  gStaged = mode == "staged";
  const char *fake = std::getenv("PFRT_CUDA_FAKE");
  gExact = fake && std::strcmp(fake, "1") == 0;
  pfrt_cuda_arena_plan(kArena);
  // One rank (a one-GPU machine): every collective on one-rank
  // communicators; more ranks add the multi-rank groups.
  std::vector<int64_t> world, reversed;
  for (int r = 0; r < gSize; ++r) {
    world.push_back(r);
    reversed.insert(reversed.begin(), r);
  }
  if (mode.rfind("p2p_plan", 0) == 0) {
    planModes(mode);
    pfrt_cuda_finalize();
    pfrt_finalize();
    return 0;
  }
  if (mode == "p2p_order" || mode == "p2p_new_peer") {
    gP.a = dalloc(8);
    gP.c = dalloc(8);
    for (int64_t k = 0; k < 2; ++k)
      pfrt_cuda_run_step(mode == "p2p_order" ? p2pOrderStep : p2pNewPeerStep,
                         k);
    pfrt_cuda_finalize();
    pfrt_finalize();
    return 0;
  }
  if (mode == "nccl_error") {
    float *d = dalloc(8);
    pfrt_cuda_all_reduce_sum(d, d, 8, world.data(), gSize);
    pfrt_cuda_synchronize();
    return 0;
  }
  // Groups, the same list on every rank (each runs those it is in).
  std::vector<std::vector<int64_t>> groups = {world, reversed};
  if (gSize >= 3) {
    groups.push_back({0, 2});
    groups.push_back({2, 1});
  } else if (gSize == 2) {
    groups.push_back({1});
  }
  if (gSize >= 4) {
    // Disjoint: one split makes both.
    groups.push_back({0, 1});
    groups.push_back({2, 3});
  }
  if (gSize > 1)
    for (int r = 0; r < gSize; ++r)
      groups.push_back({int64_t(r)});
  if (mode == "split" || mode.rfind("groups_", 0) == 0) {
    std::vector<int64_t> table;
    for (const auto &g : groups)
      if (g.size() >= 2) {
        table.push_back(int64_t(g.size()));
        table.insert(table.end(), g.begin(), g.end());
      }
    if (mode == "groups_bad_rank")
      table = {2, 0, int64_t(gSize) + 5};
    if (mode == "groups_mismatch" && gRank == 1)
      table.push_back(2), table.push_back(1), table.push_back(0);
    pfrt_cuda_comm_groups(table.data(), int64_t(table.size()));
    // The same table again is a no-op (pf_init_params on a checkpoint load).
    pfrt_cuda_comm_groups(table.data(), int64_t(table.size()));
    if (mode == "groups_again") {
      table.resize(table.size() - 1);
      pfrt_cuda_comm_groups(table.data(), int64_t(table.size()));
    }
  }
  for (int64_t count : {int64_t(0), int64_t(1), int64_t(17), int64_t(1000)})
    for (const auto &g : groups) {
      bool member = false;
      for (int64_t r : g)
        member |= r == gRank;
      if (member)
        collectives(g, count);
    }
  if (mode != "staged")
    graphReplay();
  if (gSize >= 2)
    pointToPoint();
  pfrt_cuda_finalize();
  return pt_finish(gRank, "cuda-nccl: PASS\n");
}
