//===- pf-opt.cpp - PipeFlow's optimizer driver ---------------------------===//

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "pf/Conversion/Passes.h"
#include "pf/Dialect/PF/Transforms/Passes.h"
#include "pf/InitAllDialects.h"
#include "pf/Pipelines/Pipelines.h"

int main(int argc, char **argv) {
  mlir::registerTransformsPasses();
  // The NVVM path of the GPU kernels (pf-gpu-kernels, then
  // nvvm-attach-target, convert-gpu-to-nvvm, gpu-module-to-binary).
  mlir::registerGPUPasses();
  mlir::registerConvertGpuOpsToNVVMOps();
  mlir::registerArithToLLVMConversionPass();
  mlir::registerReconcileUnrealizedCastsPass();
  mlir::pf::registerPFPasses();
  mlir::pf::registerPFConversionPasses();
  mlir::pf::registerPipelines();
  mlir::DialectRegistry registry;
  mlir::pf::registerAllDialects(registry);
  registry.insert<mlir::NVVM::NVVMDialect>();
  mlir::NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "PipeFlow optimizer driver\n", registry));
}
