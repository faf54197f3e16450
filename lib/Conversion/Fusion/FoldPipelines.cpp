//===- FoldPipelines.cpp - pf-hoist-bias-reads and the fold pipelines -----===//
//
// pf-hoist-bias-reads (the one fold pass that moves ops: it runs first), the
// rank steps the fold passes visit, and the CPU and GPU targets' choices of
// fold passes (pf-cpu-folds, pf-gpu-folds).
//
//===----------------------------------------------------------------------===//

#include "pf/Conversion/Fusion/Fusion.h"
#include "pf/Conversion/Kernels/Elementwise.h"
#include "pf/Conversion/Passes.h"
#include "pf/Dialect/PF/IR/PFOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassRegistry.h"

namespace mlir::pf {
#define GEN_PASS_DEF_HOISTBIASREADSPASS
#include "pf/Conversion/Passes.h.inc"
} // namespace mlir::pf

using namespace mlir;
using namespace mlir::pf;

void mlir::pf::forEachRankStep(ModuleOp top,
                               llvm::function_ref<void(Block &)> fn) {
  SmallVector<ModuleOp> ranks;
  for (auto m : top.getOps<ModuleOp>())
    if (m->hasAttr(PFDialect::RankAttrHelper::getNameStr()))
      ranks.push_back(m);
  if (ranks.empty() || top->hasAttr(PFDialect::RankAttrHelper::getNameStr()))
    ranks.assign({top});
  for (ModuleOp m : ranks)
    for (auto f : m.getOps<func::FuncOp>())
      if (!f.isExternal() && f.getBody().hasOneBlock())
        fn(f.getBody().front());
}

/// A Linear's bias is read after its GEMM in traced programs; reading it
/// just before lets the GEMM start from the bias rows (BufferAnalysis folds
/// the bias_add into it). Only a read between the GEMM and its bias_add,
/// with the same stage, micro-batch and phase, and no write of the
/// parameter in between, moves: the values read are the same.
static void hoistBiasReads(Block &block) {
  for (auto ba : llvm::to_vector(block.getOps<BiasAddOp>())) {
    auto mm = ba.getInput().getDefiningOp<MatmulOp>();
    auto read = ba.getBias().getDefiningOp<ReadParamOp>();
    if (!mm || !read || mm->getBlock() != &block ||
        read->getBlock() != &block || !mm->isBeforeInBlock(read) ||
        !read->isBeforeInBlock(ba))
      continue;
    bool sameAction = true;
    for (StringRef name : {PFDialect::StageAttrHelper::getNameStr(),
                           PFDialect::MicrobatchAttrHelper::getNameStr(),
                           PFDialect::PhaseAttrHelper::getNameStr()})
      sameAction &= mm->getAttr(name) == read->getAttr(name);
    bool written = false;
    for (Operation *op = mm->getNextNode(); op != read; op = op->getNextNode())
      if (auto write = dyn_cast<WriteParamOp>(op))
        written |= write.getParam() == read.getParam();
    if (sameAction && !written)
      read->moveBefore(mm);
  }
}

namespace {
struct HoistBiasReadsPass
    : public pf::impl::HoistBiasReadsPassBase<HoistBiasReadsPass> {
  void runOnOperation() override {
    forEachRankStep(getOperation(), hoistBiasReads);
  }
};
} // namespace

/// The passes both targets run first.
static void addCommonFolds(OpPassManager &pm, bool accumulation) {
  pm.addPass(createResetFoldsPass());
  pm.addPass(createHoistBiasReadsPass());
  pm.addPass(createPlanInPlacePass());
  pm.addPass(createFuseBiasReluPass());
  pm.addPass(createLoadInputsByPartsPass());
  if (accumulation)
    pm.addPass(createFoldAccumulationPass());
}

static GroupElementwisePassOptions groupOptions() {
  GroupElementwisePassOptions g;
  g.maxPointers = kernels::kMaxLaunchPointers;
  return g;
}

void mlir::pf::buildCPUFoldPipeline(OpPassManager &pm, bool accumulation,
                                    bool generatedKernels) {
  addCommonFolds(pm, accumulation);
  pm.addPass(createFoldGemmBiasPass());
  pm.addPass(createFoldSoftmaxPass());
  pm.addPass(createFoldViewsPass());
  if (generatedKernels)
    pm.addPass(createGroupElementwisePass(groupOptions()));
}

void mlir::pf::buildGPUFoldPipeline(OpPassManager &pm, bool accumulation,
                                    bool generatedKernels) {
  addCommonFolds(pm, accumulation);
  FoldGemmBiasPassOptions bias;
  bias.relu = true;
  pm.addPass(createFoldGemmBiasPass(bias));
  pm.addPass(createFoldBiasGradPass());
  if (generatedKernels)
    pm.addPass(createGroupElementwisePass(groupOptions()));
  pm.addPass(createGroupUpdatesPass());
}

void mlir::pf::registerFoldPipelines() {
  PassPipelineRegistration<FoldPipelineOptions<false>>(
      "pf-cpu-folds",
      "a CPU rank's fusion and buffer decisions, recorded in the IR",
      [](OpPassManager &pm, const FoldPipelineOptions<false> &o) {
        buildCPUFoldPipeline(pm, o.accumulation, o.generatedKernels);
      });
  PassPipelineRegistration<FoldPipelineOptions<true>>(
      "pf-gpu-folds",
      "a GPU rank's fusion and buffer decisions, recorded in the IR",
      [](OpPassManager &pm, const FoldPipelineOptions<true> &o) {
        buildGPUFoldPipeline(pm, o.accumulation, o.generatedKernels);
      });
}
