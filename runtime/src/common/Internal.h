//===- Internal.h - Shared state and helpers inside libpfrt -----*- C++ -*-===//
//
// Not installed; nothing here is part of the ABI.
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_COMMON_INTERNAL_H
#define PFRT_SRC_COMMON_INTERNAL_H

#include <cstdint>
#include <string>
#include <vector>

namespace pfrt {

/// Process-wide runtime state. Single-threaded by contract (FUNNELED).
struct State {
  bool initialized = false;
  bool finalized = false;
  /// True if pfrt_init called MPI_Init_thread (so pfrt_finalize must end it).
  bool ownsMpi = false;
  int rank = 0;
  int size = 1;
  /// This rank among the job's ranks on its node (MPI_COMM_TYPE_SHARED),
  /// and their number: a GPU rank uses GPU localRank mod the node's count.
  int localRank = 0;
  int localSize = 1;
  /// Largest element count passed to one MPI call.
  int64_t maxMsgElems = 0;
  /// Monotonic clock value (us) that pfrt_now_us reports as zero.
  double epochUs = 0;
};

State &state();

/// Formats, prints `pfrt: rank R: ...` and aborts the job.
[[noreturn]] void fatal(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/// The same from a thread that is not the one calling MPI (MPI is not
/// initialised for threads): prints `pfrt: rank R: ...` and exits the
/// process with status 1 without calling MPI; the launcher then ends the
/// job.
[[noreturn]] void fatalFromThread(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/// Runs `hook` at the start of pfrt_finalize (before anything else there):
/// a part of the runtime that keeps a thread or checks its own state.
void addFinalizeHook(void (*hook)());

/// Checks that [offset, offset + bytes) lies in an arena of `size` bytes
/// (and that offset is a multiple of `align`), fatal naming `fn` and the
/// arena (`what`) if not; raises `highWater` to the range's end.
void checkArenaRange(const char *fn, const char *what, int64_t offset,
                     int64_t bytes, int64_t size, int64_t align,
                     int64_t &highWater);

/// Fatal unless pfrt_init has run and pfrt_finalize has not.
void requireInit(const char *fn);

/// Raw monotonic microseconds (no epoch applied).
double monotonicUs();

/// mkdir -p; fatal on failure. `what` names the caller for the message.
void makeDirs(const std::string &dir, const char *what);

/// Marks registered state `name` (pfrt_cuda_state_register) as device
/// resident: State.cpp then reads and writes its data through the host with
/// pfrt_cuda_d2h / pfrt_cuda_h2d. Fatal if `name` is not registered.
void markStateOnDevice(const char *name);

/// Whether the inputs come from pfrt_set_input (pfrt_use_user_inputs)
/// rather than the synthetic or file data.
bool userInputsInUse();

//===----------------------------------------------------------------------===//
// Shapes and shards
//===----------------------------------------------------------------------===//

/// Largest tensor rank accepted anywhere (bounds stack arrays).
constexpr int64_t kMaxRank = 32;

/// A validated shard of a row-major logical tensor.
struct ShardSpec {
  int64_t ndim = 0;
  const int64_t *logical = nullptr;
  const int64_t *offset = nullptr; // null = zeros
  const int64_t *shape = nullptr;  // null = logical
  int64_t logicalElems = 1;
  int64_t shardElems = 1;
};

/// Checks ranks, bounds and overflow; fatal (naming fn) on any problem.
ShardSpec makeShard(const char *fn, int64_t ndim, const int64_t *logical,
                    const int64_t *offset, const int64_t *shape);

/// Calls fn(logicalStart, localStart, len) for each maximal run of the shard
/// that is contiguous in the logical tensor, in row-major shard order.
template <typename Fn> void forEachRun(const ShardSpec &s, Fn &&fn);

std::string shapeToString(int64_t ndim, const int64_t *shape);

/// The uniform initialiser's values in [0, 1) (pfrt_init_param's
/// PFRT_INIT_UNIFORM with a = 0, b = 1, bit for bit) of `rows` runs of
/// `cols` consecutive logical elements, without the rest of the tensor:
/// u[r * ldu + c] is the value at logical index first + r * rowStride + c
/// (Random.cpp; dropout's tiles in src/cpu/Attention.cpp).
void uniformBlock(float *u, int64_t ldu, uint64_t seed, uint64_t stream,
                  int64_t first, int64_t rowStride, int64_t rows, int64_t cols);

/// The shape in a .npy file's header; fatal (naming fn and path) if the file
/// cannot be opened or its header is malformed.
std::vector<int64_t> npyShape(const char *path, const char *fn);

//===----------------------------------------------------------------------===//
// Tracing (Trace.cpp)
//===----------------------------------------------------------------------===//

void traceInit();
void traceFinalize();
bool traceOn();

/// A GPU rank's device timeline (cuda/Stream.cpp sets it at pfrt_cuda_init
/// when tracing): mark(stream) records a timing event on `stream` (null:
/// the compute stream) and returns it; resolveUs waits for a mark and gives
/// its time in pfrt_now_us's clock plus the epoch (monotonicUs's); release
/// recycles it.
struct DeviceTraceHooks {
  void *(*mark)(void *stream);
  double (*resolveUs)(void *mark);
  /// end - begin in microseconds (the device's own difference, exact to
  /// its resolution however long the run has been).
  double (*elapsedUs)(void *begin, void *end);
  void (*release)(void *mark);
  /// A new reference after the marks so far are resolved (float
  /// milliseconds from one reference lose precision over a long run).
  void (*reanchor)();
};
void setDeviceTraceHooks(const DeviceTraceHooks *hooks);
/// Tracing with device times (PF_TRACE on a GPU rank).
bool deviceTraceOn();
/// A communication span between two marks on a communication stream
/// (thread 2).
void traceDeviceSpan(const char *name, void *begin, void *end, int64_t bytes,
                     int64_t groupSize);
/// Turns the device marks recorded so far into times (after the device
/// has passed them: the step's synchronisation).
void traceResolveDevice();

/// Records one completed communication event.
void traceComm(const char *name, double beginUs, int64_t bytes,
               int64_t groupSize, int64_t peer);

/// Counts a communication call of the host rows (CommCounters.h: its
/// kind's MPI calls and bytes, the host time it blocked).
void countComm(const char *name, int64_t bytes, double us);

/// Times a communication call for the trace (when on) and the counters.
class CommScope {
public:
  CommScope(const char *name, int64_t bytes, int64_t groupSize, int64_t peer)
      : name(name), bytes(bytes), groupSize(groupSize), peer(peer),
        on(traceOn()), begin(monotonicUs()) {}
  ~CommScope() {
    countComm(name, bytes, monotonicUs() - begin);
    if (on)
      traceComm(name, begin, bytes, groupSize, peer);
  }
  CommScope(const CommScope &) = delete;
  CommScope &operator=(const CommScope &) = delete;

private:
  const char *name;
  int64_t bytes, groupSize, peer;
  bool on;
  double begin;
};

//===----------------------------------------------------------------------===//
// Losses reported by the program (Memory.cpp), read by pfrt_main
//===----------------------------------------------------------------------===//

/// The losses reported since the last pfrt_arena_reset, in micro-batch
/// order (fatal, naming it, if a micro-batch below the largest reported one
/// is missing). Empty if none were reported.
std::vector<float> stepLosses();
/// The step results reported so far (pfrt_report_output), by index; an
/// index not reported has no bytes and `have` 0.
struct StepOutputs {
  std::vector<std::vector<char>> data;
  std::vector<char> have;
};
StepOutputs stepOutputs();

//===----------------------------------------------------------------------===//
// Template definitions
//===----------------------------------------------------------------------===//

template <typename Fn> void forEachRun(const ShardSpec &s, Fn &&fn) {
  if (s.shardElems == 0)
    return;
  auto off = [&](int64_t d) { return s.offset ? s.offset[d] : 0; };
  auto shp = [&](int64_t d) { return s.shape ? s.shape[d] : s.logical[d]; };
  // Trailing dimensions that the shard covers fully fold into one run.
  int64_t k = s.ndim - 1;
  int64_t run = 1;
  while (k >= 0 && off(k) == 0 && shp(k) == s.logical[k])
    run *= s.logical[k--];
  if (k < 0) {
    fn(int64_t(0), int64_t(0), run);
    return;
  }
  run *= shp(k);
  // Row-major strides of the logical tensor for dims 0..k.
  int64_t strides[kMaxRank];
  int64_t st = 1;
  for (int64_t d = s.ndim - 1; d >= 0; --d) {
    if (d <= k)
      strides[d] = st;
    st *= s.logical[d];
  }
  int64_t idx[kMaxRank] = {0};
  int64_t local = 0;
  for (;;) {
    int64_t start = off(k) * strides[k];
    for (int64_t d = 0; d < k; ++d)
      start += (off(d) + idx[d]) * strides[d];
    fn(start, local, run);
    local += run;
    int64_t d = k - 1;
    while (d >= 0 && ++idx[d] == shp(d))
      idx[d--] = 0;
    if (d < 0)
      return;
  }
}

} // namespace pfrt

#endif // PFRT_SRC_COMMON_INTERNAL_H
