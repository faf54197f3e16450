//===- Passes.h - PipeFlow conversion passes --------------------*- C++ -*-===//

#ifndef PF_CONVERSION_PASSES_H
#define PF_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::pf {

#define GEN_PASS_DECL
#include "pf/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "pf/Conversion/Passes.h.inc"

} // namespace mlir::pf

#endif // PF_CONVERSION_PASSES_H
