//===- LogicalBodies.h - comparisons and boolean tensors --------*- C++ -*-===//
//
// Not installed; nothing here is part of the ABI. Part of the CUDA kernels'
// bodies (DeviceBodies.h says how they are written and checked): the
// per-element rules are common/LogicalMath.h's, which src/cpu/Logical.cpp
// runs too.
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_CUDA_KERNELS_LOGICALBODIES_H
#define PFRT_SRC_CUDA_KERNELS_LOGICALBODIES_H

#include "../../common/LogicalMath.h"
#include "CommonBodies.h"

namespace pfrt {
namespace dev {

/// out[i] = a[i] <predicate> b[i] (pfrt_k_compare).
PFRT_HD inline void compareAt(const void *a, const void *b, uint8_t *out,
                              int32_t dtype, int32_t predicate, int64_t i) {
  out[i] = logical::compareOf(a, b, dtype, predicate, i);
}

/// out[i] = a[i] <kind> b[i]; b is not read for `not` (pfrt_k_logical).
PFRT_HD inline void logicalAt(const uint8_t *a, const uint8_t *b, uint8_t *out,
                              int32_t kind, int64_t i) {
  out[i] = logical::logicalOf(a[i], kind == logical::kNot ? 0 : b[i], kind);
}

/// pfrt_k_where's and pfrt_k_cast's elements.
using logical::castAt;
using logical::whereAt;

} // namespace dev
} // namespace pfrt

#endif // PFRT_SRC_CUDA_KERNELS_LOGICALBODIES_H
