//===- PFBase.td - PipeFlow dialect definition -------------*- tablegen -*-===//
//
// The `pf` dialect: global tensors (logical shape + placement + SBP), the nn
// ops of a training step, their backward and optimizer ops, layout changes
// and, after partitioning, explicit communication.
//
//===----------------------------------------------------------------------===//

#ifndef PF_DIALECT_PF_IR_PFBASE_TD
#define PF_DIALECT_PF_IR_PFBASE_TD

include "mlir/IR/OpBase.td"

def PF_Dialect : Dialect {
  let name = "pf";
  let cppNamespace = "::mlir::pf";
  let summary = "PipeFlow: global tensors, SBP layouts and pipeline stages";
  let description = [{
    The `pf` dialect describes one training step of a model written against
    *global tensors*, as in OneFlow's global view. A global tensor has a
    logical shape, a **placement** (which ranks hold it, as a 1-D list or an
    n-D hierarchy) and an **SBP** signature with one entry per hierarchy
    dimension: `S(k)` splits logical axis `k` over that dimension's ranks, `B`
    broadcasts (every rank holds the whole tensor) and `P` is a partial sum
    (the logical value is the sum of the ranks' values).

    ```mlir
    #P01 = #pf.placement<"cpu", [0, 1]>
    !X = !pf.global<16x784xf32, #P01, #pf.sbp<[S(0)]>>
    %y = pf.to_global %x : !X -> !pf.global<16x784xf32, #P01, #pf.sbp<[B]>>
    ```

    Ops carry their pipeline stage in the discardable attribute
    `pf.stage = <int>` and, when the user asks for activation checkpointing,
    the unit attribute `pf.checkpoint`.
  }];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasCanonicalizer = 0;
  let extraClassDeclaration = [{
    /// Name of the discardable attribute that assigns an op to a stage.
    static constexpr ::llvm::StringLiteral getStageAttrName() {
      return ::llvm::StringLiteral("pf.stage");
    }
    /// Name of the discardable unit attribute that marks an op for
    /// activation checkpointing (recomputed in the backward pass).
    static constexpr ::llvm::StringLiteral getCheckpointAttrName() {
      return ::llvm::StringLiteral("pf.checkpoint");
    }
    /// Name of the discardable string attribute that says which part of a
    /// training step an op belongs to: forward (the default when absent),
    /// backward_input, backward_weight, recompute or update.
    static constexpr ::llvm::StringLiteral getPhaseAttrName() {
      return ::llvm::StringLiteral("pf.phase");
    }
    /// On a gradient-buffer pf.param: the parameter whose gradient it holds.
    static constexpr ::llvm::StringLiteral getGradOfAttrName() {
      return ::llvm::StringLiteral("pf.grad_of");
    }
    /// Set by pf-infer-sbp: the layouts an op's operands need (one #pf.sbp
    /// per operand); pf-insert-boxing consumes it.
    static constexpr ::llvm::StringLiteral getSBPOperandsAttrName() {
      return ::llvm::StringLiteral("pf.sbp_operands");
    }
    /// On a per-rank module (after pf-partition-ranks): its world rank.
    static constexpr ::llvm::StringLiteral getRankAttrName() {
      return ::llvm::StringLiteral("pf.rank");
    }
    /// On the module holding the per-rank modules: the number of ranks.
    static constexpr ::llvm::StringLiteral getWorldSizeAttrName() {
      return ::llvm::StringLiteral("pf.world_size");
    }
    /// On ops of one micro-batch (after pf-microbatch): its index.
    static constexpr ::llvm::StringLiteral getMicrobatchAttrName() {
      return ::llvm::StringLiteral("pf.microbatch");
    }
  private:
    void registerAttributes();
    void registerTypes();
  public:
  }];
}

class PF_Op<string mnemonic, list<Trait> traits = []>
    : Op<PF_Dialect, mnemonic, traits>;

#endif // PF_DIALECT_PF_IR_PFBASE_TD
