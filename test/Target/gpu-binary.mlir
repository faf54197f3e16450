// RUN: pf-opt %S/../Integration/Inputs/elementwise-kernels.mlir --pass-pipeline='builtin.module(pf-gpu-kernels,nvvm-attach-target{chip=sm_90 features=+ptx80},gpu.module(convert-gpu-to-nvvm,convert-arith-to-llvm),reconcile-unrealized-casts,gpu-module-to-binary{toolkit=%cuda_toolkit format=isa})' | pf-translate --pf-emit-gpu-binary | FileCheck %s
// RUN: not pf-translate --pf-emit-gpu-binary %s 2>&1 | FileCheck %s --check-prefix=NONE
// REQUIRES: cuda

// The image of the kernels as the driver takes it: here PTX, one entry
// per generated kernel (12: add, mul, relu, its gradient, four activations
// and their gradients).
// CHECK: .target sm_90
// CHECK-COUNT-12: .visible .entry pf_ew_
// CHECK-NOT: .entry

// NONE: error: pf-emit-gpu-binary expects one gpu.binary @pf_kernels (pf-gpu-kernels, then gpu-module-to-binary), found 0
module {
}
