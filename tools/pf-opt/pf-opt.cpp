//===- pf-opt.cpp - PipeFlow's optimizer driver ---------------------------===//

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "pf/Conversion/Passes.h"
#include "pf/Dialect/PF/Transforms/Passes.h"
#include "pf/InitAllDialects.h"
#include "pf/Pipelines/Pipelines.h"

int main(int argc, char **argv) {
  mlir::registerTransformsPasses();
  mlir::pf::registerPFPasses();
  mlir::pf::registerPFConversionPasses();
  mlir::pf::registerPipelines();
  mlir::DialectRegistry registry;
  mlir::pf::registerAllDialects(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "PipeFlow optimizer driver\n", registry));
}
