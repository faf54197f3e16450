//===- StagedComm.cpp - GPU ranks' collectives through the host ----------===//
//
// The device twins of libpfrt's collectives and point-to-point calls
// (pfrt_device.def) on the host-staged transport: the device data is copied
// to the host, the host row moves it over MPI, and the result is copied
// back. It works wherever MPI does, for ranks on one GPU or on none of
// their own (NCCL refuses two ranks on one device), and it is what every
// multi-rank GPU program uses where the NCCL transport (Nccl.cpp) is not
// chosen. Each call waits for its copies, so a step that communicates this
// way is not captured as a CUDA graph (pfrt_cuda_run_step runs it
// uncaptured). The split all-reduce is the exception: its start only
// enqueues the copy to the host on a staging stream and returns, and the
// sum over MPI and the copy back run at its wait (or before any other
// staged call, so the order of MPI calls stays the program's), while the
// compute stream goes on with the backward enqueued in between. The
// collectives NCCL has (all-reduce, all-gather, reduce-scatter, broadcast,
// reduce; all-to-all as grouped sends and receives) go to Nccl.cpp first
// where it is the group's transport: enqueued on the stream, nothing
// staged.
//
// Here: the collectives and the job's group table; point to point is
// StagedP2P.cpp's, boxing and the vocabulary cross-entropy StagedBoxing.cpp's
// (StagedComm.h).
//
//===----------------------------------------------------------------------===//

#include "StagedComm.h"

#include "../common/CommChecks.h"
#include "../common/Internal.h"
#include "../mpi/MpiInternal.h"
#include "CudaInternal.h"
#include "NcclComm.h"
#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

using namespace pfrt;
using namespace pfrt::staged;

std::vector<float> pfrt::staged::toHost(const float *device, int64_t count) {
  std::vector<float> host(size_t(count > 0 ? count : 0));
  if (count > 0)
    d2h(host.data(), device, count * int64_t(sizeof(float)));
  return host;
}

void pfrt::staged::toDevice(float *device, const std::vector<float> &host) {
  if (host.empty())
    return;
  h2d(device, host.data(), int64_t(host.size() * sizeof(float)));
  pfrt_cuda_synchronize();
}

namespace {

/// A collective through host memory: in's inCount floats to the host, the
/// host row row(hostIn, hostOut) into outCount floats, and those to out.
template <typename Row>
int throughHost(const float *in, int64_t inCount, float *out, int64_t outCount,
                Row row) {
  std::vector<float> h = toHost(in, inCount);
  std::vector<float> o(size_t(outCount > 0 ? outCount : 0));
  int rc = row(h.data(), o.data());
  toDevice(out, o);
  return rc;
}

/// The collectives that move blocks of `count` floats, one a group member
/// (all-gather, reduce-scatter, all-to-all): NCCL's and the host rows.
using BlockCollective = int (*)(const float *, float *, int64_t,
                                const int64_t *, int64_t);

/// A block collective over NCCL (`viaNccl`) where the group takes it, else
/// entered as `stagedFn` and run by `hostRow` through host memory; in holds
/// one block, or one a member where `inAll` (likewise out).
int blockCollective(const char *hostFn, const char *stagedFn,
                    BlockCollective viaNccl, BlockCollective hostRow,
                    const float *in, bool inAll, float *out, bool outAll,
                    int64_t count, const int64_t *ranks, int64_t n) {
  if (nccl::useNccl(ranks, n, hostFn))
    return viaNccl(in, out, count, ranks, n);
  enter(stagedFn);
  int64_t all = count * groupSize(n);
  return throughHost(
      in, inAll ? all : count, out, outAll ? all : count,
      [&](const float *h, float *o) { return hostRow(h, o, count, ranks, n); });
}

} // namespace

namespace {

/// A staged call other than point-to-point ran.
bool gStagedOther = false;

} // namespace

// A split all-reduce's start is a staged call that leaves the started ones
// in flight; every other first finishes them (finishStagedReduces).
void pfrt::staged::enterKeepingReduces(const char *fn) {
  if (cuda::streamCapturing())
    fatal("%s: the host-staged transport cannot be captured in a CUDA graph "
          "(pfrt_cuda_run_step runs such steps uncaptured)",
          fn);
  cuda::noteHostStagedCommunication();
  counters::roundTrip();
  gStagedOther = true;
}

void pfrt::staged::enter(const char *fn) {
  finishStagedReduces();
  enterKeepingReduces(fn);
}

void pfrt::staged::enterPointToPoint(const char *fn) {
  bool other = gStagedOther;
  enter(fn);
  gStagedOther = other;
}

int64_t pfrt::staged::groupSize(int64_t n) {
  return n > 0 ? n : pfrt_world_size();
}

namespace {

/// Where each split all-reduce's slot stands (pfrt_cuda_all_reduce_start).
/// Done: a host-staged bf16/f16 start, finished at the start.
enum class AsyncSlot { Idle, Staged, Nccl, Done };
AsyncSlot gAsyncSlots[PFRT_MAX_ASYNC_SLOTS] = {};

/// A host-staged split all-reduce: started (its data copied to `host` on
/// the staging stream after `copied`), then finished (summed over MPI in
/// place on the host, copied back to `out`; `done` marks the copy).
struct StagedReduce {
  bool pending = false;
  uint64_t order = 0;
  float *host = nullptr;
  int64_t capacity = 0;
  float *out = nullptr;
  int64_t count = 0;
  std::vector<int64_t> ranks;
  void *copied = nullptr, *done = nullptr;
};
StagedReduce gStagedReduces[PFRT_MAX_ASYNC_SLOTS];
uint64_t gStagedOrder = 0;
void *gStagingStream = nullptr, *gStagingFork = nullptr;

/// Sums slot s's data over MPI and enqueues the copy back.
void finishStagedReduce(StagedReduce &r) {
  cuda::eventSynchronize(r.copied);
  pfrt_all_reduce_sum(r.host, r.host, r.count,
                      r.ranks.empty() ? nullptr : r.ranks.data(),
                      int64_t(r.ranks.size()));
  int64_t bytes = r.count * int64_t(sizeof(float));
  {
    cuda::DeviceCommScope trace("all_reduce_staged_to_device", gStagingStream,
                                bytes, int64_t(r.ranks.size()));
    if (r.count > 0) {
      counters::roundTripBytes(bytes);
      cuda::copyToDeviceOn(r.out, r.host, bytes, gStagingStream);
    }
  }
  cuda::recordEvent(r.done, gStagingStream);
  r.pending = false;
}

/// Finishes every started staged all-reduce whose order is at most
/// `upTo`, oldest first: every rank issues its MPI sums in the order of
/// its starts, as the blocking version did.
void finishStagedReducesUpTo(uint64_t upTo) {
  while (true) {
    StagedReduce *oldest = nullptr;
    for (StagedReduce &r : gStagedReduces)
      if (r.pending && r.order <= upTo && (!oldest || r.order < oldest->order))
        oldest = &r;
    if (!oldest)
      return;
    finishStagedReduce(*oldest);
  }
}

} // namespace

void pfrt::staged::finishStagedReduces() {
  finishStagedReducesUpTo(UINT64_MAX);
}

namespace {

/// pfrt_finalize's check (as the host row's): a started all-reduce never
/// waited for is an error.
void checkNoDeviceReduceInFlight() {
  for (int64_t s = 0; s < PFRT_MAX_ASYNC_SLOTS; ++s)
    if (gAsyncSlots[s] != AsyncSlot::Idle)
      fatal("pfrt_finalize: the all-reduce started in slot %lld was never "
            "waited for (pfrt_all_reduce_wait)",
            (long long)s);
}

AsyncSlot &asyncSlot(int64_t slot, const char *fn) {
  addFinalizeHook(&checkNoDeviceReduceInFlight);
  if (slot < 0 || slot >= PFRT_MAX_ASYNC_SLOTS)
    fatal("%s: slot %lld is outside [0, %d)", fn, (long long)slot,
          PFRT_MAX_ASYNC_SLOTS);
  return gAsyncSlots[slot];
}

} // namespace

bool pfrt::nccl::stagedBesidesPointToPoint() { return gStagedOther; }

extern "C" {

int pfrt_cuda_comm_groups(const int64_t *table, int64_t len) {
  const char *fn = "pfrt_cuda_comm_groups";
  static std::vector<int64_t> made;
  static bool called = false;
  if (len < 0 || len > (int64_t(1) << 40) || (len > 0 && !table))
    fatal("%s: a table of %lld entries at %p", fn, (long long)len,
          static_cast<const void *>(table));
  std::vector<int64_t> flat(table, table + len);
  if (called) {
    if (flat != made)
      fatal("%s: called again with another table (the job's groups are made "
            "once)",
            fn);
    return 0;
  }
  int64_t world = pfrt_world_size();
  std::vector<std::vector<int64_t>> groups;
  for (int64_t i = 0; i < len;) {
    int64_t n = table[i];
    if (n < 1 || n > world || i + 1 + n > len)
      fatal("%s: entry %lld: a group of %lld ranks (the table has %lld "
            "entries, the job %lld ranks)",
            fn, (long long)i, (long long)n, (long long)len, (long long)world);
    std::vector<int64_t> g(table + i + 1, table + i + 1 + n);
    std::vector<bool> seen(size_t(world), false);
    for (int64_t r : g) {
      if (r < 0 || r >= world || seen[size_t(r)])
        fatal("%s: group %s at entry %lld: rank %lld is %s", fn,
              comm::groupString(g.data(), n).c_str(), (long long)i,
              (long long)r,
              r < 0 || r >= world ? "not a rank of the job" : "named twice");
      seen[size_t(r)] = true;
    }
    if (std::find(groups.begin(), groups.end(), g) == groups.end())
      groups.push_back(std::move(g));
    i += 1 + n;
  }
  // Every rank must hold the same table (a collective of all ranks
  // follows): compare a hash of it.
  uint64_t h = 0xcbf29ce484222325ull;
  for (int64_t v : flat)
    h = (h ^ uint64_t(v)) * 0x100000001b3ull;
  int64_t mine[2] = {int64_t(h >> 1), -int64_t(h >> 1)}, most[2] = {0, 0};
  PFRT_MPI_AS(fn, MPI_Allreduce,
              (mine, most, 2, MPI_INT64_T, MPI_MAX, worldComm()));
  if (most[0] != mine[0] || most[1] != mine[1])
    fatal("%s: the ranks hold different tables of the job's groups "
          "(executables of different compilations?)",
          fn);
  called = true;
  made = std::move(flat);
  nccl::makeGroups(groups, fn);
  return 0;
}

int pfrt_cuda_all_reduce_sum(const float *in, float *out, int64_t count,
                             const int64_t *ranks, int64_t n) {
  if (nccl::useNccl(ranks, n, "pfrt_all_reduce_sum"))
    return nccl::allReduceSum(in, out, count, ranks, n);
  enter("pfrt_cuda_all_reduce_sum");
  std::vector<float> h = toHost(in, count);
  int rc = pfrt_all_reduce_sum(h.data(), h.data(), count, ranks, n);
  toDevice(out, h);
  return rc;
}

int pfrt_cuda_all_reduce_start(const float *in, float *out, int64_t count,
                               const int64_t *ranks, int64_t n, int64_t slot) {
  const char *fn = "pfrt_all_reduce_start";
  AsyncSlot &s = asyncSlot(slot, fn);
  if (s != AsyncSlot::Idle)
    fatal("%s: slot %lld is in flight (started and not waited for)", fn,
          (long long)slot);
  if (nccl::useNccl(ranks, n, fn)) {
    int rc = nccl::allReduceStart(in, out, count, ranks, n, slot);
    s = AsyncSlot::Nccl;
    return rc;
  }
  // Host-staged: the copy to the host is enqueued on the staging stream
  // once the compute stream has made the data; the sum waits for the
  // wait (or the next other staged call), so the backward enqueued in
  // between overlaps the copy and the host's MPI sum.
  enterKeepingReduces(fn);
  comm::checkAllReduceBuffers(in, out, count, fn);
  (void)groupPosition(ranks, n, fn); // a bad group fails here, not later
  StagedReduce &r = gStagedReduces[slot];
  if (!gStagingStream) {
    gStagingStream = cuda::newStream("the host-staged all-reduce stream");
    gStagingFork = cuda::newEvent("the host-staged all-reduce stream's fork");
  }
  if (!r.copied) {
    r.copied = cuda::newEvent("a staged all-reduce's copy to the host");
    r.done = cuda::newEvent("a staged all-reduce's completion");
  }
  if (count > r.capacity) {
    // Page-locked, kept (a slot's buckets keep their sizes from step to
    // step, so this grows once).
    r.host = static_cast<float *>(cuda::allocPinned(
        count * int64_t(sizeof(float)), "a staged all-reduce's host copy"));
    r.capacity = count;
  }
  r.out = out;
  r.count = count;
  r.ranks.assign(ranks, ranks + (ranks && n > 0 ? n : 0));
  r.order = ++gStagedOrder;
  cuda::recordEvent(gStagingFork, cuda::computeStream());
  cuda::streamWaitEvent(gStagingStream, gStagingFork);
  {
    int64_t bytes = count * int64_t(sizeof(float));
    cuda::DeviceCommScope trace("all_reduce_staged_to_host", gStagingStream,
                                bytes, n);
    if (count > 0) {
      counters::roundTripBytes(bytes);
      cuda::copyToHostOn(r.host, in, bytes, gStagingStream);
    }
  }
  cuda::recordEvent(r.copied, gStagingStream);
  r.pending = true;
  s = AsyncSlot::Staged;
  return 0;
}

int pfrt_cuda_all_reduce_wait(int64_t slot) {
  const char *fn = "pfrt_all_reduce_wait";
  AsyncSlot &s = asyncSlot(slot, fn);
  if (s == AsyncSlot::Idle)
    fatal("%s: slot %lld has no all-reduce in flight", fn, (long long)slot);
  if (s == AsyncSlot::Nccl) {
    nccl::allReduceWait(slot);
  } else if (s == AsyncSlot::Staged) {
    StagedReduce &r = gStagedReduces[slot];
    if (r.pending)
      finishStagedReducesUpTo(r.order);
    cuda::streamWaitEvent(cuda::computeStream(), r.done);
  }
  s = AsyncSlot::Idle;
  return 0;
}

namespace {
/// A bf16/f16 all-reduce through host memory (the host row's sum).
int halvesThroughHost(const void *in, void *out, int64_t count, int32_t dtype,
                      const int64_t *ranks, int64_t n, const char *fn) {
  enter(fn);
  std::vector<uint16_t> h(size_t(count > 0 ? count : 0));
  if (count > 0)
    d2h(h.data(), in, count * 2);
  int rc =
      pfrt_all_reduce_sum_dtype(h.data(), h.data(), count, dtype, ranks, n);
  if (count > 0) {
    h2d(out, h.data(), count * 2);
    pfrt_cuda_synchronize();
  }
  return rc;
}
} // namespace

int pfrt_cuda_all_reduce_sum_dtype(const void *in, void *out, int64_t count,
                                   int32_t dtype, const int64_t *ranks,
                                   int64_t n) {
  if (dtype == PFRT_DTYPE_F32)
    return pfrt_cuda_all_reduce_sum(static_cast<const float *>(in),
                                    static_cast<float *>(out), count, ranks, n);
  if (nccl::useNccl(ranks, n, "pfrt_all_reduce_sum"))
    return nccl::allReduceSumHalves(in, out, count, dtype, ranks, n);
  return halvesThroughHost(in, out, count, dtype, ranks, n,
                           "pfrt_cuda_all_reduce_sum_dtype");
}

int pfrt_cuda_all_reduce_start_dtype(const void *in, void *out, int64_t count,
                                     int32_t dtype, const int64_t *ranks,
                                     int64_t n, int64_t slot) {
  if (dtype == PFRT_DTYPE_F32)
    return pfrt_cuda_all_reduce_start(static_cast<const float *>(in),
                                      static_cast<float *>(out), count, ranks,
                                      n, slot);
  const char *fn = "pfrt_all_reduce_start";
  AsyncSlot &s = asyncSlot(slot, fn);
  if (s != AsyncSlot::Idle)
    fatal("%s: slot %lld is in flight (started and not waited for)", fn,
          (long long)slot);
  if (nccl::useNccl(ranks, n, fn)) {
    int rc = nccl::allReduceStartHalves(in, out, count, dtype, ranks, n, slot);
    s = AsyncSlot::Nccl;
    return rc;
  }
  // Host-staged: the whole sum now (the wait only checks the slot).
  int rc = halvesThroughHost(in, out, count, dtype, ranks, n,
                             "pfrt_cuda_all_reduce_start_dtype");
  s = AsyncSlot::Done;
  return rc;
}

int pfrt_cuda_all_gather(const float *in, float *out, int64_t count,
                         const int64_t *ranks, int64_t n) {
  return blockCollective("pfrt_all_gather", "pfrt_cuda_all_gather",
                         nccl::allGather, pfrt_all_gather, in, /*inAll=*/false,
                         out, /*outAll=*/true, count, ranks, n);
}

int pfrt_cuda_reduce_scatter_sum(const float *in, float *out, int64_t count,
                                 const int64_t *ranks, int64_t n) {
  return blockCollective("pfrt_reduce_scatter_sum",
                         "pfrt_cuda_reduce_scatter_sum", nccl::reduceScatterSum,
                         pfrt_reduce_scatter_sum, in, /*inAll=*/true, out,
                         /*outAll=*/false, count, ranks, n);
}

int pfrt_cuda_all_to_all(const float *in, float *out, int64_t count,
                         const int64_t *ranks, int64_t n) {
  return blockCollective("pfrt_all_to_all", "pfrt_cuda_all_to_all",
                         nccl::allToAll, pfrt_all_to_all, in, /*inAll=*/true,
                         out, /*outAll=*/true, count, ranks, n);
}

int pfrt_cuda_broadcast(float *buf, int64_t count, int64_t root,
                        const int64_t *ranks, int64_t n) {
  if (nccl::useNccl(ranks, n, "pfrt_broadcast"))
    return nccl::broadcast(buf, count, root, ranks, n);
  enter("pfrt_cuda_broadcast");
  std::vector<float> h = pfrt_rank() == root
                             ? toHost(buf, count)
                             : std::vector<float>(size_t(count));
  int rc = pfrt_broadcast(h.data(), count, root, ranks, n);
  if (pfrt_rank() != root)
    toDevice(buf, h);
  return rc;
}

int pfrt_cuda_broadcast_i64(int64_t *buf, int64_t count, int64_t root,
                            const int64_t *ranks, int64_t n) {
  // Over NCCL as 2 * count float words: a broadcast copies bits.
  if (count >= 0 && count <= INT64_MAX / 2 &&
      nccl::useNccl(ranks, n, "pfrt_broadcast_i64"))
    return nccl::broadcast(reinterpret_cast<float *>(buf), 2 * count, root,
                           ranks, n);
  enter("pfrt_cuda_broadcast_i64");
  std::vector<int64_t> h(size_t(count > 0 ? count : 0));
  const int64_t bytes = int64_t(h.size() * sizeof(int64_t));
  if (pfrt_rank() == root && bytes > 0)
    d2h(h.data(), buf, bytes);
  int rc = pfrt_broadcast_i64(h.data(), count, root, ranks, n);
  if (pfrt_rank() != root && bytes > 0) {
    h2d(buf, h.data(), bytes);
    pfrt_cuda_synchronize(); // before `h` goes
  }
  return rc;
}

int pfrt_cuda_reduce_sum(const float *in, float *out, int64_t count,
                         int64_t root, const int64_t *ranks, int64_t n) {
  if (nccl::useNccl(ranks, n, "pfrt_reduce_sum"))
    return nccl::reduceSum(in, out, count, root, ranks, n);
  enter("pfrt_cuda_reduce_sum");
  std::vector<float> h = toHost(in, count);
  std::vector<float> sum(pfrt_rank() == root ? size_t(count) : 0);
  int rc = pfrt_reduce_sum(h.data(), sum.empty() ? nullptr : sum.data(), count,
                           root, ranks, n);
  if (pfrt_rank() == root && out)
    toDevice(out, sum);
  return rc;
}

} // extern "C"
