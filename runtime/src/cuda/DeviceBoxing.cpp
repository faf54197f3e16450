//===- DeviceBoxing.cpp - the boxing twins on the device ------------------===//
//
// The device twins of the boxing rows (pfrt_device.def): all-gather,
// reduce-scatter (f32, bf16, f16) and all-to-all along any axis over NCCL,
// where NCCL serves the group (every member has a GPU of its own:
// nccl::useNccl, the all-reduce's choice), and the local slices on the
// device always. A collective moves whole contiguous blocks, so an axis
// that is not the outermost needs a repack, as in the host rows
// (src/mpi/Boxing.cpp): the tensor viewed as [outer, n, chunk] is copied to
// or from [n, outer, chunk] in device scratch by Kernels.cu's
// pfrt_cuda_copy_blocks (TensorBodies.h's BlockCopy, the emulation runs the
// same body). Everything is enqueued on the compute stream: nothing waits,
// and a step whose communication is all NCCL is captured as a CUDA graph.
//
// Gathers, all-to-alls and slices copy bits, so they equal the host rows
// bit for bit. A reduce-scatter's sums are NCCL's, in NCCL's order: equal to
// the host row's within rounding (the emulation's NCCL sums with the host
// row's own MPI call, so there they are equal).
//
// Where NCCL does not serve the group (ranks sharing a GPU, no NCCL) the
// collectives are host-staged (StagedBoxing.cpp), and so is every call
// whose arguments the host row rejects: the error is then the host row's.
//
//===----------------------------------------------------------------------===//

#include "StagedComm.h"

#include "../common/Internal.h"
#include "../common/LogicalMath.h"
#include "BoxingArgs.h"
#include "NcclComm.h"
#include "kernels/TensorBodies.h"
#include "kernels/Twin.h"
#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

#include <algorithm>
#include <cstdint>

using namespace pfrt;
using pfrt::cuda::boxing::buffersOk;
using pfrt::cuda::boxing::Layout;
using pfrt::cuda::boxing::layoutOf;

namespace {

/// The widest word (8, 4, 2 or 1 bytes) dividing chunkBytes and aligning
/// both buffers.
int32_t wordFor(int64_t chunkBytes, const void *src, const void *dst) {
  auto a = reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst);
  for (int32_t u : {8, 4, 2})
    if (chunkBytes % u == 0 && a % uintptr_t(u) == 0)
      return u;
  return 1;
}

/// Copies the grid of chunks (i < a, j < b) of chunkBytes bytes each, chunk
/// (i, j) from chunk sBase + i sA + j sB of src to chunk dBase + i dA + j dB
/// of dst, on the compute stream.
struct Grid {
  int64_t a, b, sA, sB, sBase, dA, dB, dBase;
};
void copyChunks(const void *src, void *dst, int64_t chunkBytes, const Grid &g,
                const char *fn) {
  dev::BlockCopy p;
  p.unit = wordFor(chunkBytes, src, dst);
  int64_t w = chunkBytes / p.unit; // words a chunk
  p.a = g.a;
  p.b = g.b;
  p.c = w;
  p.sA = g.sA * w;
  p.sB = g.sB * w;
  p.sBase = g.sBase * w;
  p.dA = g.dA * w;
  p.dB = g.dB * w;
  p.dBase = g.dBase * w;
  void *args[] = {&src, &dst, &p};
  twin::launch(twin::kCopyBlocks, p.a * p.b * p.c, args, fn);
}

/// [outer, n, chunk] -> [n, outer, chunk].
void pack(const void *src, void *dst, int64_t outer, int64_t n,
          int64_t chunkBytes, const char *fn) {
  copyChunks(src, dst, chunkBytes, {n, outer, 1, n, 0, outer, 1, 0}, fn);
}

/// [n, outer, chunk] -> [outer, n, chunk].
void unpack(const void *src, void *dst, int64_t outer, int64_t n,
            int64_t chunkBytes, const char *fn) {
  copyChunks(src, dst, chunkBytes, {outer, n, 1, outer, 0, n, 1, 0}, fn);
}

/// Device scratch for one boxing call: `first` bytes, then `second` (each
/// 256-byte aligned). Stream-ordered: the call's kernels and NCCL calls are
/// all on the compute stream.
struct Scratch {
  char *first = nullptr, *second = nullptr;
  Scratch(int64_t firstBytes, int64_t secondBytes, const char *fn) {
    twin::ScratchLayout layout;
    int64_t a = layout.add(firstBytes), b = layout.add(secondBytes);
    char *base = static_cast<char *>(twin::scratch(layout.bytes, fn));
    first = base + a;
    second = base + b;
  }
};

bool summed(int32_t dtype) {
  return dtype == PFRT_DTYPE_F32 || dtype == PFRT_DTYPE_BF16 ||
         dtype == PFRT_DTYPE_F16;
}

/// The reduce-scatter twins (f32 and the _dtype row): over NCCL, else
/// host-staged.
int reduceScatter(const void *in, void *out, int32_t dtype, int64_t ndim,
                  const int64_t *inShape, int64_t axis, const int64_t *ranks,
                  int64_t n, const char *hostFn) {
  Layout l = layoutOf(summed(dtype) ? logical::dtypeBytes(dtype) : -1, ndim,
                      inShape, axis, n);
  bool ok = l.ok && inShape[axis] % n == 0 &&
            buffersOk(in, l.elems * l.es, out, l.elems / n * l.es);
  if (!ok || !nccl::useNccl(ranks, n, hostFn))
    return staged::boxReduceScatterDtype(in, out, dtype, ndim, inShape, axis,
                                         ranks, n);
  if (l.elems == 0)
    return 0;
  const int64_t outElems = l.elems / n;
  const void *send = in;
  if (l.outer > 1 && n > 1) {
    Scratch s(l.elems * l.es, 0, hostFn);
    pack(in, s.first, l.outer, n, outElems / l.outer * l.es, hostFn);
    send = s.first;
  }
  nccl::reduceScatterOf(send, out, outElems, dtype, ranks, n, hostFn);
  return 0;
}

} // namespace

extern "C" {

int pfrt_cuda_box_all_gather(const void *in, void *out, int32_t dtype,
                             int64_t ndim, const int64_t *inShape, int64_t axis,
                             const int64_t *ranks, int64_t n) {
  const char *fn = "pfrt_box_all_gather";
  Layout l = layoutOf(logical::dtypeBytes(dtype), ndim, inShape, axis, n);
  bool ok = l.ok && buffersOk(in, l.elems * l.es, out, l.elems * n * l.es);
  if (!ok || !nccl::useNccl(ranks, n, fn))
    return staged::boxAllGather(in, out, dtype, ndim, inShape, axis, ranks, n);
  if (l.elems == 0)
    return 0;
  // out viewed as [outer, n, inner]: member p's block lands at [o, p, :].
  const int64_t blockBytes = l.elems * l.es;
  if (l.outer == 1 || n == 1) {
    nccl::allGatherBytes(in, out, blockBytes, ranks, n, fn);
    return 0;
  }
  Scratch s(n * blockBytes, 0, fn);
  nccl::allGatherBytes(in, s.first, blockBytes, ranks, n, fn);
  unpack(s.first, out, l.outer, n, blockBytes / l.outer, fn);
  return 0;
}

int pfrt_cuda_box_reduce_scatter(const float *in, float *out, int64_t ndim,
                                 const int64_t *inShape, int64_t axis,
                                 const int64_t *ranks, int64_t n) {
  return reduceScatter(in, out, PFRT_DTYPE_F32, ndim, inShape, axis, ranks, n,
                       "pfrt_box_reduce_scatter");
}

int pfrt_cuda_box_reduce_scatter_dtype(const void *in, void *out, int32_t dtype,
                                       int64_t ndim, const int64_t *inShape,
                                       int64_t axis, const int64_t *ranks,
                                       int64_t n) {
  return reduceScatter(in, out, dtype, ndim, inShape, axis, ranks, n,
                       "pfrt_box_reduce_scatter_dtype");
}

int pfrt_cuda_box_all_to_all(const void *in, void *out, int32_t dtype,
                             int64_t ndim, const int64_t *inShape,
                             int64_t splitAxis, int64_t concatAxis,
                             const int64_t *ranks, int64_t n) {
  const char *fn = "pfrt_box_all_to_all";
  Layout l = layoutOf(logical::dtypeBytes(dtype), ndim, inShape, splitAxis, n);
  bool ok = l.ok && concatAxis >= 0 && concatAxis < ndim &&
            concatAxis != splitAxis && inShape[splitAxis] % n == 0 &&
            buffersOk(in, l.elems * l.es, out, l.elems * l.es);
  if (!ok || !nccl::useNccl(ranks, n, fn))
    return staged::boxAllToAll(in, out, dtype, ndim, inShape, splitAxis,
                               concatAxis, ranks, n);
  if (l.elems == 0)
    return 0;
  const int64_t count = l.elems / n, blockBytes = count * l.es;
  // Send: in viewed as [outerS, n, chunkS] along splitAxis, packed to
  // [n, outerS, chunkS]. Receive: block p has inShape with [splitAxis] / n
  // and lands at [:, p, :] of out viewed as [outerC, n, innerC].
  const int64_t outerS = l.outer;
  int64_t outerC = 1;
  for (int64_t d = 0; d < concatAxis; ++d)
    outerC *= d == splitAxis ? inShape[d] / n : inShape[d];
  const bool packSend = outerS > 1 && n > 1, unpackRecv = outerC > 1 && n > 1;
  Scratch s(packSend ? l.elems * l.es : 0, unpackRecv ? l.elems * l.es : 0, fn);
  const void *send = in;
  if (packSend) {
    pack(in, s.first, outerS, n, blockBytes / outerS, fn);
    send = s.first;
  }
  void *recv = unpackRecv ? static_cast<void *>(s.second) : out;
  nccl::allToAllBytes(send, recv, blockBytes, ranks, n, fn);
  if (unpackRecv)
    unpack(recv, out, outerC, n, blockBytes / outerC, fn);
  return 0;
}

// Broadcast and reduce in the dtype's own NCCL type, where NCCL serves the
// group and the host row would take the arguments (else host-staged, and
// the host row's error).
int pfrt_cuda_broadcast_dtype(void *buf, int64_t count, int32_t dtype,
                              int64_t root, const int64_t *ranks, int64_t n) {
  const char *fn = "pfrt_broadcast";
  int64_t es = logical::dtypeBytes(dtype);
  bool ok = es > 0 && count >= 0 && count <= (int64_t(1) << 56) &&
            (count == 0 || buf) && ranks &&
            std::find(ranks, ranks + std::max<int64_t>(n, 0), root) !=
                ranks + std::max<int64_t>(n, 0);
  if (!ok || !nccl::useNccl(ranks, n, fn))
    return staged::broadcastDtype(buf, count, dtype, root, ranks, n);
  nccl::broadcastOf(buf, count, dtype, root, ranks, n, fn);
  return 0;
}

int pfrt_cuda_reduce_sum_dtype(const void *in, void *out, int64_t count,
                               int32_t dtype, int64_t root,
                               const int64_t *ranks, int64_t n) {
  const char *fn = "pfrt_reduce_sum";
  int64_t bytes = count * (summed(dtype) ? logical::dtypeBytes(dtype) : 0);
  bool isRoot = pfrt_rank() == root;
  bool ok = summed(dtype) && count >= 0 && count <= (int64_t(1) << 56) &&
            (count == 0 || in) && ranks &&
            std::find(ranks, ranks + std::max<int64_t>(n, 0), root) !=
                ranks + std::max<int64_t>(n, 0) &&
            (!isRoot || count == 0 ||
             (out && (in == out || buffersOk(in, bytes, out, bytes))));
  if (!ok || !nccl::useNccl(ranks, n, fn))
    return staged::reduceSumDtype(in, out, count, dtype, root, ranks, n);
  nccl::reduceSumOf(in, out, count, dtype, root, ranks, n, fn);
  return 0;
}

// Local: a strided copy on the device, whatever the transport.
int pfrt_cuda_box_slice(const void *in, void *out, int32_t dtype, int64_t ndim,
                        const int64_t *inShape, int64_t axis, int64_t index,
                        int64_t n) {
  const char *fn = "pfrt_cuda_box_slice";
  Layout l = layoutOf(logical::dtypeBytes(dtype), ndim, inShape, axis, n);
  bool ok = l.ok && index >= 0 && index < n && inShape[axis] % n == 0 &&
            buffersOk(in, l.elems * l.es, out, l.elems / n * l.es);
  if (!ok)
    return staged::boxSlice(in, out, dtype, ndim, inShape, axis, index, n);
  const int64_t outElems = l.elems / n;
  if (outElems == 0)
    return 0;
  // in viewed as [outer, n, chunk]; out = [:, index, :].
  copyChunks(in, out, outElems / l.outer * l.es,
             {l.outer, 1, n, 0, index, 1, 0, 0}, fn);
  return 0;
}

int pfrt_cuda_box_unslice(const void *in, void *out, int32_t dtype,
                          int64_t ndim, const int64_t *inShape, int64_t axis,
                          int64_t index, int64_t n) {
  const char *fn = "pfrt_cuda_box_unslice";
  Layout l = layoutOf(logical::dtypeBytes(dtype), ndim, inShape, axis, n);
  bool ok = l.ok && index >= 0 && index < n &&
            buffersOk(in, l.elems * l.es, out, l.elems * n * l.es);
  if (!ok)
    return staged::boxUnslice(in, out, dtype, ndim, inShape, axis, index, n);
  if (l.elems == 0)
    return 0;
  // out viewed as [outer, n, chunk]: zeros, and in at [:, index, :].
  pfrt_cuda_memset(out, 0, l.elems * n * l.es);
  copyChunks(in, out, l.elems / l.outer * l.es,
             {l.outer, 1, 1, 0, 0, n, 0, index}, fn);
  return 0;
}

} // extern "C"
