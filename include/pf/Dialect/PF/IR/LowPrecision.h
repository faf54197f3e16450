//===- LowPrecision.h - bf16 and f16 storage: which ops keep it -*- C++ -*-===//
//
// Mixed precision stores values in bf16 or f16 and computes in float32
// (Design.md, "Numerics contract"). pf-widen-low-precision rewrites every
// PF op that reads or makes such a value into the float32 op between
// casts; only the ops below keep 2-byte values, and the rank lowerings
// refuse any other (naming the pass that should have run).
//
//===----------------------------------------------------------------------===//

#ifndef PF_DIALECT_PF_IR_LOWPRECISION_H
#define PF_DIALECT_PF_IR_LOWPRECISION_H

#include "pf/Dialect/PF/IR/PFOps.h"

namespace mlir::pf {

/// Whether `t` is a bf16 or f16 element type, or a global tensor of one.
inline bool isLowPrecision(Type t) {
  if (auto g = dyn_cast<GlobalType>(t))
    t = g.getElementType();
  return t.isBF16() || t.isF16();
}

/// Whether `op` reads or makes a bf16 or f16 value.
inline bool touchesLowPrecision(Operation *op) {
  return llvm::any_of(op->getOperandTypes(), isLowPrecision) ||
         llvm::any_of(op->getResultTypes(), isLowPrecision);
}

/// Ops that keep bf16/f16 values after pf-widen-low-precision: the casts
/// (the only conversion), the point-to-point transfers and the micro-batch
/// views and packs (their bytes move unchanged), the gradient all-reduces
/// of `gradient-dtype=bf16|f16` (the update's, or started early by
/// pf-bucket-gradients: summed by the runtime in the low type) and their
/// waits, the gradient reduce-scatters of ZeRO-2/3 under it (the
/// backward's or the update's: summed by the runtime in the low type), and
/// ops of other dialects (func.return: the step's results keep their type),
/// and the attention ops pf-select-cudnn-attention gave to cuDNN (GPU
/// ranks: `pf.cudnn_attention = "bf16"` or `"f16"`).
inline bool keepsLowPrecision(Operation *op) {
  if (!isa<PFDialect>(op->getDialect()))
    return true;
  if (isa<AttentionOp, AttentionGradOp>(op)) {
    auto a = op->getAttrOfType<StringAttr>("pf.cudnn_attention");
    return a && (a.getValue() == "bf16" || a.getValue() == "f16");
  }
  if (isa<AllReduceOp, ReduceScatterOp>(op)) {
    MLIRContext *ctx = op->getContext();
    StringAttr phase = PFDialect::PhaseAttrHelper(ctx).getAttr(op);
    if (phase && phase.getValue() == "update")
      return true;
    if (isa<ReduceScatterOp>(op))
      return phase && phase.getValue() == "backward_weight";
    return PFDialect::AsyncSlotAttrHelper(ctx).isAttrPresent(op);
  }
  return isa<CastOp, SendOp, RecvOp, MicrobatchOp, PackOp, AllReduceWaitOp,
             AllGatherOp>(op);
}

} // namespace mlir::pf

#endif // PF_DIALECT_PF_IR_LOWPRECISION_H
