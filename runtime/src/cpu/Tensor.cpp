//===- Tensor.cpp - layout kernels: transpose and broadcast ---------------===//
//
// The CPU kernels of pf.transpose and pf.broadcast_to (slices, pads and
// concatenation are pfrt_copy_box, src/mpi/Boxing.cpp).
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"
#include "pfrt/pfrt.h"

#include <cstring>

using namespace pfrt;
using namespace pfrt::kern;

extern "C" {

void pfrt_k_transpose(const float *x, float *y, int64_t rank,
                      const int64_t *shape, const int64_t *perm) {
  int64_t total =
      checkTransposeArgs("pfrt_k_transpose", x, y, rank, shape, perm);
  if (total == 0)
    return;
  // Renumber the non-unit input dims, then merge input dims d, d+1 that
  // stay adjacent (in that order) in the output.
  int64_t newId[kMaxRank];
  int64_t e[kMaxRank]; // input extents after dropping unit dims
  int64_t q = 0;
  for (int64_t d = 0; d < rank; ++d) {
    if (shape[d] == 1) {
      newId[d] = -1;
    } else {
      newId[d] = q;
      e[q++] = shape[d];
    }
  }
  int64_t p[kMaxRank]; // output dim j = input dim p[j]
  int64_t pq = 0;
  for (int64_t j = 0; j < rank; ++j)
    if (newId[perm[j]] >= 0)
      p[pq++] = newId[perm[j]];
  // group[d] = id of the merged input dim that input dim d belongs to.
  int64_t group[kMaxRank], ge[kMaxRank];
  int64_t g = -1;
  for (int64_t j = 0; j < q; ++j) {
    bool join = j > 0 && p[j] == p[j - 1] + 1;
    if (!join)
      ++g, ge[g] = 1;
    group[p[j]] = g; // g numbers groups in OUTPUT order for now
    ge[g] *= e[p[j]];
  }
  int64_t r = g + 1;
  if (r <= 1) {
    std::memcpy(y, x, size_t(total) * sizeof(float));
    return;
  }
  // Input order of the groups: a group's first input dim decides.
  int64_t inOrder[kMaxRank], nIn = 0;
  for (int64_t d = 0; d < q; ++d)
    if (d == 0 || group[d] != group[d - 1])
      inOrder[nIn++] = group[d];
  int64_t istrOfGroup[kMaxRank];
  int64_t st = 1;
  for (int64_t k = r - 1; k >= 0; --k) {
    istrOfGroup[inOrder[k]] = st;
    st *= ge[inOrder[k]];
  }
  // Output dim j is group j: extent ge[j], output stride ostr[j], input
  // stride istr[j].
  int64_t ostr[kMaxRank], istr[kMaxRank];
  st = 1;
  for (int64_t j = r - 1; j >= 0; --j) {
    ostr[j] = st;
    st *= ge[j];
    istr[j] = istrOfGroup[j];
  }
  if (istr[r - 1] == 1) {
    // The innermost dim stays innermost: copy contiguous rows.
    const int64_t len = ge[r - 1];
    int64_t idx[kMaxRank] = {0};
    int64_t xo = 0;
    for (int64_t yo = 0; yo < total; yo += len) {
      std::memcpy(y + yo, x + xo, size_t(len) * sizeof(float));
      nextIndex(idx, ge, istr, r - 2, &xo);
    }
    return;
  }
  // Tiled 2-D transpose between output dim a = r-1 (strided in x) and the
  // output dim b that holds the input's innermost dim (strided in y).
  const int64_t a = r - 1;
  int64_t b = 0;
  while (istr[b] != 1)
    ++b;
  const int64_t na = ge[a], nb = ge[b];
  const int64_t sa = istr[a], sb = ostr[b];
  constexpr int64_t T = 32;
  int64_t idx[kMaxRank] = {0};
  int64_t xo = 0, yo = 0;
  for (;;) {
    for (int64_t i0 = 0; i0 < nb; i0 += T) {
      int64_t i1 = i0 + T < nb ? i0 + T : nb;
      for (int64_t j0 = 0; j0 < na; j0 += T) {
        int64_t j1 = j0 + T < na ? j0 + T : na;
        for (int64_t i = i0; i < i1; ++i) {
          float *PFRT_RESTRICT yr = y + yo + i * sb;
          const float *PFRT_RESTRICT xr = x + xo + i;
          for (int64_t j = j0; j < j1; ++j)
            yr[j] = xr[j * sa];
        }
      }
    }
    // Odometer over the output dims other than a and b.
    int64_t d = r - 2;
    for (; d >= 0; --d) {
      if (d == b)
        continue;
      xo += istr[d];
      yo += ostr[d];
      if (++idx[d] < ge[d])
        break;
      xo -= istr[d] * ge[d];
      yo -= ostr[d] * ge[d];
      idx[d] = 0;
    }
    if (d < 0)
      break;
  }
}

void pfrt_k_broadcast(const void *x, void *y, int64_t rank,
                      const int64_t *in_shape, const int64_t *out_shape,
                      int64_t elem_bytes) {
  int64_t total = checkBroadcastArgs("pfrt_k_broadcast", x, y, rank, in_shape,
                                     out_shape, elem_bytes);
  if (total == 0)
    return;
  // Input strides, 0 on repeated axes; the innermost run of equal extents
  // is copied as one block.
  int64_t stride[kMaxRank], s = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    stride[d] = in_shape[d] == 1 && out_shape[d] != 1 ? 0 : s;
    s *= in_shape[d];
  }
  int64_t inner = 1, split = rank;
  while (split > 0 && in_shape[split - 1] == out_shape[split - 1]) {
    --split;
    inner *= out_shape[split];
  }
  const char *src = static_cast<const char *>(x);
  char *dst = static_cast<char *>(y);
  int64_t blocks = total / inner, blockBytes = inner * elem_bytes;
  int64_t idx[kMaxRank] = {0};
  for (int64_t blk = 0; blk < blocks; ++blk) {
    int64_t off = 0;
    for (int64_t d = 0; d < split; ++d)
      off += idx[d] * stride[d];
    const char *from = src + off * elem_bytes;
    char *to = dst + blk * blockBytes;
    std::memcpy(to, from, size_t(blockBytes));
    for (int64_t d = split - 1; d >= 0; --d) {
      if (++idx[d] < out_shape[d])
        break;
      idx[d] = 0;
    }
  }
}

} // extern "C"
