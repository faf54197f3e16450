//===- FakeNccl.h - a host emulation of NCCL's collectives -----*- C++ -*-===//
//
// With PFRT_CUDA_FAKE=1 and PFRT_CUDA_COMM=nccl, Nccl.cpp takes the entry
// points below instead of libnccl's: a communicator is the list of its
// members' world ranks, and each collective is enqueued on the emulated
// stream (FakeDevice.h: run now, or recorded while a graph is captured and
// replayed at each launch) as the matching host row of libpfrt on the
// device buffers, which are host memory. It tests libpfrt's NCCL logic
// (groups, positions, roots, the id exchange, capture), not NCCL.
//
// ncclCommSplit is a call of the parent's members, as NCCL's: they
// exchange (color, key) over MPI, and the members of one color, ordered by
// key then parent rank, are the new communicator (MPI_Comm_split's order).
//
// PFRT_CUDA_FAKE_NCCL_ERROR=1 makes every emulated collective fail with
// ncclSystemError (the test of libpfrt's error path), and
// PFRT_CUDA_FAKE_NCCL_SHARED=1 has the ranks share their emulated device
// (Nccl.cpp: the test of the shared-device error).
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_CUDA_FAKENCCL_H
#define PFRT_SRC_CUDA_FAKENCCL_H

#include <mpi.h>
#include <nccl.h>

#include <cstdint>

namespace pfrt {
namespace fake {

#define PFRT_FAKE_NCCL_FUNCTIONS(X)                                            \
  X(ncclGetErrorString, "")                                                    \
  X(ncclGetUniqueId, "")                                                       \
  X(ncclCommInitRank, "")                                                      \
  X(ncclCommGetAsyncError, "")                                                 \
  X(ncclCommAbort, "")                                                         \
  X(ncclAllReduce, "")                                                         \
  X(ncclAllGather, "")                                                         \
  X(ncclReduceScatter, "")                                                     \
  X(ncclBroadcast, "")                                                         \
  X(ncclReduce, "")                                                            \
  X(ncclSend, "")                                                              \
  X(ncclRecv, "")                                                              \
  X(ncclGroupStart, "")                                                        \
  X(ncclGroupEnd, "")
#define PFRT_FAKE_DECLARE(fn, symbol) decltype(::fn) fn;
PFRT_FAKE_NCCL_FUNCTIONS(PFRT_FAKE_DECLARE)
#undef PFRT_FAKE_DECLARE

/// NCCL 2.18's, apart from the list (Nccl.cpp takes them as optional).
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key,
                           ncclComm_t *newcomm, ncclConfig_t *config);
ncclResult_t ncclCommDestroy(ncclComm_t comm);

/// The world ranks of the group whose communicator the next
/// ncclCommInitRank makes (Nccl.cpp says so just before; a real NCCL learns
/// them from its bootstrap, which the emulation has not).
void ncclNextGroup(const int64_t *ranks, int64_t n);

/// Point to point: each emulated communicator has an MPI communicator of
/// its members (made at ncclCommInitRank). A send copies its data when its
/// stream reaches it and posts an MPI_Isend; a receive is an MPI_Recv
/// then (inside a group, at the group's end, after its sends: a group's
/// send to itself is received there). ncclDrainSends enqueues the
/// completion of the sends posted so far (each step's end).
void ncclDrainSends();

} // namespace fake
} // namespace pfrt

#endif // PFRT_SRC_CUDA_FAKENCCL_H
