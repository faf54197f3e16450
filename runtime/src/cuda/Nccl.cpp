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
//                          (each rank then pretends to have its own).
// Anything else in PFRT_CUDA_COMM is fatal. PFRT_CUDA_VERBOSE=1 prints the
// choice on rank 0.
//
// One NCCL communicator per distinct group (the ordered list of world
// ranks), created at the group's first collective by its members only:
// they exchange their (host, device) over MPI, the lowest world rank makes
// the unique id, pfrt_broadcast_i64 over the group's MPI communicator hands
// it to the others, then ncclCommInitRank(n, id, group position). The
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
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <map>
#include <string>
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
  X(ncclAllReduce)                                                             \
  X(ncclAllGather)                                                             \
  X(ncclReduceScatter)                                                         \
  X(ncclBroadcast)                                                             \
  X(ncclReduce)

struct Api {
#define PFRT_FIELD(fn) decltype(&::fn) fn = nullptr;
  PFRT_NCCL_FUNCTIONS(PFRT_FIELD)
#undef PFRT_FIELD
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

/// A hash of this host's name: ranks with equal (host, device) share a GPU.
int64_t hostKey() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  uint64_t h = 0xcbf29ce484222325ull;
  for (const char *c = name; *c; ++c)
    h = (h ^ uint64_t(uint8_t(*c))) * 0x100000001b3ull;
  return int64_t(h & 0x7fffffffffffffffull);
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
  return true;
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
  // The emulation under PFRT_CUDA_COMM=nccl pretends each rank has its own
  // device, unless PFRT_CUDA_FAKE_NCCL_SHARED=1 (the test of the error).
  const char *shared = std::getenv("PFRT_CUDA_FAKE_NCCL_SHARED");
  bool ownDevice =
      gNccl.emulated && gNccl.forced && !(shared && *shared == '1');
  int64_t mine[2] = {hostKey(), ownDevice ? int64_t(pfrt_rank())
                                          : int64_t(cuda::deviceOrdinal())};
  std::vector<int64_t> all(size_t(2 * n));
  allGather(mine, all.data(), 2, MPI_INT64_T, sizeof(int64_t), ranks, n, fn,
            "nccl_setup");
  for (int64_t p = 0; p < n; ++p)
    for (int64_t q = p + 1; q < n; ++q)
      if (all[size_t(2 * p)] == all[size_t(2 * q)] &&
          all[size_t(2 * p + 1)] == all[size_t(2 * q + 1)]) {
        if (gNccl.forced)
          fatal("%s: PFRT_CUDA_COMM=nccl, but ranks %lld and %lld of group %s "
                "use the same GPU (device %lld of one host) and NCCL needs a "
                "device per rank: run one rank per GPU or set "
                "PFRT_CUDA_COMM=staged",
                fn, (long long)ranks[p], (long long)ranks[q],
                groupString(ranks, n).c_str(),
                (long long)all[size_t(2 * p + 1)]);
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
  if (verbose() && g.pos == 0)
    std::fprintf(stderr,
                 "pfrt: rank %d: CUDA collectives: NCCL communicator of group "
                 "%s made\n",
                 pfrt_rank(), groupString(ranks, n).c_str());
  return gNccl.groups.emplace(std::move(key), g).first->second;
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
    if (!s.forced) {
      sayOnRankZero("host-staged (the ranks share the one emulated device; "
                    "PFRT_CUDA_COMM=nccl emulates NCCL)");
      return;
    }
#define PFRT_FAKE(fn, symbol) s.api.fn = &fake::fn;
    PFRT_FAKE_NCCL_FUNCTIONS(PFRT_FAKE)
#undef PFRT_FAKE
    s.available = true;
    sayOnRankZero("NCCL, emulated on the host (PFRT_CUDA_FAKE=1, "
                  "PFRT_CUDA_COMM=nccl)");
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

bool useNccl(const int64_t *ranks, int64_t n, const char *fn) {
  if (!gNccl.available || !cuda::deviceReady() || !ranks || n < 1)
    return false;
  return groupFor(ranks, n, fn).nccl;
}

int allReduceSum(const float *in, float *out, int64_t count,
                 const int64_t *ranks, int64_t n) {
  const char *fn = "pfrt_all_reduce_sum";
  const Group &g = groupFor(ranks, n, fn);
  checkCount(count, fn);
  checkBuf(in, count, "in", fn);
  checkBuf(out, count, "out", fn);
  if (in != out)
    checkNoOverlap(in, count, out, count, fn);
  if (count > 0) {
    check(gNccl.api.ncclAllReduce(in, out, size_t(count), ncclFloat32, ncclSum,
                                  g.comm, stream()),
          "ncclAllReduce", fn);
    pollAsync(g, fn);
  }
  return 0;
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

} // namespace nccl
} // namespace pfrt

#else // PFRT_CUDA_NO_NCCL: built without nccl.h

#include "../common/Internal.h"
#include "CudaInternal.h"

#include <cstdlib>
#include <cstring>

namespace pfrt {
namespace cuda {
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
bool useNccl(const int64_t *, int64_t, const char *) { return false; }
int allReduceSum(const float *, float *, int64_t, const int64_t *, int64_t) {
  fatal("internal: NCCL all-reduce without NCCL");
}
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
} // namespace nccl
} // namespace pfrt

#endif // PFRT_CUDA_NO_NCCL
