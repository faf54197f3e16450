//===- CommCounters.cpp - what each rank's communication moved -----------===//
//
// See CommCounters.h. pfrt_comm_report gathers every rank's counters to
// rank 0 over MPI, which prints them in rank order: one block a rank, a
// line a collective kind, each line starting "comm rank R". The block's
// first line ends with steady_round_trips, the most host round-trips one
// GPU step after the first made (0 on CPU ranks).
//
//===----------------------------------------------------------------------===//

#include "CommCounters.h"

#include "../mpi/MpiInternal.h"
#include "Internal.h"
#include "pfrt/pfrt.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

using namespace pfrt;

namespace {

const char *const kKindNames[PFRT_COMM_KINDS] = {
    "all_reduce", "all_gather", "reduce_scatter", "all_to_all",
    "send",       "recv",       "broadcast",      "reduce"};

pfrt_comm_counters gTotals, gTally;
/// Exposed time per kind (pfrt_comm_exposed): host and device, index
/// PFRT_COMM_KINDS for no kind's.
pfrt_comm_exposed gExposed;
bool gCapturing = false;
int gSuppressed = 0;

/// The GPU steps: how many ended, the round-trips when this one began, and
/// the most any step after the first made.
struct Steps {
  int64_t ended = 0, tripsAtBegin = 0, steadyMax = 0;
} gSteps;

/// Where counts go now: the totals, or the capture's tally.
pfrt_comm_counters &sink() { return gCapturing ? gTally : gTotals; }

} // namespace

namespace pfrt {
namespace counters {

void add(int kind, Transport t, int64_t bytes) {
  if (gSuppressed > 0 || kind < 0 || kind >= PFRT_COMM_KINDS)
    return;
  pfrt_comm_counters &c = sink();
  if (t == Transport::Nccl) {
    ++c.nccl_calls[kind];
    c.nccl_bytes[kind] += bytes;
  } else {
    ++c.mpi_calls[kind];
    c.mpi_bytes[kind] += bytes;
  }
}

void roundTrip() {
  if (gSuppressed == 0)
    ++sink().host_round_trips;
}

void roundTripBytes(int64_t bytes) {
  if (gSuppressed == 0)
    sink().host_round_trip_bytes += bytes;
}

void exposed(int kind, double us) {
  if (gSuppressed > 0)
    return;
  sink().exposed_us += us;
  if (kind >= 0 && kind < PFRT_COMM_KINDS)
    gExposed.host_us[kind] += us;
  else
    gExposed.host_other_us += us;
}

void exposedOnDevice(int kind, double us) {
  if (kind >= 0 && kind < PFRT_COMM_KINDS)
    gExposed.device_us[kind] += us;
  else
    gExposed.device_other_us += us;
}

void deviceTimedStep(int64_t spans) {
  ++gExposed.device_steps;
  gExposed.device_spans += spans;
}

int exposedKindOfTrace(const char *name) {
  static const struct {
    const char *name;
    int kind;
  } kWaits[] = {
      {"all_reduce_wait", PFRT_COMM_ALL_REDUCE},
      {"wait_send", PFRT_COMM_SEND},
      {"wait_sends", PFRT_COMM_SEND},
      {"p2p_batch", PFRT_COMM_RECV},
  };
  for (const auto &e : kWaits)
    if (std::strcmp(e.name, name) == 0)
      return e.kind;
  return kindOfTrace(name);
}

int kindOfTrace(const char *name) {
  static const struct {
    const char *name;
    int kind;
  } kTable[] = {
      {"all_reduce_sum", PFRT_COMM_ALL_REDUCE},
      {"all_reduce_start", PFRT_COMM_ALL_REDUCE},
      {"all_reduce_max", PFRT_COMM_ALL_REDUCE},
      {"all_gather", PFRT_COMM_ALL_GATHER},
      {"box_all_gather", PFRT_COMM_ALL_GATHER},
      {"reduce_scatter_sum", PFRT_COMM_REDUCE_SCATTER},
      {"box_reduce_scatter", PFRT_COMM_REDUCE_SCATTER},
      {"all_to_all", PFRT_COMM_ALL_TO_ALL},
      {"box_all_to_all", PFRT_COMM_ALL_TO_ALL},
      {"send", PFRT_COMM_SEND},
      {"isend", PFRT_COMM_SEND},
      {"recv", PFRT_COMM_RECV},
      {"broadcast", PFRT_COMM_BROADCAST},
      {"broadcast_i64", PFRT_COMM_BROADCAST},
      {"reduce_sum", PFRT_COMM_REDUCE},
  };
  for (const auto &e : kTable)
    if (std::strcmp(e.name, name) == 0)
      return e.kind;
  return -1;
}

bool counting() { return gSuppressed == 0; }

void stepBegin() { gSteps.tripsAtBegin = gTotals.host_round_trips; }

void stepEnd() {
  int64_t trips = gTotals.host_round_trips - gSteps.tripsAtBegin;
  if (gSteps.ended++ > 0 && trips > gSteps.steadyMax)
    gSteps.steadyMax = trips;
}

Suppress::Suppress() { ++gSuppressed; }
Suppress::~Suppress() { --gSuppressed; }

void beginCapture() {
  std::memset(&gTally, 0, sizeof(gTally));
  gCapturing = true;
}

void endCapture() { gCapturing = false; }

void replay() {
  for (int k = 0; k < PFRT_COMM_KINDS; ++k) {
    gTotals.mpi_calls[k] += gTally.mpi_calls[k];
    gTotals.mpi_bytes[k] += gTally.mpi_bytes[k];
    gTotals.nccl_calls[k] += gTally.nccl_calls[k];
    gTotals.nccl_bytes[k] += gTally.nccl_bytes[k];
  }
  gTotals.host_round_trips += gTally.host_round_trips;
  gTotals.host_round_trip_bytes += gTally.host_round_trip_bytes;
}

} // namespace counters
} // namespace pfrt

namespace {

/// The counters as int64 words (exposed times in nanoseconds), for MPI:
/// the kinds' calls and bytes, the totals, then the kinds' exposed host
/// and device times, no kind's both, and the device-timed steps.
constexpr int kExposedAt = 4 * PFRT_COMM_KINDS + 4;
constexpr int kWords = kExposedAt + 2 * PFRT_COMM_KINDS + 3;

int64_t ns(double us) { return int64_t(std::llround(us * 1e3)); }

void toWords(const pfrt_comm_counters &c, int64_t *w) {
  for (int k = 0; k < PFRT_COMM_KINDS; ++k) {
    w[kExposedAt + k] = ns(gExposed.host_us[k]);
    w[kExposedAt + PFRT_COMM_KINDS + k] = ns(gExposed.device_us[k]);
  }
  w[kExposedAt + 2 * PFRT_COMM_KINDS] = ns(gExposed.host_other_us);
  w[kExposedAt + 2 * PFRT_COMM_KINDS + 1] = ns(gExposed.device_other_us);
  w[kExposedAt + 2 * PFRT_COMM_KINDS + 2] = gExposed.device_steps;
  for (int k = 0; k < PFRT_COMM_KINDS; ++k) {
    w[k] = c.mpi_calls[k];
    w[PFRT_COMM_KINDS + k] = c.mpi_bytes[k];
    w[2 * PFRT_COMM_KINDS + k] = c.nccl_calls[k];
    w[3 * PFRT_COMM_KINDS + k] = c.nccl_bytes[k];
  }
  w[4 * PFRT_COMM_KINDS] = c.host_round_trips;
  w[4 * PFRT_COMM_KINDS + 1] = c.host_round_trip_bytes;
  w[4 * PFRT_COMM_KINDS + 2] = int64_t(std::llround(c.exposed_us * 1e3));
  w[4 * PFRT_COMM_KINDS + 3] = gSteps.steadyMax;
}

void printRank(int r, int world, const int64_t *w) {
  const int64_t *e = w + kExposedAt;
  std::printf("comm rank %d of %d: host_round_trips %lld bytes %lld "
              "exposed_mpi_ms %.3f steady_round_trips %lld "
              "exposed_other_host_ms %.3f exposed_other_device_ms %.3f "
              "device_timed_steps %lld\n",
              r, world, (long long)w[4 * PFRT_COMM_KINDS],
              (long long)w[4 * PFRT_COMM_KINDS + 1],
              double(w[4 * PFRT_COMM_KINDS + 2]) * 1e-6,
              (long long)w[4 * PFRT_COMM_KINDS + 3],
              double(e[2 * PFRT_COMM_KINDS]) * 1e-6,
              double(e[2 * PFRT_COMM_KINDS + 1]) * 1e-6,
              (long long)e[2 * PFRT_COMM_KINDS + 2]);
  for (int k = 0; k < PFRT_COMM_KINDS; ++k)
    std::printf("comm rank %d %-14s nccl_calls %lld nccl_bytes %lld "
                "mpi_calls %lld mpi_bytes %lld exposed_host_ms %.3f "
                "exposed_device_ms %.3f\n",
                r, kKindNames[k], (long long)w[2 * PFRT_COMM_KINDS + k],
                (long long)w[3 * PFRT_COMM_KINDS + k], (long long)w[k],
                (long long)w[PFRT_COMM_KINDS + k], double(e[k]) * 1e-6,
                double(e[PFRT_COMM_KINDS + k]) * 1e-6);
}

} // namespace

extern "C" {

void pfrt_comm_counters_get(pfrt_comm_counters *out) {
  if (!out)
    fatal("pfrt_comm_counters_get: out is NULL");
  *out = gTotals;
}

void pfrt_comm_exposed_get(pfrt_comm_exposed *out) {
  if (!out)
    fatal("pfrt_comm_exposed_get: out is NULL");
  *out = gExposed;
}

void pfrt_comm_counters_reset(void) {
  std::memset(&gTotals, 0, sizeof(gTotals));
  std::memset(&gExposed, 0, sizeof(gExposed));
  gSteps = Steps();
}

int pfrt_comm_report(void) {
  const char *fn = "pfrt_comm_report";
  requireInit(fn);
  int world = pfrt_world_size(), me = pfrt_rank();
  int64_t mine[kWords];
  toWords(gTotals, mine);
  std::vector<int64_t> all(me == 0 ? size_t(world) * kWords : 0);
  PFRT_MPI_AS(fn, MPI_Gather,
              (mine, kWords, MPI_INT64_T, all.data(), kWords, MPI_INT64_T, 0,
               worldComm()));
  if (me != 0)
    return 0;
  for (int r = 0; r < world; ++r)
    printRank(r, world, all.data() + size_t(r) * kWords);
  std::fflush(stdout);
  return 0;
}

} // extern "C"

void pfrt::countComm(const char *name, int64_t bytes, double us) {
  if (!counters::counting())
    return;
  counters::add(counters::kindOfTrace(name), counters::Transport::Mpi, bytes);
  counters::exposed(counters::exposedKindOfTrace(name), us);
}
