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

/// out_j[i] = body_j(in_0[i], ..., in_{k-1}[i]) over float32 buffers: the
/// twins take (ptr out_0, ..., ptr out_{m-1}, ptr in_0, ..., i64 n).
struct ElementwiseKernel {
  std::string name; // the symbol: pf_ew_<op>[_<kind>], or pf_ew_fused_<k>
  unsigned numInputs = 1;
  unsigned numOutputs = 1;
  /// The outputs' elements (f32) from the inputs' elements (f32).
  std::function<SmallVector<Value>(OpBuilder &, Location, MathEmitter &,
                                   ValueRange)>
      body;
  /// Pointer arguments of the twins (outputs, then inputs).
  unsigned numPointers() const { return numOutputs + numInputs; }
};

/// The kernel computing `op` (pf.relu, pf.relu_grad, pf.activation,
/// pf.activation_grad, pf.add, pf.mul), with its inputs in operand order;
/// none for other ops.
std::optional<ElementwiseKernel> elementwiseKernelFor(Operation *op);

/// One kernel computing the element-wise ops `ops` (program order, each
/// with a kernel above, all of one element count) in a single pass: its
/// inputs are `inputs` (values the ops read that none of them computes),
/// its outputs `outputs` (results of `ops`). Each op's value is rounded to
/// float32 as its own kernel rounds it, so the fused kernel gives the bits
/// of the ops' kernels run one after another.
ElementwiseKernel fuseElementwise(StringRef name, ArrayRef<Operation *> ops,
                                  ArrayRef<Value> inputs,
                                  ArrayRef<Value> outputs);

/// What identifies the computation of fuseElementwise(ops, inputs,
/// outputs): the ops' kernels and how their operands and the outputs refer
/// to the inputs and to each other. Equal keys give the same kernel.
std::string fusionKey(ArrayRef<Operation *> ops, ArrayRef<Value> inputs,
                      ArrayRef<Value> outputs);

/// `module`'s host twin of `kernel`, created on first use:
/// void(ptr out..., ptr in..., i64 n).
LLVM::LLVMFuncOp getOrCreateHostKernel(ModuleOp module,
                                       const ElementwiseKernel &kernel);

/// The `gpu.module @pf_kernels` of `module` (created on first use, marking
/// `module` as a GPU container module).
gpu::GPUModuleOp getOrCreateKernelModule(ModuleOp module);

/// `kernels`' device twin of `kernel`, created on first use: a kernel
/// (ptr out..., ptr in..., i64 n) to launch with at least n threads in x.
gpu::GPUFuncOp getOrCreateDeviceKernel(gpu::GPUModuleOp kernels,
                                       const ElementwiseKernel &kernel);

/// `module`'s packed host twin of `kernel`, created on first use (with the
/// host twin): void(ptr args, i64 n), `args` an array of the host twin's
/// pointer arguments. The runtime's emulation of a GPU (PFRT_CUDA_FAKE=1)
/// runs a generated kernel's launch through it.
LLVM::LLVMFuncOp getOrCreatePackedHostKernel(ModuleOp module,
                                             const ElementwiseKernel &kernel);

/// The most pointer arguments (outputs and inputs) a kernel launched
/// through the runtime may take (pfrt_launch_generated's fixed arity).
constexpr unsigned kMaxLaunchPointers = 8;

/// A GPU rank's globals holding its kernels' device image and its size in
/// bytes (convert-pf-to-gpu leaves them empty, pf-embed-gpu-kernels fills
/// them).
constexpr llvm::StringLiteral kImageSymbol = "__pf_kernels_image";
constexpr llvm::StringLiteral kImageBytesSymbol = "__pf_kernels_image_bytes";

/// Threads per block of the device twins' launches.
constexpr int64_t kBlockSize = 256;

} // namespace mlir::pf::kernels

#endif // PF_CONVERSION_KERNELS_ELEMENTWISE_H
