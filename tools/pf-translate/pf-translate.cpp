//===- pf-translate.cpp - PipeFlow's emitters -----------------------------===//

#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "pf/Target/GraphDot.h"
#include "pf/Target/RankArtifacts.h"
#include "pf/Target/ScheduleTrace.h"

int main(int argc, char **argv) {
  mlir::pf::registerGraphDotTranslation();
  mlir::pf::registerRankArtifactsTranslation();
  mlir::pf::registerScheduleTraceTranslations();
  mlir::pf::rewriteArtifactArguments(argc, argv);
  return mlir::failed(
      mlir::mlirTranslateMain(argc, argv, "PipeFlow translation driver\n"));
}
