//===- FakeNccl.cpp - a host emulation of NCCL's collectives --------------===//
//
// See FakeNccl.h.
//
//===----------------------------------------------------------------------===//

#include "FakeNccl.h"

#include "../../common/CommCounters.h"
#include "../../common/Internal.h"
#include "../../common/LogicalMath.h"
#include "../../mpi/MpiInternal.h"
#include "FakeDevice.h"
#include "pfrt/pfrt.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

namespace pfrt {
namespace fake {

namespace {

/// What an emulated unique id holds: a mark, the world rank that made it
/// and its count of ids made so far.
struct IdBody {
  char mark[16];
  int64_t root;
  int64_t serial;
};
constexpr char kMark[16] = "pfrt-fake-nccl";
static_assert(sizeof(IdBody) <= sizeof(ncclUniqueId), "id too small");

struct Comm {
  std::vector<int64_t> ranks; // world ranks by NCCL rank
  int pos = 0;
  MPI_Comm mpi = MPI_COMM_NULL; // its members, by position
};

/// Receives posted inside a group run at its end (ncclGroupEnd).
int gGroupDepth = 0;
std::vector<std::pair<CUstream, std::function<void()>>> gGroupRecvs;

struct PendingSend {
  MPI_Request request;
  std::vector<char> data;
};

/// The point-to-point types emulated (float32, and bytes: boxing moves any
/// dtype's bits as ncclUint8) and their MPI types; false for another.
bool p2pType(ncclDataType_t type, MPI_Datatype *mpi, size_t *size) {
  if (type == ncclFloat32) {
    *mpi = MPI_FLOAT;
    *size = sizeof(float);
    return true;
  }
  if (type == ncclUint8) {
    *mpi = MPI_UINT8_T;
    *size = 1;
    return true;
  }
  return false;
}
std::vector<std::unique_ptr<PendingSend>> gPendingSends;

/// The PFRT_DTYPE_* of an NCCL type a broadcast or reduce emulates
/// (ncclUint8: bytes, as PFRT_DTYPE_BOOL), or -1.
int32_t pfrtDtypeOf(ncclDataType_t type) {
  switch (type) {
  case ncclFloat32:
    return PFRT_DTYPE_F32;
  case ncclInt64:
    return PFRT_DTYPE_I64;
  case ncclInt32:
    return PFRT_DTYPE_I32;
  case ncclUint8:
    return PFRT_DTYPE_BOOL;
  case ncclBfloat16:
    return PFRT_DTYPE_BF16;
  case ncclFloat16:
    return PFRT_DTYPE_F16;
  default:
    return -1;
  }
}

std::vector<int64_t> gNextGroup;

bool failing() {
  const char *v = std::getenv("PFRT_CUDA_FAKE_NCCL_ERROR");
  return v && *v == '1';
}

Comm *asComm(ncclComm_t c) { return reinterpret_cast<Comm *>(c); }

/// The asynchronous error ncclCommGetAsyncError reports (every
/// communicator of this rank): set by a hanging collective.
std::atomic<int> gAsyncError{ncclSuccess};
std::atomic<int64_t> gCollectivesRun{0};

/// PFRT_CUDA_FAKE_NCCL_HANG=RANK:N: on world rank RANK, the N-th collective
/// to run (from 1) never finishes, as one whose peer's NCCL failed, and
/// the communicators report ncclRemoteError asynchronously: only the
/// watchdog can end the job then.
bool hangsNow() {
  int64_t n = ++gCollectivesRun;
  const char *v = std::getenv("PFRT_CUDA_FAKE_NCCL_HANG");
  if (!v || !*v)
    return false;
  long long rank = -1, at = -1;
  if (std::sscanf(v, "%lld:%lld", &rank, &at) != 2)
    fatal("PFRT_CUDA_FAKE_NCCL_HANG=%s: expected RANK:N", v);
  return rank == pfrt_rank() && at == n;
}

/// Enqueues `op` after checking what every emulated collective supports.
template <typename Op>
ncclResult_t collective(ncclDataType_t type, ncclRedOp_t red, ncclComm_t comm,
                        cudaStream_t stream, Op op) {
  if (!comm || type != ncclFloat32 || red != ncclSum)
    return ncclInvalidArgument;
  if (failing())
    return ncclSystemError;
  // On the caller's stream, so that a capture checks it like CUDA does (a
  // stream forked into the capture must join it again).
  CUresult r = enqueueHostOpOn(reinterpret_cast<CUstream>(stream), [op] {
    if (hangsNow()) {
      gAsyncError.store(ncclRemoteError);
      for (;;)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    // The NCCL twin counted the call: its host row here does not count.
    counters::Suppress emulated;
    op();
  });
  return r == CUDA_SUCCESS ? ncclSuccess : ncclInvalidUsage;
}

/// A libpfrt collective over a whole group: `count` floats of send into
/// recv (all-reduce, all-gather and reduce-scatter).
using GroupCollective = int (*)(const float *, float *, int64_t,
                                const int64_t *, int64_t);

/// `pfrtFn` over the communicator's ranks, as `collective` runs it.
ncclResult_t groupCollective(GroupCollective pfrtFn, const void *send,
                             void *recv, size_t count, ncclDataType_t type,
                             ncclRedOp_t red, ncclComm_t comm,
                             cudaStream_t stream) {
  return collective(type, red, comm, stream, [=] {
    const Comm &c = *asComm(comm);
    pfrtFn(static_cast<const float *>(send), static_cast<float *>(recv),
           int64_t(count), c.ranks.data(), int64_t(c.ranks.size()));
  });
}

} // namespace

void ncclNextGroup(const int64_t *ranks, int64_t n) {
  gNextGroup.assign(ranks, ranks + n);
}

const char *ncclGetErrorString(ncclResult_t r) {
  switch (r) {
  case ncclSuccess:
    return "no error (emulated)";
  case ncclSystemError:
    return "unhandled system error (emulated)";
  case ncclInvalidArgument:
    return "invalid argument (emulated)";
  case ncclInvalidUsage:
    return "invalid usage (emulated)";
  case ncclRemoteError:
    return "remote process exited or there was a network error (emulated)";
  default:
    return "error (emulated)";
  }
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  static int64_t serial = 0;
  if (!id)
    return ncclInvalidArgument;
  std::memset(id, 0, sizeof(*id));
  IdBody body;
  std::memcpy(body.mark, kMark, sizeof(kMark));
  body.root = pfrt_rank();
  body.serial = ++serial;
  std::memcpy(id->internal, &body, sizeof(body));
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id,
                              int rank) {
  IdBody body;
  std::memcpy(&body, id.internal, sizeof(body));
  std::vector<int64_t> ranks;
  ranks.swap(gNextGroup);
  if (!comm || std::memcmp(body.mark, kMark, sizeof(kMark)) != 0 ||
      nranks != int64_t(ranks.size()) || rank < 0 || rank >= nranks ||
      ranks[size_t(rank)] != pfrt_rank())
    return ncclInvalidArgument;
  // The id must come from one of the members, and every member must hold
  // the same one (what a broken id exchange would not give).
  if (std::find(ranks.begin(), ranks.end(), body.root) == ranks.end())
    return ncclInvalidUsage;
  int64_t mine[2] = {body.root, body.serial};
  std::vector<int64_t> all(size_t(2 * nranks));
  allGather(mine, all.data(), 2, MPI_INT64_T, sizeof(int64_t), ranks.data(),
            nranks, "ncclCommInitRank (emulated)", "nccl_init");
  for (int p = 0; p < nranks; ++p)
    if (all[size_t(2 * p)] != body.root ||
        all[size_t(2 * p + 1)] != body.serial)
      return ncclInvalidUsage;
  Comm *c = new Comm();
  c->ranks = std::move(ranks);
  c->pos = rank;
  {
    MPI_Group world, members;
    std::vector<int> asInt(c->ranks.begin(), c->ranks.end());
    PFRT_MPI_AS("ncclCommInitRank (emulated)", MPI_Comm_group,
                (worldComm(), &world));
    PFRT_MPI_AS("ncclCommInitRank (emulated)", MPI_Group_incl,
                (world, nranks, asInt.data(), &members));
    PFRT_MPI_AS("ncclCommInitRank (emulated)", MPI_Comm_create_group,
                (worldComm(), members, int(body.serial % 30000), &c->mpi));
    MPI_Group_free(&members);
    MPI_Group_free(&world);
  }
  *comm = reinterpret_cast<ncclComm_t>(c);
  return ncclSuccess;
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key,
                           ncclComm_t *newcomm, ncclConfig_t *config) {
  if (!comm || !newcomm || config || color < NCCL_SPLIT_NOCOLOR)
    return ncclInvalidArgument;
  *newcomm = nullptr;
  const Comm &parent = *asComm(comm);
  int64_t mine[2] = {color, key};
  size_t n = parent.ranks.size();
  std::vector<int64_t> all(2 * n);
  allGather(mine, all.data(), 2, MPI_INT64_T, sizeof(int64_t),
            parent.ranks.data(), int64_t(n), "ncclCommSplit (emulated)",
            "nccl_split");
  MPI_Comm mpi = MPI_COMM_NULL;
  PFRT_MPI_AS("ncclCommSplit (emulated)", MPI_Comm_split,
              (parent.mpi, color == NCCL_SPLIT_NOCOLOR ? MPI_UNDEFINED : color,
               key, &mpi));
  if (color == NCCL_SPLIT_NOCOLOR)
    return ncclSuccess;
  std::vector<size_t> members;
  for (size_t p = 0; p < n; ++p)
    if (all[2 * p] == color)
      members.push_back(p);
  std::sort(members.begin(), members.end(), [&](size_t a, size_t b) {
    return std::pair(all[2 * a + 1], a) < std::pair(all[2 * b + 1], b);
  });
  Comm *c = new Comm();
  for (size_t p : members) {
    if (p == size_t(parent.pos))
      c->pos = int(c->ranks.size());
    c->ranks.push_back(parent.ranks[p]);
  }
  c->mpi = mpi;
  *newcomm = reinterpret_cast<ncclComm_t>(c);
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (!comm)
    return ncclInvalidArgument;
  Comm *c = asComm(comm);
  if (c->mpi != MPI_COMM_NULL)
    MPI_Comm_free(&c->mpi);
  delete c;
  return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *error) {
  if (!comm || !error)
    return ncclInvalidArgument;
  *error = ncclResult_t(gAsyncError.load());
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  // Nothing to free: the emulated collectives run on the host thread.
  return comm ? ncclSuccess : ncclInvalidArgument;
}

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count,
                           ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream) {
  // bf16/f16: the host row's sum in that type (not NCCL's order).
  if (type == ncclBfloat16 || type == ncclFloat16) {
    int32_t dtype = type == ncclBfloat16 ? PFRT_DTYPE_BF16 : PFRT_DTYPE_F16;
    return collective(ncclFloat32, op, comm, stream, [=] {
      const Comm &c = *asComm(comm);
      pfrt_all_reduce_sum_dtype(send, recv, int64_t(count), dtype,
                                c.ranks.data(), int64_t(c.ranks.size()));
    });
  }
  // A float32 max or a float64 sum (the vocabulary cross-entropy's row
  // statistics): MPI_Allreduce over the communicator's members, as the host
  // row calls it.
  bool maxF32 = type == ncclFloat32 && op == ncclMax;
  if (maxF32 || (type == ncclFloat64 && op == ncclSum))
    return collective(ncclFloat32, ncclSum, comm, stream, [=] {
      const Comm &c = *asComm(comm);
      PFRT_MPI_AS("ncclAllReduce (emulated)", MPI_Allreduce,
                  (send == recv ? MPI_IN_PLACE : send, recv, int(count),
                   maxF32 ? MPI_FLOAT : MPI_DOUBLE, maxF32 ? MPI_MAX : MPI_SUM,
                   c.mpi));
    });
  return groupCollective(pfrt_all_reduce_sum, send, recv, count, type, op, comm,
                         stream);
}

ncclResult_t ncclAllGather(const void *send, void *recv, size_t count,
                           ncclDataType_t type, ncclComm_t comm,
                           cudaStream_t stream) {
  // Bytes (boxing's gathers of any dtype): the host rows' gather of them.
  if (type == ncclUint8)
    return collective(ncclFloat32, ncclSum, comm, stream, [=] {
      const Comm &c = *asComm(comm);
      allGather(send, recv, int64_t(count), MPI_UINT8_T, 1, c.ranks.data(),
                int64_t(c.ranks.size()), "ncclAllGather (emulated)",
                "all_gather");
    });
  return groupCollective(pfrt_all_gather, send, recv, count, type, ncclSum,
                         comm, stream);
}

ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t count,
                               ncclDataType_t type, ncclRedOp_t op,
                               ncclComm_t comm, cudaStream_t stream) {
  // bf16/f16: the host rows' sum in that type (not NCCL's order).
  if (type == ncclBfloat16 || type == ncclFloat16) {
    int32_t dtype = type == ncclBfloat16 ? PFRT_DTYPE_BF16 : PFRT_DTYPE_F16;
    return collective(ncclFloat32, op, comm, stream, [=] {
      const Comm &c = *asComm(comm);
      reduceScatterSum(send, recv, int64_t(count), dtype, c.ranks.data(),
                       int64_t(c.ranks.size()), "ncclReduceScatter (emulated)",
                       "reduce_scatter_sum");
    });
  }
  return groupCollective(pfrt_reduce_scatter_sum, send, recv, count, type, op,
                         comm, stream);
}

ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count,
                           ncclDataType_t type, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  if (comm && (root < 0 || root >= int(asComm(comm)->ranks.size())))
    return ncclInvalidArgument;
  // Any dtype's bits (f32, i64, i32, bytes, bf16, f16): the host row of
  // that dtype.
  int32_t dtype = pfrtDtypeOf(type);
  if (dtype < 0)
    return ncclInvalidArgument;
  return collective(ncclFloat32, ncclSum, comm, stream, [=] {
    const Comm &c = *asComm(comm);
    // NCCL reads the root's sendbuff and writes every recvbuff.
    if (c.pos == root && send != recv)
      std::memmove(recv, send, count * size_t(logical::dtypeBytes(dtype)));
    pfrt_broadcast_dtype(recv, int64_t(count), dtype, c.ranks[size_t(root)],
                         c.ranks.data(), int64_t(c.ranks.size()));
  });
}

ncclResult_t ncclReduce(const void *send, void *recv, size_t count,
                        ncclDataType_t type, ncclRedOp_t op, int root,
                        ncclComm_t comm, cudaStream_t stream) {
  if (comm && (root < 0 || root >= int(asComm(comm)->ranks.size())))
    return ncclInvalidArgument;
  // f32, bf16 or f16 sums: the host row's sum in that type (not NCCL's
  // order).
  if (type != ncclFloat32 && type != ncclBfloat16 && type != ncclFloat16)
    return ncclInvalidArgument;
  int32_t dtype = pfrtDtypeOf(type);
  return collective(ncclFloat32, op, comm, stream, [=] {
    const Comm &c = *asComm(comm);
    pfrt_reduce_sum_dtype(send, c.pos == root ? recv : nullptr, int64_t(count),
                          dtype, c.ranks[size_t(root)], c.ranks.data(),
                          int64_t(c.ranks.size()));
  });
}

ncclResult_t ncclSend(const void *buf, size_t count, ncclDataType_t type,
                      int peer, ncclComm_t comm, cudaStream_t stream) {
  MPI_Datatype mpiType;
  size_t size;
  if (!comm || !p2pType(type, &mpiType, &size) || peer < 0 ||
      peer >= int(asComm(comm)->ranks.size()))
    return ncclInvalidArgument;
  CUresult r = enqueueHostOpOn(reinterpret_cast<CUstream>(stream), [=] {
    const Comm &c = *asComm(comm);
    auto *s = new PendingSend();
    const char *b = static_cast<const char *>(buf);
    s->data.assign(b, b + count * size);
    PFRT_MPI_AS(
        "ncclSend (emulated)", MPI_Isend,
        (s->data.data(), int(count), mpiType, peer, 0, c.mpi, &s->request));
    gPendingSends.emplace_back(s);
  });
  return r == CUDA_SUCCESS ? ncclSuccess : ncclInvalidUsage;
}

ncclResult_t ncclRecv(void *buf, size_t count, ncclDataType_t type, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  MPI_Datatype mpiType;
  size_t size;
  if (!comm || !p2pType(type, &mpiType, &size) || peer < 0 ||
      peer >= int(asComm(comm)->ranks.size()))
    return ncclInvalidArgument;
  auto recv = [=] {
    const Comm &c = *asComm(comm);
    MPI_Status st;
    PFRT_MPI_AS("ncclRecv (emulated)", MPI_Recv,
                (buf, int(count), mpiType, peer, 0, c.mpi, &st));
    int got = 0;
    MPI_Get_count(&st, mpiType, &got);
    if (size_t(got) != count)
      fatal("ncclRecv (emulated): %zu elements expected from rank %lld, %d "
            "sent (NCCL would hang or corrupt memory)",
            count, (long long)c.ranks[size_t(peer)], got);
  };
  if (gGroupDepth > 0) {
    gGroupRecvs.emplace_back(reinterpret_cast<CUstream>(stream), recv);
    return ncclSuccess;
  }
  CUresult r = enqueueHostOpOn(reinterpret_cast<CUstream>(stream), recv);
  return r == CUDA_SUCCESS ? ncclSuccess : ncclInvalidUsage;
}

ncclResult_t ncclGroupStart() {
  ++gGroupDepth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  if (gGroupDepth == 0)
    return ncclInvalidUsage;
  if (--gGroupDepth > 0)
    return ncclSuccess;
  std::vector<std::pair<CUstream, std::function<void()>>> recvs;
  recvs.swap(gGroupRecvs);
  for (auto &[s, recv] : recvs)
    if (enqueueHostOpOn(s, recv) != CUDA_SUCCESS)
      return ncclInvalidUsage;
  return ncclSuccess;
}

void ncclDrainSends() {
  enqueueHostOp([] {
    for (auto &s : gPendingSends)
      PFRT_MPI_AS("ncclSend (emulated)", MPI_Wait,
                  (&s->request, MPI_STATUS_IGNORE));
    gPendingSends.clear();
  });
}

} // namespace fake
} // namespace pfrt
