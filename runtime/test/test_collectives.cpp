//===- test_collectives.cpp - Every collective against a serial reference -===//
//
// Every rank computes every member's input (pt_value is a pure function of
// seed, call, rank and index), so each rank checks its own output against a
// serial reference. Groups include the whole world, strict subsets, unsorted
// lists and single ranks; counts are odd sizes. Run it also with
// PFRT_MAX_MSG_ELEMS small to cover the chunked paths.
// MODE "exposed" (2 or more ranks) checks the exposed time per kind
// (pfrt_comm_exposed_get): rank 1 sleeps before an all-reduce, a broadcast
// and a send, so every other rank's all-reduce and broadcast time (and
// rank 0's receive time) is at least the sleep, and rank 1's is not.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <cfloat>
#include <cmath>
#include <cstring>
#include <unistd.h>
#include <vector>

namespace {

uint64_t gSeed;
int gRank, gSize;
uint64_t gCall = 0;  // input id: bumped per call, reset per case
char gCtx[256] = ""; // current group and count, for failure messages

using Group = std::vector<int64_t>;

int positionOf(const Group &g, int64_t r) {
  for (size_t i = 0; i < g.size(); ++i)
    if (g[i] == r)
      return int(i);
  return -1;
}

std::vector<float> inputOf(int64_t worldRank, int64_t n) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = pt_value(gSeed, gCall, uint64_t(worldRank), uint64_t(i));
  return v;
}

/// Checks a float sum against a double reference with a bound on rounding.
void checkSum(float got, double ref, double absSum, int n, const char *what,
              int64_t i) {
  double tol = (n + 1) * double(FLT_EPSILON) * absSum + 1e-30;
  CHECK(std::fabs(double(got) - ref) <= tol,
        "%s %s: element %lld got %.9g, reference %.9g (tol %.3g)", what, gCtx,
        (long long)i, double(got), ref, tol);
}

/// Checks out[0, count) against the serial sum of every member's input.
void checkGroupSum(const std::vector<float> &out, const Group &g, int64_t count,
                   const char *what) {
  std::vector<double> ref(count, 0.0), abs(count, 0.0);
  for (int64_t m : g) {
    std::vector<float> x = inputOf(m, count);
    for (int64_t i = 0; i < count; ++i) {
      ref[i] += x[i];
      abs[i] += std::fabs(x[i]);
    }
  }
  for (int64_t i = 0; i < count; ++i)
    checkSum(out[i], ref[i], abs[i], int(g.size()), what, i);
}

/// All members must hold bit-identical copies of a replicated result.
void checkReplicated(const std::vector<float> &v, const Group &g,
                     const char *what) {
  int64_t n = int64_t(g.size());
  std::vector<float> all(v.size() * n);
  pfrt_all_gather(v.data(), all.data(), int64_t(v.size()), g.data(), n);
  for (int64_t p = 0; p < n; ++p)
    CHECK(pt_bits_equal(all.data() + p * v.size(), v.data(), int64_t(v.size())),
          "%s: position %lld differs bitwise", what, (long long)p);
}

void testAllReduce(const Group &g, int64_t count, bool inPlace) {
  ++gCall;
  int64_t n = int64_t(g.size());
  std::vector<float> in = inputOf(gRank, count);
  std::vector<float> out(count, NAN);
  if (inPlace) {
    out = in;
    pfrt_all_reduce_sum(out.data(), out.data(), count, g.data(), n);
  } else {
    pfrt_all_reduce_sum(in.data(), out.data(), count, g.data(), n);
    CHECK(pt_bits_equal(in.data(), inputOf(gRank, count).data(), count),
          "all_reduce modified its input");
  }
  checkGroupSum(out, g, count, "all_reduce_sum");
  checkReplicated(out, g, "all_reduce_sum");
}

/// The split all-reduce: two sums in flight at once (slots 5 and 63), one
/// in place, waited for in the other order; the same sums as the blocking
/// row, inputs untouched.
void testAllReduceSplit(const Group &g, int64_t count) {
  int64_t n = int64_t(g.size());
  ++gCall;
  std::vector<float> a = inputOf(gRank, count);
  std::vector<float> outA(count, NAN);
  uint64_t callA = gCall++;
  std::vector<float> b = inputOf(gRank, count);
  uint64_t callB = gCall;
  pfrt_all_reduce_start(a.data(), outA.data(), count, g.data(), n, 5);
  pfrt_all_reduce_start(b.data(), b.data(), count, g.data(), n, 63);
  pfrt_all_reduce_wait(63);
  pfrt_all_reduce_wait(5);
  gCall = callA;
  CHECK(pt_bits_equal(a.data(), inputOf(gRank, count).data(), count),
        "all_reduce_start modified its input");
  checkGroupSum(outA, g, count, "all_reduce_start (slot 5)");
  gCall = callB;
  checkGroupSum(b, g, count, "all_reduce_start (slot 63, in place)");
  checkReplicated(outA, g, "all_reduce_start");
}

void testAllGather(const Group &g, int64_t count) {
  ++gCall;
  int64_t n = int64_t(g.size());
  std::vector<float> in = inputOf(gRank, count);
  std::vector<float> out(n * count, NAN);
  pfrt_all_gather(in.data(), out.data(), count, g.data(), n);
  for (int64_t p = 0; p < n; ++p) {
    std::vector<float> want = inputOf(g[p], count);
    CHECK(pt_bits_equal(out.data() + p * count, want.data(), count),
          "all_gather: block %lld (world rank %lld) is wrong", (long long)p,
          (long long)g[p]);
  }
}

void testReduceScatter(const Group &g, int64_t count) {
  ++gCall;
  int64_t n = int64_t(g.size());
  int pos = positionOf(g, gRank);
  std::vector<float> in = inputOf(gRank, n * count);
  std::vector<float> out(count, NAN);
  pfrt_reduce_scatter_sum(in.data(), out.data(), count, g.data(), n);
  std::vector<double> ref(count, 0.0), abs(count, 0.0);
  for (int64_t m : g) {
    std::vector<float> x = inputOf(m, n * count);
    for (int64_t i = 0; i < count; ++i) {
      ref[i] += x[pos * count + i];
      abs[i] += std::fabs(x[pos * count + i]);
    }
  }
  for (int64_t i = 0; i < count; ++i)
    checkSum(out[i], ref[i], abs[i], int(n), "reduce_scatter_sum", i);
}

void testAllToAll(const Group &g, int64_t count) {
  ++gCall;
  int64_t n = int64_t(g.size());
  int pos = positionOf(g, gRank);
  std::vector<float> in = inputOf(gRank, n * count);
  std::vector<float> out(n * count, NAN);
  pfrt_all_to_all(in.data(), out.data(), count, g.data(), n);
  for (int64_t p = 0; p < n; ++p) {
    // Sender p's block addressed to us is its block `pos`.
    std::vector<float> x = inputOf(g[p], n * count);
    CHECK(pt_bits_equal(out.data() + p * count, x.data() + pos * count, count),
          "all_to_all: block from position %lld is wrong", (long long)p);
  }
}

void testBroadcast(const Group &g, int64_t count) {
  int64_t n = int64_t(g.size());
  for (int64_t root : g) {
    ++gCall;
    std::vector<float> buf(count, NAN);
    if (root == gRank)
      buf = inputOf(gRank, count);
    pfrt_broadcast(buf.data(), count, root, g.data(), n);
    CHECK(pt_bits_equal(buf.data(), inputOf(root, count).data(), count),
          "broadcast from %lld is wrong", (long long)root);

    // int64: values above 2^53 catch any trip through double or float.
    std::vector<int64_t> ib(count, -1);
    auto ival = [&](int64_t i) {
      return int64_t(pt_mix(gSeed ^ pt_mix(gCall * 977 + i)) >> 1);
    };
    if (root == gRank)
      for (int64_t i = 0; i < count; ++i)
        ib[i] = ival(i);
    pfrt_broadcast_i64(ib.data(), count, root, g.data(), n);
    for (int64_t i = 0; i < count; ++i)
      CHECK(ib[i] == ival(i), "broadcast_i64 from %lld: element %lld",
            (long long)root, (long long)i);
  }
}

void testReduce(const Group &g, int64_t count) {
  int64_t n = int64_t(g.size());
  for (int64_t root : g) {
    for (int inPlace = 0; inPlace < 2; ++inPlace) {
      ++gCall;
      std::vector<float> in = inputOf(gRank, count);
      std::vector<float> out(count, NAN);
      bool isRoot = root == gRank;
      if (isRoot && inPlace) {
        out = in;
        pfrt_reduce_sum(out.data(), out.data(), count, root, g.data(), n);
      } else {
        // Non-roots may pass NULL for out.
        pfrt_reduce_sum(in.data(), isRoot ? out.data() : nullptr, count, root,
                        g.data(), n);
      }
      if (!isRoot)
        continue;
      checkGroupSum(out, g, count, "reduce_sum");
    }
  }
}

} // namespace

/// MODE "exposed" (see the file comment).
static int exposedTime() {
  CHECK(gSize >= 2, "exposed: run on 2 or more ranks (got %d)", gSize);
  const int64_t sleepUs = 150 * 1000;
  std::vector<int64_t> world;
  world.reserve(size_t(gSize));
  for (int r = 0; r < gSize; ++r)
    world.push_back(r);
  const int64_t *g = world.data(), n = gSize;
  std::vector<float> buf(64, float(gRank) + 0.5f);
  pfrt_comm_counters_reset();
  pfrt_group_barrier(g, n);
  if (gRank == 1)
    usleep(useconds_t(sleepUs));
  pfrt_all_reduce_sum(buf.data(), buf.data(), 64, g, n);
  pfrt_group_barrier(g, n);
  if (gRank == 1)
    usleep(useconds_t(sleepUs));
  pfrt_broadcast(buf.data(), 64, 1, g, n);
  pfrt_group_barrier(g, n);
  if (gRank == 1) {
    usleep(useconds_t(sleepUs));
    pfrt_send(buf.data(), 64, 0, 7);
  } else if (gRank == 0) {
    pfrt_recv(buf.data(), 64, 1, 7);
  }
  pfrt_comm_exposed e;
  pfrt_comm_exposed_get(&e);
  pfrt_comm_counters c;
  pfrt_comm_counters_get(&c);
  const double want = 0.95 * double(sleepUs);
  struct {
    const char *name;
    int kind;
    bool waits; // this rank waited for rank 1's sleep
  } checks[] = {{"all_reduce", PFRT_COMM_ALL_REDUCE, gRank != 1},
                {"broadcast", PFRT_COMM_BROADCAST, gRank != 1},
                {"recv", PFRT_COMM_RECV, gRank == 0}};
  for (const auto &k : checks) {
    double us = e.host_us[k.kind];
    printf("rank %d: exposed %s %.1f ms\n", gRank, k.name, us * 1e-3);
    if (k.waits)
      CHECK(us >= want,
            "rank %d: exposed %s time %.1f us, below rank 1's "
            "sleep of %lld us",
            gRank, k.name, us, (long long)sleepUs);
    else
      CHECK(us < 0.5 * double(sleepUs),
            "rank %d: exposed %s time %.1f us, "
            "but it did not wait",
            gRank, k.name, us);
  }
  // The kinds and what no kind owns (the barriers) add up to the total.
  double sum = e.host_other_us;
  for (double us : e.host_us)
    sum += us;
  CHECK(std::fabs(sum - c.exposed_us) <= 1e-6 * c.exposed_us + 1e-3,
        "rank %d: exposed host time %.3f us by kind, %.3f us in all", gRank,
        sum, c.exposed_us);
  // NOLINTNEXTLINE(readability-simplify-boolean-expr)
  CHECK(e.device_steps == 0 && e.device_spans == 0,
        "rank %d: a CPU rank timed %lld device waits", gRank,
        (long long)e.device_spans);
  pfrt_barrier();
  return pt_finish(gRank, "collectives exposed ok\n");
}

int main(int argc, char **argv) {
  gSeed = pt_start(&argc, &argv, "collectives", &gRank, &gSize);
  if (argc > 1 && strcmp(argv[1], "exposed") == 0)
    return exposedTime();

  std::vector<Group> groups = pt::baseGroups(gSize);
  if (gSize >= 4) {
    groups.push_back({2, 0, 3});
    groups.push_back({0, 1, 2});
  }
  if (gSize >= 3)
    groups.push_back({2});
  if (gSize >= 2)
    groups.push_back({1, 0});

  const int64_t counts[] = {1, 7, 13, 1000, 4099, 0};
  int done = 0;
  // Every rank walks the same list in the same order and joins the groups it
  // belongs to, so the call order is consistent and cannot deadlock.
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const Group &g = groups[gi];
    if (positionOf(g, gRank) < 0)
      continue;
    for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ++ci) {
      int64_t count = counts[ci];
      // Ranks skip different groups, so the input id restarts from the case
      // index; within a case all members make the same calls.
      gCall = (gi * 100 + ci) * 10000;
      int len =
          snprintf(gCtx, sizeof(gCtx), "count %lld group [", (long long)count);
      for (size_t i = 0; i < g.size(); ++i)
        len += snprintf(gCtx + len, sizeof(gCtx) - len, "%s%lld", i ? "," : "",
                        (long long)g[i]);
      snprintf(gCtx + len, sizeof(gCtx) - len, "]");
      testAllReduce(g, count, false);
      testAllReduce(g, count, true);
      testAllReduceSplit(g, count);
      testAllGather(g, count);
      testReduceScatter(g, count);
      testAllToAll(g, count);
      testBroadcast(g, count);
      testReduce(g, count);
      pfrt_group_barrier(g.data(), int64_t(g.size()));
      ++done;
    }
  }
  CHECK(done > 0, "rank %d ran no case", gRank);
  const char *chunk = getenv("PFRT_MAX_MSG_ELEMS");
  pfrt_barrier();
  return pt_finish(gRank,
                   "collectives ok: %zu groups, max message %s elements\n",
                   groups.size(), chunk ? chunk : "INT_MAX");
}
