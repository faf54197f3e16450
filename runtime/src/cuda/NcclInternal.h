//===- NcclInternal.h - what the NCCL transport's files share --*- C++ -*-===//
//
// Not installed; nothing here is part of the ABI. The NCCL transport of the
// collective twins (NcclComm.h) in three files: Nccl.cpp (loading NCCL,
// choosing the transport, the watchdog, each group's communicator),
// NcclCollectives.cpp (the collectives) and NcclP2P.cpp (point to point).
// Built only where nccl.h was found at configure time (else NcclNone.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_CUDA_NCCLINTERNAL_H
#define PFRT_SRC_CUDA_NCCLINTERNAL_H

#include <nccl.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace pfrt {
namespace nccl {
namespace impl {

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

/// NCCL's entry points (dlopen'ed, or the emulation's).
struct Api {
#define PFRT_FIELD(fn) decltype(&::fn) fn = nullptr;
  PFRT_NCCL_FUNCTIONS(PFRT_FIELD)
#undef PFRT_FIELD
  // NCCL 2.18 on (optional: without them each group's communicator is made
  // at its first collective).
  decltype(&::ncclCommSplit) ncclCommSplit = nullptr;
  decltype(&::ncclCommDestroy) ncclCommDestroy = nullptr;
};

/// A group's transport: its communicator (when NCCL serves it) and this
/// rank's position in it.
struct Group {
  bool nccl = false;
  ncclComm_t comm = nullptr;
  int pos = 0;
};

/// The transport's state: whether NCCL is there (and forced, or emulated),
/// its entry points, and each group's communicator by its ranks.
struct NcclState {
  bool available = false; // NCCL's entry points are there (or emulated)
  bool forced = false;    // PFRT_CUDA_COMM=nccl
  bool emulated = false;  // PFRT_CUDA_FAKE=1
  Api api;
  std::map<std::vector<int64_t>, Group> groups;
};
extern NcclState gNccl;

/// PFRT_CUDA_VERBOSE=1.
bool verbose();
/// Says `what` on rank 0 under PFRT_CUDA_VERBOSE=1.
void sayOnRankZero(const std::string &what);
/// Fatal, naming `fn`, `call` and NCCL's error, unless r is ncclSuccess.
void check(ncclResult_t r, const char *call, const char *fn);

/// Watches `comm` (described as `what`: "group [0, 1]", "ranks 0 -> 1")
/// for asynchronous errors, starting the watchdog with the first one.
void watch(ncclComm_t comm, std::string what);
/// Stops and joins the watchdog (pfrt_finalize's first step; idempotent).
void stopWatchdog();

/// A hash of this host's name, and of the GPU this rank uses: ranks with
/// equal (host, device) share a GPU.
int64_t hostKey();
int64_t deviceKey();

/// The group's state, creating its communicator on first use (Nccl.cpp's
/// file comment).
const Group &groupFor(const int64_t *ranks, int64_t n, const char *fn);
/// After an enqueued collective: an error NCCL found asynchronously (on
/// another rank's failure, say) ends the job here.
void pollAsync(const Group &g, const char *fn);
/// The compute stream, as NCCL takes it.
cudaStream_t stream();

} // namespace impl
} // namespace nccl
} // namespace pfrt

#endif // PFRT_SRC_CUDA_NCCLINTERNAL_H
