//===- MpiInternal.h - MPI helpers shared by the MPI sources ----*- C++ -*-===//

#ifndef PFRT_SRC_MPI_MPIINTERNAL_H
#define PFRT_SRC_MPI_MPIINTERNAL_H

#include <mpi.h>

#include <cstdint>

namespace pfrt {

/// Fatal with MPI's own error text unless rc is MPI_SUCCESS.
void mpiCheck(int rc, const char *call, const char *fn);

/// The runtime's private duplicate of MPI_COMM_WORLD (errors return).
MPI_Comm worldComm();

//===----------------------------------------------------------------------===//
// Group collectives (Collectives.cpp), for other sources that build on them
//===----------------------------------------------------------------------===//

/// Validates the group (fatal, naming fn, if it is malformed or this rank is
/// not a member), creates its cached communicator on first use (a collective
/// call of the members) and returns this rank's group position.
int groupPosition(const int64_t *ranks, int64_t n, const char *fn);

/// Fatal, naming `fn`, if a split all-reduce (pfrt_all_reduce_start) was
/// never waited for.
void checkNoReduceInFlight(const char *fn);

/// getGroup's communicator of group (ranks, n) (the same checks and cache),
/// for the split boxing rows (AsyncBoxing.cpp).
MPI_Comm groupComm(const int64_t *ranks, int64_t n, const char *fn);

/// The cores of pfrt_all_gather and pfrt_all_to_all, on `count` elements of
/// `type` (elemSize bytes each) per block: same semantics, checks and
/// chunking; errors name fn and the trace event is called traceName.
void allGather(const void *in, void *out, int64_t count, MPI_Datatype type,
               int64_t elemSize, const int64_t *ranks, int64_t n,
               const char *fn, const char *traceName);
void allToAll(const void *in, void *out, int64_t count, MPI_Datatype type,
              int64_t elemSize, const int64_t *ranks, int64_t n, const char *fn,
              const char *traceName);

/// The MPI type, sum and element size of a sum of `dtype` elements: MPI's
/// own float sum, or for bf16/f16 (MPI has neither) a user op over their
/// uint16 bits that adds each pair in float32 and rounds to nearest even,
/// made at first use (after pfrt_init's MPI_Init). Other dtypes are fatal,
/// naming fn.
struct ReduceType {
  MPI_Datatype type;
  MPI_Op op;
  int64_t elemSize;
};
ReduceType reduceTypeOf(int32_t dtype, const char *fn);

/// The core of pfrt_reduce_scatter_sum on `count` elements of `dtype` per
/// block (f32, or bf16/f16 summed in their type as reduceTypeOf's op),
/// naming fn and traceName.
void reduceScatterSum(const void *in, void *out, int64_t count, int32_t dtype,
                      const int64_t *ranks, int64_t n, const char *fn,
                      const char *traceName);

} // namespace pfrt

/// PFRT_MPI(MPI_Bcast, (buf, ...)) calls and checks, naming the MPI function
/// and the enclosing pfrt function in the error.
#define PFRT_MPI(fn, args) ::pfrt::mpiCheck(fn args, #fn, __func__)
/// The same, naming `name` (a const char *) instead of the enclosing C++
/// function: for helpers that work on behalf of several pfrt functions.
#define PFRT_MPI_AS(name, fn, args) ::pfrt::mpiCheck(fn args, #fn, name)

#endif // PFRT_SRC_MPI_MPIINTERNAL_H
