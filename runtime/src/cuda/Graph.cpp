//===- Graph.cpp - a GPU rank's steps: run, captured, replayed ------------===//
//
// pfrt_cuda_run_step runs a rank's step on the GPU: the first uncaptured
// (it allocates what a capture may not), the second captured as a CUDA
// graph, every later one a replay between the host work the captured twins
// left (Graph.h): scalars refreshed and inputs loaded before it, losses and
// outputs reported after it. Steps that communicate through the host are
// never captured.
//
//===----------------------------------------------------------------------===//

#include "Graph.h"

#include "../common/CommCounters.h"
#include "../common/Internal.h"
#include "CudaInternal.h"
#include "ExposedComm.h"
#include "Module.h"
#include "NcclComm.h"
#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

using namespace pfrt;
using namespace pfrt::twin;

namespace {

/// The host work of the captured step (Graph.h), whether it is captured,
/// and the steps run so far.
struct CapturedHostWork {
  std::vector<std::function<void()>> before, after;
  bool captured = false;
  int64_t steps = 0;
};
CapturedHostWork gCaptured;

} // namespace

namespace pfrt {
namespace twin {

void beforeEachReplay(std::function<void()> work) {
  gCaptured.before.push_back(std::move(work));
}

void afterEachReplay(std::function<void()> work) {
  gCaptured.after.push_back(std::move(work));
}

void *pinnedBuffer(int64_t bytes, const char *fn) {
  return cuda::allocPinned(bytes, fn);
}

void captureInput(void *out, int64_t bytes, const char *fn,
                  std::function<void(void *)> load) {
  void *host = pinnedBuffer(bytes, fn);
  beforeEachReplay([host, load] { load(host); });
  if (bytes > 0)
    pfrt_cuda_h2d(out, host, bytes);
}

} // namespace twin
} // namespace pfrt

extern "C" {

int pfrt_cuda_run_step(void (*step)(int64_t), int64_t k) {
  const char *fn = "pfrt_cuda_run_step";
  if (!step)
    fatal("%s: no step function", fn);
  requireDevice(fn);
  // Each step's host round-trips (the report's steady_round_trips).
  struct StepCount {
    StepCount() { counters::stepBegin(); }
    ~StepCount() { counters::stepEnd(); }
  } stepCount;
  CapturedHostWork &w = gCaptured;
  // The first step runs uncaptured: it allocates what a capture may not
  // (scratch, scalar slots, cuBLASLt's plans). The second is captured.
  // A step communicating through the host (StagedComm.cpp) waits for it in
  // the middle: it is never captured.
  // After it, point-to-point may move from the host to NCCL (NcclP2P.cpp:
  // every rank's call; already there where a plan set it up at start-up),
  // and the steps are captured if nothing else is staged. Each step ends
  // joining its NCCL sends' streams.
  if (!pfrt_cuda_graphs_enabled() || (w.steps == 0 && !w.captured) ||
      cuda::hostStagedCommunication()) {
    step(k);
    nccl::joinSends();
    pfrt_cuda_synchronize();
    cuda::exposed::stepTimed(); // (its waits were read at the synchronize)
    traceResolveDevice();
    checkErrors(fn);
    if (w.steps == 0 && nccl::setupPointToPoint() &&
        !nccl::stagedBesidesPointToPoint())
      cuda::clearHostStagedCommunication();
    ++w.steps;
    return 0;
  }
  if (!w.captured) {
    pfrt_cuda_graph_begin();
    step(k);
    nccl::joinSends();
    pfrt_cuda_graph_end();
    w.captured = true;
    if (const char *v = std::getenv("PFRT_CUDA_VERBOSE"); v && *v == '1')
      std::fprintf(stderr,
                   "pfrt: rank %d: step %lld captured as a CUDA graph (%zu "
                   "host loads before and %zu reports after each replay)\n",
                   pfrt_rank(), (long long)k, w.before.size(), w.after.size());
  }
  for (auto &load : w.before)
    load();
  pfrt_cuda_graph_launch();
  pfrt_cuda_synchronize();
  checkErrors(fn);
  for (auto &report : w.after)
    report();
  ++w.steps;
  return 0;
}

float *pfrt_cuda_scalar(const char *name) {
  const char *fn = "pfrt_cuda_scalar";
  float *host = pfrt_scalar(name); // checks the name
  requireDevice(fn);
  static std::unordered_map<std::string, float *> slots;
  float *&slot = slots[name];
  if (!slot)
    slot = static_cast<float *>(cuda::allocPersistent(sizeof(float), fn));
  if (cuda::streamCapturing()) {
    // A copy node from a page-locked mirror, which the host work before
    // each replay sets to the scalar's value as it is then.
    auto *mirror = static_cast<float *>(pinnedBuffer(sizeof(float), fn));
    *mirror = *host;
    beforeEachReplay([mirror, host] { *mirror = *host; });
    pfrt_cuda_h2d(slot, mirror, sizeof(float));
  } else {
    // Uncaptured: the value now, as the kernel argument (the host may
    // change the scalar before the stream gets here).
    float value = *host;
    void *args[] = {&slot, &value};
    launchSingle(kSetScalar, args, fn);
  }
  return slot;
}

void pfrt_cuda_report_loss(const float *loss, int32_t microbatch) {
  if (!loss)
    pfrt_report_loss(nullptr, microbatch); // fatal, with its message
  if (cuda::streamCapturing()) {
    using pfrt::cuda::copyToHostAsync;
    // The copy is captured; the report follows each replay.
    auto *host = static_cast<float *>(
        pinnedBuffer(sizeof(float), "pfrt_cuda_report_loss"));
    copyToHostAsync(host, loss, sizeof(float));
    afterEachReplay([host, microbatch] { pfrt_report_loss(host, microbatch); });
    return;
  }
  checkErrors("pfrt_cuda_report_loss");
  float value;
  pfrt_cuda_d2h(&value, loss, sizeof(float));
  pfrt_report_loss(&value, microbatch);
}

void pfrt_cuda_report_output(int32_t index, const void *data, int64_t bytes) {
  if (bytes <= 0 || !data) {
    pfrt_report_output(index, data, bytes); // nothing to copy, or fatal
    return;
  }
  if (cuda::streamCapturing()) {
    using pfrt::cuda::copyToHostAsync;
    void *host = pinnedBuffer(bytes, "pfrt_cuda_report_output");
    copyToHostAsync(host, data, bytes);
    afterEachReplay(
        [index, host, bytes] { pfrt_report_output(index, host, bytes); });
    return;
  }
  checkErrors("pfrt_cuda_report_output");
  std::vector<char> host(static_cast<size_t>(bytes));
  pfrt_cuda_d2h(host.data(), data, bytes);
  pfrt_report_output(index, host.data(), bytes);
}

} // extern "C"
