//===- PFAttrs.td - PipeFlow attributes --------------------*- tablegen -*-===//

#ifndef PF_DIALECT_PF_IR_PFATTRS_TD
#define PF_DIALECT_PF_IR_PFATTRS_TD

include "pf/Dialect/PF/IR/PFBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "pf/Dialect/PF/IR/PFEnums.td"

class PF_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<PF_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

//===----------------------------------------------------------------------===//
// Placement
//===----------------------------------------------------------------------===//

def PF_PlacementAttr : PF_Attr<"Placement", "placement"> {
  let summary = "the ranks that hold a global tensor, as a 1-D or n-D hierarchy";
  let description = [{
    A placement names a device kind (`"cpu"` or `"cuda"`) and the ranks that
    hold a global tensor. A flat list is a 1-D hierarchy; nested lists form an
    n-D hierarchy (row-major), over which an n-D SBP lays the tensor out one
    hierarchy dimension at a time.

    ```mlir
    #pf.placement<"cpu", [0, 1]>             // 1-D: ranks 0 and 1
    #pf.placement<"cuda", [[0, 1], [2, 3]]>  // 2-D: 2x2
    ```

    Ranks are non-negative, unique and below `kMaxWorldSize` (2^17: the
    compiler makes one program per rank of the world, ranks 0 to the
    largest named); nested lists are rectangular.
  }];
  let parameters = (ins
    StringRefParameter<"device kind: cpu or cuda">:$device,
    ArrayRefParameter<"int64_t", "hierarchy shape">:$hierarchy,
    ArrayRefParameter<"int64_t", "ranks in row-major hierarchy order">:$ranks
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The largest world (number of ranks) a program may name: rank ids
    /// are below it.
    static constexpr int64_t kMaxWorldSize = int64_t(1) << 17;
    /// Number of hierarchy dimensions (1 for a flat list).
    unsigned getNumHierarchyDims() const { return getHierarchy().size(); }
    /// Total number of ranks.
    int64_t getNumRanks() const { return getRanks().size(); }
    bool isCuda() const { return getDevice() == "cuda"; }
    /// Position of `rank` in the row-major rank list, or -1 if absent.
    int64_t indexOf(int64_t rank) const;
    bool contains(int64_t rank) const { return indexOf(rank) >= 0; }
    /// Hierarchy coordinates of the rank at row-major position `pos`.
    ::llvm::SmallVector<int64_t> getCoordinates(int64_t pos) const;
    /// The same ranks as a flat 1-D placement.
    PlacementAttr flatten() const;
  }];
}

//===----------------------------------------------------------------------===//
// SBP
//===----------------------------------------------------------------------===//

def PF_SBPAttr : PF_Attr<"SBP", "sbp"> {
  let summary = "how a global tensor is laid out over a placement: S(k), B or P per hierarchy dim";
  let description = [{
    One entry per hierarchy dimension of the placement: `S(k)` splits logical
    axis `k` evenly over that dimension's ranks, `B` gives every rank the whole
    tensor, `P` makes the logical tensor the element-wise sum of the ranks'
    tensors.

    ```mlir
    #pf.sbp<[S(0)]>
    #pf.sbp<[B, S(1)]>
    #pf.sbp<[P]>
    ```
  }];
  let parameters = (ins ArrayRefParameter<"::mlir::pf::SBPDim", "per hierarchy dim">:$dims);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    unsigned size() const { return getDims().size(); }
    SBPDim operator[](unsigned i) const { return getDims()[i]; }
    /// True if no entry is split or partial.
    bool isAllBroadcast() const;
    /// Number of ranks that logical `axis` is split over on `placement`.
    int64_t getSplitFactor(int64_t axis, PlacementAttr placement) const;
    static SBPAttr getBroadcast(::mlir::MLIRContext *ctx, unsigned n);
  }];
}

//===----------------------------------------------------------------------===//
// Parameter initializers
//===----------------------------------------------------------------------===//

def PF_InitKind : I32EnumAttr<"InitKind", "parameter initializer kind", [
    I32EnumAttrCase<"Zeros", 0, "zeros">,
    I32EnumAttrCase<"Ones", 1, "ones">,
    I32EnumAttrCase<"Constant", 2, "constant">,
    I32EnumAttrCase<"Uniform", 3, "uniform">,
    I32EnumAttrCase<"Normal", 4, "normal">,
    I32EnumAttrCase<"KaimingUniform", 5, "kaiming_uniform">
  ]> {
  let cppNamespace = "::mlir::pf";
  let genSpecializedAttr = 0;
}

def PF_InitAttr : PF_Attr<"Init", "init"> {
  let summary = "how a parameter's logical elements are initialised";
  let description = [{
    Initialisers are functions of the logical element index (the runtime
    draws them from a counter-based generator keyed by the run's seed and the
    parameter's name), so every layout of a parameter holds the same logical
    values.

    ```mlir
    #pf.init<zeros>
    #pf.init<ones>
    #pf.init<constant(0.5)>
    #pf.init<uniform(-0.1, 0.1)>        // low, high
    #pf.init<normal(0.0, 0.02)>         // mean, std
    #pf.init<kaiming_uniform(784)>      // fan_in: U(-1/sqrt(fan_in), 1/sqrt(fan_in)),
                                        // PyTorch nn.Linear's default
    ```
  }];
  let parameters = (ins
    "::mlir::pf::InitKind":$kind,
    APFloatParameter<"first argument">:$a,
    APFloatParameter<"second argument">:$b
  );
  let extraClassDeclaration = [{
    double getFirst() const { return getA().convertToDouble(); }
    double getSecond() const { return getB().convertToDouble(); }
  }];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

#endif // PF_DIALECT_PF_IR_PFATTRS_TD
