//===- FoldPasses.cpp - the pf-fold-*, pf-fuse-*, pf-group-* passes -------===//
//
// One pass a kind of decision of BufferAnalysis (their descriptions are in
// include/pf/Conversion/Passes.td): each reads the decisions recorded in a
// rank's step, adds its own and records them all as attributes
// (lib/Conversion/Common/FoldAttributes.cpp), for every rank's step.
//
//===----------------------------------------------------------------------===//

#include "pf/Conversion/Fusion/Fusion.h"
#include "pf/Conversion/Kernels/Elementwise.h"
#include "pf/Conversion/Passes.h"

namespace mlir::pf {
#define GEN_PASS_DEF_RESETFOLDSPASS
#define GEN_PASS_DEF_PLANINPLACEPASS
#define GEN_PASS_DEF_FUSEBIASRELUPASS
#define GEN_PASS_DEF_LOADINPUTSBYPARTSPASS
#define GEN_PASS_DEF_FOLDACCUMULATIONPASS
#define GEN_PASS_DEF_FOLDGEMMBIASPASS
#define GEN_PASS_DEF_FOLDBIASGRADPASS
#define GEN_PASS_DEF_FOLDSOFTMAXPASS
#define GEN_PASS_DEF_FOLDVIEWSPASS
#define GEN_PASS_DEF_GROUPELEMENTWISEPASS
#define GEN_PASS_DEF_GROUPUPDATESPASS
#include "pf/Conversion/Passes.h.inc"
} // namespace mlir::pf

using namespace mlir;
using namespace mlir::pf;

/// Whether `op` has a generated kernel (Kernels/Elementwise.h).
static bool hasKernel(Operation *op) {
  return kernels::elementwiseKernelFor(op).has_value();
}

namespace {

/// A fold pass: `Derived::decide(analysis, step)` on every rank's step.
template <typename Derived, typename Base> struct FoldPass : Base {
  using Base::Base;
  void runOnOperation() override {
    forEachRankStep(this->getOperation(), [&](Block &step) {
      BufferAnalysis a(step);
      static_cast<Derived *>(this)->decide(a, step);
      a.record(step);
    });
  }
};

struct ResetFoldsPass : pf::impl::ResetFoldsPassBase<ResetFoldsPass> {
  void runOnOperation() override {
    forEachRankStep(getOperation(), BufferAnalysis::clearRecords);
  }
};

/// The fold pass NAME##Pass: DECISION, a call on `a` (the analysis of
/// `step`), decides.
#define PF_FOLD_PASS(NAME, DECISION)                                           \
  struct NAME##Pass                                                            \
      : FoldPass<NAME##Pass, pf::impl::NAME##PassBase<NAME##Pass>> {           \
    using FoldPass::FoldPass;                                                  \
    void decide(BufferAnalysis &a, Block &step) { DECISION; }                  \
  };

PF_FOLD_PASS(PlanInPlace, a.planInPlace(step))
PF_FOLD_PASS(FuseBiasRelu, a.fuseBiasRelus(step))
PF_FOLD_PASS(LoadInputsByParts, a.loadInputsByParts(step))
PF_FOLD_PASS(FoldAccumulation, a.foldAccumulation(step))
PF_FOLD_PASS(FoldGemmBias, a.foldGemmBiases(step, this->relu))
PF_FOLD_PASS(FoldBiasGrad, a.pairBiasGradients(step))
PF_FOLD_PASS(FoldSoftmax, a.foldSoftmaxes(step))
PF_FOLD_PASS(FoldViews, a.foldViewsIntoGemms(step))
PF_FOLD_PASS(GroupElementwise,
             a.groupElementwise(step, hasKernel, this->maxPointers))
PF_FOLD_PASS(GroupUpdates, a.groupUpdateRuns(step))
#undef PF_FOLD_PASS
} // namespace
