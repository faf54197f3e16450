//===- CostModel.h - FLOP and byte estimates of pf ops ----------*- C++ -*-===//
//
// Static cost estimates on logical (global) shapes, shared by
// pf-auto-stages (balancing) and the schedule report (per-stage F/B/W
// costs). FLOPs count a multiply-add as two; data movement (reshapes, layout
// changes, parameter reads, point-to-point) costs nothing here.
//
//===----------------------------------------------------------------------===//

#ifndef PF_ANALYSIS_COSTMODEL_H
#define PF_ANALYSIS_COSTMODEL_H

#include "mlir/IR/Operation.h"

#include <cstdint>

namespace mlir::pf::cost {

/// Bytes of a value of type `t` (logical shape; 0 for non-tensor types).
int64_t bytes(Type t);

/// FLOPs of `op` as it stands (forward, gradient or update op).
int64_t flops(Operation *op);

/// A forward op's FLOPs over one training pass: its forward, the gradient
/// of its inputs (B) and of its weights (W, when an operand is a parameter
/// read).
struct TrainFlops {
  int64_t f = 0, b = 0, w = 0;
  int64_t total() const { return f + b + w; }
};
TrainFlops trainFlops(Operation *op);

} // namespace mlir::pf::cost

#endif // PF_ANALYSIS_COSTMODEL_H
