//===- ExposedComm.h - the compute stream's waits for communication -*- C++
//-*-===//
//
// Not installed; nothing here is part of the ABI. The device half of the
// exposed communication time (pfrt_comm_exposed): where a GPU rank's
// compute stream waits for communication (an NCCL collective or receive
// enqueued on it, or its wait for an event of another stream's collective
// or send), a Scope records a timing event on the compute stream before and
// after; the pairs are read once the host has synchronized with the stream
// (pfrt_cuda_synchronize: no synchronization is added inside a step), each
// elapsed time added to its kind's device time. Inside a CUDA graph
// capture nothing is recorded: a replayed step is not timed (run with
// PFRT_NO_CUDA_GRAPH=1 / --no-cuda-graph to time every step).
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_CUDA_EXPOSEDCOMM_H
#define PFRT_SRC_CUDA_EXPOSEDCOMM_H

#include <cstdint>

namespace pfrt {
namespace cuda {
namespace exposed {

/// Marks the compute stream before a wait for communication of `kind`
/// (PFRT_COMM_*, or -1 for none); -1 where nothing is timed (a capture).
int64_t begin(int kind);
/// Marks its end (the compute stream past the wait).
void end(int64_t span);

/// Times its life's work on the compute stream as one wait of `kind`.
class Scope {
public:
  explicit Scope(int kind) : span(begin(kind)) {}
  ~Scope() { end(span); }
  Scope(const Scope &) = delete;
  Scope &operator=(const Scope &) = delete;

private:
  int64_t span;
};

/// After the host synchronized with the compute stream
/// (pfrt_cuda_synchronize): adds every span's elapsed time to its kind
/// (CommCounters.h).
void collect();
/// The end of an uncaptured step (pfrt_cuda_run_step, after its
/// synchronization): counts it as device-timed, with the spans collected
/// since the last.
void stepTimed();

} // namespace exposed
} // namespace cuda
} // namespace pfrt

#endif // PFRT_SRC_CUDA_EXPOSEDCOMM_H
