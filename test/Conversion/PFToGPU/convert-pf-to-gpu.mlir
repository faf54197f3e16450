// The host side of the GPU backend: every runtime call of a "cuda" rank is
// a device twin (pfrt_device.def), no host kernel or host arena is called.
// RUN: pf-opt %S/Inputs/cuda-mlp.mlir \
// RUN:   -pf-compile-gpu-pipeline="optimizer=sgd momentum=0.9 accumulation-steps=2" \
// RUN:   | FileCheck %s
// RUN: pf-opt %S/Inputs/cuda-mlp.mlir \
// RUN:   -pf-compile-gpu-pipeline="optimizer=sgd momentum=0.9 accumulation-steps=2" \
// RUN:   | FileCheck %s --check-prefix=HOST
// RUN: pf-opt %S/Inputs/cuda-mlp.mlir \
// RUN:   -pf-compile-gpu-pipeline="optimizer=adam accumulation-steps=1" \
// RUN:   | FileCheck %s --check-prefix=ADAM
// The pass alone on the per-rank program (what the pipeline ends with).
// RUN: pf-opt %S/Inputs/cuda-mlp.mlir \
// RUN:   -pf-compile-gpu-pipeline="optimizer=sgd pf-compile-to=rank" \
// RUN:   | pf-opt -convert-pf-to-gpu | FileCheck %s --check-prefix=PASS

// CHECK: module @rank0 attributes {{.*}}pfrt.backend = "cuda"

// Parameters: the device arena, initialised on the host and copied.
// CHECK-LABEL: llvm.func @pf_init_params
// CHECK: llvm.call @pfrt_cuda_arena_plan
// CHECK: llvm.call @pfrt_cuda_arena_ptr
// CHECK: llvm.call @pfrt_cuda_init_param
// CHECK: llvm.call @pfrt_cuda_state_register

// The step: inputs copied in, cuBLASLt GEMMs (the bias folded into the last
// layer's, the weight gradient of the second micro-batch accumulated into
// the gradient buffer), the device kernels, the loss copied out.
// CHECK: llvm.call @pfrt_cuda_load_input_part
// CHECK: llvm.call @pfrt_cuda_k_matmul(
// CHECK: llvm.call @pfrt_cuda_k_bias_add_relu
// CHECK: llvm.call @pfrt_cuda_k_matmul_bias
// CHECK: llvm.call @pfrt_cuda_k_softmax_xent(
// CHECK: llvm.call @pfrt_cuda_k_softmax_xent_grad
// CHECK: llvm.call @pfrt_cuda_k_reduce_sum
// CHECK: llvm.call @pfrt_cuda_k_relu_grad
// CHECK: llvm.call @pfrt_cuda_k_matmul_acc
// CHECK: llvm.call @pfrt_cuda_scalar
// CHECK: llvm.call @pfrt_cuda_k_sgd
// CHECK: llvm.call @pfrt_cuda_report_loss
// CHECK: llvm.func @main
// CHECK: llvm.call @pfrt_main

// No host kernel, host arena, host input or host report is called.
// HOST-NOT: @pfrt_k_
// HOST-NOT: @pfrt_arena_at
// HOST-NOT: @pfrt_arena_plan
// HOST-NOT: @pfrt_init_param
// HOST-NOT: @pfrt_load_input
// HOST-NOT: @pfrt_report_loss
// HOST-NOT: @pfrt_scalar(

// ADAM: llvm.call @pfrt_cuda_k_adam

// PASS: pfrt.backend = "cuda"
// PASS: llvm.call @pfrt_cuda_k_matmul
// PASS: llvm.call @pfrt_cuda_k_sgd
