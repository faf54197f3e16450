//===- PassUtils.h - helpers shared by the pf passes ------------*- C++ -*-===//
//
// Internal to lib/Dialect/PF/Transforms.
//
//===----------------------------------------------------------------------===//

#ifndef PF_LIB_DIALECT_PF_TRANSFORMS_PASSUTILS_H
#define PF_LIB_DIALECT_PF_TRANSFORMS_PASSUTILS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::pf::passutil {

/// Success if a count option is at least 1, else an error on the module
/// naming the pass and the option ("pf-x: opt must be >= 1, got 0").
inline LogicalResult checkAtLeastOne(ModuleOp module, StringRef pass,
                                     StringRef option, int64_t value) {
  if (value >= 1)
    return success();
  return module.emitError()
         << pass << ": " << option << " must be >= 1, got " << value;
}

/// Gives func the types of `results` as its result types.
inline void setResultTypes(func::FuncOp func, ValueRange results) {
  func.setFunctionType(FunctionType::get(
      func.getContext(), func.getArgumentTypes(), results.getTypes()));
}

} // namespace mlir::pf::passutil

#endif // PF_LIB_DIALECT_PF_TRANSFORMS_PASSUTILS_H
