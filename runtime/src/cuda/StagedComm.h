//===- StagedComm.h - GPU ranks' communication through the host -*- C++ -*-===//
//
// Not installed; nothing here is part of the ABI. What the host-staged
// twins share (StagedComm.cpp: the collectives; StagedP2P.cpp: point to
// point; StagedBoxing.cpp: boxing and the vocabulary cross-entropy): host
// copies of device buffers, and the bookkeeping every staged call does on
// entry (no capture; the step is noted as staged; started split
// all-reduces finished first, so every rank's MPI calls keep the program's
// order).
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_CUDA_STAGEDCOMM_H
#define PFRT_SRC_CUDA_STAGEDCOMM_H

#include "../common/CommCounters.h"
#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

namespace pfrt {
namespace staged {

/// The staged calls' copies: pfrt_cuda_d2h and pfrt_cuda_h2d, their bytes
/// counted as host round-trip bytes (CommCounters.h).
inline void d2h(void *host, const void *device, int64_t bytes) {
  counters::roundTripBytes(bytes);
  pfrt_cuda_d2h(host, device, bytes);
}
inline void h2d(void *device, const void *host, int64_t bytes) {
  counters::roundTripBytes(bytes);
  pfrt_cuda_h2d(device, host, bytes);
}

/// A host copy of `count` floats of device memory (or none).
std::vector<float> toHost(const float *device, int64_t count);
/// Copies `host` to the device and waits (the host buffer then goes).
void toDevice(float *device, const std::vector<float> &host);

/// Entering a staged call: its copies wait for the stream, which a capture
/// forbids; the step is noted as communicating through the host (and the
/// call counted as a host round-trip), and the started split all-reduces
/// are finished first.
void enter(const char *fn);
/// The same, leaving the started split all-reduces in flight (a split
/// all-reduce's start).
void enterKeepingReduces(const char *fn);
/// Entering a staged point-to-point call: as enter, but the step may be
/// captured later if point-to-point moves to NCCL and nothing else was
/// staged (pfrt_cuda_run_step asks stagedBesidesPointToPoint).
void enterPointToPoint(const char *fn);
/// Finishes every started host-staged split all-reduce, oldest first.
void finishStagedReduces();

/// The boxing rows host-staged (StagedBoxing.cpp): the host row on host
/// copies, with the host row's arguments and errors (pfrt.h).
int boxAllGather(const void *in, void *out, int32_t dtype, int64_t ndim,
                 const int64_t *inShape, int64_t axis, const int64_t *ranks,
                 int64_t n);
int boxReduceScatter(const float *in, float *out, int64_t ndim,
                     const int64_t *inShape, int64_t axis, const int64_t *ranks,
                     int64_t n);
int boxReduceScatterDtype(const void *in, void *out, int32_t dtype,
                          int64_t ndim, const int64_t *inShape, int64_t axis,
                          const int64_t *ranks, int64_t n);
int boxAllToAll(const void *in, void *out, int32_t dtype, int64_t ndim,
                const int64_t *inShape, int64_t splitAxis, int64_t concatAxis,
                const int64_t *ranks, int64_t n);
/// pfrt_broadcast_dtype and pfrt_reduce_sum_dtype host-staged.
int broadcastDtype(void *buf, int64_t count, int32_t dtype, int64_t root,
                   const int64_t *ranks, int64_t n);
int reduceSumDtype(const void *in, void *out, int64_t count, int32_t dtype,
                   int64_t root, const int64_t *ranks, int64_t n);
int boxSlice(const void *in, void *out, int32_t dtype, int64_t ndim,
             const int64_t *inShape, int64_t axis, int64_t index, int64_t n);
int boxUnslice(const void *in, void *out, int32_t dtype, int64_t ndim,
               const int64_t *inShape, int64_t axis, int64_t index, int64_t n);

/// The vocabulary-parallel cross-entropy and its gradient host-staged
/// (StagedBoxing.cpp): the host row on host copies, its bits and errors.
int softmaxXentVocab(const float *logits, const int64_t *labels, float *loss,
                     int64_t n, int64_t c, int64_t offset, int64_t classes,
                     int64_t ignore, int64_t mode, const int64_t *ranks,
                     int64_t nranks);
int softmaxXentVocabGrad(const float *logits, const int64_t *labels,
                         const float *dloss, float *dlogits, int64_t n,
                         int64_t c, int64_t offset, int64_t classes,
                         int64_t ignore, int64_t mode, const int64_t *ranks,
                         int64_t nranks);

/// A group's size (n, or the world for a NULL group).
int64_t groupSize(int64_t n);

/// The host stand-ins of the device buffers one host-row call reads and
/// writes. Buffers that overlap on the device share one host allocation at
/// the same relative offsets (and the same address modulo 16), so the host
/// row sees what the device addresses show: its overlap checks fire for the
/// same arguments, and in-place calls stay in place. A NULL or empty buffer
/// is passed through as it is (the host row never dereferences it, or
/// rejects it with its own error).
class HostStage {
public:
  /// Adds [device, device + bytes); `read`: the host row reads it (copied
  /// to the host first), `written`: it writes it (copied back afterwards).
  /// Returns its index for host().
  size_t add(const void *device, int64_t bytes, bool read, bool written) {
    spans.push_back(
        {static_cast<const char *>(device), bytes, read, written, nullptr});
    return spans.size() - 1;
  }

  /// Allocates the host copies and copies what the host row reads.
  void toHost() {
    std::vector<size_t> order;
    for (size_t k = 0; k < spans.size(); ++k) {
      if (staged(spans[k]))
        order.push_back(k);
      else
        spans[k].host = const_cast<char *>(spans[k].device);
    }
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return spans[a].device < spans[b].device;
    });
    for (size_t i = 0; i < order.size();) {
      // One group: every span that overlaps the union of those before it.
      const char *lo = spans[order[i]].device;
      const char *hi = lo + spans[order[i]].bytes;
      size_t j = i + 1;
      for (; j < order.size() && spans[order[j]].device < hi; ++j)
        hi = std::max(hi, spans[order[j]].device + spans[order[j]].bytes);
      size_t shift = reinterpret_cast<uintptr_t>(lo) % 16;
      buffers.emplace_back(new char[size_t(hi - lo) + shift + 16]);
      char *base = buffers.back().get();
      base += (16 - reinterpret_cast<uintptr_t>(base) % 16) % 16 + shift;
      for (; i < j; ++i) {
        Span &s = spans[order[i]];
        s.host = base + (s.device - lo);
        if (s.read)
          d2h(s.host, s.device, s.bytes);
      }
    }
  }

  /// The host address standing for buffer k (after toHost).
  template <typename T = void> T *host(size_t k) const {
    return reinterpret_cast<T *>(spans[k].host);
  }

  /// Copies what the host row wrote back to the device and waits.
  void toDevice() {
    bool any = false;
    for (const Span &s : spans)
      if (s.written && staged(s)) {
        h2d(const_cast<char *>(s.device), s.host, s.bytes);
        any = true;
      }
    if (any)
      pfrt_cuda_synchronize(); // before the host copies go
  }

private:
  struct Span {
    const char *device;
    int64_t bytes;
    bool read, written;
    char *host;
  };
  static bool staged(const Span &s) { return s.device && s.bytes > 0; }
  std::vector<Span> spans;
  std::vector<std::unique_ptr<char[]>> buffers;
};

} // namespace staged
} // namespace pfrt

#endif // PFRT_SRC_CUDA_STAGEDCOMM_H
