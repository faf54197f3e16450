//===- LogicalMath.h - comparisons, selections, casts per element -*- C++
//-*-===//
//
// What pfrt_k_compare, pfrt_k_logical, pfrt_k_where, pfrt_k_cast and the
// masks of pfrt_k_masked_fill compute for one element, written once for
// the CPU kernels (src/cpu/Logical.cpp) and their device twins' bodies
// (src/cuda/kernels/LogicalBodies.h, ElementwiseBodies.h, which nvcc
// reads), as KernelMath.h is for the arithmetic: plain C++ on PFRT_DTYPE_*
// codes, so the CPU, the emulation and the GPU give the same bytes. No
// floating-point arithmetic happens here, only comparisons and
// conversions, which are exact or defined below.
//
// Not installed; nothing here is part of the ABI.
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_COMMON_LOGICALMATH_H
#define PFRT_SRC_COMMON_LOGICALMATH_H

#include "HalfMath.h"
#include "KernelMath.h"

#include <stdint.h>

namespace pfrt {
namespace logical {

/// pfrt.h's PFRT_DTYPE_* (a plain copy: nvcc does not read pfrt.h).
enum : int32_t { kF32 = 0, kI64 = 1, kI32 = 2, kBool = 3, kBF16 = 4, kF16 = 5 };
/// pfrt_k_compare's predicates (mlir::pf::ComparePredicate's numbering).
enum : int32_t { kEq = 0, kNe, kLt, kLe, kGt, kGe, kNumPredicates };
/// pfrt_k_logical's kinds.
enum : int32_t { kAnd = 0, kOr, kXor, kNot, kNumLogical };

/// Bytes of one element of `dtype`, or -1 for an unknown code.
PFRT_HD_INLINE int64_t dtypeBytes(int32_t dtype) {
  switch (dtype) {
  case kF32:
  case kI32:
    return 4;
  case kI64:
    return 8;
  case kBool:
    return 1;
  case kBF16:
  case kF16:
    return 2;
  }
  return -1;
}

/// Whether `dtype` is bf16 or f16 (stored in 2 bytes, read as float32).
PFRT_HD_INLINE bool isHalf(int32_t dtype) {
  return dtype == kBF16 || dtype == kF16;
}

/// Element i of a bf16 or f16 array as the float it equals (exact).
PFRT_HD_INLINE float halfAt(const void *x, int32_t dtype, int64_t i) {
  uint16_t bits = static_cast<const uint16_t *>(x)[i];
  return dtype == kBF16 ? half::bf16ToFloat(bits) : half::f16ToFloat(bits);
}

template <typename T> PFRT_HD_INLINE bool relate(T a, T b, int32_t predicate) {
  switch (predicate) {
  case kEq:
    return a == b;
  case kNe:
    return a != b;
  case kLt:
    return a < b;
  case kLe:
    return a <= b;
  case kGt:
    return a > b;
  default:
    return a >= b;
  }
}

/// a[i] <predicate> b[i] for a and b of `dtype` (bools as 0 or 1).
PFRT_HD_INLINE uint8_t compareOf(const void *a, const void *b, int32_t dtype,
                                 int32_t predicate, int64_t i) {
  switch (dtype) {
  case kF32:
    return relate(static_cast<const float *>(a)[i],
                  static_cast<const float *>(b)[i], predicate);
  case kI64:
    return relate(static_cast<const int64_t *>(a)[i],
                  static_cast<const int64_t *>(b)[i], predicate);
  case kI32:
    return relate(static_cast<const int32_t *>(a)[i],
                  static_cast<const int32_t *>(b)[i], predicate);
  case kBF16:
  case kF16:
    return relate(halfAt(a, dtype, i), halfAt(b, dtype, i), predicate);
  default:
    return relate<int>(static_cast<const uint8_t *>(a)[i] != 0,
                       static_cast<const uint8_t *>(b)[i] != 0, predicate);
  }
}

/// a <kind> b on bools (b unused for kNot).
PFRT_HD_INLINE uint8_t logicalOf(uint8_t a, uint8_t b, int32_t kind) {
  bool x = a != 0, y = b != 0;
  switch (kind) {
  case kAnd:
    return x && y;
  case kOr:
    return x || y;
  case kXor:
    return x != y;
  default:
    return !x;
  }
}

/// Whether element i of a mask of `dtype` is set (non-zero).
PFRT_HD_INLINE bool maskSetAt(const void *mask, int32_t dtype, int64_t i) {
  switch (dtype) {
  case kF32:
    return static_cast<const float *>(mask)[i] != 0.0f;
  case kI64:
    return static_cast<const int64_t *>(mask)[i] != 0;
  case kI32:
    return static_cast<const int32_t *>(mask)[i] != 0;
  case kBF16:
  case kF16:
    return halfAt(mask, dtype, i) != 0.0f;
  default:
    return static_cast<const uint8_t *>(mask)[i] != 0;
  }
}

/// out[i] = cond[i] ? a[i] : b[i] for elements of `bytes` (1, 2, 4 or 8).
PFRT_HD_INLINE void whereAt(const uint8_t *cond, const void *a, const void *b,
                            void *out, int64_t bytes, int64_t i) {
  bool c = cond[i] != 0;
  if (bytes == 8) {
    const auto *x = static_cast<const uint64_t *>(c ? a : b);
    static_cast<uint64_t *>(out)[i] = x[i];
  } else if (bytes == 4) {
    const auto *x = static_cast<const uint32_t *>(c ? a : b);
    static_cast<uint32_t *>(out)[i] = x[i];
  } else if (bytes == 2) {
    const auto *x = static_cast<const uint16_t *>(c ? a : b);
    static_cast<uint16_t *>(out)[i] = x[i];
  } else {
    const auto *x = static_cast<const uint8_t *>(c ? a : b);
    static_cast<uint8_t *>(out)[i] = x[i];
  }
}

/// A float toward zero, clamped to [lo, hi] (NaN gives 0): pfrt_k_cast's
/// rule. double(lo) and double(hi) are exact or round up to a bound the
/// comparisons still catch (INT64_MAX to 2^63).
PFRT_HD_INLINE int64_t floatToInt(float v, int64_t lo, int64_t hi) {
  if (!(v == v))
    return 0;
  double d = v;
  if (d <= double(lo))
    return lo;
  if (d >= double(hi))
    return hi;
  return int64_t(d);
}

/// y[i] = x[i] converted from xd to yd (pfrt.h's pfrt_k_cast). bf16 and
/// f16 read as the float32 they equal and are written from a float32
/// (HalfMath.h's rounding); an integer becomes a float32 first.
PFRT_HD_INLINE void castAt(const void *x, int32_t xd, void *y, int32_t yd,
                           int64_t i) {
  // The source as an integer and as a float (whichever it is exactly), and
  // whether it is non-zero.
  bool isFloat = xd == kF32 || isHalf(xd);
  float f = 0.0f;
  int64_t v = 0;
  switch (xd) {
  case kF32:
    f = static_cast<const float *>(x)[i];
    break;
  case kBF16:
  case kF16:
    f = halfAt(x, xd, i);
    break;
  case kI64:
    v = static_cast<const int64_t *>(x)[i];
    break;
  case kI32:
    v = static_cast<const int32_t *>(x)[i];
    break;
  default:
    v = static_cast<const uint8_t *>(x)[i] != 0;
    break;
  }
  switch (yd) {
  case kF32:
    static_cast<float *>(y)[i] = isFloat ? f : float(v);
    break;
  case kBF16:
    static_cast<uint16_t *>(y)[i] = half::floatToBf16(isFloat ? f : float(v));
    break;
  case kF16:
    static_cast<uint16_t *>(y)[i] = half::floatToF16(isFloat ? f : float(v));
    break;
  case kI64:
    static_cast<int64_t *>(y)[i] =
        isFloat ? floatToInt(f, INT64_MIN, INT64_MAX) : v;
    break;
  case kI32:
    static_cast<int32_t *>(y)[i] =
        isFloat ? int32_t(floatToInt(f, INT32_MIN, INT32_MAX))
                : int32_t(uint32_t(uint64_t(v)));
    break;
  default:
    static_cast<uint8_t *>(y)[i] = isFloat ? !(f == 0.0f) : v != 0;
    break;
  }
}

} // namespace logical
} // namespace pfrt

#endif // PFRT_SRC_COMMON_LOGICALMATH_H
