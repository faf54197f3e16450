//===- EmbeddingBodies.h - embeddings ---------------------------*- C++ -*-===//
//
// Not installed; nothing here is part of the ABI. Part of the CUDA kernels'
// bodies (DeviceBodies.h says how they are written and checked).
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_CUDA_KERNELS_EMBEDDINGBODIES_H
#define PFRT_SRC_CUDA_KERNELS_EMBEDDINGBODIES_H

#include "CommonBodies.h"

namespace pfrt {
namespace dev {

//===----------------------------------------------------------------------===//
// Embedding (embeddingRows / embeddingGradRows in src/cpu/Embedding.cpp)
//===----------------------------------------------------------------------===//

/// The first id (in order) outside [0, vocab) is recorded. One thread.
PFRT_HD inline void embeddingCheckIds(const int64_t *ids, int64_t n,
                                      int64_t vocab, int32_t code,
                                      DeviceError *err) {
  for (int64_t i = 0; i < n; ++i)
    if (ids[i] < 0 || ids[i] >= vocab) {
      raiseError(err, code, i, ids[i], vocab, 0.0);
      return;
    }
}

/// Element i of y [n, d]: row ids[r] - row0 of the table's v rows, zeros
/// for an id outside them.
PFRT_HD inline void embeddingAt(const float *table, const int64_t *ids,
                                float *y, int64_t v, int64_t d, int64_t row0,
                                int64_t i) {
  int64_t r = i / d, k = i - r * d;
  int64_t row = ids[r] - row0;
  y[i] = row >= 0 && row < v ? table[row * d + k] : 0.0f;
}

/// The positions of each of the v rows' ids, in increasing order: row j's
/// are pos[start[j] .. start[j + 1]) (start has v + 1 entries, cursor v).
/// One thread, so the gradient needs no atomics.
PFRT_HD inline void embeddingIndex(const int64_t *ids, int64_t n, int64_t v,
                                   int64_t row0, int64_t *start,
                                   int64_t *cursor, int64_t *pos) {
  for (int64_t j = 0; j <= v; ++j)
    start[j] = 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t row = ids[i] - row0;
    if (row >= 0 && row < v)
      ++start[row + 1];
  }
  for (int64_t j = 0; j < v; ++j) {
    start[j + 1] += start[j];
    cursor[j] = start[j];
  }
  for (int64_t i = 0; i < n; ++i) {
    int64_t row = ids[i] - row0;
    if (row >= 0 && row < v)
      pos[cursor[row]++] = i;
  }
}

/// Element i of dtable [v, d]: 0 plus the dy rows of its ids in position
/// order, in float32, as the CPU accumulates them.
PFRT_HD inline void embeddingGradAt(const int64_t *start, const int64_t *pos,
                                    const float *dy, float *dtable, int64_t d,
                                    int64_t i) {
  int64_t row = i / d, k = i - row * d;
  float acc = 0.0f;
  for (int64_t q = start[row]; q < start[row + 1]; ++q)
    acc += dy[pos[q] * d + k];
  dtable[i] = acc;
}

} // namespace dev
} // namespace pfrt

#endif // PFRT_SRC_CUDA_KERNELS_EMBEDDINGBODIES_H
