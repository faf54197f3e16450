//===- ZeroSharding.h - ZeRO: updates split over replicated axes *- C++ -*-===//
//
// Internal to lib/Dialect/PF/Transforms: pf-optimizer's `zero-stage`.
//
//===----------------------------------------------------------------------===//

#ifndef PF_LIB_DIALECT_PF_TRANSFORMS_ZEROSHARDING_H
#define PF_LIB_DIALECT_PF_TRANSFORMS_ZEROSHARDING_H

#include "pf/Dialect/PF/IR/PFOps.h"

#include "mlir/IR/BuiltinOps.h"

namespace mlir::pf {

/// One trained parameter as pf-optimizer left it: its gradient buffer and
/// the optimizer-state buffers its update reads and writes.
struct ZeroMember {
  ParamOp param, gradBuffer;
  SmallVector<ParamOp, 2> states;
};

/// ZeRO (Rajbhandari et al.) in SBP terms. On every hierarchy axis where a
/// parameter is replicated (B: a data-parallel axis), the stage's buffers
/// take a split S(k) instead, k the first tensor axis whose size divides
/// among that axis's ranks (after the parameter's own splits): stage 1 the
/// optimizer states, stage 2 also the gradient buffer, stage 3 also the
/// parameter. SBP inference then picks the split signature of the update
/// (a slice of the parameter, a reduce-scatter of the gradient instead of
/// an all-reduce, an all-gather of the updated parameter back to B) and,
/// at stage 3, all-gathers the parameter where the forward and backward
/// read it. Parameters of fewer than `minElements` elements, and axes with
/// no divisible tensor axis, stay replicated. Types of the buffers' reads
/// follow. Returns how many buffers were split.
int64_t shardOverReplicatedAxes(ModuleOp module, ArrayRef<ZeroMember> members,
                                int64_t stage, int64_t minElements);

} // namespace mlir::pf

#endif // PF_LIB_DIALECT_PF_TRANSFORMS_ZEROSHARDING_H
