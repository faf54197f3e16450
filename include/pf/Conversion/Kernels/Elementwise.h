//===- Elementwise.h - element-wise kernels, one body per op ----*- C++ -*-===//
//
// The compiler's own element-wise kernels. Each is described once, as the
// scalar function of one element (`ElementwiseKernel::body`), and built
// twice from that description:
//
//  - a host twin, `llvm.func internal @pf_ew_<name>(out, in..., n)`, a loop
//    over the n elements, which the CPU lowering calls with
//    `generated-kernels=true`: CI runs the kernels' arithmetic on the CPU
//    against NumPy;
//  - a device twin, `gpu.func @pf_ew_<name>(out, in..., n) kernel` in the
//    `gpu.module @pf_kernels`, one thread per element (a guard drops the
//    threads past n), which the NVVM pipeline (convert-gpu-to-nvvm,
//    gpu-module-to-binary) turns into a cubin and PTX.
//
// The twins differ only in where the index comes from and in the
// transcendental functions: the host calls libm's erf/exp/tanh in double,
// the device uses the math dialect, which convert-gpu-to-nvvm maps onto
// libdevice's __nv_erf/__nv_exp/__nv_tanh. The activations compute in
// double and round once, as libpfrt's CPU kernels do, so both twins agree
// with them to float32 rounding.
//
//===----------------------------------------------------------------------===//

#ifndef PF_CONVERSION_KERNELS_ELEMENTWISE_H
#define PF_CONVERSION_KERNELS_ELEMENTWISE_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"

#include <functional>
#include <optional>
#include <string>

namespace mlir::pf::kernels {

/// Where a kernel body is built: the transcendental functions differ.
enum class Target { Host, Device };

/// Emits the transcendental functions a body needs (double -> double).
class MathEmitter {
public:
  MathEmitter(ModuleOp symbols, Target target)
      : symbols(symbols), target(target) {}
  Value erf(OpBuilder &b, Location loc, Value x) {
    return call(b, loc, "erf", x);
  }
  Value exp(OpBuilder &b, Location loc, Value x) {
    return call(b, loc, "exp", x);
  }
  Value tanh(OpBuilder &b, Location loc, Value x) {
    return call(b, loc, "tanh", x);
  }

private:
  Value call(OpBuilder &b, Location loc, StringRef fn, Value x);
  ModuleOp symbols; // where the host twin declares libm's functions
  Target target;
};

/// out[i] = body(in_0[i], ..., in_{k-1}[i]) over float32 buffers.
struct ElementwiseKernel {
  std::string name; // the symbol: pf_ew_<op>[_<kind>]
  unsigned numInputs = 1;
  /// The element's value (f32) from the inputs' elements (f32).
  std::function<Value(OpBuilder &, Location, MathEmitter &, ValueRange)> body;
};

/// The kernel computing `op` (pf.relu, pf.relu_grad, pf.activation,
/// pf.activation_grad, pf.add, pf.mul), with its inputs in operand order;
/// none for other ops.
std::optional<ElementwiseKernel> elementwiseKernelFor(Operation *op);

/// `module`'s host twin of `kernel`, created on first use:
/// void(ptr out, ptr in..., i64 n).
LLVM::LLVMFuncOp getOrCreateHostKernel(ModuleOp module,
                                       const ElementwiseKernel &kernel);

/// The `gpu.module @pf_kernels` of `module` (created on first use, marking
/// `module` as a GPU container module).
gpu::GPUModuleOp getOrCreateKernelModule(ModuleOp module);

/// `kernels`' device twin of `kernel`, created on first use: a kernel
/// (ptr out, ptr in..., i64 n) to launch with at least n threads in x.
gpu::GPUFuncOp getOrCreateDeviceKernel(gpu::GPUModuleOp kernels,
                                       const ElementwiseKernel &kernel);

/// Threads per block of the device twins' launches.
constexpr int64_t kBlockSize = 256;

} // namespace mlir::pf::kernels

#endif // PF_CONVERSION_KERNELS_ELEMENTWISE_H
