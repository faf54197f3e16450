// The host side of the GPU backend: every runtime call of a "cuda" rank is
// a device twin (pfrt_device.def), no host kernel or host arena is called.
// RUN: pf-opt %S/Inputs/cuda-mlp.mlir \
// RUN:   -pf-compile-gpu-pipeline="optimizer=sgd momentum=0.9 accumulation-steps=2" \
// RUN:   | FileCheck %s
// RUN: pf-opt %S/Inputs/cuda-mlp.mlir \
// RUN:   -pf-compile-gpu-pipeline="optimizer=sgd momentum=0.9 accumulation-steps=2" \
// RUN:   | FileCheck %s --check-prefix=HOST
// RUN: pf-opt %S/Inputs/cuda-mlp.mlir \
// RUN:   -pf-compile-gpu-pipeline="optimizer=sgd momentum=0.9 accumulation-steps=2" \
// RUN:   | FileCheck %s --check-prefix=KERNELS
// The bias-gradient GEMMs: the first micro-batch's write (accumulate 0),
// the second's add into the gradient buffers (accumulate 1).
// RUN: pf-opt %S/Inputs/cuda-mlp.mlir \
// RUN:   -pf-compile-gpu-pipeline="optimizer=sgd momentum=0.9 accumulation-steps=2 pf-compile-to=rank" \
// RUN:   | pf-opt -pf-gpu-folds -convert-pf-to-gpu=outline-actions=false | grep -B1 "llvm.call @pfrt_cuda_k_matmul_bgrad(" | FileCheck %s --check-prefix=BGRAD
// RUN: pf-opt %S/Inputs/cuda-mlp.mlir \
// RUN:   -pf-compile-gpu-pipeline="optimizer=sgd momentum=0.9 accumulation-steps=2" \
// RUN:   | FileCheck %s --check-prefix=MULTI
// RUN: pf-opt %S/Inputs/cuda-mlp.mlir \
// RUN:   -pf-compile-gpu-pipeline="optimizer=adam accumulation-steps=1" \
// RUN:   | FileCheck %s --check-prefix=ADAM
// The pass alone on the per-rank program (what the pipeline ends with), and
// with libpfrt's device twins instead of generated kernels.
// RUN: pf-opt %S/Inputs/cuda-mlp.mlir \
// RUN:   -pf-compile-gpu-pipeline="optimizer=sgd pf-compile-to=rank" \
// RUN:   | pf-opt -pf-gpu-folds -convert-pf-to-gpu | FileCheck %s --check-prefix=PASS
// RUN: pf-opt %S/Inputs/cuda-mlp.mlir \
// RUN:   -pf-compile-gpu-pipeline="optimizer=sgd pf-compile-to=rank" \
// RUN:   | pf-opt -pf-gpu-folds=generated-kernels=false -convert-pf-to-gpu=generated-kernels=false \
// RUN:   | FileCheck %s --check-prefix=TWINS

// CHECK: module @rank0 attributes {{.*}}pfrt.backend = "cuda"

// Parameters: the device arena, initialised on the host and copied.
// The generated kernels' table is registered first.
// CHECK-LABEL: llvm.func @pf_init_params
// CHECK: llvm.mlir.addressof @__pf_kernels_image_bytes
// CHECK: llvm.mlir.addressof @__pf_kernels_image :
// CHECK: llvm.mlir.addressof @__pf_kernel_names
// CHECK: llvm.mlir.addressof @__pf_kernel_host_twins
// CHECK: llvm.mlir.addressof @__pf_kernel_pointers
// CHECK: llvm.call @pfrt_cuda_generated_kernels
// CHECK: llvm.call @pfrt_cuda_arena_plan
// CHECK: llvm.call @pfrt_cuda_arena_ptr
// CHECK: llvm.call @pfrt_cuda_init_param
// CHECK: llvm.call @pfrt_cuda_state_register

// The step: inputs copied in, cuBLASLt GEMMs (the hidden layer's bias and
// ReLU in its GEMM's RELU_BIAS epilogue, the bias folded into the last
// layer's, each weight gradient computed with its bias gradient by
// cuBLASLt's BGRADB epilogue, the second micro-batch's accumulated into the
// gradient buffer), the device kernels, the loss copied out.
// CHECK: llvm.call @pfrt_cuda_load_input_part
// CHECK-NOT: pfrt_cuda_k_bias_add_relu
// CHECK: llvm.call @pfrt_cuda_k_matmul_bias_relu(
// CHECK: llvm.call @pfrt_cuda_k_matmul_bias
// CHECK: llvm.call @pfrt_cuda_k_softmax_xent(
// CHECK: llvm.call @pfrt_cuda_k_softmax_xent_grad
// CHECK-NOT: pfrt_cuda_k_reduce_sum
// CHECK: llvm.call @pfrt_cuda_k_matmul(
// CHECK: llvm.call @pfrt_cuda_k_matmul_bgrad(
// CHECK: %[[KERNEL:.+]] = llvm.mlir.constant(0 : i64)
// CHECK: %[[N:.+]] = llvm.mlir.constant(512 : i64)
// CHECK: %[[PTRS:.+]] = llvm.mlir.constant(3 : i64)
// CHECK: llvm.call @pfrt_cuda_launch_generated(%[[KERNEL]], %[[N]], %[[PTRS]], %{{.+}}, %{{.+}}, %{{.+}}, %[[NULL:.+]], %[[NULL]], %[[NULL]], %[[NULL]], %[[NULL]])
// CHECK: llvm.call @pfrt_cuda_k_matmul_bgrad(
// CHECK-NOT: pfrt_cuda_k_matmul_acc
// CHECK: llvm.call @pfrt_cuda_scalar
// The four updates (SGD with momentum) are one multi-tensor call
// (BufferAnalysis): a table of 4 x 5 pointers on the stack, their sizes
// (the MULTI global), momentum 0.9.
// CHECK-NOT: llvm.call @pfrt_cuda_k_sgd(
// CHECK: %[[TABLE:.+]] = llvm.alloca %{{.+}} x !llvm.array<20 x ptr>
// CHECK: %[[COUNT:.+]] = llvm.mlir.constant(4 : i64)
// CHECK: %[[MOMENTUM:.+]] = llvm.mlir.constant(9.000000e-01 : f64)
// CHECK: llvm.call @pfrt_cuda_k_sgd_multi(%[[TABLE]], %{{.+}}, %{{.+}}, %[[COUNT]], %{{.+}}, %{{.+}}, %[[MOMENTUM]],
// CHECK-NOT: llvm.call @pfrt_cuda_k_sgd(
// CHECK: llvm.call @pfrt_cuda_report_loss
// CHECK: llvm.func @main
// CHECK: llvm.call @pfrt_main

// The kernels (relu_grad, and the bias gradients' accumulating add), their
// packed host twins for the emulation, and the image pf-embed-gpu-kernels
// built: a fatbin (its magic 0xBA55ED50, little-endian), the container
// module and the gpu.module gone.
// KERNELS-NOT: gpu.module
// KERNELS: llvm.func internal @pf_ew_relu_grad_packed(%{{.+}}: !llvm.ptr, %{{.+}}: i64)
// KERNELS: llvm.mlir.global internal constant @__pf_kernel_name_pf_ew_relu_grad("pf_ew_relu_grad\00")
// KERNELS: llvm.mlir.global internal constant @__pf_kernel_name_pf_ew_add("pf_ew_add\00")
// KERNELS: llvm.mlir.global internal constant @__pf_kernel_pointers(dense<3> : tensor<2xi64>)
// KERNELS: llvm.mlir.global internal constant @__pf_kernels_image("P\EDU\BA
// KERNELS-NOT: @__pf_kernels_image_bytes(0 : i64)
// KERNELS: llvm.mlir.global internal constant @__pf_kernels_image_bytes(
// KERNELS-NOT: gpu.container_module

// No host kernel, host arena, host input or host report is called.
// HOST-NOT: @pfrt_k_
// HOST-NOT: @pfrt_arena_at
// HOST-NOT: @pfrt_arena_plan
// HOST-NOT: @pfrt_init_param
// HOST-NOT: @pfrt_load_input
// HOST-NOT: @pfrt_report_loss
// HOST-NOT: @pfrt_scalar(
// HOST-NOT: @pfrt_launch_generated

// BGRAD: %[[A0:.+]] = llvm.mlir.constant(0 : i32)
// BGRAD-NEXT: llvm.call @pfrt_cuda_k_matmul_bgrad({{.*}}, %[[A0]])
// BGRAD: %[[A1:.+]] = llvm.mlir.constant(0 : i32)
// BGRAD-NEXT: llvm.call @pfrt_cuda_k_matmul_bgrad({{.*}}, %[[A1]])
// BGRAD: %[[A2:.+]] = llvm.mlir.constant(1 : i32)
// BGRAD-NEXT: llvm.call @pfrt_cuda_k_matmul_bgrad({{.*}}, %[[A2]])
// BGRAD: %[[A3:.+]] = llvm.mlir.constant(1 : i32)
// BGRAD-NEXT: llvm.call @pfrt_cuda_k_matmul_bgrad({{.*}}, %[[A3]])

// The multi-tensor call's sizes: w0 (64 x 32), b0, w1 (10 x 64), b1 in the
// updates' order.
// MULTI: llvm.mlir.global private constant @__pf_dims{{[0-9]+}}(dense<[2048, 64, 640, 10]> : tensor<4xi64>)

// ADAM-NOT: llvm.call @pfrt_cuda_k_adam(
// ADAM: %[[TABLE:.+]] = llvm.alloca %{{.+}} x !llvm.array<28 x ptr>
// ADAM: llvm.call @pfrt_cuda_k_adam_multi(%[[TABLE]],
// ADAM-NOT: llvm.call @pfrt_cuda_k_adam(

// PASS: pfrt.backend = "cuda"
// PASS: llvm.call @pfrt_cuda_generated_kernels
// PASS: llvm.call @pfrt_cuda_k_matmul
// PASS: llvm.call @pfrt_cuda_launch_generated
// PASS: llvm.call @pfrt_cuda_k_sgd_multi(
// The pass leaves the kernels in the rank's gpu.module, the image empty.
// PASS: gpu.module @pf_kernels
// PASS: gpu.func @pf_ew_relu_grad(%{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %{{.+}}: i64) kernel
// PASS: @__pf_kernels_image_bytes(0 : i64)

// TWINS-NOT: pfrt_cuda_generated_kernels
// TWINS-NOT: gpu.module
// TWINS: llvm.call @pfrt_cuda_k_relu_grad
// TWINS-NOT: pfrt_cuda_launch_generated
