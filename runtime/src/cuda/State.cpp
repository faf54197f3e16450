//===- State.cpp - where a GPU rank's program lives: GPU, arena, state ----===//
//
// The device twins that place a GPU rank's program: pfrt_cuda_arena_plan
// picks the GPU (the rank on its node, modulo the node's GPUs) and plans
// the device arena; parameters are initialised by the host row into a host
// buffer and copied; device-resident state (pfrt_cuda_state_register and
// its further parts) is registered with the host rows, which gather, set,
// save and load it through host copies (src/mpi/State.cpp).
//
//===----------------------------------------------------------------------===//

#include "../common/Internal.h"
#include "CudaInternal.h"
#include "Module.h"
#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

#include <cstdio>
#include <cstdlib>
#include <vector>

using namespace pfrt;
using namespace pfrt::twin;

namespace {

/// Whether pfrt_cuda_arena_plan ran: the program runs on this GPU.
bool gPlanned = false;

/// The rank on this node: after pfrt_init, its rank among the job's ranks
/// that share the node's memory (MPI_COMM_TYPE_SHARED, right under any
/// launcher and rank placement); before it, the launcher's local rank
/// (Hydra, PMI, Open MPI, Slurm), else the world rank.
int64_t localRank() {
  auto launcher = []() -> int64_t {
    for (const char *var : {"MPI_LOCALRANKID", "PMI_LOCAL_RANK",
                            "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"}) {
      const char *v = std::getenv(var);
      if (v && *v) {
        char *end = nullptr;
        long long r = std::strtoll(v, &end, 10);
        if (end && *end == '\0' && r >= 0)
          return r;
      }
    }
    return -1;
  };
  if (state().initialized && !state().finalized) {
    // MPI alone on its node while the launcher says otherwise: ranks that
    // share no memory yet see the same GPUs (containers with their own IPC
    // namespaces); the launcher's count then says which GPU.
    int64_t l = launcher();
    if (state().localSize == 1 && l > 0)
      return l;
    return state().localRank;
  }
  if (int64_t l = launcher(); l >= 0)
    return l;
  if (const char *v = std::getenv("PMI_RANK")) {
    long long r = std::atoll(v);
    if (r >= 0)
      return r;
  }
  return 0;
}

} // namespace

extern "C" {

int pfrt_cuda_arena_plan(int64_t bytes) {
  static int64_t plannedBytes = 0;
  if (bytes < 0)
    fatal("pfrt_cuda_arena_plan: negative size %lld", (long long)bytes);
  if (gPlanned) {
    if (bytes > plannedBytes)
      fatal("pfrt_cuda_arena_plan: the device arena was planned with %lld "
            "bytes, now %lld are asked",
            (long long)plannedBytes, (long long)bytes);
    return 0;
  }
  // Without a driver or a device pfrt_cuda_init exits with status 2 and
  // one line saying what is missing.
  int count = pfrt_cuda_device_count();
  int64_t device = count > 0 ? localRank() % count : 0;
  if (const char *v = std::getenv("PFRT_CUDA_VERBOSE"); v && *v == '1')
    std::fprintf(stderr,
                 "pfrt: rank %d: GPU %lld of the %d this rank sees (local "
                 "rank %lld of %d on this node)\n",
                 state().rank, (long long)device, count, (long long)localRank(),
                 state().localSize);
  pfrt_cuda_init(device);
  pfrt_cuda_arena_init(bytes);
#ifndef PFRT_CUDA_NO_KERNELS
  // Loaded now, so that no kernel call of a step (maybe captured in a
  // graph) loads a module or allocates.
  kernels("pfrt_cuda_arena_plan");
#endif
  gPlanned = true;
  plannedBytes = bytes;
  return 0;
}

int pfrt_cuda_active(void) { return gPlanned ? 1 : 0; }

int pfrt_cuda_init_param(float *out, int32_t kind, double a, double b,
                         uint64_t seed, uint64_t stream, int64_t rank_ndim,
                         const int64_t *logical_shape,
                         const int64_t *shard_offset,
                         const int64_t *shard_shape) {
  const char *fn = "pfrt_cuda_init_param";
  ShardSpec s =
      makeShard(fn, rank_ndim, logical_shape, shard_offset, shard_shape);
  std::vector<float> host(size_t(s.shardElems > 0 ? s.shardElems : 1));
  pfrt_init_param(host.data(), kind, a, b, seed, stream, rank_ndim,
                  logical_shape, shard_offset, shard_shape);
  if (s.shardElems == 0)
    return 0;
  if (!out)
    fatal("%s: out is NULL", fn);
  pfrt_cuda_h2d(out, host.data(), s.shardElems * int64_t(sizeof(float)));
  pfrt_cuda_synchronize(); // before `host` goes away
  return 0;
}

int pfrt_cuda_state_register(const char *name, int32_t dtype, int64_t rank_ndim,
                             const int64_t *logical_shape,
                             const int64_t *offset, const int64_t *box_shape,
                             void *data) {
  pfrt_state_register(name, dtype, rank_ndim, logical_shape, offset, box_shape,
                      data);
  markStateOnDevice(name);
  return 0;
}

// Another part of a device-resident tensor (the tensor-parallel layouts: a
// grouped split holds one per block). The host row keeps the address
// without reading it; the entry is device-resident (registered by
// pfrt_cuda_state_register), so checkpoints copy every part through the
// host.
int pfrt_cuda_state_add_part(const char *name, const int64_t *offset,
                             void *data) {
  int rc = pfrt_state_add_part(name, offset, data);
  markStateOnDevice(name);
  return rc;
}

} // extern "C"
