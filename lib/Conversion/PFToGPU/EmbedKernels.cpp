//===- EmbedKernels.cpp - pf-embed-gpu-kernels: the kernels' fatbin -------===//
//
// Each GPU rank's gpu.module @pf_kernels (convert-pf-to-gpu's generated
// element-wise kernels) goes through the NVVM pipeline into one image,
// which replaces the rank's empty __pf_kernels_image global: the executable
// carries its kernels, and pf_init_params hands them to the runtime.
//
//===----------------------------------------------------------------------===//

#include "pf/Conversion/Kernels/Elementwise.h"
#include "pf/Conversion/Passes.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cstdlib>

namespace mlir::pf {
#define GEN_PASS_DEF_EMBEDGPUKERNELSPASS
#include "pf/Conversion/Passes.h.inc"
} // namespace mlir::pf

using namespace mlir;
using namespace mlir::pf;

#ifndef PF_CUDA_TOOLKIT_DEFAULT
#define PF_CUDA_TOOLKIT_DEFAULT "/usr/local/cuda"
#endif

namespace {

struct EmbedGPUKernelsPass
    : public pf::impl::EmbedGPUKernelsPassBase<EmbedGPUKernelsPass> {
  using EmbedGPUKernelsPassBase::EmbedGPUKernelsPassBase;

  /// The NVVM pipeline of one rank module.
  OpPassManager pipeline(StringRef toolkitPath) const {
    OpPassManager pm(ModuleOp::getOperationName());
    GpuNVVMAttachTargetOptions attach;
    attach.chip = chip;
    attach.features = features;
    attach.optLevel = 3;
    pm.addPass(createGpuNVVMAttachTarget(attach));
    OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
    kernels.addPass(createConvertGpuOpsToNVVMOps());
    kernels.addPass(createArithToLLVMConversionPass());
    pm.addPass(createReconcileUnrealizedCastsPass());
    GpuModuleToBinaryPassOptions binary;
    binary.toolkitPath = toolkitPath.str();
    binary.compilationTarget = format;
    pm.addPass(createGpuModuleToBinaryPass(binary));
    return pm;
  }

  void getDependentDialects(DialectRegistry &registry) const override {
    EmbedGPUKernelsPassBase::getDependentDialects(registry);
    pipeline("").getDependentDialects(registry);
  }

  std::string toolkitPath() const {
    if (!toolkit.empty())
      return toolkit;
    if (const char *env = std::getenv("PF_CUDA_TOOLKIT"); env && *env)
      return env;
    return PF_CUDA_TOOLKIT_DEFAULT;
  }

  LogicalResult embed(ModuleOp rank, StringRef root);

  void runOnOperation() override {
    ModuleOp top = getOperation();
    SmallVector<ModuleOp> ranks;
    top.walk([&](ModuleOp m) {
      if (m.lookupSymbol<gpu::GPUModuleOp>("pf_kernels"))
        ranks.push_back(m);
    });
    if (ranks.empty())
      return;
    std::string root = toolkitPath();
    SmallString<128> ptxas(root);
    llvm::sys::path::append(ptxas, "bin", "ptxas");
    if (format != "isa" && !llvm::sys::fs::can_execute(ptxas)) {
      top.emitError() << "pf-embed-gpu-kernels: no ptxas at '" << ptxas
                      << "': the GPU kernels need a CUDA toolkit (the "
                         "pass's toolkit option, or PF_CUDA_TOOLKIT)";
      return signalPassFailure();
    }
    for (ModuleOp rank : ranks)
      if (failed(embed(rank, root)))
        return signalPassFailure();
  }
};

LogicalResult EmbedGPUKernelsPass::embed(ModuleOp rank, StringRef root) {
  OpPassManager pm = pipeline(root);
  if (failed(runPipeline(pm, rank)))
    return failure();
  auto binary = rank.lookupSymbol<gpu::BinaryOp>("pf_kernels");
  if (!binary || binary.getObjects().size() != 1)
    return rank.emitError("pf-embed-gpu-kernels: gpu-module-to-binary gave "
                          "no single image of @pf_kernels");
  auto object = cast<gpu::ObjectAttr>(binary.getObjects()[0]);
  std::string bytes = object.getObject().getValue().str();
  // PTX is handed to the driver as a C string.
  if (object.getFormat() == gpu::CompilationTarget::Assembly)
    bytes.push_back('\0');
  auto image = rank.lookupSymbol<LLVM::GlobalOp>(kernels::kImageSymbol);
  auto size = rank.lookupSymbol<LLVM::GlobalOp>(kernels::kImageBytesSymbol);
  if (!image || !size)
    return rank.emitError("pf-embed-gpu-kernels: the rank has kernels but no "
                          "image globals (run convert-pf-to-gpu first)");
  OpBuilder b(image);
  auto filled = LLVM::GlobalOp::create(
      b, image.getLoc(), LLVM::LLVMArrayType::get(b.getI8Type(), bytes.size()),
      /*isConstant=*/true, LLVM::Linkage::Internal, kernels::kImageSymbol,
      b.getStringAttr(bytes), /*alignment=*/16);
  image.erase();
  (void)filled;
  size.setValueAttr(b.getI64IntegerAttr(static_cast<int64_t>(bytes.size())));
  binary.erase();
  rank->removeAttr(gpu::GPUDialect::getContainerModuleAttrName());
  return success();
}

} // namespace
