//===- Passes.h - PipeFlow passes -------------------------------*- C++ -*-===//

#ifndef PF_DIALECT_PF_TRANSFORMS_PASSES_H
#define PF_DIALECT_PF_TRANSFORMS_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "pf/Dialect/PF/IR/PFOps.h"
#include "pf/Dialect/PF/Transforms/PassOptions.h"

namespace mlir::pf {

#define GEN_PASS_DECL
#include "pf/Dialect/PF/Transforms/Passes.h.inc"

/// pf-optimizer with a pipeline's optimizer options.
std::unique_ptr<Pass> createOptimizerPass(const OptimizerOptions &options);

#define GEN_PASS_REGISTRATION
#include "pf/Dialect/PF/Transforms/Passes.h.inc"

} // namespace mlir::pf

#endif // PF_DIALECT_PF_TRANSFORMS_PASSES_H
