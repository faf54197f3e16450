//===- PFToGPU.cpp - convert-pf-to-gpu: the GPU backend's host side -------===//
//
// One set of patterns, two targets: the rank lowering
// (lib/Conversion/PFToRank, RankLowering.h) with rt::Target::Device, so every
// runtime call becomes its device twin (runtime/include/pfrt/pfrt_device.def)
// and every buffer an address in the device arena. What has no twin is a
// located error. The element-wise ops run as the compiler's own kernels
// (Kernels/Elementwise.h), consecutive ones fused: a gpu.module @pf_kernels per
// rank, which pf-embed-gpu-kernels compiles into the fatbin the executable
// carries.
//
//===----------------------------------------------------------------------===//

#include "pf/Conversion/PFToRank/RankLowering.h"
#include "pf/Conversion/Passes.h"

namespace mlir::pf {
#define GEN_PASS_DEF_CONVERTPFTOGPUPASS
#include "pf/Conversion/Passes.h.inc"
} // namespace mlir::pf

using namespace mlir;
using namespace mlir::pf;

namespace {
struct ConvertPFToGPUPass
    : public pf::impl::ConvertPFToGPUPassBase<ConvertPFToGPUPass> {
  using ConvertPFToGPUPassBase::ConvertPFToGPUPassBase;

  void runOnOperation() override {
    RankLoweringOptions options;
    options.target = rt::Target::Device;
    options.outlineActions = outlineActions;
    options.reportOutputs = reportOutputs;
    options.generatedKernels = generatedKernels;
    options.passName = "convert-pf-to-gpu";
    if (failed(lowerRankModules(getOperation(), options)))
      signalPassFailure();
  }
};
} // namespace
