//===- Logical.cpp - comparisons and boolean tensors ----------------------===//
//
// pfrt_k_compare, pfrt_k_logical, pfrt_k_where and pfrt_k_cast: the
// per-element rules of common/LogicalMath.h (shared with the device twins'
// bodies) in loops, the argument checks common/KernelArgs.h's. A bool is
// one byte, 0 or 1. Every loop is safe for exact in-place use.
//
//===----------------------------------------------------------------------===//

#include "../common/LogicalMath.h"
#include "KernelUtil.h"
#include "pfrt/pfrt.h"

using namespace pfrt;
using namespace pfrt::kern;

static_assert(logical::kF32 == PFRT_DTYPE_F32 &&
                  logical::kI64 == PFRT_DTYPE_I64 &&
                  logical::kI32 == PFRT_DTYPE_I32 &&
                  logical::kBool == PFRT_DTYPE_BOOL &&
                  logical::kBF16 == PFRT_DTYPE_BF16 &&
                  logical::kF16 == PFRT_DTYPE_F16,
              "LogicalMath.h's dtype codes are pfrt.h's");

namespace {
/// out[i] = a[i] <predicate> b[i]; one loop a predicate so each vectorizes.
template <typename T>
void compareLoop(const T *a, const T *b, uint8_t *out, int64_t n,
                 int32_t predicate) {
  auto loop = [&](auto rel) {
    PFRT_IVDEP
    for (int64_t i = 0; i < n; ++i)
      out[i] = rel(a[i], b[i]);
  };
  switch (predicate) {
  case logical::kEq:
    return loop([](T x, T y) { return x == y; });
  case logical::kNe:
    return loop([](T x, T y) { return x != y; });
  case logical::kLt:
    return loop([](T x, T y) { return x < y; });
  case logical::kLe:
    return loop([](T x, T y) { return x <= y; });
  case logical::kGt:
    return loop([](T x, T y) { return x > y; });
  default:
    return loop([](T x, T y) { return x >= y; });
  }
}
} // namespace

extern "C" {

void pfrt_k_compare(const void *a, const void *b, uint8_t *out, int64_t n,
                    int32_t dtype, int32_t predicate) {
  checkCompareArgs("pfrt_k_compare", a, b, out, n, dtype, predicate);
  switch (dtype) {
  case PFRT_DTYPE_F32:
    return compareLoop(static_cast<const float *>(a),
                       static_cast<const float *>(b), out, n, predicate);
  case PFRT_DTYPE_I64:
    return compareLoop(static_cast<const int64_t *>(a),
                       static_cast<const int64_t *>(b), out, n, predicate);
  case PFRT_DTYPE_I32:
    return compareLoop(static_cast<const int32_t *>(a),
                       static_cast<const int32_t *>(b), out, n, predicate);
  default: // bools: any non-zero byte is true
    for (int64_t i = 0; i < n; ++i)
      out[i] = logical::compareOf(a, b, dtype, predicate, i);
  }
}

void pfrt_k_logical(const uint8_t *a, const uint8_t *b, uint8_t *out, int64_t n,
                    int32_t kind) {
  checkLogicalArgs("pfrt_k_logical", a, b, out, n, kind);
  PFRT_IVDEP
  for (int64_t i = 0; i < n; ++i)
    out[i] = logical::logicalOf(a[i], kind == logical::kNot ? 0 : b[i], kind);
}

void pfrt_k_where(const uint8_t *cond, const void *a, const void *b, void *out,
                  int64_t n, int32_t dtype) {
  int64_t bytes = checkWhereArgs("pfrt_k_where", cond, a, b, out, n, dtype);
  PFRT_IVDEP
  for (int64_t i = 0; i < n; ++i)
    logical::whereAt(cond, a, b, out, bytes, i);
}

void pfrt_k_cast(const void *x, int32_t xDtype, void *y, int32_t yDtype,
                 int64_t n) {
  checkCastArgs("pfrt_k_cast", x, xDtype, y, yDtype, n);
  for (int64_t i = 0; i < n; ++i)
    logical::castAt(x, xDtype, y, yDtype, i);
}

} // extern "C"
