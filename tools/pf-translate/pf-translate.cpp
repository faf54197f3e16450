//===- pf-translate.cpp - PipeFlow's emitters -----------------------------===//

#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "pf/Target/GraphDot.h"

int main(int argc, char **argv) {
  mlir::pf::registerGraphDotTranslation();
  return mlir::failed(
      mlir::mlirTranslateMain(argc, argv, "PipeFlow translation driver\n"));
}
