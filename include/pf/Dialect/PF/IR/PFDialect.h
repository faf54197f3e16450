//===- PFDialect.h - PipeFlow dialect ---------------------------*- C++ -*-===//

#ifndef PF_DIALECT_PF_IR_PFDIALECT_H
#define PF_DIALECT_PF_IR_PFDIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/Operation.h"

#include <optional>

#include "pf/Dialect/PF/IR/PFDialect.h.inc"

namespace mlir::pf {

/// The value of `op`'s integer attribute `name` (`pf.stage`,
/// `pf.microbatch`, ...); none when `op` is null or has no such attribute.
std::optional<int64_t> getIntAttrValue(Operation *op, StringRef name);

/// `op`'s own `pf.stage`, if any (see schedule::stageOf for the stage an op
/// without one works for).
std::optional<int64_t> getStageAttrValue(Operation *op);

} // namespace mlir::pf

#endif // PF_DIALECT_PF_IR_PFDIALECT_H
