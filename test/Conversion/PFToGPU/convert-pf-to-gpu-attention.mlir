// An attention block on a GPU rank (Inputs/cuda-attention.mlir: layer norm,
// projections, scores divided by a learned scale, a causal masked_fill,
// softmax, sub, a linear head and cross-entropy) compiles with the layer
// norm, softmax, masked_fill, sub and div kernels, forward and backward,
// device twins (pfrt_device.def); no host kernel is called.
// The twins: the rank lowering with libpfrt's device kernels for the
// element-wise ops too; the pipeline runs div and sub (and the backward's
// element-wise ops) as generated kernels instead.
// RUN: pf-opt %S/Inputs/cuda-attention.mlir -pf-compile-gpu-pipeline="optimizer=sgd pf-compile-to=rank" \
// RUN:   | pf-opt -pf-gpu-folds=generated-kernels=false -convert-pf-to-gpu=generated-kernels=false | FileCheck %s
// RUN: pf-opt %S/Inputs/cuda-attention.mlir -pf-compile-gpu-pipeline="optimizer=sgd" \
// RUN:   | FileCheck %s --check-prefix=GEN
// RUN: pf-opt %S/Inputs/cuda-attention.mlir -pf-compile-gpu-pipeline="optimizer=sgd" \
// RUN:   | FileCheck %s --check-prefix=HOST

// CHECK: module @rank0 attributes {{.*}}pfrt.backend = "cuda"

// Forward.
// CHECK: llvm.call @pfrt_cuda_k_layer_norm(
// CHECK: llvm.call @pfrt_cuda_k_matmul(
// CHECK: llvm.call @pfrt_cuda_k_matmul(
// CHECK: llvm.call @pfrt_cuda_k_matmul(
// CHECK: llvm.call @pfrt_cuda_k_div(
// CHECK: llvm.call @pfrt_cuda_k_masked_fill(
// CHECK: llvm.call @pfrt_cuda_k_softmax(
// CHECK: llvm.call @pfrt_cuda_k_matmul(
// CHECK: llvm.call @pfrt_cuda_k_sub(
// CHECK: llvm.call @pfrt_cuda_k_matmul(
// CHECK: llvm.call @pfrt_cuda_k_softmax_xent(

// Backward: the softmax's gradient, the mask's (masked_fill of the
// gradient), the quotient's, and the layer norm's parameters.
// CHECK: llvm.call @pfrt_cuda_k_softmax_xent_grad(
// CHECK: llvm.call @pfrt_cuda_k_softmax_grad(
// CHECK: llvm.call @pfrt_cuda_k_masked_fill(
// CHECK: llvm.call @pfrt_cuda_k_div(
// CHECK: llvm.call @pfrt_cuda_k_layer_norm_grad_params(
// The 6 updates are one multi-tensor call (6 x 5 pointers).
// CHECK: llvm.alloca %{{.+}} x !llvm.array<30 x ptr>
// CHECK-NOT: llvm.call @pfrt_cuda_k_sgd(
// CHECK: llvm.call @pfrt_cuda_k_sgd_multi(
// CHECK-NOT: llvm.call @pfrt_cuda_k_sgd(
// CHECK: llvm.call @pfrt_cuda_report_loss

// HOST-NOT: @pfrt_k_
// HOST-NOT: @pfrt_arena_at
// HOST-NOT: @pfrt_arena_plan

// GEN-NOT: llvm.call @pfrt_cuda_k_div(
// GEN-NOT: llvm.call @pfrt_cuda_k_sub(
// GEN: llvm.call @pfrt_cuda_k_masked_fill(
// GEN: llvm.call @pfrt_cuda_launch_generated(
// GEN: llvm.mlir.global internal constant @__pf_kernel_name_pf_ew_div("pf_ew_div\00")
