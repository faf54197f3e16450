//===- ExposedComm.cpp - the compute stream's waits for communication ----===//
//
// See ExposedComm.h. Timing events come from a free list (made outside a
// capture, never destroyed); a span is a pair recorded on the compute
// stream, read after the host's synchronization (cuEventElapsedTime needs
// both complete).
//
//===----------------------------------------------------------------------===//

#include "ExposedComm.h"

#include "Driver.h"

#include "../common/CommCounters.h"
#include "../common/Internal.h"
#include "CudaInternal.h"

#include <vector>

using namespace pfrt;
using namespace pfrt::cuda::drv;

namespace {

struct Span {
  int kind;
  CUevent begin, end;
};

struct Spans {
  std::vector<CUevent> free;
  std::vector<Span> open; // recorded, not read yet
  int64_t collected = 0;  // read since the last stepTimed
} gSpans;

CUevent timingEvent() {
  Spans &s = gSpans;
  if (!s.free.empty()) {
    CUevent e = s.free.back();
    s.free.pop_back();
    return e;
  }
  CUevent e = nullptr;
  cuda::drv::check(gCuda.api.cuEventCreate(&e, CU_EVENT_DEFAULT),
                   "cuEventCreate");
  return e;
}

} // namespace

namespace pfrt {
namespace cuda {
namespace exposed {

int64_t begin(int kind) {
  if (!deviceReady() || streamCapturing())
    return -1;
  Span s{kind, timingEvent(), timingEvent()};
  cuda::drv::check(gCuda.api.cuEventRecord(s.begin, gCuda.stream),
                   "cuEventRecord");
  gSpans.open.push_back(s);
  return int64_t(gSpans.open.size()) - 1;
}

void end(int64_t span) {
  if (span < 0 || span >= int64_t(gSpans.open.size()))
    return;
  cuda::drv::check(
      gCuda.api.cuEventRecord(gSpans.open[size_t(span)].end, gCuda.stream),
      "cuEventRecord");
}

void collect() {
  Spans &s = gSpans;
  s.collected += int64_t(s.open.size());
  for (const Span &span : s.open) {
    float ms = 0;
    cuda::drv::check(gCuda.api.cuEventElapsedTime(&ms, span.begin, span.end),
                     "cuEventElapsedTime");
    counters::exposedOnDevice(span.kind, double(ms) * 1000.0);
    s.free.push_back(span.begin);
    s.free.push_back(span.end);
  }
  s.open.clear();
}

void stepTimed() {
  counters::deviceTimedStep(gSpans.collected);
  gSpans.collected = 0;
}

} // namespace exposed
} // namespace cuda
} // namespace pfrt
