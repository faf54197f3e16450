def A : Pass<"pf-covered", "::mlir::ModuleOp"> {}
def B : Pass<"pf-only-in-pipeline", "::mlir::ModuleOp"> {}
def C : InterfacePass<"pf-uncovered", "::mlir::FunctionOpInterface"> {}
def D : Pass<"pf-continued"> {}
