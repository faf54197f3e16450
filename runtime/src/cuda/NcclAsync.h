//===- NcclAsync.h - split boxing collectives over NCCL ---------*- C++ -*-===//
//
// Not installed. AsyncBoxing.cpp's split all-gather and reduce-scatter
// (pfrt_cuda_box_*_start) enqueue their NCCL call on the split
// all-reduce's stream (NcclCollectives.cpp), so that every split
// collective of a rank runs in the order it was started.
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_CUDA_NCCLASYNC_H
#define PFRT_SRC_CUDA_NCCLASYNC_H

#include <cstdint>

namespace pfrt {
namespace nccl {

/// The split collectives' stream (made at first use: the first step runs
/// uncaptured).
void *asyncStream();

/// All-gather of `blockBytes` bytes a member (any dtype's bits) and
/// reduce-scatter of `count` f32/bf16/f16 elements a member, enqueued on
/// `stream` with group (ranks, n)'s communicator and counted as the
/// blocking twins count them (CommCounters.h). The caller checked the
/// arguments as the host rows do.
void allGatherBytesOn(const void *in, void *out, int64_t blockBytes,
                      const int64_t *ranks, int64_t n, const char *fn,
                      void *stream);
void reduceScatterOn(const void *in, void *out, int64_t count, int32_t dtype,
                     const int64_t *ranks, int64_t n, const char *fn,
                     void *stream);

} // namespace nccl
} // namespace pfrt

#endif // PFRT_SRC_CUDA_NCCLASYNC_H
