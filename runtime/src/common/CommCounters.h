//===- CommCounters.h - what each rank's communication moved ----*- C++ -*-===//
//
// Not installed; nothing here is part of the ABI. The counters behind
// pfrt_comm_counters_get and pfrt_comm_report (pfrt.h; pf-run
// --comm-report): per collective kind the calls and bytes over MPI (the
// host rows: CommScope counts them, Internal.h) and over NCCL (the device
// twins count them where they enqueue), the host round-trips of GPU ranks'
// host-staged calls, and the exposed communication time per kind: the host
// time spent blocked in MPI calls and the time a GPU rank's compute stream
// waited for communication (uncaptured steps).
//
// Bytes are those of the collective's buffer on this rank, as the trace
// gives them: the all-reduced, broadcast or reduced buffer; the gathered
// output; the scattered or exchanged input; a message. They are not the
// bytes on the wire, which depend on the algorithm.
//
// A captured CUDA graph replays its NCCL calls without calling the twins:
// while a step is captured (pfrt_cuda_graph_begin to _end) the counts go to
// the capture's tally instead, and every launch of the graph adds it.
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_COMMON_COMMCOUNTERS_H
#define PFRT_SRC_COMMON_COMMCOUNTERS_H

#include "pfrt/pfrt.h"

#include <cstdint>

namespace pfrt {
namespace counters {

enum class Transport { Mpi, Nccl };

/// One call of `kind` (PFRT_COMM_*) that moved `bytes`.
void add(int kind, Transport t, int64_t bytes);
/// One host-staged call of a GPU rank: its copies to and from the host.
void roundTrip();
void roundTripBytes(int64_t bytes);
/// Host time blocked in a communication call of `kind` (PFRT_COMM_*, or
/// -1: no kind's), and the time a GPU rank's compute stream waited for
/// communication (ExposedComm.cpp: `spans` waits timed in one uncaptured
/// step); both reported per kind (pfrt_comm_exposed).
void exposed(int kind, double us);
void exposedOnDevice(int kind, double us);
void deviceTimedStep(int64_t spans);

/// The kind of a trace event's name (CommScope's), or -1: a wait, a
/// barrier, a batch (counted op by op), or set-up traffic (not counted).
int kindOfTrace(const char *name);
/// The kind whose exposed time a trace event's (CommScope's) is: its
/// kind, or a split collective's wait its collective's, pfrt_wait_send(s)
/// sends', a p2p batch receives'; -1 for none (barriers).
int exposedKindOfTrace(const char *name);
/// Whether CommScope's events count (not inside a Suppress).
bool counting();

/// While one lives, nothing counts: the emulation's NCCL runs libpfrt's
/// MPI rows on behalf of a collective the NCCL twin already counted, and
/// the set-up of communicators moves what no program asked for.
class Suppress {
public:
  Suppress();
  ~Suppress();
  Suppress(const Suppress &) = delete;
  Suppress &operator=(const Suppress &) = delete;
};

/// A GPU rank's step (pfrt_cuda_run_step) begins and ends: the report's
/// steady_round_trips is the most host round-trips one step after the first
/// made (without a point-to-point plan the first stages point-to-point
/// while it records the message order, NcclP2P.cpp).
void stepBegin();
void stepEnd();

/// Capture (see the file comment): begin sends the counts to a fresh
/// tally; end returns to the totals and keeps the tally; replay adds the
/// kept tally to the totals.
void beginCapture();
void endCapture();
void replay();

} // namespace counters
} // namespace pfrt

#endif // PFRT_SRC_COMMON_COMMCOUNTERS_H
