//===- Graph.h - a GPU rank's steps: capture, replay, host work -*- C++ -*-===//
//
// Not installed; nothing here is part of the ABI. The host side of a step
// captured as a CUDA graph (Graph.cpp): while the step is captured, a twin
// that needs the host (loading an input, reporting a loss or an output,
// refreshing a scalar or dropout's step) records the copy on the stream,
// from or to a page-locked host buffer of its own, and leaves the host part
// here: work before each replay (the previous replay has finished: the
// buffers are free), reports after it (the copies are done). All of it runs
// on the calling thread, between replays, so the runtime stays
// single-threaded.
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_CUDA_GRAPH_H
#define PFRT_SRC_CUDA_GRAPH_H

#include <cstdint>
#include <functional>

namespace pfrt {
namespace twin {

/// Host work run before each replay of the captured step.
void beforeEachReplay(std::function<void()> work);
/// Host work run after each replay (its copies are done).
void afterEachReplay(std::function<void()> work);

/// A page-locked host buffer of `bytes` for a captured copy (one per call
/// site of the step, which runs once while captured).
void *pinnedBuffer(int64_t bytes, const char *fn);

/// While captured: the host load `load(host)` runs before each replay into
/// a page-locked buffer the captured copy to `out` reads.
void captureInput(void *out, int64_t bytes, const char *fn,
                  std::function<void(void *)> load);

} // namespace twin
} // namespace pfrt

#endif // PFRT_SRC_CUDA_GRAPH_H
