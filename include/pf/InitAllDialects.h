//===- InitAllDialects.h - every dialect pf-opt knows ----------*- C++ -*-===//

#ifndef PF_INITALLDIALECTS_H
#define PF_INITALLDIALECTS_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "pf/Dialect/PF/IR/PFDialect.h"

namespace mlir::pf {

/// The pf dialect and the upstream dialects PipeFlow lowers through.
inline void registerAllDialects(DialectRegistry &registry) {
  registry
      .insert<PFDialect, arith::ArithDialect, func::FuncDialect,
              linalg::LinalgDialect, LLVM::LLVMDialect, memref::MemRefDialect,
              scf::SCFDialect, tensor::TensorDialect, vector::VectorDialect>();
}

} // namespace mlir::pf

#endif // PF_INITALLDIALECTS_H
