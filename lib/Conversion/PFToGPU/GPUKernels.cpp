//===- GPUKernels.cpp - the GPU kernels of a program's element-wise ops ---===//

#include "pf/Conversion/Kernels/Elementwise.h"
#include "pf/Conversion/Passes.h"
#include "pf/Dialect/PF/IR/PFDialect.h"

namespace mlir::pf {
#define GEN_PASS_DEF_GPUKERNELSPASS
#include "pf/Conversion/Passes.h.inc"
} // namespace mlir::pf

using namespace mlir;
using namespace mlir::pf;

namespace {

/// The device twin of every element-wise op under `module` (nested rank
/// modules excluded), in `module`'s gpu.module.
void buildKernels(ModuleOp module) {
  gpu::GPUModuleOp kernels;
  module.getBody()->walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (isa<ModuleOp>(op) && op != module.getOperation())
      return WalkResult::skip();
    if (std::optional<kernels::ElementwiseKernel> kernel =
            kernels::elementwiseKernelFor(op)) {
      if (!kernels)
        kernels = kernels::getOrCreateKernelModule(module);
      kernels::getOrCreateDeviceKernel(kernels, *kernel);
    }
    return WalkResult::advance();
  });
}

struct GPUKernelsPass : public pf::impl::GPUKernelsPassBase<GPUKernelsPass> {
  void runOnOperation() override {
    ModuleOp top = getOperation();
    StringRef rankAttr = PFDialect::RankAttrHelper::getNameStr();
    SmallVector<ModuleOp> ranks;
    top.walk([&](ModuleOp m) {
      if (m->hasAttr(rankAttr))
        ranks.push_back(m);
    });
    if (ranks.empty())
      ranks.push_back(top);
    for (ModuleOp m : ranks)
      buildKernels(m);
  }
};

} // namespace
