//===- Embedding.cpp - device twins of the embedding lookups --------------===//
//
// pfrt_cuda_k_embedding(_rows) and their gradients: the CPU kernels'
// checks, the ids' range checked on the device (one thread, recorded in the
// error record), then one thread per output element; the gradient first
// lists each row's positions in order (one thread, in scratch), so every
// element sums its positions as the CPU does, without atomics
// (EmbeddingBodies.h).
//
//===----------------------------------------------------------------------===//

#include "EmbeddingBodies.h"
#include "Twin.h"

#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

using namespace pfrt;
using namespace pfrt::kern;
using namespace pfrt::twin;
using pfrt::dev::DeviceError;

namespace {

/// The embedding twins: the ids' check on the device, then one thread per
/// element of y.
void embedding(const char *fn, int32_t code, const float *table,
               const int64_t *ids, float *y, int64_t n, int64_t v, int64_t d,
               int64_t row0, int64_t vocab) {
  checkEmbeddingArgs(fn, ids, n, v, d, row0, vocab);
  int64_t total = checkEmbeddingLookupArgs(fn, table, y, n, v, d);
  if (n == 0)
    return;
  DeviceError *err = kernels(fn).err;
  void *args1[] = {&ids, &n, &vocab, &code, &err};
  launchSingle(kEmbeddingCheck, args1, fn);
  void *args2[] = {&table, &ids, &y, &v, &d, &row0, &total};
  launch(kEmbedding, total, args2, fn);
}

/// The gradients: the ids' check, each row's positions in order (one
/// thread, in scratch), then one thread per element of dtable.
void embeddingGrad(const char *fn, int32_t code, const int64_t *ids,
                   const float *dy, float *dtable, int64_t n, int64_t v,
                   int64_t d, int64_t row0, int64_t vocab) {
  checkEmbeddingArgs(fn, ids, n, v, d, row0, vocab);
  int64_t total = checkEmbeddingGradArgs(fn, dy, dtable, n, v, d);
  if (total == 0)
    return;
  if (n == 0) {
    pfrt_cuda_memset(dtable, 0, total * int64_t(sizeof(float)));
    return;
  }
  DeviceError *err = kernels(fn).err;
  void *args1[] = {&ids, &n, &vocab, &code, &err};
  launchSingle(kEmbeddingCheck, args1, fn);
  ScratchLayout l;
  const int64_t startAt = l.add((v + 1) * int64_t(sizeof(int64_t)));
  const int64_t cursorAt = l.add(v * int64_t(sizeof(int64_t)));
  const int64_t posAt = l.add(n * int64_t(sizeof(int64_t)));
  void *base = scratch(l.bytes, fn);
  int64_t *start = scratchAt<int64_t>(base, startAt),
          *cursor = scratchAt<int64_t>(base, cursorAt),
          *pos = scratchAt<int64_t>(base, posAt);
  void *args2[] = {&ids, &n, &v, &row0, &start, &cursor, &pos};
  launchSingle(kEmbeddingIndex, args2, fn);
  void *args3[] = {&start, &pos, &dy, &dtable, &d, &total};
  launch(kEmbeddingGrad, total, args3, fn);
}

} // namespace

extern "C" {

void pfrt_cuda_k_embedding(const float *table, const int64_t *ids, float *y,
                           int64_t n, int64_t v, int64_t d) {
  embedding("pfrt_cuda_k_embedding", dev::kErrEmbeddingId, table, ids, y, n, v,
            d, 0, v);
}

void pfrt_cuda_k_embedding_grad(const int64_t *ids, const float *dy,
                                float *dtable, int64_t n, int64_t v,
                                int64_t d) {
  embeddingGrad("pfrt_cuda_k_embedding_grad", dev::kErrEmbeddingGradId, ids, dy,
                dtable, n, v, d, 0, v);
}

void pfrt_cuda_k_embedding_rows(const float *table, const int64_t *ids,
                                float *y, int64_t n, int64_t v, int64_t d,
                                int64_t row0, int64_t vocab) {
  embedding("pfrt_cuda_k_embedding_rows", dev::kErrEmbeddingRowsId, table, ids,
            y, n, v, d, row0, vocab);
}

void pfrt_cuda_k_embedding_grad_rows(const int64_t *ids, const float *dy,
                                     float *dtable, int64_t n, int64_t v,
                                     int64_t d, int64_t row0, int64_t vocab) {
  embeddingGrad("pfrt_cuda_k_embedding_grad_rows", dev::kErrEmbeddingGradRowsId,
                ids, dy, dtable, n, v, d, row0, vocab);
}

} // extern "C"
