//===- MpiInternal.h - MPI helpers shared by the MPI sources ----*- C++ -*-===//

#ifndef PFRT_SRC_MPI_MPIINTERNAL_H
#define PFRT_SRC_MPI_MPIINTERNAL_H

#include <mpi.h>

namespace pfrt {

/// Fatal with MPI's own error text unless rc is MPI_SUCCESS.
void mpiCheck(int rc, const char *call, const char *fn);

/// The runtime's private duplicate of MPI_COMM_WORLD (errors return).
MPI_Comm worldComm();

} // namespace pfrt

/// PFRT_MPI(MPI_Bcast, (buf, ...)) calls and checks, naming the MPI function
/// and the enclosing pfrt function in the error.
#define PFRT_MPI(fn, args) ::pfrt::mpiCheck(fn args, #fn, __func__)

#endif // PFRT_SRC_MPI_MPIINTERNAL_H
