//===- SBPInterface.td - SBP signatures of ops -------------*- tablegen -*-===//

#ifndef PF_INTERFACES_SBPINTERFACE_TD
#define PF_INTERFACES_SBPINTERFACE_TD

include "mlir/IR/OpBase.td"

def PF_SBPOpInterface : OpInterface<"SBPOpInterface"> {
  let cppNamespace = "::mlir::pf";
  let description = [{
    The layouts an op can compute in. An op lists its valid 1-D SBP
    signatures: one `SBPDim` per operand and per result, meaning "if every
    operand is laid out so over a 1-D group of ranks, each rank computing the
    op on its local data yields results laid out so". The list is in
    preference order (the data-parallel choice first); an all-`B` signature
    is always valid and is added by the helpers if the op leaves it out.

    n-D signatures are formed by `getNDSBPSignatures` (SBPUtils.h): one 1-D
    signature per hierarchy dimension, filtered by the operands' and
    results' shapes (a split axis must divide by the ranks it is split
    over). `pf-infer-sbp` picks among them by boxing cost.

    The shapes the op sees are the logical (global) ones; rules may look at
    the op's attributes and types to adjust axes (transpose flags, batch
    dimensions, reshapes).
  }];
  let methods = [
    InterfaceMethod<[{
        Appends the op's valid 1-D signatures, preferred first.
      }],
      "void", "getSBPSignatures",
      (ins "::llvm::SmallVectorImpl<::mlir::pf::SBPSignature> &":$signatures)>
  ];
}

#endif // PF_INTERFACES_SBPINTERFACE_TD
