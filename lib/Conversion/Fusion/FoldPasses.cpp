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

struct PlanInPlacePass
    : FoldPass<PlanInPlacePass,
               pf::impl::PlanInPlacePassBase<PlanInPlacePass>> {
  using FoldPass::FoldPass;
  void decide(BufferAnalysis &a, Block &step) { a.planInPlace(step); }
};

struct FuseBiasReluPass
    : FoldPass<FuseBiasReluPass,
               pf::impl::FuseBiasReluPassBase<FuseBiasReluPass>> {
  using FoldPass::FoldPass;
  void decide(BufferAnalysis &a, Block &step) { a.fuseBiasRelus(step); }
};

struct LoadInputsByPartsPass
    : FoldPass<LoadInputsByPartsPass,
               pf::impl::LoadInputsByPartsPassBase<LoadInputsByPartsPass>> {
  using FoldPass::FoldPass;
  void decide(BufferAnalysis &a, Block &step) { a.loadInputsByParts(step); }
};

struct FoldAccumulationPass
    : FoldPass<FoldAccumulationPass,
               pf::impl::FoldAccumulationPassBase<FoldAccumulationPass>> {
  using FoldPass::FoldPass;
  void decide(BufferAnalysis &a, Block &step) { a.foldAccumulation(step); }
};

struct FoldGemmBiasPass
    : FoldPass<FoldGemmBiasPass,
               pf::impl::FoldGemmBiasPassBase<FoldGemmBiasPass>> {
  using FoldPass::FoldPass;
  void decide(BufferAnalysis &a, Block &step) {
    a.foldGemmBiases(step, this->relu);
  }
};

struct FoldBiasGradPass
    : FoldPass<FoldBiasGradPass,
               pf::impl::FoldBiasGradPassBase<FoldBiasGradPass>> {
  using FoldPass::FoldPass;
  void decide(BufferAnalysis &a, Block &step) { a.pairBiasGradients(step); }
};

struct FoldSoftmaxPass
    : FoldPass<FoldSoftmaxPass,
               pf::impl::FoldSoftmaxPassBase<FoldSoftmaxPass>> {
  using FoldPass::FoldPass;
  void decide(BufferAnalysis &a, Block &step) { a.foldSoftmaxes(step); }
};

struct FoldViewsPass
    : FoldPass<FoldViewsPass, pf::impl::FoldViewsPassBase<FoldViewsPass>> {
  using FoldPass::FoldPass;
  void decide(BufferAnalysis &a, Block &step) { a.foldViewsIntoGemms(step); }
};

struct GroupElementwisePass
    : FoldPass<GroupElementwisePass,
               pf::impl::GroupElementwisePassBase<GroupElementwisePass>> {
  using FoldPass::FoldPass;
  void decide(BufferAnalysis &a, Block &step) {
    a.groupElementwise(step, hasKernel, this->maxPointers);
  }
};

struct GroupUpdatesPass
    : FoldPass<GroupUpdatesPass,
               pf::impl::GroupUpdatesPassBase<GroupUpdatesPass>> {
  using FoldPass::FoldPass;
  void decide(BufferAnalysis &a, Block &step) { a.groupUpdateRuns(step); }
};
} // namespace
