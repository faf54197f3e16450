//===- AutodiffInterface.td - reverse-mode gradient rules --*- tablegen -*-===//

#ifndef PF_INTERFACES_AUTODIFFINTERFACE_TD
#define PF_INTERFACES_AUTODIFFINTERFACE_TD

include "mlir/IR/OpBase.td"

def PF_AutodiffOpInterface : OpInterface<"AutodiffOpInterface"> {
  let cppNamespace = "::mlir::pf";
  let description = [{
    The reverse-mode gradient rule of an op. `pf-autodiff` calls
    `buildGradient` with the builder placed where the backward code goes and
    one incoming gradient per result (null where no gradient flows, e.g. the
    running statistics of batch norm). The rule appends one gradient per
    operand to `operandGrads` (null for operands that take none, such as
    integer labels).

    Rules compute each operand's gradient with its own ops, so that the pass
    can tell input-gradient work ("B") from weight-gradient work ("W"). They
    use the op's own operands and results as the values the backward needs;
    with activation checkpointing the pass hands them a recomputed clone.
  }];
  let methods = [
    InterfaceMethod<[{
        Emits the backward ops of this op at the builder's insertion point.
      }],
      "::llvm::LogicalResult", "buildGradient",
      (ins "::mlir::OpBuilder &":$builder,
           "::llvm::ArrayRef<::mlir::Value>":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>
  ];
}

#endif // PF_INTERFACES_AUTODIFFINTERFACE_TD
