//===- StagedComm.cpp - GPU ranks' communication through the host ---------===//
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
// compute stream goes on with the backward enqueued in between. The collectives
// NCCL has (all-reduce, all-gather, reduce-scatter, broadcast, reduce;
// all-to-all as grouped sends and receives) go to Nccl.cpp first where it is
// the group's transport: enqueued on the stream, nothing staged.
//
//===----------------------------------------------------------------------===//

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
#include <map>
#include <memory>
#include <vector>

using namespace pfrt;

namespace {

/// A host copy of `count` floats of device memory (or none).
std::vector<float> toHost(const float *device, int64_t count) {
  std::vector<float> host(size_t(count > 0 ? count : 0));
  if (count > 0)
    pfrt_cuda_d2h(host.data(), device, count * int64_t(sizeof(float)));
  return host;
}

/// Copies `host` to the device and waits (the host buffer then goes).
void toDevice(float *device, const std::vector<float> &host) {
  if (host.empty())
    return;
  pfrt_cuda_h2d(device, host.data(), int64_t(host.size() * sizeof(float)));
  pfrt_cuda_synchronize();
}

/// A staged call other than point-to-point ran.
bool gStagedOther = false;

/// Entering a staged call: its copies wait for the stream, which a capture
/// forbids; the step is noted as communicating through the host.
/// (A split all-reduce's start is one such call that leaves the started
/// ones in flight; every other first finishes them: finishStagedReduces.)
void enterKeepingReduces(const char *fn) {
  if (cuda::streamCapturing())
    fatal("%s: the host-staged transport cannot be captured in a CUDA graph "
          "(pfrt_cuda_run_step runs such steps uncaptured)",
          fn);
  cuda::noteHostStagedCommunication();
  gStagedOther = true;
}

void finishStagedReduces();

void enter(const char *fn) {
  finishStagedReduces();
  enterKeepingReduces(fn);
}

/// Entering a staged point-to-point call: as enter, but the step may be
/// captured later if point-to-point moves to NCCL and nothing else was
/// staged (pfrt_cuda_run_step asks stagedBesidesPointToPoint).
void enterPointToPoint(const char *fn) {
  bool other = gStagedOther;
  enter(fn);
  gStagedOther = other;
}

/// Host copies of sends not known to be complete, by handle (tracked) or
/// in order (untracked, freed by pfrt_cuda_wait_sends).
std::map<int64_t, std::vector<float>> gTrackedSends;
std::vector<std::vector<float>> gUntrackedSends;

int64_t groupSize(int64_t n) { return n > 0 ? n : pfrt_world_size(); }

/// The host stand-ins of the device buffers one host-row call reads and
/// writes. Buffers that overlap on the device share one host allocation at
/// the same relative offsets (and the same address modulo 16), so the host
/// row sees what the device addresses show: its overlap checks fire for the
/// same arguments, and in-place calls stay in place. A NULL or empty buffer
/// is passed through as it is (the host row never dereferences it, or
/// rejects it with its own error).
class HostStage {
public:
  /// Adds [device, device + bytes); `read`: the host row reads it (copied
  /// to the host first), `written`: it writes it (copied back afterwards).
  /// Returns its index for host().
  size_t add(const void *device, int64_t bytes, bool read, bool written) {
    spans.push_back(
        {static_cast<const char *>(device), bytes, read, written, nullptr});
    return spans.size() - 1;
  }

  /// Allocates the host copies and copies what the host row reads.
  void toHost() {
    std::vector<size_t> order;
    for (size_t k = 0; k < spans.size(); ++k) {
      if (staged(spans[k]))
        order.push_back(k);
      else
        spans[k].host = const_cast<char *>(spans[k].device);
    }
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return spans[a].device < spans[b].device;
    });
    for (size_t i = 0; i < order.size();) {
      // One group: every span that overlaps the union of those before it.
      const char *lo = spans[order[i]].device;
      const char *hi = lo + spans[order[i]].bytes;
      size_t j = i + 1;
      for (; j < order.size() && spans[order[j]].device < hi; ++j)
        hi = std::max(hi, spans[order[j]].device + spans[order[j]].bytes);
      size_t shift = reinterpret_cast<uintptr_t>(lo) % 16;
      buffers.emplace_back(new char[size_t(hi - lo) + shift + 16]);
      char *base = buffers.back().get();
      base += (16 - reinterpret_cast<uintptr_t>(base) % 16) % 16 + shift;
      for (; i < j; ++i) {
        Span &s = spans[order[i]];
        s.host = base + (s.device - lo);
        if (s.read)
          pfrt_cuda_d2h(s.host, s.device, s.bytes);
      }
    }
  }

  /// The host address standing for buffer k (after toHost).
  template <typename T = void> T *host(size_t k) const {
    return reinterpret_cast<T *>(spans[k].host);
  }

  /// Copies what the host row wrote back to the device and waits.
  void toDevice() {
    bool any = false;
    for (const Span &s : spans)
      if (s.written && staged(s)) {
        pfrt_cuda_h2d(const_cast<char *>(s.device), s.host, s.bytes);
        any = true;
      }
    if (any)
      pfrt_cuda_synchronize(); // before the host copies go
  }

private:
  struct Span {
    const char *device;
    int64_t bytes;
    bool read, written;
    char *host;
  };
  static bool staged(const Span &s) { return s.device && s.bytes > 0; }
  std::vector<Span> spans;
  std::vector<std::unique_ptr<char[]>> buffers;
};

/// Bytes per element of a boxing dtype, or -1 for one the host row rejects.
int64_t dtypeBytes(int32_t dtype) {
  switch (dtype) {
  case PFRT_DTYPE_F32:
  case PFRT_DTYPE_I32:
    return 4;
  case PFRT_DTYPE_I64:
    return 8;
  }
  return -1;
}

/// The byte size of a tensor of `ndim` dimensions `shape` and `es`-byte
/// elements, or -1 where the host rows reject the shape (a bad rank, NULL,
/// a negative dimension, an overflow) or the dtype (es < 0).
int64_t tensorBytes(int64_t ndim, const int64_t *shape, int64_t es) {
  if (es < 0 || ndim < 0 || ndim > kMaxRank || (ndim > 0 && !shape))
    return -1;
  int64_t elems = 1, bytes;
  for (int64_t d = 0; d < ndim; ++d)
    if (shape[d] < 0 || __builtin_mul_overflow(elems, shape[d], &elems))
      return -1;
  return __builtin_mul_overflow(elems, es, &bytes) ? -1 : bytes;
}

/// `bytes` times n (a gathered or unsliced tensor), or -1 for a bad n or an
/// overflow (both rejected by the host rows).
int64_t timesN(int64_t bytes, int64_t n) {
  int64_t out;
  if (bytes < 0 || n < 1 || __builtin_mul_overflow(bytes, n, &out))
    return -1;
  return out;
}

/// One of the n blocks of in_shape along axis: `bytes` / n, or -1 where the
/// host rows reject the axis or the split.
int64_t oneBlock(int64_t bytes, int64_t ndim, const int64_t *shape,
                 int64_t axis, int64_t n) {
  if (bytes < 0 || n < 1 || axis < 0 || axis >= ndim || shape[axis] % n != 0)
    return -1;
  return bytes / n;
}

/// Runs a boxing row on host copies of in (`inBytes`) and out (`outBytes`);
/// a size of -1 (arguments the host row rejects) stages nothing, and the
/// host row, called on the device addresses, fails with its own error
/// before touching them.
template <typename Row>
int stagedBoxing(const void *in, int64_t inBytes, void *out, int64_t outBytes,
                 Row row) {
  if (inBytes < 0 || outBytes < 0)
    return row(in, out);
  HostStage stage;
  size_t i = stage.add(in, inBytes, /*read=*/true, /*written=*/false);
  size_t o = stage.add(out, outBytes, /*read=*/false, /*written=*/true);
  stage.toHost();
  int rc = row(stage.host(i), stage.host(o));
  stage.toDevice();
  return rc;
}

/// n * c floats of logits, or -1 where the vocabulary cross-entropy rejects
/// the sizes (n < 1, c < 1, more rows than one all-reduce takes) or they
/// overflow.
int64_t logitsBytes(int64_t n, int64_t c) {
  int64_t elems, bytes;
  if (n < 1 || c < 1 || n > INT32_MAX / 2 ||
      __builtin_mul_overflow(n, c, &elems) ||
      __builtin_mul_overflow(elems, int64_t(sizeof(float)), &bytes))
    return -1;
  return bytes;
}

/// Where each split all-reduce's slot stands (pfrt_cuda_all_reduce_start).
enum class AsyncSlot { Idle, Staged, Nccl };
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
    if (r.count > 0)
      cuda::copyToDeviceOn(r.out, r.host, bytes, gStagingStream);
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

void finishStagedReduces() { finishStagedReducesUpTo(UINT64_MAX); }

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
    if (count > 0)
      cuda::copyToHostOn(r.host, in, bytes, gStagingStream);
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
  } else {
    StagedReduce &r = gStagedReduces[slot];
    if (r.pending)
      finishStagedReducesUpTo(r.order);
    cuda::streamWaitEvent(cuda::computeStream(), r.done);
  }
  s = AsyncSlot::Idle;
  return 0;
}

int pfrt_cuda_all_gather(const float *in, float *out, int64_t count,
                         const int64_t *ranks, int64_t n) {
  if (nccl::useNccl(ranks, n, "pfrt_all_gather"))
    return nccl::allGather(in, out, count, ranks, n);
  enter("pfrt_cuda_all_gather");
  std::vector<float> h = toHost(in, count);
  std::vector<float> all(size_t(count * groupSize(n)));
  int rc = pfrt_all_gather(h.data(), all.data(), count, ranks, n);
  toDevice(out, all);
  return rc;
}

int pfrt_cuda_reduce_scatter_sum(const float *in, float *out, int64_t count,
                                 const int64_t *ranks, int64_t n) {
  if (nccl::useNccl(ranks, n, "pfrt_reduce_scatter_sum"))
    return nccl::reduceScatterSum(in, out, count, ranks, n);
  enter("pfrt_cuda_reduce_scatter_sum");
  std::vector<float> h = toHost(in, count * groupSize(n));
  std::vector<float> mine(static_cast<size_t>(count));
  int rc = pfrt_reduce_scatter_sum(h.data(), mine.data(), count, ranks, n);
  toDevice(out, mine);
  return rc;
}

int pfrt_cuda_all_to_all(const float *in, float *out, int64_t count,
                         const int64_t *ranks, int64_t n) {
  if (nccl::useNccl(ranks, n, "pfrt_all_to_all"))
    return nccl::allToAll(in, out, count, ranks, n);
  enter("pfrt_cuda_all_to_all");
  std::vector<float> h = toHost(in, count * groupSize(n));
  std::vector<float> back(h.size());
  int rc = pfrt_all_to_all(h.data(), back.data(), count, ranks, n);
  toDevice(out, back);
  return rc;
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
    pfrt_cuda_d2h(h.data(), buf, bytes);
  int rc = pfrt_broadcast_i64(h.data(), count, root, ranks, n);
  if (pfrt_rank() != root && bytes > 0) {
    pfrt_cuda_h2d(buf, h.data(), bytes);
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

// Point to point: over NCCL once setupPointToPoint moved it there (after
// the first step, Nccl.cpp), host-staged and recorded before.

int pfrt_cuda_send(const float *buf, int64_t count, int32_t dst, int32_t tag) {
  if (nccl::pointToPointOverNccl(dst)) {
    nccl::waitFor(nccl::send(buf, count, dst, tag, "pfrt_cuda_send"));
    return 0;
  }
  enterPointToPoint("pfrt_cuda_send");
  std::vector<float> h = toHost(buf, count);
  int rc = pfrt_send(h.data(), count, dst, tag);
  nccl::recordPointToPoint(true, dst, tag, count);
  return rc;
}

int pfrt_cuda_recv(float *buf, int64_t count, int32_t src, int32_t tag) {
  if (nccl::pointToPointOverNccl(src)) {
    nccl::recv(buf, count, src, tag, "pfrt_cuda_recv");
    return 0;
  }
  enterPointToPoint("pfrt_cuda_recv");
  std::vector<float> h(size_t(count > 0 ? count : 0));
  int rc = pfrt_recv(h.data(), count, src, tag);
  toDevice(buf, h);
  nccl::recordPointToPoint(false, src, tag, count);
  return rc;
}

int pfrt_cuda_isend(const float *buf, int64_t count, int32_t dst, int32_t tag) {
  if (nccl::pointToPointOverNccl(dst)) {
    nccl::send(buf, count, dst, tag, "pfrt_cuda_isend");
    return 0;
  }
  enterPointToPoint("pfrt_cuda_isend");
  gUntrackedSends.push_back(toHost(buf, count));
  int rc = pfrt_isend(gUntrackedSends.back().data(), count, dst, tag);
  nccl::recordPointToPoint(true, dst, tag, count);
  return rc;
}

int64_t pfrt_cuda_isend_tracked(const float *buf, int64_t count, int32_t dst,
                                int32_t tag) {
  if (nccl::pointToPointOverNccl(dst))
    return nccl::track(
        nccl::send(buf, count, dst, tag, "pfrt_cuda_isend_tracked"));
  enterPointToPoint("pfrt_cuda_isend_tracked");
  std::vector<float> h = toHost(buf, count);
  int64_t handle = pfrt_isend_tracked(h.data(), count, dst, tag);
  // The vector's heap buffer moves with it: MPI's pointer stays valid.
  gTrackedSends[handle] = std::move(h);
  nccl::recordPointToPoint(true, dst, tag, count);
  return handle;
}

int pfrt_cuda_wait_send(int64_t handle) {
  if (nccl::ownsHandle(handle)) {
    nccl::waitSend(handle);
    return 0;
  }
  int rc = pfrt_wait_send(handle);
  gTrackedSends.erase(handle);
  return rc;
}

int pfrt_cuda_wait_sends(void) {
  // (The step's end: every split all-reduce was waited for; a direct
  // caller's pending one is finished before MPI waits on sends.)
  finishStagedReduces();
  nccl::joinSends();
  int rc = pfrt_wait_sends();
  gTrackedSends.clear();
  gUntrackedSends.clear();
  return rc;
}

// The batch's descriptors stay on the host. Over NCCL: every send on its
// peer's stream, the receives in one group on the compute stream, then the
// compute stream waits for the sends (the batch completes them, as the
// host row does). Staged: each op's buffer is copied, sends to the host
// before the batch, receives back after it.
int pfrt_cuda_p2p_batch(const pfrt_p2p_op *ops, int64_t nops) {
  const char *fn = "pfrt_cuda_p2p_batch";
  bool overNccl = nops > 0 && ops;
  for (int64_t k = 0; overNccl && k < nops; ++k)
    overNccl = nccl::pointToPointOverNccl(ops[k].peer);
  if (overNccl) {
    std::vector<void *> sent;
    for (int64_t k = 0; k < nops; ++k)
      if (ops[k].is_send)
        sent.push_back(
            nccl::send(ops[k].buf, ops[k].count, ops[k].peer, ops[k].tag, fn));
    nccl::groupBegin();
    for (int64_t k = 0; k < nops; ++k)
      if (!ops[k].is_send)
        nccl::recv(ops[k].buf, ops[k].count, ops[k].peer, ops[k].tag, fn);
    nccl::groupEnd();
    for (void *done : sent)
      nccl::waitFor(done);
    return 0;
  }
  enterPointToPoint(fn);
  if (nops < 0 || (nops > 0 && !ops))
    return pfrt_p2p_batch(ops, nops); // fatal: a bad op list
  std::vector<pfrt_p2p_op> host(ops, ops + nops);
  HostStage stage;
  for (const pfrt_p2p_op &op : host) {
    // A bad count is the host row's error (it validates every op first).
    int64_t bytes = op.count >= 0 && op.count <= (int64_t(1) << 60)
                        ? op.count * int64_t(sizeof(float))
                        : 0;
    stage.add(op.buf, bytes, /*read=*/op.is_send != 0,
              /*written=*/op.is_send == 0);
  }
  stage.toHost();
  for (size_t k = 0; k < host.size(); ++k)
    host[k].buf = stage.host<float>(k);
  int rc = pfrt_p2p_batch(host.data(), nops);
  stage.toDevice();
  for (int64_t k = 0; k < nops; ++k)
    nccl::recordPointToPoint(ops[k].is_send != 0, ops[k].peer, ops[k].tag,
                             ops[k].count);
  return rc;
}

int pfrt_cuda_box_all_gather(const void *in, void *out, int32_t dtype,
                             int64_t ndim, const int64_t *in_shape,
                             int64_t axis, const int64_t *ranks, int64_t n) {
  enter("pfrt_cuda_box_all_gather");
  int64_t inBytes = tensorBytes(ndim, in_shape, dtypeBytes(dtype));
  return stagedBoxing(in, inBytes, out, timesN(inBytes, n),
                      [&](const void *hin, void *hout) {
                        return pfrt_box_all_gather(hin, hout, dtype, ndim,
                                                   in_shape, axis, ranks, n);
                      });
}

int pfrt_cuda_box_reduce_scatter(const float *in, float *out, int64_t ndim,
                                 const int64_t *in_shape, int64_t axis,
                                 const int64_t *ranks, int64_t n) {
  enter("pfrt_cuda_box_reduce_scatter");
  int64_t inBytes = tensorBytes(ndim, in_shape, int64_t(sizeof(float)));
  return stagedBoxing(
      in, inBytes, out, oneBlock(inBytes, ndim, in_shape, axis, n),
      [&](const void *hin, void *hout) {
        return pfrt_box_reduce_scatter(static_cast<const float *>(hin),
                                       static_cast<float *>(hout), ndim,
                                       in_shape, axis, ranks, n);
      });
}

int pfrt_cuda_box_all_to_all(const void *in, void *out, int32_t dtype,
                             int64_t ndim, const int64_t *in_shape,
                             int64_t split_axis, int64_t concat_axis,
                             const int64_t *ranks, int64_t n) {
  enter("pfrt_cuda_box_all_to_all");
  int64_t bytes = tensorBytes(ndim, in_shape, dtypeBytes(dtype));
  // out has in's size; a split the host row rejects stages nothing.
  int64_t outBytes =
      oneBlock(bytes, ndim, in_shape, split_axis, n) < 0 ? -1 : bytes;
  return stagedBoxing(
      in, bytes, out, outBytes, [&](const void *hin, void *hout) {
        return pfrt_box_all_to_all(hin, hout, dtype, ndim, in_shape, split_axis,
                                   concat_axis, ranks, n);
      });
}

// Local (no MPI), staged like the collectives so that the host row's
// checks and bits are the CPU's; a step slicing this way is not captured.
int pfrt_cuda_box_slice(const void *in, void *out, int32_t dtype, int64_t ndim,
                        const int64_t *in_shape, int64_t axis, int64_t index,
                        int64_t n) {
  enter("pfrt_cuda_box_slice");
  int64_t inBytes = tensorBytes(ndim, in_shape, dtypeBytes(dtype));
  return stagedBoxing(
      in, inBytes, out, oneBlock(inBytes, ndim, in_shape, axis, n),
      [&](const void *hin, void *hout) {
        return pfrt_box_slice(hin, hout, dtype, ndim, in_shape, axis, index, n);
      });
}

int pfrt_cuda_box_unslice(const void *in, void *out, int32_t dtype,
                          int64_t ndim, const int64_t *in_shape, int64_t axis,
                          int64_t index, int64_t n) {
  enter("pfrt_cuda_box_unslice");
  int64_t inBytes = tensorBytes(ndim, in_shape, dtypeBytes(dtype));
  return stagedBoxing(in, inBytes, out, timesN(inBytes, n),
                      [&](const void *hin, void *hout) {
                        return pfrt_box_unslice(hin, hout, dtype, ndim,
                                                in_shape, axis, index, n);
                      });
}

// The whole loss on the host: the CPU's row statistics, all-reduces and
// float64 sums, so every layout gives the CPU's bits.
int pfrt_cuda_softmax_xent_vocab(const float *logits, const int64_t *labels,
                                 float *loss, int64_t n, int64_t c,
                                 int64_t offset, int64_t classes,
                                 int64_t ignore_index, int64_t mode,
                                 const int64_t *ranks, int64_t nranks) {
  enter("pfrt_cuda_softmax_xent_vocab");
  int64_t bytes = logitsBytes(n, c);
  if (bytes < 0) // fatal: the host row names the sizes
    return pfrt_softmax_xent_vocab(logits, labels, loss, n, c, offset, classes,
                                   ignore_index, mode, ranks, nranks);
  HostStage stage;
  size_t x = stage.add(logits, bytes, true, false);
  size_t l = stage.add(labels, n * int64_t(sizeof(int64_t)), true, false);
  size_t o = stage.add(loss, int64_t(sizeof(float)), false, true);
  stage.toHost();
  int rc = pfrt_softmax_xent_vocab(stage.host<float>(x), stage.host<int64_t>(l),
                                   stage.host<float>(o), n, c, offset, classes,
                                   ignore_index, mode, ranks, nranks);
  stage.toDevice();
  return rc;
}

int pfrt_cuda_softmax_xent_vocab_grad(const float *logits,
                                      const int64_t *labels, const float *dloss,
                                      float *dlogits, int64_t n, int64_t c,
                                      int64_t offset, int64_t classes,
                                      int64_t ignore_index, int64_t mode,
                                      const int64_t *ranks, int64_t nranks) {
  enter("pfrt_cuda_softmax_xent_vocab_grad");
  int64_t bytes = logitsBytes(n, c);
  if (bytes < 0)
    return pfrt_softmax_xent_vocab_grad(logits, labels, dloss, dlogits, n, c,
                                        offset, classes, ignore_index, mode,
                                        ranks, nranks);
  HostStage stage;
  size_t x = stage.add(logits, bytes, true, false);
  size_t l = stage.add(labels, n * int64_t(sizeof(int64_t)), true, false);
  size_t d = stage.add(dloss, int64_t(sizeof(float)), true, false);
  size_t o = stage.add(dlogits, bytes, false, true);
  stage.toHost();
  int rc = pfrt_softmax_xent_vocab_grad(
      stage.host<float>(x), stage.host<int64_t>(l), stage.host<float>(d),
      stage.host<float>(o), n, c, offset, classes, ignore_index, mode, ranks,
      nranks);
  stage.toDevice();
  return rc;
}

// Not communication, but the state of the tensor-parallel layouts that
// need the rows above: another part of a device-resident tensor (a grouped
// split holds one per block). The host row keeps the address without
// reading it; the entry is device-resident (registered by
// pfrt_cuda_state_register), so checkpoints copy every part through the
// host.
int pfrt_cuda_state_add_part(const char *name, const int64_t *offset,
                             void *data) {
  int rc = pfrt_state_add_part(name, offset, data);
  markStateOnDevice(name);
  return rc;
}

} // extern "C"
