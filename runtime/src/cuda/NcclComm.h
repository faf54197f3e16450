//===- NcclComm.h - the NCCL transport of the collective twins -*- C++ -*-===//
//
// Not installed; nothing here is part of the ABI. StagedComm.cpp's
// collective twins ask useNccl first and, where it says so, call the NCCL
// implementation below instead of staging through the host.
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_CUDA_NCCLCOMM_H
#define PFRT_SRC_CUDA_NCCLCOMM_H

#include <cstdint>

namespace pfrt {
namespace nccl {

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
int allGather(const float *in, float *out, int64_t count, const int64_t *ranks,
              int64_t n);
int reduceScatterSum(const float *in, float *out, int64_t count,
                     const int64_t *ranks, int64_t n);
int broadcast(float *buf, int64_t count, int64_t root, const int64_t *ranks,
              int64_t n);
int reduceSum(const float *in, float *out, int64_t count, int64_t root,
              const int64_t *ranks, int64_t n);

} // namespace nccl
} // namespace pfrt

#endif // PFRT_SRC_CUDA_NCCLCOMM_H
