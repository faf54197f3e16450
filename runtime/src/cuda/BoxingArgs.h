//===- BoxingArgs.h - a boxing call's arguments as the host rows see them -===//
//
// Not installed; nothing here is part of the ABI. Shared by the blocking
// (DeviceBoxing.cpp) and split (AsyncBoxing.cpp) boxing twins: they run a
// call on the device only where the host row would accept it, so that the
// error of a bad call is always the host row's.
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_CUDA_BOXINGARGS_H
#define PFRT_SRC_CUDA_BOXINGARGS_H

#include "../common/Internal.h"

#include <cstdint>

namespace pfrt {
namespace cuda {
namespace boxing {

/// A boxing call's tensor as the host rows see it: element size, element
/// count, the product of the dimensions before the axis; ok false where
/// the host rows reject the rank, shape, axis, dtype or a size overflows.
struct Layout {
  bool ok = false;
  int64_t es = 0, elems = 0, outer = 1;
};

inline Layout layoutOf(int64_t es, int64_t ndim, const int64_t *shape,
                       int64_t axis, int64_t n) {
  Layout l;
  if (es <= 0 || n < 1 || ndim < 1 || ndim > kMaxRank || !shape || axis < 0 ||
      axis >= ndim)
    return l;
  int64_t elems = 1, bytes;
  for (int64_t d = 0; d < ndim; ++d)
    if (shape[d] < 0 || __builtin_mul_overflow(elems, shape[d], &elems))
      return l;
  // n times the tensor must fit too (a gathered or unsliced output).
  if (__builtin_mul_overflow(elems, es, &bytes) ||
      __builtin_mul_overflow(bytes, n, &bytes))
    return l;
  for (int64_t d = 0; d < axis; ++d)
    l.outer *= shape[d];
  l.es = es;
  l.elems = elems;
  l.ok = true;
  return l;
}

/// Whether in (inBytes) and out (outBytes) are given where they have
/// bytes, and apart: else the host row fails on them.
inline bool buffersOk(const void *in, int64_t inBytes, const void *out,
                      int64_t outBytes) {
  if ((inBytes > 0 && !in) || (outBytes > 0 && !out))
    return false;
  if (inBytes == 0 || outBytes == 0)
    return true;
  const char *a = static_cast<const char *>(in);
  const char *b = static_cast<const char *>(out);
  return a >= b + outBytes || b >= a + inBytes;
}

} // namespace boxing
} // namespace cuda
} // namespace pfrt

#endif // PFRT_SRC_CUDA_BOXINGARGS_H
