//===- NcclNone.cpp - the NCCL transport in a build without nccl.h --------===//
//
// Built instead of Nccl.cpp, NcclCollectives.cpp and NcclP2P.cpp where
// nccl.h was not found at configure time: every collective is host-staged
// (useNccl and pointToPointOverNccl say no), PFRT_CUDA_COMM=nccl says why
// it cannot be, and the NCCL entry points are unreachable.
//
//===----------------------------------------------------------------------===//

#include "NcclComm.h"

#include "../common/Internal.h"
#include "CudaInternal.h"

#include <cstdlib>
#include <cstring>

namespace pfrt {
namespace cuda {
void stopCollectives() {}
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
void makeGroups(const std::vector<std::vector<int64_t>> &, const char *) {}
bool useNccl(const int64_t *, int64_t, const char *) { return false; }
int allReduceSum(const float *, float *, int64_t, const int64_t *, int64_t) {
  fatal("internal: NCCL all-reduce without NCCL");
}
int allReduceStart(const float *, float *, int64_t, const int64_t *, int64_t,
                   int64_t) {
  fatal("internal: NCCL all-reduce without NCCL");
}
void allReduceWait(int64_t) { fatal("internal: NCCL all-reduce without NCCL"); }
int allReduceSumHalves(const void *, void *, int64_t, int32_t, const int64_t *,
                       int64_t) {
  fatal("internal: NCCL all-reduce without NCCL");
}
int allReduceStartHalves(const void *, void *, int64_t, int32_t,
                         const int64_t *, int64_t, int64_t) {
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
int allToAll(const float *, float *, int64_t, const int64_t *, int64_t) {
  fatal("internal: NCCL all-to-all without NCCL");
}
void allGatherBytes(const void *, void *, int64_t, const int64_t *, int64_t,
                    const char *) {
  fatal("internal: NCCL all-gather without NCCL");
}
void reduceScatterOf(const void *, void *, int64_t, int32_t, const int64_t *,
                     int64_t, const char *) {
  fatal("internal: NCCL reduce-scatter without NCCL");
}
void allToAllBytes(const void *, void *, int64_t, const int64_t *, int64_t,
                   const char *) {
  fatal("internal: NCCL all-to-all without NCCL");
}
void broadcastOf(void *, int64_t, int32_t, int64_t, const int64_t *, int64_t,
                 const char *) {
  fatal("internal: NCCL broadcast without NCCL");
}
void reduceSumOf(const void *, void *, int64_t, int32_t, int64_t,
                 const int64_t *, int64_t, const char *) {
  fatal("internal: NCCL reduce without NCCL");
}
void allReduceMaxF32(float *, int64_t, const int64_t *, int64_t, const char *) {
  fatal("internal: NCCL all-reduce without NCCL");
}
void allReduceSumF64(double *, int64_t, const int64_t *, int64_t,
                     const char *) {
  fatal("internal: NCCL all-reduce without NCCL");
}
void recordPointToPoint(bool, int64_t, int64_t, int64_t) {}
bool setupPointToPoint() { return false; }
bool planPointToPoint(const std::vector<std::array<int64_t, 4>> &) {
  return false;
}
bool pointToPointOverNccl(int64_t) { return false; }
void *send(const float *, int64_t, int64_t, int64_t, const char *) {
  fatal("internal: NCCL send without NCCL");
}
void waitFor(void *) {}
int64_t track(void *) { return 0; }
bool ownsHandle(int64_t) { return false; }
void waitSend(int64_t) {}
void recv(float *, int64_t, int64_t, int64_t, const char *) {
  fatal("internal: NCCL receive without NCCL");
}
void groupBegin() {}
void groupEnd() {}
void joinSends() {}
} // namespace nccl
} // namespace pfrt
