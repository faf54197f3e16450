//===- AsyncBoxing.cpp - the split boxing collectives on the device -------===//
//
// pfrt_cuda_box_all_gather_start, pfrt_cuda_box_reduce_scatter_start and
// pfrt_cuda_box_collective_wait (pfrt_cuda.h): DeviceBoxing.cpp's
// all-gather and reduce-scatter split in two, so that the compute stream
// runs on while NCCL moves the data (pf-overlap-collectives).
//
// Over NCCL the collective runs on the split all-reduce's stream
// (NcclAsync.h), forked from the compute stream by an event after the
// compute stream's work so far and joined back at the wait by the slot's
// completion event: inside a capture a fork and a join, so a captured step
// holds them. An inner axis needs a repack, as in the blocking twins, but
// not through the shared scratch (the compute stream reuses it at once):
// each slot has a device buffer of its own, kept from step to step (made in
// the first, uncaptured step; a slot's collectives keep their sizes). A
// reduce-scatter packs on the compute stream before the fork; a gather
// lands in the slot's buffer and is unpacked on the compute stream after
// the join. Results are the blocking twins' bits (the same NCCL calls on
// the same blocks).
//
// Where NCCL does not serve the group, or the host row would reject the
// arguments, the start runs the whole blocking twin (host-staged; its
// error is the host row's) and the wait only checks the slot.
//
//===----------------------------------------------------------------------===//

#include "../common/Internal.h"
#include "../common/LogicalMath.h"
#include "BoxingArgs.h"
#include "CudaInternal.h"
#include "ExposedComm.h"
#include "NcclComm.h"
#include "kernels/TensorBodies.h"
#include "kernels/Twin.h"
#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

#ifndef PFRT_CUDA_NO_NCCL
#include "NcclAsync.h"
#endif

#include <cstdint>

using namespace pfrt;
using pfrt::cuda::boxing::buffersOk;
using pfrt::cuda::boxing::Layout;
using pfrt::cuda::boxing::layoutOf;

namespace {

enum class Kind { Idle, Gather, Scatter, Done };

/// A slot of the split boxing collectives.
struct Slot {
  Kind kind = Kind::Idle;
  void *done = nullptr; // the collective's end on the split stream
  char *buf = nullptr;  // the repack buffer, `capacity` bytes
  int64_t capacity = 0;
  // A gather into buf: unpacked into out ([outer, n, chunk]) at the wait.
  bool unpack = false;
  void *out = nullptr;
  int64_t outer = 1, n = 1, chunkBytes = 0;
};
Slot gSlots[PFRT_MAX_ASYNC_SLOTS];

void checkNoneInFlight() {
  for (int64_t s = 0; s < PFRT_MAX_ASYNC_SLOTS; ++s)
    if (gSlots[s].kind != Kind::Idle)
      fatal("pfrt_finalize: the boxing collective started in slot %lld was "
            "never waited for (pfrt_box_collective_wait)",
            (long long)s);
}

Slot &slotOf(int64_t slot, const char *fn) {
  addFinalizeHook(&checkNoneInFlight);
  if (slot < 0 || slot >= PFRT_MAX_ASYNC_SLOTS)
    fatal("%s: slot %lld is outside [0, %d)", fn, (long long)slot,
          PFRT_MAX_ASYNC_SLOTS);
  return gSlots[slot];
}

Slot &startSlot(int64_t slot, const char *fn) {
  Slot &s = slotOf(slot, fn);
  if (s.kind != Kind::Idle)
    fatal("%s: slot %lld is in flight (started and not waited for)", fn,
          (long long)slot);
  return s;
}

/// [outer, n, chunk] <-> [n, outer, chunk] on the compute stream (toBlocks:
/// the first to the second), one pfrt_cuda_copy_blocks launch.
void repack(const void *src, void *dst, int64_t outer, int64_t n,
            int64_t chunkBytes, bool toBlocks, const char *fn) {
  dev::BlockCopy p;
  auto a = reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst);
  p.unit = 1;
  for (int32_t u : {8, 4, 2})
    if (chunkBytes % u == 0 && a % uintptr_t(u) == 0) {
      p.unit = u;
      break;
    }
  int64_t w = chunkBytes / p.unit;
  // Chunk (i, j) of the [a, b] grid: src i sA + j sB, dst i dA + j dB.
  p.c = w;
  if (toBlocks) {
    p.a = n, p.b = outer, p.sA = w, p.sB = n * w, p.dA = outer * w, p.dB = w;
  } else {
    p.a = outer, p.b = n, p.sA = w, p.sB = outer * w, p.dA = n * w, p.dB = w;
  }
  void *args[] = {&src, &dst, &p};
  twin::launch(twin::kCopyBlocks, p.a * p.b * p.c, args, fn);
}

#ifndef PFRT_CUDA_NO_NCCL
void *gFork = nullptr;

/// Slot s's repack buffer of at least `bytes` bytes (grown in the first,
/// uncaptured step; allocating inside a capture fails).
char *slotBuffer(Slot &s, int64_t bytes, const char *fn) {
  if (bytes > s.capacity) {
    s.buf = static_cast<char *>(cuda::allocPersistent(bytes, fn));
    s.capacity = bytes;
  }
  return s.buf;
}

/// Forks the split stream from the compute stream and gives slot s its
/// completion event.
void *fork(Slot &s) {
  void *stream = nccl::asyncStream();
  if (!gFork)
    gFork = cuda::newEvent("the split collectives' fork");
  if (!s.done)
    s.done = cuda::newEvent("a split boxing collective's completion");
  cuda::recordEvent(gFork, cuda::computeStream());
  cuda::streamWaitEvent(stream, gFork);
  return stream;
}
#endif

} // namespace

extern "C" {

int pfrt_cuda_box_all_gather_start(const void *in, void *out, int32_t dtype,
                                   int64_t ndim, const int64_t *inShape,
                                   int64_t axis, const int64_t *ranks,
                                   int64_t n, int64_t slot) {
  const char *fn = "pfrt_box_all_gather_start";
  Slot &s = startSlot(slot, fn);
  Layout l = layoutOf(logical::dtypeBytes(dtype), ndim, inShape, axis, n);
  bool ok = l.ok && buffersOk(in, l.elems * l.es, out, l.elems * n * l.es);
  if (!ok || !nccl::useNccl(ranks, n, fn)) {
    int rc =
        pfrt_cuda_box_all_gather(in, out, dtype, ndim, inShape, axis, ranks, n);
    s.kind = Kind::Done;
    return rc;
  }
#ifndef PFRT_CUDA_NO_NCCL
  const int64_t blockBytes = l.elems * l.es;
  s.unpack = l.outer > 1 && n > 1 && blockBytes > 0;
  void *recv = out;
  if (s.unpack) {
    recv = slotBuffer(s, n * blockBytes, fn);
    s.out = out;
    s.outer = l.outer;
    s.n = n;
    s.chunkBytes = blockBytes / l.outer;
  }
  void *stream = fork(s);
  nccl::allGatherBytesOn(in, recv, blockBytes, ranks, n, fn, stream);
  cuda::recordEvent(s.done, stream);
  s.kind = Kind::Gather;
#endif
  return 0;
}

int pfrt_cuda_box_reduce_scatter_start(const void *in, void *out, int32_t dtype,
                                       int64_t ndim, const int64_t *inShape,
                                       int64_t axis, const int64_t *ranks,
                                       int64_t n, int64_t slot) {
  const char *fn = "pfrt_box_reduce_scatter_start";
  Slot &s = startSlot(slot, fn);
  bool summed = dtype == PFRT_DTYPE_F32 || dtype == PFRT_DTYPE_BF16 ||
                dtype == PFRT_DTYPE_F16;
  Layout l = layoutOf(summed ? logical::dtypeBytes(dtype) : -1, ndim, inShape,
                      axis, n);
  bool ok = l.ok && inShape[axis] % n == 0 &&
            buffersOk(in, l.elems * l.es, out, l.elems / n * l.es);
  if (!ok || !nccl::useNccl(ranks, n, fn)) {
    int rc = pfrt_cuda_box_reduce_scatter_dtype(in, out, dtype, ndim, inShape,
                                                axis, ranks, n);
    s.kind = Kind::Done;
    return rc;
  }
#ifndef PFRT_CUDA_NO_NCCL
  const int64_t outElems = l.elems / n;
  const void *send = in;
  if (l.outer > 1 && n > 1 && l.elems > 0) {
    char *packed = slotBuffer(s, l.elems * l.es, fn);
    repack(in, packed, l.outer, n, outElems / l.outer * l.es,
           /*toBlocks=*/true, fn);
    send = packed;
  }
  s.unpack = false;
  void *stream = fork(s);
  nccl::reduceScatterOn(send, out, outElems, dtype, ranks, n, fn, stream);
  cuda::recordEvent(s.done, stream);
  s.kind = Kind::Scatter;
#endif
  return 0;
}

int pfrt_cuda_box_collective_wait(int64_t slot) {
  const char *fn = "pfrt_box_collective_wait";
  Slot &s = slotOf(slot, fn);
  if (s.kind == Kind::Idle)
    fatal("%s: slot %lld has no boxing collective in flight", fn,
          (long long)slot);
  if (s.kind != Kind::Done) {
    {
      // The compute stream's wait is the exposed part of the collective.
      cuda::exposed::Scope exposed(s.kind == Kind::Gather
                                       ? PFRT_COMM_ALL_GATHER
                                       : PFRT_COMM_REDUCE_SCATTER);
      cuda::streamWaitEvent(cuda::computeStream(), s.done);
    }
    if (s.unpack)
      repack(s.buf, s.out, s.outer, s.n, s.chunkBytes, /*toBlocks=*/false, fn);
  }
  s.kind = Kind::Idle;
  s.unpack = false;
  return 0;
}

} // extern "C"
