//===- NcclComm.h - the NCCL transport of the collective twins -*- C++ -*-===//
//
// Not installed; nothing here is part of the ABI. StagedComm.cpp's
// collective twins ask useNccl first and, where it says so, call the NCCL
// implementation below instead of staging through the host.
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_CUDA_NCCLCOMM_H
#define PFRT_SRC_CUDA_NCCLCOMM_H

#include <array>
#include <cstdint>
#include <vector>

namespace pfrt {
namespace nccl {

/// Start-up (pfrt_cuda_comm_groups), always a call of every rank (it
/// agrees over MPI on whether NCCL serves every rank: fatal if only some,
/// and on which ranks share a GPU): the job's groups, the same validated
/// table everywhere. Where NCCL (2.18 on) serves every rank and no two
/// ranks share a GPU, NCCL's unique id is broadcast over MPI, the world
/// communicator made, each group's communicator split from it
/// (ncclCommSplit; disjoint groups in one split) and the world's destroyed.
/// Otherwise useNccl makes each group's (or stages it) at its first
/// collective.
void makeGroups(const std::vector<std::vector<int64_t>> &groups,
                const char *fn);

/// Whether the collectives of group (ranks, n) go over NCCL. On a group's
/// first collective (under NCCL) this validates the group like the host
/// rows, checks that its members use distinct devices and creates its NCCL
/// communicator: a collective call of the members. False for a malformed
/// group (the host row then fails with its own error).
bool useNccl(const int64_t *ranks, int64_t n, const char *fn);

/// The twins on NCCL, enqueued on the compute stream (capturable). Same
/// arguments and argument errors as the host rows (pfrt.h).
int allReduceSum(const float *in, float *out, int64_t count,
                 const int64_t *ranks, int64_t n);
/// The split all-reduce (pfrt_cuda_all_reduce_start/wait): the start
/// enqueues the sum on the all-reduce stream after the compute stream's
/// work so far and records the slot's event; the wait makes the compute
/// stream wait for that event. The slot is checked by the caller.
int allReduceStart(const float *in, float *out, int64_t count,
                   const int64_t *ranks, int64_t n, int64_t slot);
void allReduceWait(int64_t slot);
/// allReduceSum and allReduceStart of PFRT_DTYPE_BF16 or PFRT_DTYPE_F16
/// elements (ncclBfloat16, ncclFloat16).
int allReduceSumHalves(const void *in, void *out, int64_t count, int32_t dtype,
                       const int64_t *ranks, int64_t n);
int allReduceStartHalves(const void *in, void *out, int64_t count,
                         int32_t dtype, const int64_t *ranks, int64_t n,
                         int64_t slot);
int allGather(const float *in, float *out, int64_t count, const int64_t *ranks,
              int64_t n);
int reduceScatterSum(const float *in, float *out, int64_t count,
                     const int64_t *ranks, int64_t n);
int broadcast(float *buf, int64_t count, int64_t root, const int64_t *ranks,
              int64_t n);
int reduceSum(const float *in, float *out, int64_t count, int64_t root,
              const int64_t *ranks, int64_t n);
/// NCCL has no all-to-all: one group of a send and a receive per member
/// (itself included) on the group's communicator. Every member posts the
/// same calls in the same order, so NCCL's in-order matching is the host
/// row's.
int allToAll(const float *in, float *out, int64_t count, const int64_t *ranks,
             int64_t n);

/// Boxing's collectives on whole blocks (DeviceBoxing.cpp checked the
/// arguments as the host rows do and repacks around them): all-gather and
/// all-to-all move `blockBytes` bytes a member as bytes (any dtype's bits,
/// ncclUint8), reduce-scatter sums `count` elements a member of f32, bf16
/// or f16. Enqueued on the compute stream (capturable) with the group's
/// communicator, and counted (CommCounters.h).
void allGatherBytes(const void *in, void *out, int64_t blockBytes,
                    const int64_t *ranks, int64_t n, const char *fn);
void reduceScatterOf(const void *in, void *out, int64_t count, int32_t dtype,
                     const int64_t *ranks, int64_t n, const char *fn);
void allToAllBytes(const void *in, void *out, int64_t blockBytes,
                   const int64_t *ranks, int64_t n, const char *fn);

/// broadcast and reduceSum of `count` elements of `dtype` (the _dtype
/// rows, arguments checked as the host rows check them): a broadcast in
/// the dtype's NCCL type (any pfrt dtype), a reduce's sum of f32, bf16 or
/// f16. Enqueued on the compute stream, counted.
void broadcastOf(void *buf, int64_t count, int32_t dtype, int64_t root,
                 const int64_t *ranks, int64_t n, const char *fn);
void reduceSumOf(const void *in, void *out, int64_t count, int32_t dtype,
                 int64_t root, const int64_t *ranks, int64_t n, const char *fn);

/// The vocabulary-parallel cross-entropy's all-reduces, in place on
/// device buffers (DeviceVocabXent.cpp checked the arguments as the host
/// row does): `count` floats' max (ncclMax), `count` doubles' sum
/// (ncclFloat64). Enqueued on the compute stream, counted as all-reduces.
void allReduceMaxF32(float *buf, int64_t count, const int64_t *ranks, int64_t n,
                     const char *fn);
void allReduceSumF64(double *buf, int64_t count, const int64_t *ranks,
                     int64_t n, const char *fn);

/// Point to point (see Nccl.cpp's file comment). The staged twins record
/// each message while point-to-point is host-staged (the first step);
/// after it, pfrt_cuda_run_step calls setupPointToPoint, a call of every
/// rank, which moves every rank's point-to-point to NCCL when the ranks'
/// records agree and each pair has two devices; false if it stays staged.
void recordPointToPoint(bool isSend, int64_t peer, int64_t tag, int64_t count);
bool setupPointToPoint();
/// pfrt_cuda_p2p_plan's (validated) messages {peer, is send, tag, count}:
/// the setup at start-up, on them in place of the first step's record (a
/// call of every rank); then each message a step posts over NCCL is
/// checked against them. False if point-to-point stays host-staged.
bool planPointToPoint(const std::vector<std::array<int64_t, 4>> &messages);
/// Whether messages to and from `peer` go over NCCL (after the setup: then
/// all of them do, and a peer the first step did not message is an error).
bool pointToPointOverNccl(int64_t peer);
/// The twins over NCCL: a send waits on a stream of its peer's own, so it
/// never holds the compute stream; it returns an event marking its end
/// (null for nothing sent): waitFor makes the compute stream wait for it
/// (a blocking send, a batch), track makes it a handle for waitSend (the
/// handles of a step number its tracked sends from 0, as the host row's).
/// ownsHandle: point-to-point is over NCCL, so every handle is NCCL's.
void *send(const float *buf, int64_t count, int64_t peer, int64_t tag,
           const char *fn);
void waitFor(void *done);
int64_t track(void *done);
bool ownsHandle(int64_t handle);
void waitSend(int64_t handle);
/// Receives on the compute stream; between recvBegin and recvEnd they are
/// one NCCL group (the receives of one batch).
void recv(float *buf, int64_t count, int64_t peer, int64_t tag, const char *fn);
void groupBegin();
void groupEnd();
/// Makes the compute stream wait for every send so far (pfrt_wait_sends,
/// and the end of each step: a capture must join its streams).
void joinSends();

/// Whether a staged call other than point-to-point ran (StagedComm.cpp):
/// then the steps stay uncaptured even with point-to-point over NCCL.
bool stagedBesidesPointToPoint();

} // namespace nccl
} // namespace pfrt

#endif // PFRT_SRC_CUDA_NCCLCOMM_H
