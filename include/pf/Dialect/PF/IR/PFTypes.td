//===- PFTypes.td - PipeFlow types -------------------------*- tablegen -*-===//

#ifndef PF_DIALECT_PF_IR_PFTYPES_TD
#define PF_DIALECT_PF_IR_PFTYPES_TD

include "pf/Dialect/PF/IR/PFAttrs.td"

def PF_GlobalType : TypeDef<PF_Dialect, "Global"> {
  let mnemonic = "global";
  let summary = "a global tensor: logical shape, element type, placement, SBP";
  let description = [{
    A tensor as the whole program sees it. The placement says which ranks
    hold it, the SBP how (one entry per hierarchy dimension). The SBP may be
    left out: the layout is then still to be decided by `pf-infer-sbp`; every
    other pass after inference expects it.

    ```mlir
    !pf.global<16x784xf32, #pf.placement<"cpu", [0, 1]>, #pf.sbp<[S(0)]>>
    !pf.global<f32, #pf.placement<"cpu", [1]>, #pf.sbp<[P]>>   // a scalar
    !pf.global<512x784xf32, #pf.placement<"cpu", [0]>>        // layout not yet inferred
    ```

    Invariants: the SBP has one entry per hierarchy dimension of the
    placement, split axes are in range, and a split dimension divides evenly
    by the number of ranks it is split over.
  }];
  let parameters = (ins
    ArrayRefParameter<"int64_t">:$shape,
    "::mlir::Type":$elementType,
    "::mlir::pf::PlacementAttr":$placement,
    OptionalParameter<"::mlir::pf::SBPAttr">:$sbp
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let builders = [
    TypeBuilderWithInferredContext<(ins
        "::llvm::ArrayRef<int64_t>":$shape, "::mlir::Type":$elementType,
        "::mlir::pf::PlacementAttr":$placement,
        CArg<"::mlir::pf::SBPAttr", "{}">:$sbp), [{
      return $_get(elementType.getContext(), shape, elementType, placement, sbp);
    }]>
  ];
  let extraClassDeclaration = [{
    int64_t getRank() const { return getShape().size(); }
    int64_t getNumElements() const;
    bool hasSBP() const { return static_cast<bool>(getSbp()); }
    /// The per-rank (local) shape under this type's SBP. Requires an SBP.
    ::llvm::SmallVector<int64_t> getLocalShape() const;
    /// The same tensor with another layout.
    GlobalType withSBP(SBPAttr sbp) const;
    GlobalType withShape(::llvm::ArrayRef<int64_t> shape) const;
    GlobalType withPlacementAndSBP(PlacementAttr placement, SBPAttr sbp) const;
    /// The local tensor type that one rank holds. Requires an SBP.
    ::mlir::RankedTensorType getLocalTensorType() const;
    /// Shape, element type and placement agree (the SBP may differ).
    bool isLayoutCompatibleWith(GlobalType other) const;
  }];
}

#endif // PF_DIALECT_PF_IR_PFTYPES_TD
