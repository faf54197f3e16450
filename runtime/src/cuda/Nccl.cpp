//===- Nccl.cpp - the NCCL transport of the collective twins --------------===//
//
// libnccl.so.2 is dlopen'ed like the CUDA libraries (same search, never
// linked); with PFRT_CUDA_FAKE=1 FakeNccl.cpp's emulation stands in for it.
//
// Transport (chosen in pfrt_cuda_init, configureCollectives):
//   PFRT_CUDA_COMM=staged  every collective is host-staged (StagedComm.cpp);
//   PFRT_CUDA_COMM=nccl    NCCL, fatal if libnccl cannot be loaded or the
//                          members of a group share a device;
//   unset                  NCCL if libnccl loads, for each group whose
//                          members each use a device of their own (NCCL
//                          refuses two ranks of one communicator on one
//                          device); host-staged otherwise. Under the
//                          emulation every rank shares its one emulated
//                          device, so only PFRT_CUDA_COMM=nccl emulates NCCL
//                          (each rank then pretends to have its own), or
//                          PFRT_CUDA_FAKE_DEVICES=N > 1 emulated GPUs (then
//                          chosen as on a real machine, by device UUID).
// Anything else in PFRT_CUDA_COMM is fatal. PFRT_CUDA_VERBOSE=1 prints the
// choice on rank 0.
//
// Point to point (send, recv, isend, isend_tracked, p2p_batch): NCCL has no
// tags, it matches a pair's messages in the order each side posts them,
// where MPI matched them by tag. So the first step runs host-staged (MPI,
// tags) while StagedComm.cpp records each rank's messages per peer (tag and
// count, in order); at its end pfrt_cuda_run_step calls setupPointToPoint,
// where every rank compares its record with each peer's (over MPI, peers in
// ascending order: a pairwise exchange that cannot deadlock) and checks
// that the pair has two devices. Only if every pair of the job agrees
// (an all-reduce of the verdicts) does point-to-point move to NCCL, for
// every rank at once; otherwise it stays host-staged, said on stderr when
// the records disagree (a schedule NCCL cannot run as it stands), and fatal
// under PFRT_CUDA_COMM=nccl. Each pair gets two 2-rank communicators, one
// per direction. Receives are enqueued on the compute stream (a batch's
// in one NCCL group); a send waits on a stream of its peer's own, forked
// from the compute stream, so it never holds the compute stream (NCCL's
// send blocks its stream until the peer receives, where MPI's isend
// returned at once: the schedules assume only receives block). Blocking
// sends, pfrt_wait_send and pfrt_wait_sends make the compute stream wait
// for the send streams (events), and so does the end of every step (a
// capture must join the streams it forked): the steps after the setup are
// captured as CUDA graphs when nothing else is staged.
//
// One NCCL communicator per distinct group (the ordered list of world
// ranks). A compiled GPU rank hands the job's groups to
// pfrt_cuda_comm_groups at start-up (makeGroups): where NCCL serves every
// rank and no two share a GPU, rank 0's unique id goes to all over MPI,
// ncclCommInitRank makes the world communicator and ncclCommSplit each
// group's (color: the group's index in a round of disjoint groups, key: the
// rank's position in it). A group not made so (ranks that share a GPU, a
// group outside the table) is made at its first collective by its members
// only: they exchange their (host, device) over MPI, the lowest world rank
// makes the unique id, pfrt_broadcast_i64 over the group's MPI
// communicator hands it to the others, then ncclCommInitRank(n, id, group
// position). The
// collectives are enqueued on the compute stream, so a step whose
// communication is all NCCL is captured in its CUDA graph.
//
//===----------------------------------------------------------------------===//

#include "NcclComm.h"

#ifndef PFRT_CUDA_NO_NCCL

#include "../common/CommChecks.h"
#include "../common/Internal.h"
#include "../mpi/MpiInternal.h"
#include "CudaInternal.h"
#include "FakeDevice.h"
#include "FakeNccl.h"
#include "pfrt/pfrt.h"

#include <nccl.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using pfrt::comm::groupString;
using pfrt::comm::rootPosition;

using namespace pfrt;

namespace {

#define PFRT_NCCL_FUNCTIONS(X)                                                 \
  X(ncclGetErrorString)                                                        \
  X(ncclGetUniqueId)                                                           \
  X(ncclCommInitRank)                                                          \
  X(ncclCommGetAsyncError)                                                     \
  X(ncclCommAbort)                                                             \
  X(ncclAllReduce)                                                             \
  X(ncclAllGather)                                                             \
  X(ncclReduceScatter)                                                         \
  X(ncclBroadcast)                                                             \
  X(ncclReduce)                                                                \
  X(ncclSend)                                                                  \
  X(ncclRecv)                                                                  \
  X(ncclGroupStart)                                                            \
  X(ncclGroupEnd)

struct Api {
#define PFRT_FIELD(fn) decltype(&::fn) fn = nullptr;
  PFRT_NCCL_FUNCTIONS(PFRT_FIELD)
#undef PFRT_FIELD
  // NCCL 2.18 on (optional: without them each group's communicator is made
  // at its first collective).
  decltype(&::ncclCommSplit) ncclCommSplit = nullptr;
  decltype(&::ncclCommDestroy) ncclCommDestroy = nullptr;
};

struct Group {
  bool nccl = false;
  ncclComm_t comm = nullptr;
  int pos = 0;
};

struct NcclState {
  bool available = false; // NCCL's entry points are there (or emulated)
  bool forced = false;    // PFRT_CUDA_COMM=nccl
  bool emulated = false;  // PFRT_CUDA_FAKE=1
  Api api;
  std::map<std::vector<int64_t>, Group> groups;
} gNccl;

bool verbose() {
  const char *v = std::getenv("PFRT_CUDA_VERBOSE");
  return v && *v == '1';
}

/// Says `what` on rank 0 under PFRT_CUDA_VERBOSE=1.
void sayOnRankZero(const std::string &what) {
  if (verbose() && pfrt_rank() == 0) {
    std::fprintf(stderr, "pfrt: rank 0: CUDA collectives: %s\n", what.c_str());
    std::fflush(stderr);
  }
}

void check(ncclResult_t r, const char *call, const char *fn) {
  if (r == ncclSuccess)
    return;
  const char *text =
      gNccl.api.ncclGetErrorString ? gNccl.api.ncclGetErrorString(r) : nullptr;
  fatal("%s: %s failed: %s (ncclResult %d)", fn, call,
        text ? text : "unknown NCCL error", int(r));
}

//===----------------------------------------------------------------------===//
// The watchdog
//===----------------------------------------------------------------------===//
//
// A collective that cannot finish (a peer's NCCL failed, the network went)
// leaves this rank's host thread waiting on its stream for good: nothing
// the thread calls returns to report it. So every communicator this rank
// makes is watched from a thread of its own, which asks NCCL for an
// asynchronous error (ncclCommGetAsyncError, meant to be called from
// another thread) every PFRT_NCCL_WATCHDOG_MS milliseconds (200; 0 turns
// it off). On an error it aborts every communicator (ncclCommAbort, which
// also frees a blocked stream), says which rank, which communicator and
// which NCCL error on stderr, and exits the process (MPI is not this
// thread's to call), so the launcher ends the job and reports the rank
// instead of hanging. pfrt_finalize joins it first (a finalize hook).

struct Watchdog {
  std::mutex mu;
  std::condition_variable wake;
  std::vector<std::pair<ncclComm_t, std::string>> comms;
  bool stop = false;
  std::thread *thread = nullptr;
};

/// Never destroyed: the thread may outlive static destruction if the
/// program exits without pfrt_finalize.
Watchdog &watchdog() {
  static Watchdog *w = new Watchdog;
  return *w;
}

int64_t watchdogPeriodMs() {
  const char *v = std::getenv("PFRT_NCCL_WATCHDOG_MS");
  if (!v || !*v)
    return 200;
  char *end = nullptr;
  errno = 0;
  long long ms = std::strtoll(v, &end, 10);
  if (*end || ms < 0 || errno == ERANGE || ms > 3600 * 1000)
    fatal("PFRT_NCCL_WATCHDOG_MS=%s: expected a number of milliseconds in "
          "[0, 3600000] (0: no watchdog)",
          v);
  return ms;
}

void watchdogLoop(int64_t periodMs) {
  Watchdog &w = watchdog();
  std::unique_lock<std::mutex> lock(w.mu);
  while (!w.stop) {
    w.wake.wait_for(lock, std::chrono::milliseconds(periodMs));
    if (w.stop)
      break;
    for (auto &[comm, what] : w.comms) {
      ncclResult_t async = ncclSuccess;
      if (gNccl.api.ncclCommGetAsyncError(comm, &async) != ncclSuccess ||
          async == ncclSuccess || async == ncclInProgress)
        continue;
      // ncclCommAbort is meant for another thread: it also frees a stream
      // blocked on the failed communicator. MPI is not this thread's, so
      // the job ends by this process's exit (the launcher ends the rest).
      for (auto &entry : w.comms)
        gNccl.api.ncclCommAbort(entry.first);
      const char *text = gNccl.api.ncclGetErrorString(async);
      fatalFromThread(
          "NCCL watchdog: the communicator of %s reports an asynchronous "
          "error: %s (ncclResult %d); every communicator of this rank is "
          "aborted and the job ends",
          what.c_str(), text ? text : "unknown NCCL error", int(async));
    }
  }
}

/// Stops and joins the watchdog (pfrt_finalize's first step; idempotent).
void stopWatchdog() {
  Watchdog &w = watchdog();
  std::thread *t = nullptr;
  {
    std::lock_guard<std::mutex> lock(w.mu);
    w.stop = true;
    t = w.thread;
    w.thread = nullptr;
  }
  w.wake.notify_all();
  if (t) {
    t->join();
    delete t;
  }
}

/// Watches `comm` (described as `what`: "group [0, 1]", "ranks 0 -> 1"),
/// starting the watchdog with the first one.
void watch(ncclComm_t comm, std::string what) {
  Watchdog &w = watchdog();
  int64_t period = watchdogPeriodMs();
  if (period == 0)
    return;
  std::lock_guard<std::mutex> lock(w.mu);
  w.comms.emplace_back(comm, std::move(what));
  if (!w.thread && !w.stop) {
    w.thread = new std::thread(watchdogLoop, period);
    addFinalizeHook(&stopWatchdog);
  }
}

/// A hash of this host's name: ranks with equal (host, device) share a GPU.
int64_t hostKey() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  uint64_t h = 0xcbf29ce484222325ull;
  for (const char *c = name; *c; ++c)
    h = (h ^ uint64_t(uint8_t(*c))) * 0x100000001b3ull;
  return int64_t(h & 0x7fffffffffffffffull);
}

/// The GPU this rank uses (its UUID's hash: ordinals depend on each rank's
/// CUDA_VISIBLE_DEVICES). The emulation under PFRT_CUDA_COMM=nccl pretends
/// each rank has its own device, unless PFRT_CUDA_FAKE_NCCL_SHARED=1 (the
/// test of the error) or it emulates several GPUs (PFRT_CUDA_FAKE_DEVICES).
int64_t deviceKey() {
  const char *shared = std::getenv("PFRT_CUDA_FAKE_NCCL_SHARED");
  bool ownDevice = gNccl.emulated && gNccl.forced &&
                   fake::physicalDevices() == 1 && !(shared && *shared == '1');
  return ownDevice ? int64_t(pfrt_rank()) : cuda::deviceIdentity();
}

/// Resolves NCCL's entry points from `library`; false if one is missing
/// (`missing` names it).
bool resolveAll(void *library, std::string &missing) {
  Api &api = gNccl.api;
#define PFRT_RESOLVE(fn)                                                       \
  api.fn = reinterpret_cast<decltype(&::fn)>(dlsym(library, #fn));             \
  if (!api.fn) {                                                               \
    missing = #fn;                                                             \
    return false;                                                              \
  }
  PFRT_NCCL_FUNCTIONS(PFRT_RESOLVE)
#undef PFRT_RESOLVE
  api.ncclCommSplit = reinterpret_cast<decltype(&::ncclCommSplit)>(
      dlsym(library, "ncclCommSplit"));
  api.ncclCommDestroy = reinterpret_cast<decltype(&::ncclCommDestroy)>(
      dlsym(library, "ncclCommDestroy"));
  return true;
}

/// The first two of n ranks whose (host, device) pairs in `keys` are equal
/// (they share a GPU), or false.
bool sharedDevice(const std::vector<int64_t> &keys, int64_t n, int64_t &p,
                  int64_t &q) {
  for (p = 0; p < n; ++p)
    for (q = p + 1; q < n; ++q)
      if (keys[size_t(2 * p)] == keys[size_t(2 * q)] &&
          keys[size_t(2 * p + 1)] == keys[size_t(2 * q + 1)])
        return true;
  return false;
}

/// The group's state, creating its communicator on first use (see the
/// file comment).
const Group &groupFor(const int64_t *ranks, int64_t n, const char *fn) {
  std::vector<int64_t> key(ranks, ranks + n);
  auto it = gNccl.groups.find(key);
  if (it != gNccl.groups.end())
    return it->second;
  Group g;
  g.pos = groupPosition(ranks, n, fn); // the host rows' checks and errors
  // Which device each member uses: NCCL refuses two ranks on one.
  int64_t mine[2] = {hostKey(), deviceKey()};
  std::vector<int64_t> all(size_t(2 * n));
  allGather(mine, all.data(), 2, MPI_INT64_T, sizeof(int64_t), ranks, n, fn,
            "nccl_setup");
  int64_t p = 0, q = 0;
  if (sharedDevice(all, n, p, q)) {
    if (gNccl.forced)
      fatal("%s: PFRT_CUDA_COMM=nccl, but ranks %lld and %lld of group %s "
            "use the same GPU (one device UUID on one host) and NCCL needs "
            "a device per rank: run one rank per GPU or set "
            "PFRT_CUDA_COMM=staged",
            fn, (long long)ranks[p], (long long)ranks[q],
            groupString(ranks, n).c_str());
    if (verbose() && g.pos == 0)
      std::fprintf(stderr,
                   "pfrt: rank %d: CUDA collectives: ranks of group %s "
                   "share a GPU: its collectives are host-staged\n",
                   pfrt_rank(), groupString(ranks, n).c_str());
    return gNccl.groups.emplace(std::move(key), g).first->second;
  }
  if (cuda::streamCapturing())
    fatal("%s: the NCCL communicator of group %s is made at the group's "
          "first collective, which cannot be inside a CUDA graph capture (run "
          "the step once uncaptured first)",
          fn, groupString(ranks, n).c_str());
  int64_t lowest = *std::min_element(ranks, ranks + n);
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  if (pfrt_rank() == lowest)
    check(gNccl.api.ncclGetUniqueId(&id), "ncclGetUniqueId", fn);
  static_assert(sizeof(id) % sizeof(int64_t) == 0, "id size");
  int64_t words[sizeof(id) / sizeof(int64_t)];
  std::memcpy(words, &id, sizeof(id));
  pfrt_broadcast_i64(words, int64_t(sizeof(id) / sizeof(int64_t)), lowest,
                     ranks, n);
  std::memcpy(&id, words, sizeof(id));
  if (gNccl.emulated)
    fake::ncclNextGroup(ranks, n);
  check(gNccl.api.ncclCommInitRank(&g.comm, int(n), id, g.pos),
        "ncclCommInitRank", fn);
  g.nccl = true;
  watch(g.comm, "group " + groupString(ranks, n));
  if (verbose() && g.pos == 0)
    std::fprintf(stderr,
                 "pfrt: rank %d: CUDA collectives: NCCL communicator of group "
                 "%s made\n",
                 pfrt_rank(), groupString(ranks, n).c_str());
  return gNccl.groups.emplace(std::move(key), g).first->second;
}

/// Which world ranks share a GPU: every rank's (host, device), gathered
/// over the world.
std::vector<int64_t> worldDevices(const char *fn) {
  int64_t mine[2] = {hostKey(), deviceKey()};
  std::vector<int64_t> all(size_t(2 * pfrt_world_size()));
  PFRT_MPI_AS(fn, MPI_Allgather,
              (mine, 2, MPI_INT64_T, all.data(), 2, MPI_INT64_T, worldComm()));
  return all;
}

/// The job's groups in rounds of disjoint groups, first fit in table
/// order: one ncclCommSplit makes a round's communicators.
std::vector<std::vector<size_t>>
disjointRounds(const std::vector<std::vector<int64_t>> &groups) {
  std::vector<std::vector<size_t>> rounds;
  std::vector<std::vector<bool>> used;
  size_t world = size_t(pfrt_world_size());
  for (size_t g = 0; g < groups.size(); ++g) {
    size_t r = 0;
    for (; r < rounds.size(); ++r)
      if (std::none_of(groups[g].begin(), groups[g].end(),
                       [&](int64_t k) { return used[r][size_t(k)]; }))
        break;
    if (r == rounds.size()) {
      rounds.emplace_back();
      used.emplace_back(world, false);
    }
    rounds[r].push_back(g);
    for (int64_t k : groups[g])
      used[r][size_t(k)] = true;
  }
  return rounds;
}

/// After an enqueued collective: an error NCCL found asynchronously (on
/// another rank's failure, say) ends the job here.
void pollAsync(const Group &g, const char *fn) {
  ncclResult_t async = ncclSuccess;
  check(gNccl.api.ncclCommGetAsyncError(g.comm, &async),
        "ncclCommGetAsyncError", fn);
  if (async != ncclSuccess && async != ncclInProgress)
    check(async, "a collective (ncclCommGetAsyncError)", fn);
}

cudaStream_t stream() {
  return static_cast<cudaStream_t>(cuda::computeStream());
}

using comm::checkBuf;
using comm::checkCount;
using comm::checkNoOverlap;
using comm::kMaxCount;

int64_t blocks(int64_t n, int64_t count, const char *fn) {
  return comm::mulCount(n, count, fn);
}

} // namespace

namespace pfrt {
namespace cuda {

void stopCollectives() { stopWatchdog(); }

void configureCollectives() {
  NcclState &s = gNccl;
  const char *env = std::getenv("PFRT_CUDA_COMM");
  std::string mode = env ? env : "";
  if (!mode.empty() && mode != "nccl" && mode != "staged")
    fatal("PFRT_CUDA_COMM=%s: expected nccl or staged (or unset: NCCL where "
          "every rank of a group has its own GPU, host-staged elsewhere)",
          mode.c_str());
  s.forced = mode == "nccl";
  if (mode == "staged") {
    sayOnRankZero("host-staged (PFRT_CUDA_COMM=staged)");
    return;
  }
  if (fake::enabled()) {
    s.emulated = true;
    if (!s.forced && fake::physicalDevices() == 1) {
      sayOnRankZero("host-staged (the ranks share the one emulated device; "
                    "PFRT_CUDA_COMM=nccl emulates NCCL)");
      return;
    }
#define PFRT_FAKE(fn, symbol) s.api.fn = &fake::fn;
    PFRT_FAKE_NCCL_FUNCTIONS(PFRT_FAKE)
#undef PFRT_FAKE
    s.api.ncclCommSplit = &fake::ncclCommSplit;
    s.api.ncclCommDestroy = &fake::ncclCommDestroy;
    s.available = true;
    sayOnRankZero(s.forced ? "NCCL, emulated on the host (PFRT_CUDA_FAKE=1, "
                             "PFRT_CUDA_COMM=nccl)"
                           : "NCCL, emulated on the host (PFRT_CUDA_FAKE=1, " +
                                 std::to_string(fake::physicalDevices()) +
                                 " emulated GPUs) for groups whose ranks "
                                 "each have their own GPU, host-staged "
                                 "otherwise");
    return;
  }
  std::string tried, missing;
  void *library = openOptionalLibrary("libnccl.so.2", &tried);
  if (!library) {
    std::string why = "libnccl.so.2 not found in: " +
                      (tried.empty() ? std::string("nowhere") : tried);
    if (s.forced)
      fatal("PFRT_CUDA_COMM=nccl, but NCCL cannot be loaded (%s); set "
            "PFRT_CUDA_LIB_DIR to its directory",
            why.c_str());
    sayOnRankZero("host-staged (" + why + ")");
    return;
  }
  if (!resolveAll(library, missing)) {
    if (s.forced)
      fatal("PFRT_CUDA_COMM=nccl, but libnccl.so.2 lacks %s (too old an "
            "NCCL?)",
            missing.c_str());
    sayOnRankZero("host-staged (libnccl.so.2 lacks " + missing + ")");
    return;
  }
  s.available = true;
  sayOnRankZero(s.forced ? "NCCL (libnccl.so.2, PFRT_CUDA_COMM=nccl)"
                         : "NCCL (libnccl.so.2) for groups whose ranks each "
                           "have their own GPU, host-staged otherwise");
}

} // namespace cuda

namespace nccl {

void makeGroups(const std::vector<std::vector<int64_t>> &groups,
                const char *fn) {
  // Every rank decides alike, so that all or none take part in the splits.
  bool nccl = gNccl.available && cuda::deviceReady();
  bool split = nccl && gNccl.api.ncclCommSplit && gNccl.api.ncclCommDestroy;
  // One all-reduce (max) gives the maximum of each flag and, negated, the
  // minimum: {max nccl, -min nccl, -min split}.
  int flags[3] = {nccl ? 1 : 0, nccl ? -1 : 0, split ? -1 : 0}, most[3];
  PFRT_MPI_AS(fn, MPI_Allreduce,
              (flags, most, 3, MPI_INT, MPI_MAX, worldComm()));
  // Some ranks on NCCL and others not would hang at a group's first
  // collective (NCCL on one side, MPI on the other).
  if (most[0] != -most[1])
    fatal("%s: the ranks disagree on NCCL (this rank %s use it; every rank "
          "needs libnccl.so.2 and the same PFRT_CUDA_COMM)",
          fn, nccl ? "can" : "cannot");
  if (most[2] != -1 || groups.empty())
    return;
  if (cuda::streamCapturing())
    fatal("%s: the job's NCCL communicators cannot be made inside a CUDA "
          "graph capture",
          fn);
  int64_t world = pfrt_world_size(), me = pfrt_rank();
  int64_t p = 0, q = 0;
  if (sharedDevice(worldDevices(fn), world, p, q)) {
    // No world communicator: at its first collective each group's
    // communicator is made, or the group host-staged where its ranks
    // share a GPU (an error under PFRT_CUDA_COMM=nccl).
    if (verbose() && me == 0)
      std::fprintf(stderr,
                   "pfrt: rank 0: CUDA collectives: ranks %lld and %lld "
                   "share a GPU: no world NCCL communicator; at its first "
                   "collective each group is made or host-staged\n",
                   (long long)p, (long long)q);
    return;
  }
  // The world communicator: rank 0's unique id, broadcast over MPI.
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  if (me == 0)
    check(gNccl.api.ncclGetUniqueId(&id), "ncclGetUniqueId", fn);
  PFRT_MPI_AS(fn, MPI_Bcast, (&id, int(sizeof(id)), MPI_BYTE, 0, worldComm()));
  std::vector<int64_t> everyone(static_cast<size_t>(world));
  for (int64_t k = 0; k < world; ++k)
    everyone[size_t(k)] = k;
  if (gNccl.emulated)
    fake::ncclNextGroup(everyone.data(), world);
  ncclComm_t worldNccl = nullptr;
  check(gNccl.api.ncclCommInitRank(&worldNccl, int(world), id, int(me)),
        "ncclCommInitRank", fn);
  // Not watched: only the splits use it, and they are done here.
  // Each round's groups split from it at once: color = the group's index in
  // the round, key = this rank's position in the group.
  std::vector<std::vector<size_t>> rounds = disjointRounds(groups);
  for (const std::vector<size_t> &round : rounds) {
    int color = NCCL_SPLIT_NOCOLOR, key = 0;
    const std::vector<int64_t> *myGroup = nullptr;
    for (size_t i = 0; i < round.size(); ++i) {
      const std::vector<int64_t> &g = groups[round[i]];
      auto at = std::find(g.begin(), g.end(), me);
      if (at != g.end()) {
        color = int(i);
        key = int(at - g.begin());
        myGroup = &g;
      }
    }
    ncclComm_t comm = nullptr;
    check(gNccl.api.ncclCommSplit(worldNccl, color, key, &comm, nullptr),
          "ncclCommSplit", fn);
    if (!myGroup)
      continue;
    std::string name = groupString(myGroup->data(), int64_t(myGroup->size()));
    if (!comm)
      fatal("%s: ncclCommSplit made no communicator for group %s", fn,
            name.c_str());
    Group g;
    g.nccl = true;
    g.comm = comm;
    g.pos = key;
    watch(comm, "group " + name);
    gNccl.groups[*myGroup] = g;
    if (verbose() && key == 0)
      std::fprintf(stderr,
                   "pfrt: rank %lld: CUDA collectives: NCCL communicator of "
                   "group %s split from the world communicator\n",
                   (long long)me, name.c_str());
  }
  // The splits hold what they need; the world communicator goes.
  check(gNccl.api.ncclCommDestroy(worldNccl), "ncclCommDestroy", fn);
  if (verbose() && me == 0)
    std::fprintf(stderr,
                 "pfrt: rank 0: CUDA collectives: the job's %zu group%s split "
                 "from the world communicator in %zu ncclCommSplit call%s\n",
                 groups.size(), groups.size() == 1 ? "" : "s", rounds.size(),
                 rounds.size() == 1 ? "" : "s");
}

bool useNccl(const int64_t *ranks, int64_t n, const char *fn) {
  if (!gNccl.available || !cuda::deviceReady() || !ranks || n < 1)
    return false;
  return groupFor(ranks, n, fn).nccl;
}

namespace {
/// The group of an all-reduce over NCCL (blocking or split) after the host
/// row's argument checks.
const Group &allReduceGroup(const float *in, const float *out, int64_t count,
                            const int64_t *ranks, int64_t n, const char *fn) {
  const Group &g = groupFor(ranks, n, fn);
  comm::checkAllReduceBuffers(in, out, count, fn);
  return g;
}
} // namespace

int allReduceSum(const float *in, float *out, int64_t count,
                 const int64_t *ranks, int64_t n) {
  const char *fn = "pfrt_all_reduce_sum";
  const Group &g = allReduceGroup(in, out, count, ranks, n, fn);
  if (count > 0) {
    check(gNccl.api.ncclAllReduce(in, out, size_t(count), ncclFloat32, ncclSum,
                                  g.comm, stream()),
          "ncclAllReduce", fn);
    pollAsync(g, fn);
  }
  return 0;
}

namespace {
/// The stream the split all-reduces run on, the event that forks it from
/// the compute stream, and each slot's completion event (made at first
/// use: the first step runs uncaptured).
struct AsyncReduces {
  void *stream = nullptr;
  void *fork = nullptr;
  void *done[PFRT_MAX_ASYNC_SLOTS] = {};
} gAsyncReduces;
} // namespace

int allReduceStart(const float *in, float *out, int64_t count,
                   const int64_t *ranks, int64_t n, int64_t slot) {
  const char *fn = "pfrt_all_reduce_start";
  const Group &g = allReduceGroup(in, out, count, ranks, n, fn);
  AsyncReduces &a = gAsyncReduces;
  if (!a.stream) {
    a.stream = cuda::newStream("the all-reduce stream");
    a.fork = cuda::newEvent("the all-reduce stream's fork");
  }
  if (!a.done[slot])
    a.done[slot] = cuda::newEvent("a split all-reduce's completion");
  cuda::recordEvent(a.fork, cuda::computeStream());
  cuda::streamWaitEvent(a.stream, a.fork);
  if (count > 0) {
    cuda::DeviceCommScope trace("all_reduce_nccl", a.stream,
                                count * int64_t(sizeof(float)), n);
    check(gNccl.api.ncclAllReduce(in, out, size_t(count), ncclFloat32, ncclSum,
                                  g.comm, static_cast<cudaStream_t>(a.stream)),
          "ncclAllReduce", fn);
    pollAsync(g, fn);
  }
  cuda::recordEvent(a.done[slot], a.stream);
  return 0;
}

void allReduceWait(int64_t slot) {
  cuda::streamWaitEvent(cuda::computeStream(), gAsyncReduces.done[slot]);
}

int allGather(const float *in, float *out, int64_t count, const int64_t *ranks,
              int64_t n) {
  const char *fn = "pfrt_all_gather";
  const Group &g = groupFor(ranks, n, fn);
  checkCount(count, fn);
  int64_t total = blocks(n, count, fn);
  checkBuf(in, count, "in", fn);
  checkBuf(out, total, "out", fn);
  checkNoOverlap(in, count, out, total, fn);
  if (count > 0) {
    check(gNccl.api.ncclAllGather(in, out, size_t(count), ncclFloat32, g.comm,
                                  stream()),
          "ncclAllGather", fn);
    pollAsync(g, fn);
  }
  return 0;
}

int reduceScatterSum(const float *in, float *out, int64_t count,
                     const int64_t *ranks, int64_t n) {
  const char *fn = "pfrt_reduce_scatter_sum";
  const Group &g = groupFor(ranks, n, fn);
  checkCount(count, fn);
  int64_t total = blocks(n, count, fn);
  checkBuf(in, total, "in", fn);
  checkBuf(out, count, "out", fn);
  checkNoOverlap(in, total, out, count, fn);
  if (count > 0) {
    check(gNccl.api.ncclReduceScatter(in, out, size_t(count), ncclFloat32,
                                      ncclSum, g.comm, stream()),
          "ncclReduceScatter", fn);
    pollAsync(g, fn);
  }
  return 0;
}

int broadcast(float *buf, int64_t count, int64_t root, const int64_t *ranks,
              int64_t n) {
  const char *fn = "pfrt_broadcast";
  const Group &g = groupFor(ranks, n, fn);
  checkCount(count, fn);
  checkBuf(buf, count, "buf", fn);
  int rootPos = rootPosition(ranks, n, root, fn);
  if (count > 0) {
    check(gNccl.api.ncclBroadcast(buf, buf, size_t(count), ncclFloat32, rootPos,
                                  g.comm, stream()),
          "ncclBroadcast", fn);
    pollAsync(g, fn);
  }
  return 0;
}

int reduceSum(const float *in, float *out, int64_t count, int64_t root,
              const int64_t *ranks, int64_t n) {
  const char *fn = "pfrt_reduce_sum";
  const Group &g = groupFor(ranks, n, fn);
  checkCount(count, fn);
  int rootPos = rootPosition(ranks, n, root, fn);
  bool isRoot = rootPos == g.pos;
  checkBuf(in, count, "in", fn);
  if (isRoot) {
    checkBuf(out, count, "out (on the root)", fn);
    if (in != out)
      checkNoOverlap(in, count, out, count, fn);
  }
  if (count > 0) {
    check(gNccl.api.ncclReduce(in, isRoot ? out : nullptr, size_t(count),
                               ncclFloat32, ncclSum, rootPos, g.comm, stream()),
          "ncclReduce", fn);
    pollAsync(g, fn);
  }
  return 0;
}

int allToAll(const float *in, float *out, int64_t count, const int64_t *ranks,
             int64_t n) {
  const char *fn = "pfrt_all_to_all";
  const Group &g = groupFor(ranks, n, fn);
  checkCount(count, fn);
  int64_t total = blocks(n, count, fn);
  checkBuf(in, total, "in", fn);
  checkBuf(out, total, "out", fn);
  checkNoOverlap(in, total, out, total, fn);
  if (count == 0)
    return 0;
  cudaStream_t s = stream();
  check(gNccl.api.ncclGroupStart(), "ncclGroupStart", fn);
  for (int64_t p = 0; p < n; ++p) {
    check(gNccl.api.ncclSend(in + p * count, size_t(count), ncclFloat32, int(p),
                             g.comm, s),
          "ncclSend", fn);
    check(gNccl.api.ncclRecv(out + p * count, size_t(count), ncclFloat32,
                             int(p), g.comm, s),
          "ncclRecv", fn);
  }
  check(gNccl.api.ncclGroupEnd(), "ncclGroupEnd", fn);
  pollAsync(g, fn);
  return 0;
}

//===----------------------------------------------------------------------===//
// Point to point
//===----------------------------------------------------------------------===//

namespace {

struct Message {
  int64_t tag, count;
  bool operator==(const Message &o) const {
    return tag == o.tag && count == o.count;
  }
};

struct PeerRecord {
  std::vector<Message> sends, recvs;
};

/// A pair's two communicators (this rank's sends, the peer's sends) and
/// the stream this rank's sends to the peer wait on.
struct Link {
  ncclComm_t out = nullptr, in = nullptr;
  int peerPos = 0; // the peer's position in both
  void *stream = nullptr;
  bool pending = false; // sends not joined to the compute stream yet
};

constexpr int64_t kMaxRecorded = int64_t(1) << 20;

struct PointToPoint {
  bool recording = true, overflow = false, over = false;
  std::map<int64_t, PeerRecord> records;
  std::map<int64_t, Link> links;
  void *fork = nullptr;
  std::vector<void *> done; // events; reused after each joinSends
  size_t nextDone = 0;
  /// Tracked sends since the last joinSends, by handle: numbered from 0
  /// like the host row's (the compiler waits for handle k of the step).
  std::vector<void *> tracked;
  MPI_Comm comm = MPI_COMM_NULL;
} gP2P;

void *doneEvent() {
  PointToPoint &p = gP2P;
  if (p.nextDone == p.done.size())
    p.done.push_back(cuda::newEvent("pfrt point-to-point over NCCL"));
  return p.done[p.nextDone++];
}

std::string describe(const std::vector<Message> &m, size_t k) {
  if (k >= m.size())
    return "nothing";
  return std::to_string(m[k].count) + " floats (tag " +
         std::to_string(m[k].tag) + ")";
}

/// Where rank `a`'s messages to `b` (sent) and b's from a (received)
/// first differ, or "" when they agree.
std::string firstDifference(int64_t a, const std::vector<Message> &sent,
                            int64_t b, const std::vector<Message> &received) {
  for (size_t k = 0; k < std::max(sent.size(), received.size()); ++k)
    if (k >= sent.size() || k >= received.size() || !(sent[k] == received[k]))
      return "message " + std::to_string(k) + " from rank " +
             std::to_string(a) + " to rank " + std::to_string(b) + ": rank " +
             std::to_string(a) + " sends " + describe(sent, k) + ", rank " +
             std::to_string(b) + " receives " + describe(received, k);
  return "";
}

std::vector<int64_t> flatten(const PeerRecord &r, bool usable) {
  std::vector<int64_t> v = {usable ? 1 : 0, hostKey(), deviceKey(),
                            int64_t(r.sends.size()), int64_t(r.recvs.size())};
  for (const auto *list : {&r.sends, &r.recvs})
    for (const Message &m : *list)
      v.insert(v.end(), {m.tag, m.count});
  return v;
}

PeerRecord unflatten(const std::vector<int64_t> &v) {
  PeerRecord r;
  size_t k = 5;
  for (int64_t i = 0; i < v[3]; ++i, k += 2)
    r.sends.push_back({v[k], v[k + 1]});
  for (int64_t i = 0; i < v[4]; ++i, k += 2)
    r.recvs.push_back({v[k], v[k + 1]});
  return r;
}

void exchange(std::vector<int64_t> &mine, std::vector<int64_t> &theirs,
              int64_t peer) {
  const char *fn = "pfrt point-to-point setup";
  int64_t n = int64_t(mine.size()), m = 0;
  PFRT_MPI_AS(fn, MPI_Sendrecv,
              (&n, 1, MPI_INT64_T, int(peer), 1, &m, 1, MPI_INT64_T, int(peer),
               1, gP2P.comm, MPI_STATUS_IGNORE));
  theirs.assign(size_t(m), 0);
  PFRT_MPI_AS(fn, MPI_Sendrecv,
              (mine.data(), int(n), MPI_INT64_T, int(peer), 2, theirs.data(),
               int(m), MPI_INT64_T, int(peer), 2, gP2P.comm,
               MPI_STATUS_IGNORE));
}

/// One communicator of the pair {me, peer}, its id made by the lower rank.
ncclComm_t pairComm(int64_t me, int64_t peer, const char *fn) {
  int64_t lo = std::min(me, peer), hi = std::max(me, peer);
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  if (me == lo) {
    check(gNccl.api.ncclGetUniqueId(&id), "ncclGetUniqueId", fn);
    PFRT_MPI_AS(fn, MPI_Send,
                (&id, int(sizeof(id)), MPI_BYTE, int(peer), 3, gP2P.comm));
  } else {
    PFRT_MPI_AS(fn, MPI_Recv,
                (&id, int(sizeof(id)), MPI_BYTE, int(peer), 3, gP2P.comm,
                 MPI_STATUS_IGNORE));
  }
  if (gNccl.emulated) {
    int64_t pair[2] = {lo, hi};
    fake::ncclNextGroup(pair, 2);
  }
  ncclComm_t c = nullptr;
  check(gNccl.api.ncclCommInitRank(&c, 2, id, me == lo ? 0 : 1),
        "ncclCommInitRank", fn);
  watch(c, "the point-to-point pair of ranks " + std::to_string(lo) + " and " +
               std::to_string(hi));
  return c;
}

Link &linkTo(int64_t peer, int64_t count, const void *buf, const char *fn) {
  checkCount(count, fn);
  checkBuf(buf, count, "buf", fn);
  auto it = gP2P.links.find(peer);
  if (it == gP2P.links.end())
    fatal("%s: rank %lld is not a peer of this rank's point-to-point over "
          "NCCL (the first step exchanged nothing with it; the steps must "
          "exchange the same messages)",
          fn, (long long)peer);
  return it->second;
}

} // namespace

void recordPointToPoint(bool isSend, int64_t peer, int64_t tag, int64_t count) {
  PointToPoint &p = gP2P;
  if (!p.recording)
    return;
  PeerRecord &r = p.records[peer];
  if (int64_t(r.sends.size() + r.recvs.size()) >= kMaxRecorded) {
    p.overflow = true;
    return;
  }
  (isSend ? r.sends : r.recvs).push_back({tag, count});
}

bool setupPointToPoint() {
  PointToPoint &p = gP2P;
  const char *fn = "pfrt point-to-point setup";
  if (!p.recording)
    return p.over;
  p.recording = false;
  int64_t me = pfrt_rank();
  if (pfrt_world_size() == 1)
    return false;
  // Every rank comes here (the end of its first step), whatever it has.
  PFRT_MPI_AS(fn, MPI_Comm_dup, (worldComm(), &p.comm));
  bool usable = gNccl.available && !p.overflow && !p.records.count(me);
  std::string why;
  if (!gNccl.available)
    why = "NCCL is not loaded";
  else if (p.overflow)
    why = "more than 2^20 messages a step";
  else if (p.records.count(me))
    why = "rank " + std::to_string(me) + " sends to itself";
  bool ordered = true, ok = usable;
  for (auto &[peer, record] : p.records) {
    if (peer == me)
      continue;
    std::vector<int64_t> mine = flatten(record, usable), theirs;
    exchange(mine, theirs, peer);
    PeerRecord other = unflatten(theirs);
    if (theirs[0] == 0) {
      ok = false;
      if (why.empty())
        why = "rank " + std::to_string(peer) + " cannot use NCCL";
      continue;
    }
    if (theirs[1] == mine[1] && theirs[2] == mine[2]) {
      ok = false;
      if (why.empty())
        why = "ranks " + std::to_string(me) + " and " + std::to_string(peer) +
              " share a GPU";
    }
    std::string d = firstDifference(me, record.sends, peer, other.recvs);
    if (d.empty())
      d = firstDifference(peer, other.sends, me, record.recvs);
    if (!d.empty()) {
      ok = ordered = false;
      why = "the ranks post their messages in different orders (" + d + ")";
    }
  }
  int mineOk = ok ? 1 : 0, allOk = 0;
  PFRT_MPI_AS(fn, MPI_Allreduce,
              (&mineOk, &allOk, 1, MPI_INT, MPI_MIN, p.comm));
  if (!allOk) {
    p.records.clear();
    if (!ok && gNccl.forced)
      fatal("PFRT_CUDA_COMM=nccl, but point-to-point cannot go over NCCL: "
            "%s",
            why.c_str());
    if (!ordered)
      std::fprintf(stderr,
                   "pfrt: rank %lld: point-to-point stays host-staged: %s "
                   "(NCCL matches a pair's messages in order, not by tag)\n",
                   (long long)me, why.c_str());
    else if (verbose() && !ok)
      std::fprintf(stderr,
                   "pfrt: rank %lld: point-to-point stays host-staged: %s\n",
                   (long long)me, why.c_str());
    return false;
  }
  size_t sends = 0;
  for (auto &[peer, record] : p.records) {
    Link &l = p.links[peer];
    // Both ranks of a pair make its communicators in the same order: the
    // lower rank's sends first.
    ncclComm_t lowToHigh = pairComm(me, peer, fn);
    ncclComm_t highToLow = pairComm(me, peer, fn);
    l.out = me < peer ? lowToHigh : highToLow;
    l.in = me < peer ? highToLow : lowToHigh;
    l.peerPos = me < peer ? 1 : 0;
    l.stream = cuda::newStream(fn);
    sends += record.sends.size();
  }
  p.fork = cuda::newEvent(fn);
  // The done events a step needs, made now (not inside a capture).
  for (size_t k = 0; k < sends + p.links.size() + 1; ++k)
    p.done.push_back(cuda::newEvent(fn));
  p.records.clear();
  p.over = true;
  if (verbose() && !p.links.empty())
    std::fprintf(stderr,
                 "pfrt: rank %lld: point-to-point over NCCL with %zu peer%s\n",
                 (long long)me, p.links.size(), p.links.size() == 1 ? "" : "s");
  return true;
}

bool pointToPointOverNccl(int64_t) {
  // Every message once the setup moved the job (a peer the first step did
  // not message is an error in linkTo: mixing the transports could wait on
  // the host for a stream that waits on a peer).
  return gP2P.over;
}

void *send(const float *buf, int64_t count, int64_t peer, int64_t,
           const char *fn) {
  Link &l = linkTo(peer, count, buf, fn);
  if (count == 0)
    return nullptr; // (the receiver skips it too: the records agreed)
  cuda::recordEvent(gP2P.fork, cuda::computeStream());
  cuda::streamWaitEvent(l.stream, gP2P.fork);
  check(gNccl.api.ncclSend(buf, size_t(count), ncclFloat32, l.peerPos, l.out,
                           static_cast<cudaStream_t>(l.stream)),
        "ncclSend", fn);
  l.pending = true;
  Group g;
  g.comm = l.out;
  pollAsync(g, fn);
  void *done = doneEvent();
  cuda::recordEvent(done, l.stream);
  return done;
}

void waitFor(void *done) {
  if (done)
    cuda::streamWaitEvent(cuda::computeStream(), done);
}

int64_t track(void *done) {
  gP2P.tracked.push_back(done);
  return int64_t(gP2P.tracked.size()) - 1;
}

bool ownsHandle(int64_t) { return gP2P.over; }

void waitSend(int64_t handle) {
  if (handle < 0 || handle >= int64_t(gP2P.tracked.size()))
    fatal("pfrt_wait_send: no pending send has handle %lld (point-to-point "
          "over NCCL)",
          (long long)handle);
  waitFor(gP2P.tracked[size_t(handle)]);
}

void recv(float *buf, int64_t count, int64_t peer, int64_t, const char *fn) {
  Link &l = linkTo(peer, count, buf, fn);
  if (count == 0)
    return;
  check(gNccl.api.ncclRecv(buf, size_t(count), ncclFloat32, l.peerPos, l.in,
                           static_cast<cudaStream_t>(cuda::computeStream())),
        "ncclRecv", fn);
  Group g;
  g.comm = l.in;
  pollAsync(g, fn);
}

void groupBegin() {
  check(gNccl.api.ncclGroupStart(), "ncclGroupStart", "pfrt_cuda_p2p_batch");
}

void groupEnd() {
  check(gNccl.api.ncclGroupEnd(), "ncclGroupEnd", "pfrt_cuda_p2p_batch");
}

void joinSends() {
  PointToPoint &p = gP2P;
  if (!p.over)
    return;
  void *compute = cuda::computeStream();
  for (auto &[peer, l] : p.links)
    if (l.pending) {
      void *done = doneEvent();
      cuda::recordEvent(done, l.stream);
      cuda::streamWaitEvent(compute, done);
      l.pending = false;
    }
  p.tracked.clear();
  p.nextDone = 0;
  if (gNccl.emulated)
    fake::ncclDrainSends();
}

} // namespace nccl
} // namespace pfrt

#else // PFRT_CUDA_NO_NCCL: built without nccl.h

#include "../common/Internal.h"
#include "CudaInternal.h"

#include <cstdlib>
#include <cstring>

namespace pfrt {
namespace cuda {
void stopCollectives() {}
void configureCollectives() {
  const char *env = std::getenv("PFRT_CUDA_COMM");
  if (env && std::strcmp(env, "nccl") == 0)
    fatal("PFRT_CUDA_COMM=nccl, but libpfrt was built without NCCL (no "
          "nccl.h at configure time)");
  if (env && *env && std::strcmp(env, "staged") != 0)
    fatal("PFRT_CUDA_COMM=%s: expected nccl or staged", env);
}
} // namespace cuda
namespace nccl {
void makeGroups(const std::vector<std::vector<int64_t>> &, const char *) {}
bool useNccl(const int64_t *, int64_t, const char *) { return false; }
int allReduceSum(const float *, float *, int64_t, const int64_t *, int64_t) {
  fatal("internal: NCCL all-reduce without NCCL");
}
int allReduceStart(const float *, float *, int64_t, const int64_t *, int64_t,
                   int64_t) {
  fatal("internal: NCCL all-reduce without NCCL");
}
void allReduceWait(int64_t) { fatal("internal: NCCL all-reduce without NCCL"); }
int allGather(const float *, float *, int64_t, const int64_t *, int64_t) {
  fatal("internal: NCCL all-gather without NCCL");
}
int reduceScatterSum(const float *, float *, int64_t, const int64_t *,
                     int64_t) {
  fatal("internal: NCCL reduce-scatter without NCCL");
}
int broadcast(float *, int64_t, int64_t, const int64_t *, int64_t) {
  fatal("internal: NCCL broadcast without NCCL");
}
int reduceSum(const float *, float *, int64_t, int64_t, const int64_t *,
              int64_t) {
  fatal("internal: NCCL reduce without NCCL");
}
int allToAll(const float *, float *, int64_t, const int64_t *, int64_t) {
  fatal("internal: NCCL all-to-all without NCCL");
}
void recordPointToPoint(bool, int64_t, int64_t, int64_t) {}
bool setupPointToPoint() { return false; }
bool pointToPointOverNccl(int64_t) { return false; }
void *send(const float *, int64_t, int64_t, int64_t, const char *) {
  fatal("internal: NCCL send without NCCL");
}
void waitFor(void *) {}
int64_t track(void *) { return 0; }
bool ownsHandle(int64_t) { return false; }
void waitSend(int64_t) {}
void recv(float *, int64_t, int64_t, int64_t, const char *) {
  fatal("internal: NCCL receive without NCCL");
}
void groupBegin() {}
void groupEnd() {}
void joinSends() {}
} // namespace nccl
} // namespace pfrt

#endif // PFRT_CUDA_NO_NCCL
