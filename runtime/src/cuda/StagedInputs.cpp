//===- StagedInputs.cpp - a GPU rank's inputs, loaded through the host ----===//
//
// The device twins of the input rows: the host rows load each input into a
// host buffer exactly as on a CPU rank, then it is copied to the device
// (while a step is captured, the load runs before each replay into a
// page-locked buffer the captured copy reads: Graph.h).
//
//===----------------------------------------------------------------------===//

#include "../common/Internal.h"
#include "CudaInternal.h"
#include "Graph.h"
#include "Module.h"
#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

using namespace pfrt;
using namespace pfrt::twin;

namespace {

/// One persistent host buffer per (row, input, device buffer, size): the
/// host rows load into it exactly as into a CPU rank's buffer (their
/// resident synthetic batch is keyed by the buffer, so it must be the same
/// buffer every time), then it is copied. Before a buffer is refilled, a
/// copy from it that may still be pending is waited for.
struct Staging {
  std::vector<char> host;
  bool pending = false;
  uint64_t copiedAt = 0; // cuda::syncCount() when the copy was enqueued
};

Staging &stagingFor(int kind, int64_t index, void *out, int64_t bytes) {
  static std::map<std::tuple<int, int64_t, void *, int64_t>, Staging> m;
  Staging &s = m[std::make_tuple(kind, index, out, bytes)];
  if (s.pending && cuda::syncCount() <= s.copiedAt)
    pfrt_cuda_synchronize();
  s.pending = false;
  if (s.host.size() != size_t(bytes > 0 ? bytes : 1))
    s.host.resize(size_t(bytes > 0 ? bytes : 1));
  return s;
}

void copyStaged(Staging &s, void *out, int64_t bytes) {
  if (bytes <= 0)
    return;
  pfrt_cuda_h2d(out, s.host.data(), bytes);
  s.pending = true;
  s.copiedAt = cuda::syncCount();
}

void checkInputBuffer(const char *fn, int64_t index, void *out, int64_t bytes) {
  if (bytes < 0 || (bytes > 0 && !out))
    fatal("%s: input %lld: bad buffer (%lld bytes)", fn, (long long)index,
          (long long)bytes);
}

/// Input `index` into the device buffer out (bytes) through the host row
/// row(host): a host node of the graph while the stream captures, else
/// written into its staging buffer (staging kind `kind`) and copied.
template <typename Row>
int stageInput(const char *fn, int kind, int64_t index, void *out,
               int64_t bytes, Row row) {
  checkInputBuffer(fn, index, out, bytes);
  if (cuda::streamCapturing()) {
    captureInput(out, bytes, fn, row);
    return 0;
  }
  Staging &s = stagingFor(kind, index, out, bytes);
  row(s.host.data());
  copyStaged(s, out, bytes);
  return 0;
}

} // namespace

extern "C" {

int pfrt_cuda_zero_partial_input(void *buf, int64_t bytes) {
  const char *fn = "pfrt_cuda_zero_partial_input";
  if (bytes < 0 || (bytes > 0 && !buf))
    fatal("%s: bad buffer (%lld bytes)", fn, (long long)bytes);
  requireDevice(fn);
  // The host row's rule: a partial-sum input's synthetic data lives on its
  // first rank only; user inputs are each rank's own.
  if (!userInputsInUse() && bytes > 0)
    pfrt_cuda_memset(buf, 0, bytes);
  return 0;
}

int pfrt_cuda_load_input(int64_t index, void *out, int64_t bytes, int32_t dtype,
                         int64_t num_classes, uint64_t seed, uint64_t stream,
                         int64_t ndim, const int64_t *shape) {
  return stageInput("pfrt_cuda_load_input", 0, index, out, bytes,
                    [=](void *host) {
                      pfrt_load_input(index, host, bytes, dtype, num_classes,
                                      seed, stream, ndim, shape);
                    });
}

int pfrt_cuda_load_input_boxes(int64_t index, void *out, int64_t bytes,
                               int32_t dtype, int64_t num_classes,
                               uint64_t seed, uint64_t stream, int64_t ndim,
                               const int64_t *logical_shape, int64_t num_boxes,
                               const int64_t *offsets,
                               const int64_t *box_shape) {
  return stageInput(
      "pfrt_cuda_load_input_boxes", 0, index, out, bytes, [=](void *host) {
        pfrt_load_input_boxes(index, host, bytes, dtype, num_classes, seed,
                              stream, ndim, logical_shape, num_boxes, offsets,
                              box_shape);
      });
}

int pfrt_cuda_load_input_part(int64_t index, void *out, int64_t bytes,
                              int64_t part, int64_t num_parts, int32_t dtype,
                              int64_t num_classes, uint64_t seed,
                              uint64_t stream, int64_t ndim,
                              const int64_t *logical_shape, int64_t num_boxes,
                              const int64_t *offsets,
                              const int64_t *box_shape) {
  return stageInput(
      "pfrt_cuda_load_input_part", 1, index, out, bytes, [=](void *host) {
        pfrt_load_input_part(index, host, bytes, part, num_parts, dtype,
                             num_classes, seed, stream, ndim, logical_shape,
                             num_boxes, offsets, box_shape);
      });
}

} // extern "C"
