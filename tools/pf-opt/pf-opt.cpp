//===- pf-opt.cpp - PipeFlow's optimizer driver ---------------------------===//
//
// mlir-opt over PipeFlow's dialects and passes, plus one flag of its own:
// --memory-report runs pf-memory-report after whatever pipeline the command
// line asks for (each rank's memory plan on stderr), and
// --memory-report-device-memory=<bytes> (which implies it) fails on a rank
// whose plan is larger than the device.
//
//===----------------------------------------------------------------------===//

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "pf/Conversion/Passes.h"
#include "pf/Dialect/PF/Transforms/Passes.h"
#include "pf/InitAllDialects.h"
#include "pf/Pipelines/Pipelines.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"

static llvm::cl::opt<bool> memoryReport(
    "memory-report",
    llvm::cl::desc("After the pipeline, print each rank's memory plan by "
                   "category on stderr (pf-memory-report)"));

static llvm::cl::opt<int64_t> deviceMemory(
    "memory-report-device-memory", llvm::cl::init(0),
    llvm::cl::value_desc("bytes"),
    llvm::cl::desc("--memory-report, and fail on a rank whose memory plan "
                   "needs more bytes than this (0: no check)"));

/// MlirOptMain with pf-memory-report appended to the command line's passes.
static mlir::LogicalResult
runWithMemoryReport(mlir::MlirOptMainConfig config, llvm::StringRef inputFile,
                    llvm::StringRef outputFile,
                    mlir::DialectRegistry &registry) {
  mlir::pf::MemoryReportPassOptions options;
  options.deviceMemory = deviceMemory;
  config.setPassPipelineSetupFn(
      [commandLine = config, options](mlir::PassManager &pm) {
        if (mlir::failed(commandLine.setupPassPipeline(pm)))
          return mlir::failure();
        pm.addPass(mlir::pf::createMemoryReportPass(options));
        return mlir::success();
      });
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input =
      mlir::openInputFile(inputFile, &error);
  std::unique_ptr<llvm::ToolOutputFile> output =
      input ? mlir::openOutputFile(outputFile, &error) : nullptr;
  if (!output) {
    llvm::errs() << error << "\n";
    return mlir::failure();
  }
  if (mlir::failed(
          mlir::MlirOptMain(output->os(), std::move(input), registry, config)))
    return mlir::failure();
  output->keep();
  return mlir::success();
}

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
  auto [inputFile, outputFile] = mlir::registerAndParseCLIOptions(
      argc, argv, "PipeFlow optimizer driver\n", registry);
  mlir::MlirOptMainConfig config =
      mlir::MlirOptMainConfig::createFromCLOptions();
  bool report = memoryReport || deviceMemory != 0;
  if (!report || config.shouldShowDialects() || config.shouldListPasses())
    return mlir::asMainReturnCode(
        mlir::MlirOptMain(argc, argv, inputFile, outputFile, registry));
  llvm::InitLLVM init(argc, argv);
  return mlir::asMainReturnCode(
      runWithMemoryReport(config, inputFile, outputFile, registry));
}
