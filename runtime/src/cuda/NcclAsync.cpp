//===- NcclAsync.cpp - split boxing collectives over NCCL -----------------===//
//
// NcclAsync.h's NCCL calls on a given stream: the same calls, types and
// counters as NcclCollectives.cpp's allGatherBytes and reduceScatterOf,
// which enqueue on the compute stream.
//
//===----------------------------------------------------------------------===//

#include "NcclAsync.h"
#include "NcclInternal.h"

#include "../common/CommCounters.h"
#include "../common/Internal.h"
#include "CudaInternal.h"
#include "pfrt/pfrt.h"

#include <nccl.h>

using namespace pfrt;
using namespace pfrt::nccl::impl;

namespace pfrt {
namespace nccl {

void allGatherBytesOn(const void *in, void *out, int64_t blockBytes,
                      const int64_t *ranks, int64_t n, const char *fn,
                      void *stream) {
  const Group &g = groupFor(ranks, n, fn);
  counters::add(PFRT_COMM_ALL_GATHER, counters::Transport::Nccl,
                n * blockBytes);
  if (blockBytes == 0)
    return;
  cuda::DeviceCommScope trace("all_gather_nccl", stream, n * blockBytes, n);
  check(gNccl.api.ncclAllGather(in, out, size_t(blockBytes), ncclUint8, g.comm,
                                static_cast<cudaStream_t>(stream)),
        "ncclAllGather", fn);
  pollAsync(g, fn);
}

void reduceScatterOn(const void *in, void *out, int64_t count, int32_t dtype,
                     const int64_t *ranks, int64_t n, const char *fn,
                     void *stream) {
  const Group &g = groupFor(ranks, n, fn);
  ncclDataType_t type = ncclFloat32;
  int64_t es = 4;
  if (dtype == PFRT_DTYPE_BF16 || dtype == PFRT_DTYPE_F16) {
    type = dtype == PFRT_DTYPE_BF16 ? ncclBfloat16 : ncclFloat16;
    es = 2;
  } else if (dtype != PFRT_DTYPE_F32) {
    fatal("%s: dtype %d is not summed (f32, bf16 or f16)", fn, int(dtype));
  }
  counters::add(PFRT_COMM_REDUCE_SCATTER, counters::Transport::Nccl,
                n * count * es);
  if (count == 0)
    return;
  cuda::DeviceCommScope trace("reduce_scatter_nccl", stream, n * count * es, n);
  check(gNccl.api.ncclReduceScatter(in, out, size_t(count), type, ncclSum,
                                    g.comm, static_cast<cudaStream_t>(stream)),
        "ncclReduceScatter", fn);
  pollAsync(g, fn);
}

} // namespace nccl
} // namespace pfrt
