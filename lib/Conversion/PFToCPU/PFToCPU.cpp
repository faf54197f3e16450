//===- PFToCPU.cpp - convert-pf-to-cpu: the CPU backend -------------------===//
//
// The rank lowering (lib/Conversion/PFToRank, RankLowering.h) for CPU
// ranks: every runtime call is a libpfrt CPU kernel, every buffer an
// address in the host arena. The fusion decisions are the step's
// attributes (pf-cpu-folds).
//
//===----------------------------------------------------------------------===//

#include "pf/Conversion/PFToRank/RankLowering.h"
#include "pf/Conversion/Passes.h"

namespace mlir::pf {
#define GEN_PASS_DEF_CONVERTPFTOCPUPASS
#include "pf/Conversion/Passes.h.inc"
} // namespace mlir::pf

using namespace mlir;
using namespace mlir::pf;

namespace {
struct ConvertPFToCPUPass
    : public pf::impl::ConvertPFToCPUPassBase<ConvertPFToCPUPass> {
  using ConvertPFToCPUPassBase::ConvertPFToCPUPassBase;

  void runOnOperation() override {
    RankLoweringOptions options;
    options.outlineActions = outlineActions;
    options.reportOutputs = reportOutputs;
    options.generatedKernels = generatedKernels;
    if (failed(lowerRankModules(getOperation(), options)))
      signalPassFailure();
  }
};
} // namespace
