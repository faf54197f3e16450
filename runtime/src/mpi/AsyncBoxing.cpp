//===- AsyncBoxing.cpp - the split boxing collectives on the host ---------===//
//
// pfrt_box_all_gather_start, pfrt_box_reduce_scatter_start and
// pfrt_box_collective_wait (pfrt.h): Boxing.cpp's all-gather and
// reduce-scatter as MPI nonblocking collectives (MPI_Iallgather,
// MPI_Ireduce_scatter_block) on the group's cached communicator. An inner
// axis is repacked as there, through a buffer the slot keeps until its wait:
// the scatter's input packed at the start, the gather received into it and
// unpacked at the wait. MPI moves the data inside MPI calls, so without a
// progress thread most of the work happens at the wait (as for
// pfrt_all_reduce_start). Counted and traced at the start under the
// blocking rows' names, so the counters are theirs.
//
//===----------------------------------------------------------------------===//

#include "../common/Internal.h"
#include "../common/KernelArgs.h"
#include "MpiInternal.h"
#include "pfrt/pfrt.h"

#include <climits>
#include <cstring>
#include <vector>

using namespace pfrt;

namespace {

/// A split collective in flight: its request and, for an inner axis, the
/// repack buffer (a gather's is unpacked into out at the wait).
struct Split {
  bool active = false;
  MPI_Request request = MPI_REQUEST_NULL;
  std::vector<char> buf;
  bool unpack = false;
  char *out = nullptr;
  int64_t outer = 1, n = 1, chunkBytes = 0;
};
Split gSplits[PFRT_MAX_ASYNC_SLOTS];

void checkNoneInFlight() {
  for (int64_t s = 0; s < PFRT_MAX_ASYNC_SLOTS; ++s)
    if (gSplits[s].active)
      fatal("pfrt_finalize: the boxing collective started in slot %lld was "
            "never waited for (pfrt_box_collective_wait)",
            (long long)s);
}

Split &slotOf(int64_t slot, const char *fn) {
  addFinalizeHook(&checkNoneInFlight);
  if (slot < 0 || slot >= PFRT_MAX_ASYNC_SLOTS)
    fatal("%s: slot %lld is outside [0, %d)", fn, (long long)slot,
          PFRT_MAX_ASYNC_SLOTS);
  return gSplits[slot];
}

/// The checks of the blocking rows: rank, shape, axis, buffers (n times
/// the input for a gather, 1/n for a scatter, whose axis must divide).
/// Returns the input's element count and sets `outer`.
int64_t checkArgs(const void *in, const void *out, int64_t es, int64_t ndim,
                  const int64_t *shape, int64_t axis, int64_t n, bool gather,
                  int64_t &outer, const char *fn) {
  if (ndim < 1 || ndim > kMaxRank)
    fatal("%s: tensor rank %lld is outside [1, %lld]", fn, (long long)ndim,
          (long long)kMaxRank);
  if (!shape)
    fatal("%s: inShape is NULL for a rank-%lld tensor", fn, (long long)ndim);
  if (axis < 0 || axis >= ndim)
    fatal("%s: axis %lld is outside [0, %lld)", fn, (long long)axis,
          (long long)ndim);
  int64_t elems = 1, bytes;
  for (int64_t d = 0; d < ndim; ++d)
    if (shape[d] < 0 || __builtin_mul_overflow(elems, shape[d], &elems))
      fatal("%s: inShape %s has a negative dimension or overflows", fn,
            shapeToString(ndim, shape).c_str());
  if (__builtin_mul_overflow(elems, es * n, &bytes) || elems * n > INT_MAX)
    fatal("%s: inShape %s times %lld members is too large for one "
          "nonblocking MPI call",
          fn, shapeToString(ndim, shape).c_str(), (long long)n);
  if (!gather && shape[axis] % n != 0)
    fatal("%s: inShape %s: dimension %lld (%lld) is not divisible by the "
          "group size %lld",
          fn, shapeToString(ndim, shape).c_str(), (long long)axis,
          (long long)shape[axis], (long long)n);
  int64_t inBytes = elems * es, outBytes = gather ? inBytes * n : inBytes / n;
  if ((!in && inBytes > 0) || (!out && outBytes > 0))
    fatal("%s: %s is NULL for a non-empty tensor", fn, !in ? "in" : "out");
  const char *a = static_cast<const char *>(in);
  const char *b = static_cast<const char *>(out);
  if (inBytes > 0 && outBytes > 0 && a < b + outBytes && b < a + inBytes)
    fatal("%s: in and out overlap", fn);
  outer = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[d];
  return elems;
}

/// [outer, n, chunk] <-> [n, outer, chunk] (toBlocks: the first to the
/// second).
void repack(char *dst, const char *src, int64_t outer, int64_t n,
            int64_t chunkBytes, bool toBlocks) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t p = 0; p < n; ++p) {
      int64_t grid = (o * n + p) * chunkBytes,
              blocks = (p * outer + o) * chunkBytes;
      if (toBlocks)
        std::memcpy(dst + blocks, src + grid, size_t(chunkBytes));
      else
        std::memcpy(dst + grid, src + blocks, size_t(chunkBytes));
    }
}

} // namespace

extern "C" {

int pfrt_box_all_gather_start(const void *in, void *out, int32_t dtype,
                              int64_t ndim, const int64_t *inShape,
                              int64_t axis, const int64_t *ranks, int64_t n,
                              int64_t slot) {
  const char *fn = "pfrt_box_all_gather_start";
  Split &s = slotOf(slot, fn);
  if (s.active)
    fatal("%s: slot %lld is in flight (started and not waited for)", fn,
          (long long)slot);
  MPI_Comm comm = groupComm(ranks, n, fn);
  int64_t es = kern::checkDtype(fn, "dtype", dtype), outer = 1;
  int64_t elems =
      checkArgs(in, out, es, ndim, inShape, axis, n, true, outer, fn);
  CommScope trace("box_all_gather", elems * n * es, n, -1);
  const int64_t blockBytes = elems * es;
  s.unpack = outer > 1 && n > 1 && blockBytes > 0;
  char *recv = static_cast<char *>(out);
  if (s.unpack) {
    s.buf.resize(size_t(n * blockBytes));
    recv = s.buf.data();
    s.out = static_cast<char *>(out);
    s.outer = outer;
    s.n = n;
    s.chunkBytes = blockBytes / outer;
  }
  PFRT_MPI(MPI_Iallgather, (in, int(blockBytes), MPI_BYTE, recv,
                            int(blockBytes), MPI_BYTE, comm, &s.request));
  s.active = true;
  return 0;
}

int pfrt_box_reduce_scatter_start(const void *in, void *out, int32_t dtype,
                                  int64_t ndim, const int64_t *inShape,
                                  int64_t axis, const int64_t *ranks, int64_t n,
                                  int64_t slot) {
  const char *fn = "pfrt_box_reduce_scatter_start";
  Split &s = slotOf(slot, fn);
  if (s.active)
    fatal("%s: slot %lld is in flight (started and not waited for)", fn,
          (long long)slot);
  MPI_Comm comm = groupComm(ranks, n, fn);
  ReduceType rt = reduceTypeOf(dtype, fn);
  int64_t outer = 1;
  int64_t elems =
      checkArgs(in, out, rt.elemSize, ndim, inShape, axis, n, false, outer, fn);
  CommScope trace("box_reduce_scatter", elems * rt.elemSize, n, -1);
  const int64_t outElems = elems / n;
  const void *send = in;
  if (outer > 1 && n > 1 && elems > 0) {
    s.buf.resize(size_t(elems * rt.elemSize));
    repack(s.buf.data(), static_cast<const char *>(in), outer, n,
           outElems / outer * rt.elemSize, /*toBlocks=*/true);
    send = s.buf.data();
  }
  s.unpack = false;
  PFRT_MPI(MPI_Ireduce_scatter_block,
           (send, out, int(outElems), rt.type, rt.op, comm, &s.request));
  s.active = true;
  return 0;
}

int pfrt_box_collective_wait(int64_t slot) {
  const char *fn = "pfrt_box_collective_wait";
  Split &s = slotOf(slot, fn);
  if (!s.active)
    fatal("%s: slot %lld has no boxing collective in flight", fn,
          (long long)slot);
  {
    CommScope trace("box_collective_wait", 0, s.n, -1);
    PFRT_MPI(MPI_Wait, (&s.request, MPI_STATUS_IGNORE));
  }
  if (s.unpack)
    repack(s.out, s.buf.data(), s.outer, s.n, s.chunkBytes,
           /*toBlocks=*/false);
  s.active = false;
  s.unpack = false;
  return 0;
}

} // extern "C"
