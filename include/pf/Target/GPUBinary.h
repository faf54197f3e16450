//===- GPUBinary.h - the GPU kernels' image as a file -----------*- C++ -*-===//

#ifndef PF_TARGET_GPUBINARY_H
#define PF_TARGET_GPUBINARY_H

#include "mlir/Support/LLVM.h"

namespace mlir {
class Operation;
namespace pf {

/// Writes the object of `gpu.binary @pf_kernels` under `op` (the output of
/// pf-gpu-kernels and gpu-module-to-binary), as it is: a cubin for
/// format=bin, PTX text for format=isa; what pfrt_cuda_module_load takes.
/// A located error when there is not exactly one such binary with one
/// object.
LogicalResult emitGPUBinary(Operation *op, raw_ostream &os);

/// Registers `--pf-emit-gpu-binary` with mlir-translate's registry.
void registerGPUBinaryTranslation();

} // namespace pf
} // namespace mlir

#endif // PF_TARGET_GPUBINARY_H
