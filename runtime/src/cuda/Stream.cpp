//===- Stream.cpp - the compute stream: order, launches, graphs, clock ----===//
//
// pfrt_cuda.h's rows that enqueue on or wait for the compute stream
// (synchronize, module load and kernel launch, CUDA graph capture and
// replay), the other streams and events the collectives fork and join
// (CudaInternal.h), and the trace's device clock (PF_TRACE on a GPU rank:
// timing events measured from a reference the host waited for).
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include "../common/CommCounters.h"
#include "../common/Internal.h"
#include "CudaInternal.h"
#include "ExposedComm.h"
#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

#include <cstdlib>
#include <cstring>
#include <vector>

using namespace pfrt;
using namespace pfrt::cuda::drv;

namespace pfrt {
namespace cuda {

bool streamCapturing() {
  CudaState &s = gCuda;
  requireReady("streamCapturing");
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  check(s.api.cuStreamIsCapturing(s.stream, &status), "cuStreamIsCapturing");
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

uint64_t syncCount() { return gCuda.syncs; }

namespace {
/// The trace's device timeline (PF_TRACE): timing events from a free list,
/// their times measured from a reference event the host waited for.
struct DeviceClock {
  std::vector<CUevent> free;
  CUevent reference = nullptr;
  double referenceUs = 0;
} gClock;

void *traceMark(void *stream) {
  CUevent e;
  if (gClock.free.empty()) {
    check(gCuda.api.cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate");
  } else {
    e = gClock.free.back();
    gClock.free.pop_back();
  }
  check(gCuda.api.cuEventRecord(e, stream ? static_cast<CUstream>(stream)
                                          : gCuda.stream),
        "cuEventRecord");
  return e;
}

double traceResolveUs(void *mark) {
  CUevent e = static_cast<CUevent>(mark);
  check(gCuda.api.cuEventSynchronize(e), "cuEventSynchronize");
  float ms = 0;
  check(gCuda.api.cuEventElapsedTime(&ms, gClock.reference, e),
        "cuEventElapsedTime");
  return gClock.referenceUs + double(ms) * 1000.0;
}

double traceElapsedUs(void *begin, void *end) {
  float ms = 0;
  check(gCuda.api.cuEventElapsedTime(&ms, static_cast<CUevent>(begin),
                                     static_cast<CUevent>(end)),
        "cuEventElapsedTime");
  return double(ms) * 1000.0;
}

void traceRelease(void *mark) {
  gClock.free.push_back(static_cast<CUevent>(mark));
}

/// Records the reference event, waits for it and notes the host's time.
void traceReanchor() {
  CudaState &s = gCuda;
  check(s.api.cuEventRecord(gClock.reference, s.stream), "cuEventRecord");
  check(s.api.cuEventSynchronize(gClock.reference), "cuEventSynchronize");
  gClock.referenceUs = monotonicUs();
}

} // namespace

DeviceCommScope::DeviceCommScope(const char *name, void *stream, int64_t bytes,
                                 int64_t groupSize)
    : name(name), stream(stream), bytes(bytes), groupSize(groupSize) {
  if (deviceTraceOn())
    begin = traceMark(stream);
}

DeviceCommScope::~DeviceCommScope() {
  if (begin)
    traceDeviceSpan(name, begin, traceMark(stream), bytes, groupSize);
}

void *newStream(const char *what) {
  requireReady(what);
  CUstream stream = nullptr;
  check(gCuda.api.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING),
        "cuStreamCreate");
  return stream;
}

void *newEvent(const char *what) {
  requireReady(what);
  CUevent event = nullptr;
  check(gCuda.api.cuEventCreate(&event, CU_EVENT_DISABLE_TIMING),
        "cuEventCreate");
  return event;
}

void recordEvent(void *event, void *stream) {
  check(gCuda.api.cuEventRecord(static_cast<CUevent>(event),
                                static_cast<CUstream>(stream)),
        "cuEventRecord");
}

void streamWaitEvent(void *stream, void *event) {
  check(gCuda.api.cuStreamWaitEvent(static_cast<CUstream>(stream),
                                    static_cast<CUevent>(event), 0),
        "cuStreamWaitEvent");
}

void eventSynchronize(void *event) {
  check(gCuda.api.cuEventSynchronize(static_cast<CUevent>(event)),
        "cuEventSynchronize");
}

namespace {
const DeviceTraceHooks kTraceHooks = {&traceMark, &traceResolveUs,
                                      &traceElapsedUs, &traceRelease,
                                      &traceReanchor};
} // namespace

/// With PF_TRACE, the ops' trace events get device times: the reference
/// event is recorded and waited for now, and its host time noted.
void drv::startDeviceClock() {
  if (!traceOn())
    return;
  CudaState &s = gCuda;
  check(s.api.cuEventCreate(&gClock.reference, CU_EVENT_DEFAULT),
        "cuEventCreate");
  traceReanchor();
  setDeviceTraceHooks(&kTraceHooks);
}

} // namespace cuda
} // namespace pfrt

extern "C" {

int pfrt_cuda_synchronize(void) {
  requireReady("pfrt_cuda_synchronize");
  check(gCuda.api.cuStreamSynchronize(gCuda.stream), "cuStreamSynchronize");
  ++gCuda.syncs;
  cuda::exposed::collect(); // the waits for communication timed so far
  return 0;
}

void *pfrt_cuda_module_load(const void *image) {
  requireReady("pfrt_cuda_module_load");
  CUmodule module;
  check(gCuda.api.cuModuleLoadData(&module, image), "cuModuleLoadData");
  return module;
}

void *pfrt_cuda_function(void *module, const char *name) {
  requireReady("pfrt_cuda_function");
  CUfunction fn;
  check(gCuda.api.cuModuleGetFunction(&fn, static_cast<CUmodule>(module), name),
        "cuModuleGetFunction");
  return fn;
}

int pfrt_cuda_launch(void *function, int64_t gx, int64_t gy, int64_t gz,
                     int64_t bx, int64_t by, int64_t bz, int64_t shared_bytes,
                     void **args) {
  requireReady("pfrt_cuda_launch");
  check(gCuda.api.cuLaunchKernel(
            static_cast<CUfunction>(function), unsigned(gx), unsigned(gy),
            unsigned(gz), unsigned(bx), unsigned(by), unsigned(bz),
            unsigned(shared_bytes), gCuda.stream, args, nullptr),
        "cuLaunchKernel");
  return 0;
}

int pfrt_cuda_graphs_enabled(void) {
  // A traced GPU rank times every op with events on the stream, which a
  // replayed graph would not repeat: its steps run uncaptured.
  if (deviceTraceOn())
    return 0;
  const char *off = std::getenv("PFRT_NO_CUDA_GRAPH");
  return !(off && std::strcmp(off, "1") == 0);
}

int pfrt_cuda_graph_begin(void) {
  requireReady("pfrt_cuda_graph_begin");
  check(gCuda.api.cuStreamBeginCapture(gCuda.stream,
                                       CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
        "cuStreamBeginCapture");
  pfrt::counters::beginCapture(); // the NCCL calls count at each replay
  return 0;
}

int pfrt_cuda_graph_end(void) {
  requireReady("pfrt_cuda_graph_end");
  CUgraph graph;
  check(gCuda.api.cuStreamEndCapture(gCuda.stream, &graph),
        "cuStreamEndCapture");
  check(gCuda.api.cuGraphInstantiate(&gCuda.graph, graph, 0),
        "cuGraphInstantiate");
  pfrt::counters::endCapture();
  return 0;
}

int pfrt_cuda_graph_launch(void) {
  requireReady("pfrt_cuda_graph_launch");
  if (!gCuda.graph)
    fatal("pfrt_cuda_graph_launch: no captured graph (pfrt_cuda_graph_end)");
  check(gCuda.api.cuGraphLaunch(gCuda.graph, gCuda.stream), "cuGraphLaunch");
  pfrt::counters::replay();
  return 0;
}

} // extern "C"
