//===- GPUBinary.cpp - the GPU kernels' image as a file -------------------===//

#include "pf/Target/GPUBinary.h"

#include "pf/Dialect/PF/IR/PFDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Tools/mlir-translate/Translation.h"

using namespace mlir;
using namespace mlir::pf;

LogicalResult mlir::pf::emitGPUBinary(Operation *op, raw_ostream &os) {
  SmallVector<gpu::BinaryOp> binaries;
  op->walk([&](gpu::BinaryOp b) {
    if (b.getSymName() == "pf_kernels")
      binaries.push_back(b);
  });
  if (binaries.size() != 1)
    return mlir::emitError(op->getLoc(),
                           "pf-emit-gpu-binary expects one gpu.binary "
                           "@pf_kernels (pf-gpu-kernels, then "
                           "gpu-module-to-binary), found ")
           << binaries.size();
  ArrayAttr objects = binaries.front().getObjects();
  if (objects.size() != 1)
    return binaries.front().emitError("pf-emit-gpu-binary expects one "
                                      "object (one target), found ")
           << objects.size();
  auto object = cast<gpu::ObjectAttr>(objects[0]);
  if (object.getFormat() == gpu::CompilationTarget::Offload)
    return binaries.front().emitError(
        "pf-emit-gpu-binary: the object is LLVM bitcode (format=llvm); "
        "compile it with format=bin or format=isa");
  StringRef bytes = object.getObject().getValue();
  os.write(bytes.data(), bytes.size());
  // PTX is handed to the driver as a C string.
  if (object.getFormat() == gpu::CompilationTarget::Assembly &&
      !bytes.ends_with(StringRef("\0", 1)))
    os << '\0';
  return success();
}

void mlir::pf::registerGPUBinaryTranslation() {
  TranslateFromMLIRRegistration registration(
      "pf-emit-gpu-binary",
      "write the GPU kernels' image (cubin or PTX) of gpu.binary @pf_kernels",
      [](Operation *op, raw_ostream &os) { return emitGPUBinary(op, os); },
      [](DialectRegistry &registry) {
        registry.insert<PFDialect, func::FuncDialect, gpu::GPUDialect,
                        LLVM::LLVMDialect, NVVM::NVVMDialect>();
      });
}
