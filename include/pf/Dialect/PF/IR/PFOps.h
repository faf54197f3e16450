//===- PFOps.h - PipeFlow ops -----------------------------------*- C++ -*-===//

#ifndef PF_DIALECT_PF_IR_PFOPS_H
#define PF_DIALECT_PF_IR_PFOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "pf/Dialect/PF/IR/PFAttrs.h"
#include "pf/Dialect/PF/IR/PFDialect.h"
#include "pf/Dialect/PF/IR/PFTypes.h"
#include "pf/Interfaces/AutodiffInterface.h"
#include "pf/Interfaces/SBPInterface.h"

#define GET_OP_CLASSES
#include "pf/Dialect/PF/IR/PFOps.h.inc"

namespace mlir::pf {
/// The kinds of pf.activation, in the order of the runtime's codes
/// (pfrt_k_activation's `kind`).
inline constexpr llvm::StringLiteral kActivationKinds[] = {"gelu", "gelu_tanh",
                                                           "tanh", "sigmoid"};
/// Slots of split all-reduces in flight at once (`pf.async_slot`; the
/// runtime's PFRT_MAX_ASYNC_SLOTS).
inline constexpr int64_t kMaxAsyncSlots = 64;
/// The runtime code of an activation kind, or -1.
int32_t activationKindCode(llvm::StringRef kind);
/// Whether `mm` computes the weight gradient dZ^T X whose bias gradient
/// `reduce` sums (an axis-0 sum of the same 2-D float32 dZ; X and the
/// result 2-D float32; one block): the pair one GEMM with cuBLASLt's BGRADB
/// epilogue computes (BufferAnalysis pairs them; pf-bucket-gradients keeps
/// them pairable). Their order and other readers are the caller's.
bool isBiasGradientPair(ReduceSumOp reduce, MatmulOp mm);
} // namespace mlir::pf

#endif // PF_DIALECT_PF_IR_PFOPS_H
