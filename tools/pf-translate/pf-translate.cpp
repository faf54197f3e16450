//===- pf-translate.cpp - PipeFlow's emitters -----------------------------===//
//
// Registration only: each emitter, and the options it takes, lives in
// lib/Target and registers itself as an mlir-translate translation.
//
//===----------------------------------------------------------------------===//

#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "pf/Target/GPUBinary.h"
#include "pf/Target/GraphDot.h"
#include "pf/Target/RankArtifacts.h"
#include "pf/Target/ScheduleTrace.h"

int main(int argc, char **argv) {
  mlir::pf::registerGPUBinaryTranslation();
  mlir::pf::registerGraphDotTranslation();
  mlir::pf::registerRankArtifactsTranslation();
  mlir::pf::registerScheduleTraceTranslations();
  return mlir::failed(
      mlir::mlirTranslateMain(argc, argv, "PipeFlow translation driver\n"));
}
