//===- Embedding.cpp - embedding lookups and their gradients --------------===//
//
// pfrt_k_embedding(_rows): rows of a [vocab, d] table by id (a table split
// by rows across ranks looks up the ids of its rows and writes zeros for
// the others), and the gradients, summed per row in position order.
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"
#include "pfrt/pfrt.h"

#include <cstring>

using namespace pfrt;
using namespace pfrt::kern;

namespace {
/// The ids' values: a CPU kernel reads them here (its twin on the device).
void checkEmbeddingIds(const char *fn, const int64_t *ids, int64_t n,
                       int64_t vocab) {
  for (int64_t i = 0; i < n; ++i)
    if (ids[i] < 0 || ids[i] >= vocab)
      fatal("%s: id %lld at position %lld is outside [0, %lld)", fn,
            (long long)ids[i], (long long)i, (long long)vocab);
}

/// The lookup of the ids in rows [row0, row0 + v) of a [vocab, d] table
/// (zeros for the other ids), and its gradient; the whole table is row0 = 0,
/// v = vocab.
void embeddingRows(const char *fn, const float *table, const int64_t *ids,
                   float *y, int64_t n, int64_t v, int64_t d, int64_t row0,
                   int64_t vocab) {
  checkEmbeddingArgs(fn, ids, n, v, d, row0, vocab);
  checkEmbeddingIds(fn, ids, n, vocab);
  checkEmbeddingLookupArgs(fn, table, y, n, v, d);
  for (int64_t i = 0; i < n; ++i) {
    int64_t row = ids[i] - row0;
    if (row >= 0 && row < v)
      std::memcpy(y + i * d, table + row * d, size_t(d) * sizeof(float));
    else
      std::memset(y + i * d, 0, size_t(d) * sizeof(float));
  }
}

void embeddingGradRows(const char *fn, const int64_t *ids, const float *dy,
                       float *dtable, int64_t n, int64_t v, int64_t d,
                       int64_t row0, int64_t vocab) {
  checkEmbeddingArgs(fn, ids, n, v, d, row0, vocab);
  checkEmbeddingIds(fn, ids, n, vocab);
  int64_t total = checkEmbeddingGradArgs(fn, dy, dtable, n, v, d);
  std::memset(dtable, 0, size_t(total) * sizeof(float));
  for (int64_t i = 0; i < n; ++i) {
    int64_t row = ids[i] - row0;
    if (row < 0 || row >= v)
      continue;
    float *out = dtable + row * d;
    const float *g = dy + i * d;
    for (int64_t k = 0; k < d; ++k)
      out[k] += g[k];
  }
}
} // namespace

extern "C" {

void pfrt_k_embedding(const float *table, const int64_t *ids, float *y,
                      int64_t n, int64_t v, int64_t d) {
  embeddingRows("pfrt_k_embedding", table, ids, y, n, v, d, 0, v);
}

void pfrt_k_embedding_grad(const int64_t *ids, const float *dy, float *dtable,
                           int64_t n, int64_t v, int64_t d) {
  embeddingGradRows("pfrt_k_embedding_grad", ids, dy, dtable, n, v, d, 0, v);
}

void pfrt_k_embedding_rows(const float *table, const int64_t *ids, float *y,
                           int64_t n, int64_t v, int64_t d, int64_t row0,
                           int64_t vocab) {
  embeddingRows("pfrt_k_embedding_rows", table, ids, y, n, v, d, row0, vocab);
}

void pfrt_k_embedding_grad_rows(const int64_t *ids, const float *dy,
                                float *dtable, int64_t n, int64_t v, int64_t d,
                                int64_t row0, int64_t vocab) {
  embeddingGradRows("pfrt_k_embedding_grad_rows", ids, dy, dtable, n, v, d,
                    row0, vocab);
}

} // extern "C"
