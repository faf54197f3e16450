//===- StepOutlining.h - the step as a loop over its actions ----*- C++ -*-===//
//
// After conversion a rank's step is one long function: every micro-batch's
// forward and backward, unrolled in schedule order. This turns it into a
// loop over a compile-time table of actions:
//
//  - the conversion marks where each action (stage, phase, micro-batch)
//    begins; every action becomes a function of its own;
//  - actions that differ only in constants (the micro-batch's buffer
//    offsets, tags, indices) are one function of the instance number, whose
//    constants come from a per-function table: one function per (stage,
//    phase) shape, however many micro-batches run;
//  - the step walks the table (function, instance) in schedule order.
//
// Values that cross actions are buffers at planned arena offsets, parameter
// and scalar addresses, or constants: each action recomputes what it uses
// (pfrt_arena_at, the load of a parameter's global, pfrt_scalar, ...), so no
// value is passed between actions. A step where something else crosses is
// left as it is.
//
//===----------------------------------------------------------------------===//

#ifndef PF_CONVERSION_COMMON_STEPOUTLINING_H
#define PF_CONVERSION_COMMON_STEPOUTLINING_H

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::pf {

/// What outlining did (for tests and reports).
struct OutlineStats {
  int64_t actions = 0;   // segments of the step
  int64_t functions = 0; // distinct action functions after merging
};

/// Outlines `step`'s actions, delimited by calls to `marker` (which go), and
/// rewrites the step as a loop over them. Returns false, changing nothing
/// but removing the markers, when a value other than a recomputable one
/// crosses two actions.
bool outlineStepActions(ModuleOp module, LLVM::LLVMFuncOp step,
                        StringRef marker, OutlineStats &stats);

} // namespace mlir::pf

#endif // PF_CONVERSION_COMMON_STEPOUTLINING_H
