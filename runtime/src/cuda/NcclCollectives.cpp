//===- NcclCollectives.cpp - the collective twins on NCCL -----------------===//
//
// NcclComm.h's collectives: the host rows' argument checks, then the NCCL
// call on the compute stream (capturable) with the group's communicator
// (Nccl.cpp makes it); the split all-reduce on a stream of its own, forked
// from and joined to the compute stream by events. NCCL has no all-to-all:
// one group of a send and a receive per member.
//
//===----------------------------------------------------------------------===//

#include "NcclAsync.h"
#include "NcclComm.h"
#include "NcclInternal.h"

#include "../common/CommChecks.h"
#include "../common/CommCounters.h"
#include "../common/Internal.h"
#include "../common/LogicalMath.h"
#include "CudaInternal.h"
#include "ExposedComm.h"
#include "pfrt/pfrt.h"

#include <nccl.h>

#include <cstdint>
#include <string>

using pfrt::comm::rootPosition;

using namespace pfrt;
using namespace pfrt::nccl::impl;

namespace {

using comm::checkBuf;
using comm::checkCount;

} // namespace

namespace pfrt {
namespace nccl {

namespace {
/// The group of an all-reduce over NCCL (blocking or split) after the host
/// row's argument checks.
const Group &allReduceGroup(const float *in, const float *out, int64_t count,
                            const int64_t *ranks, int64_t n, const char *fn) {
  const Group &g = groupFor(ranks, n, fn);
  comm::checkAllReduceBuffers(in, out, count, fn);
  return g;
}

/// Runs one NCCL collective of g (call(): the ncclResult_t of its enqueue,
/// named `what`) unless it moves nothing, then polls g's asynchronous
/// errors.
/// The kind of an NCCL call (`what`), for the exposed time.
int kindOfCall(const char *what) {
  std::string w = what;
  if (w == "ncclAllReduce")
    return PFRT_COMM_ALL_REDUCE;
  if (w == "ncclAllGather")
    return PFRT_COMM_ALL_GATHER;
  if (w == "ncclReduceScatter")
    return PFRT_COMM_REDUCE_SCATTER;
  if (w == "ncclBroadcast")
    return PFRT_COMM_BROADCAST;
  if (w == "ncclReduce")
    return PFRT_COMM_REDUCE;
  return -1;
}

template <typename Call>
int enqueue(const Group &g, int64_t count, const char *what, const char *fn,
            Call call) {
  if (count > 0) {
    // On the compute stream: all of it is a wait for communication.
    cuda::exposed::Scope exposed(kindOfCall(what));
    check(call(), what, fn);
    pollAsync(g, fn);
  }
  return 0;
}
} // namespace

namespace {
/// The group of an all-reduce of `elemSize`-byte elements (the low types).
const Group &allReduceGroupOf(const void *in, const void *out, int64_t count,
                              int64_t elemSize, const int64_t *ranks, int64_t n,
                              const char *fn) {
  const Group &g = groupFor(ranks, n, fn);
  checkCount(count, fn);
  checkBuf(in, count, "in", fn);
  checkBuf(out, count, "out", fn);
  if (in != out)
    comm::checkNoOverlap(in, count, out, count, fn, elemSize);
  return g;
}

/// NCCL's type of a PFRT_DTYPE_BF16 or PFRT_DTYPE_F16 all-reduce.
ncclDataType_t halvesType(int32_t dtype, const char *fn) {
  if (dtype == PFRT_DTYPE_BF16)
    return ncclBfloat16;
  if (dtype == PFRT_DTYPE_F16)
    return ncclFloat16;
  fatal("%s: dtype %d is not summed (f32, bf16 or f16)", fn, int(dtype));
}

int sumOf(const Group &g, const void *in, void *out, int64_t count,
          ncclDataType_t type, const char *fn) {
  counters::add(PFRT_COMM_ALL_REDUCE, counters::Transport::Nccl,
                count * (type == ncclFloat32 ? 4 : 2));
  return enqueue(g, count, "ncclAllReduce", fn, [&] {
    return gNccl.api.ncclAllReduce(in, out, size_t(count), type, ncclSum,
                                   g.comm, stream());
  });
}

/// The stream the split all-reduces run on, the event that forks it from
/// the compute stream, and each slot's completion event (made at first
/// use: the first step runs uncaptured).
struct AsyncReduces {
  void *stream = nullptr;
  void *fork = nullptr;
  void *done[PFRT_MAX_ASYNC_SLOTS] = {};
} gAsyncReduces;

int startOf(const Group &g, const void *in, void *out, int64_t count,
            ncclDataType_t type, int64_t elemSize, int64_t n, int64_t slot,
            const char *fn) {
  AsyncReduces &a = gAsyncReduces;
  (void)asyncStream();
  if (!a.done[slot])
    a.done[slot] = cuda::newEvent("a split all-reduce's completion");
  cuda::recordEvent(a.fork, cuda::computeStream());
  cuda::streamWaitEvent(a.stream, a.fork);
  counters::add(PFRT_COMM_ALL_REDUCE, counters::Transport::Nccl,
                count * elemSize);
  if (count > 0) {
    cuda::DeviceCommScope trace("all_reduce_nccl", a.stream, count * elemSize,
                                n);
    check(gNccl.api.ncclAllReduce(in, out, size_t(count), type, ncclSum, g.comm,
                                  static_cast<cudaStream_t>(a.stream)),
          "ncclAllReduce", fn);
    pollAsync(g, fn);
  }
  cuda::recordEvent(a.done[slot], a.stream);
  return 0;
}
} // namespace

void *asyncStream() {
  AsyncReduces &a = gAsyncReduces;
  if (!a.stream) {
    a.stream = cuda::newStream("the all-reduce stream");
    a.fork = cuda::newEvent("the all-reduce stream's fork");
  }
  return a.stream;
}

int allReduceSum(const float *in, float *out, int64_t count,
                 const int64_t *ranks, int64_t n) {
  const char *fn = "pfrt_all_reduce_sum";
  const Group &g = allReduceGroup(in, out, count, ranks, n, fn);
  return sumOf(g, in, out, count, ncclFloat32, fn);
}

int allReduceSumHalves(const void *in, void *out, int64_t count, int32_t dtype,
                       const int64_t *ranks, int64_t n) {
  const char *fn = "pfrt_all_reduce_sum";
  ncclDataType_t type = halvesType(dtype, fn);
  const Group &g = allReduceGroupOf(in, out, count, 2, ranks, n, fn);
  return sumOf(g, in, out, count, type, fn);
}

int allReduceStart(const float *in, float *out, int64_t count,
                   const int64_t *ranks, int64_t n, int64_t slot) {
  const char *fn = "pfrt_all_reduce_start";
  const Group &g = allReduceGroup(in, out, count, ranks, n, fn);
  return startOf(g, in, out, count, ncclFloat32, sizeof(float), n, slot, fn);
}

int allReduceStartHalves(const void *in, void *out, int64_t count,
                         int32_t dtype, const int64_t *ranks, int64_t n,
                         int64_t slot) {
  const char *fn = "pfrt_all_reduce_start";
  ncclDataType_t type = halvesType(dtype, fn);
  const Group &g = allReduceGroupOf(in, out, count, 2, ranks, n, fn);
  return startOf(g, in, out, count, type, 2, n, slot, fn);
}

void allReduceWait(int64_t slot) {
  cuda::exposed::Scope exposed(PFRT_COMM_ALL_REDUCE);
  cuda::streamWaitEvent(cuda::computeStream(), gAsyncReduces.done[slot]);
}

int allGather(const float *in, float *out, int64_t count, const int64_t *ranks,
              int64_t n) {
  const char *fn = "pfrt_all_gather";
  const Group &g = groupFor(ranks, n, fn);
  comm::checkBlockBuffers(in, false, out, true, count, n, fn);
  counters::add(PFRT_COMM_ALL_GATHER, counters::Transport::Nccl,
                n * count * int64_t(sizeof(float)));
  return enqueue(g, count, "ncclAllGather", fn, [&] {
    return gNccl.api.ncclAllGather(in, out, size_t(count), ncclFloat32, g.comm,
                                   stream());
  });
}

int reduceScatterSum(const float *in, float *out, int64_t count,
                     const int64_t *ranks, int64_t n) {
  const char *fn = "pfrt_reduce_scatter_sum";
  const Group &g = groupFor(ranks, n, fn);
  comm::checkBlockBuffers(in, true, out, false, count, n, fn);
  counters::add(PFRT_COMM_REDUCE_SCATTER, counters::Transport::Nccl,
                n * count * int64_t(sizeof(float)));
  return enqueue(g, count, "ncclReduceScatter", fn, [&] {
    return gNccl.api.ncclReduceScatter(in, out, size_t(count), ncclFloat32,
                                       ncclSum, g.comm, stream());
  });
}

int broadcast(float *buf, int64_t count, int64_t root, const int64_t *ranks,
              int64_t n) {
  const char *fn = "pfrt_broadcast";
  const Group &g = groupFor(ranks, n, fn);
  checkCount(count, fn);
  checkBuf(buf, count, "buf", fn);
  int rootPos = rootPosition(ranks, n, root, fn);
  counters::add(PFRT_COMM_BROADCAST, counters::Transport::Nccl,
                count * int64_t(sizeof(float)));
  return enqueue(g, count, "ncclBroadcast", fn, [&] {
    return gNccl.api.ncclBroadcast(buf, buf, size_t(count), ncclFloat32,
                                   rootPos, g.comm, stream());
  });
}

int reduceSum(const float *in, float *out, int64_t count, int64_t root,
              const int64_t *ranks, int64_t n) {
  const char *fn = "pfrt_reduce_sum";
  const Group &g = groupFor(ranks, n, fn);
  checkCount(count, fn);
  int rootPos = rootPosition(ranks, n, root, fn);
  bool isRoot = rootPos == g.pos;
  comm::checkReduceBuffers(in, out, count, isRoot, fn);
  counters::add(PFRT_COMM_REDUCE, counters::Transport::Nccl,
                count * int64_t(sizeof(float)));
  return enqueue(g, count, "ncclReduce", fn, [&] {
    return gNccl.api.ncclReduce(in, isRoot ? out : nullptr, size_t(count),
                                ncclFloat32, ncclSum, rootPos, g.comm,
                                stream());
  });
}

int allToAll(const float *in, float *out, int64_t count, const int64_t *ranks,
             int64_t n) {
  const char *fn = "pfrt_all_to_all";
  const Group &g = groupFor(ranks, n, fn);
  comm::checkBlockBuffers(in, true, out, true, count, n, fn);
  counters::add(PFRT_COMM_ALL_TO_ALL, counters::Transport::Nccl,
                n * count * int64_t(sizeof(float)));
  if (count == 0)
    return 0;
  cudaStream_t s = stream();
  cuda::exposed::Scope exposed(PFRT_COMM_ALL_TO_ALL);
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

void allGatherBytes(const void *in, void *out, int64_t blockBytes,
                    const int64_t *ranks, int64_t n, const char *fn) {
  const Group &g = groupFor(ranks, n, fn);
  counters::add(PFRT_COMM_ALL_GATHER, counters::Transport::Nccl,
                n * blockBytes);
  enqueue(g, blockBytes, "ncclAllGather", fn, [&] {
    return gNccl.api.ncclAllGather(in, out, size_t(blockBytes), ncclUint8,
                                   g.comm, stream());
  });
}

void reduceScatterOf(const void *in, void *out, int64_t count, int32_t dtype,
                     const int64_t *ranks, int64_t n, const char *fn) {
  const Group &g = groupFor(ranks, n, fn);
  ncclDataType_t type =
      dtype == PFRT_DTYPE_F32 ? ncclFloat32 : halvesType(dtype, fn);
  int64_t es = dtype == PFRT_DTYPE_F32 ? 4 : 2;
  counters::add(PFRT_COMM_REDUCE_SCATTER, counters::Transport::Nccl,
                n * count * es);
  enqueue(g, count, "ncclReduceScatter", fn, [&] {
    return gNccl.api.ncclReduceScatter(in, out, size_t(count), type, ncclSum,
                                       g.comm, stream());
  });
}

namespace {
/// NCCL's type of a pfrt dtype (bytes for PFRT_DTYPE_BOOL).
ncclDataType_t ncclTypeOf(int32_t dtype, const char *fn) {
  switch (dtype) {
  case PFRT_DTYPE_F32:
    return ncclFloat32;
  case PFRT_DTYPE_I64:
    return ncclInt64;
  case PFRT_DTYPE_I32:
    return ncclInt32;
  case PFRT_DTYPE_BOOL:
    return ncclUint8;
  case PFRT_DTYPE_BF16:
    return ncclBfloat16;
  case PFRT_DTYPE_F16:
    return ncclFloat16;
  default:
    fatal("%s: dtype %d is not a pfrt dtype (PFRT_DTYPE_*)", fn, int(dtype));
  }
}
} // namespace

void broadcastOf(void *buf, int64_t count, int32_t dtype, int64_t root,
                 const int64_t *ranks, int64_t n, const char *fn) {
  ncclDataType_t type = ncclTypeOf(dtype, fn);
  const Group &g = groupFor(ranks, n, fn);
  int rootPos = rootPosition(ranks, n, root, fn);
  counters::add(PFRT_COMM_BROADCAST, counters::Transport::Nccl,
                count * logical::dtypeBytes(dtype));
  enqueue(g, count, "ncclBroadcast", fn, [&] {
    return gNccl.api.ncclBroadcast(buf, buf, size_t(count), type, rootPos,
                                   g.comm, stream());
  });
}

void reduceSumOf(const void *in, void *out, int64_t count, int32_t dtype,
                 int64_t root, const int64_t *ranks, int64_t n,
                 const char *fn) {
  ncclDataType_t type =
      dtype == PFRT_DTYPE_F32 ? ncclFloat32 : halvesType(dtype, fn);
  const Group &g = groupFor(ranks, n, fn);
  int rootPos = rootPosition(ranks, n, root, fn);
  bool isRoot = rootPos == g.pos;
  counters::add(PFRT_COMM_REDUCE, counters::Transport::Nccl,
                count * logical::dtypeBytes(dtype));
  enqueue(g, count, "ncclReduce", fn, [&] {
    return gNccl.api.ncclReduce(in, isRoot ? out : nullptr, size_t(count), type,
                                ncclSum, rootPos, g.comm, stream());
  });
}

void allReduceMaxF32(float *buf, int64_t count, const int64_t *ranks, int64_t n,
                     const char *fn) {
  const Group &g = groupFor(ranks, n, fn);
  counters::add(PFRT_COMM_ALL_REDUCE, counters::Transport::Nccl,
                count * int64_t(sizeof(float)));
  enqueue(g, count, "ncclAllReduce", fn, [&] {
    return gNccl.api.ncclAllReduce(buf, buf, size_t(count), ncclFloat32,
                                   ncclMax, g.comm, stream());
  });
}

void allReduceSumF64(double *buf, int64_t count, const int64_t *ranks,
                     int64_t n, const char *fn) {
  const Group &g = groupFor(ranks, n, fn);
  counters::add(PFRT_COMM_ALL_REDUCE, counters::Transport::Nccl,
                count * int64_t(sizeof(double)));
  enqueue(g, count, "ncclAllReduce", fn, [&] {
    return gNccl.api.ncclAllReduce(buf, buf, size_t(count), ncclFloat64,
                                   ncclSum, g.comm, stream());
  });
}

void allToAllBytes(const void *in, void *out, int64_t blockBytes,
                   const int64_t *ranks, int64_t n, const char *fn) {
  const Group &g = groupFor(ranks, n, fn);
  counters::add(PFRT_COMM_ALL_TO_ALL, counters::Transport::Nccl,
                n * blockBytes);
  if (blockBytes == 0)
    return;
  const char *send = static_cast<const char *>(in);
  char *recv = static_cast<char *>(out);
  cudaStream_t s = stream();
  cuda::exposed::Scope exposed(PFRT_COMM_ALL_TO_ALL);
  check(gNccl.api.ncclGroupStart(), "ncclGroupStart", fn);
  for (int64_t p = 0; p < n; ++p) {
    check(gNccl.api.ncclSend(send + p * blockBytes, size_t(blockBytes),
                             ncclUint8, int(p), g.comm, s),
          "ncclSend", fn);
    check(gNccl.api.ncclRecv(recv + p * blockBytes, size_t(blockBytes),
                             ncclUint8, int(p), g.comm, s),
          "ncclRecv", fn);
  }
  check(gNccl.api.ncclGroupEnd(), "ncclGroupEnd", fn);
  pollAsync(g, fn);
}

} // namespace nccl
} // namespace pfrt
