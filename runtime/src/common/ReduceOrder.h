//===- ReduceOrder.h - reduce_sum's summation order -------------*- C++ -*-===//
//
// What reduce_sum's CPU kernel (cpu/Reduce.cpp) and its GPU twin
// (cuda/kernels/Reduce.cpp, the bodies in cuda/kernels/ReduceBodies.h)
// agree on so that they give the same bits: written once, plain C++ that
// nvcc reads too.
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_COMMON_REDUCEORDER_H
#define PFRT_SRC_COMMON_REDUCEORDER_H

#include <stdint.h>

namespace pfrt {
namespace kern {

/// reduce_sum's order in the column case, shared by the CPU kernel and its
/// GPU twin (bit for bit): one reduced run of `rows` rows with the last dim
/// kept (a bias gradient's sum over the batch). The rows are summed in
/// chunks of `chunk` consecutive rows, each chunk in float64 from 0, and
/// the chunks' sums added in order; the chunk depends on the shape only,
/// giving the GPU about 2^17 threads (outputs x chunks) of at least 16 rows
/// each instead of one thread per output walking every row (7 ms for a
/// 8192 x 1024 bias gradient on an H200). 0: one chunk (rows in order).
inline int64_t reduceColumnChunk(int64_t rows, int64_t outputs) {
  constexpr int64_t kThreads = int64_t(1) << 17, kMinRows = 16;
  if (rows <= 0 || outputs <= 0)
    return 0;
  int64_t chunks = (kThreads + outputs - 1) / outputs;
  if (chunks > rows / kMinRows)
    chunks = rows / kMinRows;
  return chunks < 2 ? 0 : (rows + chunks - 1) / chunks;
}

/// reduce_sum's shape with unit dimensions dropped and neighbours with the
/// same flag merged, so that the dims left alternate kept/reduced: ext[d]
/// and red[d] for d < the count returned.
inline int64_t mergeReduceDims(int64_t rank, const int64_t *shape,
                               const int8_t *reduce, int64_t *ext, bool *red) {
  int64_t r = 0;
  for (int64_t d = 0; d < rank; ++d) {
    if (shape[d] == 1)
      continue;
    bool rd = reduce[d] != 0;
    if (r > 0 && red[r - 1] == rd) {
      ext[r - 1] *= shape[d];
    } else {
      ext[r] = shape[d];
      red[r] = rd;
      ++r;
    }
  }
  return r;
}

} // namespace kern
} // namespace pfrt

#endif // PFRT_SRC_COMMON_REDUCEORDER_H
