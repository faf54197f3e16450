//===- Nccl.cpp - the NCCL transport of the collective twins --------------===//
//
// libnccl.so.2 is dlopen'ed like the CUDA libraries (same search, never
// linked); with PFRT_CUDA_FAKE=1 emulation/FakeNccl.cpp's emulation stands
// in for it. This file loads NCCL, chooses the transport, watches the
// communicators and makes each group's; NcclCollectives.cpp enqueues the
// collectives and NcclP2P.cpp point to point (NcclInternal.h).
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
// tags and matches a pair's messages in order, so the ranks compare their
// messages pairwise before any goes over NCCL: at start-up from the plans
// compiled ranks hand pfrt_cuda_p2p_plan (every step over NCCL, the first
// included), else at the end of a host-staged first step that records them
// (NcclP2P.cpp's file comment).
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
#include "NcclInternal.h"

#include "../common/CommChecks.h"
#include "../common/CommCounters.h"
#include "../common/Internal.h"
#include "../mpi/MpiInternal.h"
#include "CudaInternal.h"
#include "emulation/FakeDevice.h"
#include "emulation/FakeNccl.h"
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

using namespace pfrt;
using namespace pfrt::nccl::impl;

namespace pfrt {
namespace nccl {
namespace impl {

NcclState gNccl;

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

namespace {

/// libnccl.so.2 cannot serve (`why`): fatal where PFRT_CUDA_COMM=nccl
/// asked for it (`forcedWhy` after "but"), else the collectives stay
/// host-staged.
void withoutNccl(bool forced, const std::string &forcedWhy,
                 const std::string &why) {
  if (forced)
    fatal("PFRT_CUDA_COMM=nccl, but %s", forcedWhy.c_str());
  sayOnRankZero("host-staged (" + why + ")");
}

} // namespace

void check(ncclResult_t r, const char *call, const char *fn) {
  if (r == ncclSuccess)
    return;
  const char *text =
      gNccl.api.ncclGetErrorString ? gNccl.api.ncclGetErrorString(r) : nullptr;
  fatal("%s: %s failed: %s (ncclResult %d)", fn, call,
        text ? text : "unknown NCCL error", int(r));
}

} // namespace impl
} // namespace nccl
} // namespace pfrt

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

namespace {

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

} // namespace

namespace pfrt {
namespace nccl {
namespace impl {

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

} // namespace impl
} // namespace nccl
} // namespace pfrt

namespace {

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

/// Keeps the new group's state, saying how its collectives run (`note`,
/// once, at its first member) when verbose.
const Group &keepGroup(std::vector<int64_t> key, const Group &g,
                       const std::string &note) {
  if (verbose() && g.pos == 0)
    std::fprintf(stderr, "pfrt: rank %d: CUDA collectives: %s\n", pfrt_rank(),
                 note.c_str());
  return gNccl.groups.emplace(std::move(key), g).first->second;
}

/// The group's state, creating its communicator on first use (see the

} // namespace

namespace pfrt {
namespace nccl {
namespace impl {

const Group &groupFor(const int64_t *ranks, int64_t n, const char *fn) {
  std::vector<int64_t> key(ranks, ranks + n);
  auto it = gNccl.groups.find(key);
  if (it != gNccl.groups.end())
    return it->second;
  Group g;
  g.pos = groupPosition(ranks, n, fn); // the host rows' checks and errors
  counters::Suppress setup;            // set-up traffic: not counted
  // Which device each member uses: NCCL refuses two ranks on one.
  int64_t mine[2] = {hostKey(), deviceKey()};
  std::vector<int64_t> all(size_t(2 * n));
  // (MPI, pfrt::allGather: the host rows' group gather.)
  pfrt::allGather(mine, all.data(), 2, MPI_INT64_T, sizeof(int64_t), ranks, n,
                  fn, "nccl_setup");
  int64_t p = 0, q = 0;
  if (sharedDevice(all, n, p, q)) {
    if (gNccl.forced)
      fatal("%s: PFRT_CUDA_COMM=nccl, but ranks %lld and %lld of group %s "
            "use the same GPU (one device UUID on one host) and NCCL needs "
            "a device per rank: run one rank per GPU or set "
            "PFRT_CUDA_COMM=staged",
            fn, (long long)ranks[p], (long long)ranks[q],
            groupString(ranks, n).c_str());
    return keepGroup(std::move(key), g,
                     "ranks of group " + groupString(ranks, n) +
                         " share a GPU: its collectives are host-staged");
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
  return keepGroup(std::move(key), g,
                   "NCCL communicator of group " + groupString(ranks, n) +
                       " made");
}

/// Which world ranks share a GPU: every rank's (host, device), gathered

} // namespace impl
} // namespace nccl
} // namespace pfrt

namespace {

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

} // namespace

namespace pfrt {
namespace nccl {
namespace impl {

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

} // namespace impl
} // namespace nccl
} // namespace pfrt

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
    withoutNccl(s.forced,
                "NCCL cannot be loaded (" + why +
                    "); set PFRT_CUDA_LIB_DIR to its directory",
                why);
    return;
  }
  if (!resolveAll(library, missing)) {
    withoutNccl(s.forced,
                "libnccl.so.2 lacks " + missing + " (too old an NCCL?)",
                "libnccl.so.2 lacks " + missing);
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
  counters::Suppress setup; // set-up traffic: not counted
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

} // namespace nccl
} // namespace pfrt
