// The conv-network family on a GPU rank: examples/mlir/convnet.mlir (conv,
// batch norm, max/avg/global pooling, linear, cross-entropy) placed on
// "cuda" compiles with every conv, pool and batch-norm kernel, forward and
// backward, a device twin (pfrt_device.def); no host kernel is called.
// RUN: sed 's/"cpu"/"cuda"/g' %pf_src_root/examples/mlir/convnet.mlir \
// RUN:   | pf-opt -pf-compile-gpu-pipeline="optimizer=sgd pf-compile-to=rank" \
// RUN:   | pf-opt -pf-gpu-folds=generated-kernels=false -convert-pf-to-gpu=generated-kernels=false | FileCheck %s
// The pipeline: the ReLUs and their gradients as generated kernels.
// RUN: sed 's/"cpu"/"cuda"/g' %pf_src_root/examples/mlir/convnet.mlir \
// RUN:   | pf-opt -pf-compile-gpu-pipeline="optimizer=sgd" \
// RUN:   | FileCheck %s --check-prefix=GEN
// RUN: sed 's/"cpu"/"cuda"/g' %pf_src_root/examples/mlir/convnet.mlir \
// RUN:   | pf-opt -pf-compile-gpu-pipeline="optimizer=sgd" \
// RUN:   | FileCheck %s --check-prefix=HOST

// CHECK: module @rank0 attributes {{.*}}pfrt.backend = "cuda"
// CHECK-LABEL: llvm.func @pf_init_params
// CHECK: llvm.call @pfrt_cuda_arena_plan
// CHECK: llvm.call @pfrt_cuda_init_param

// Forward: conv1 (3x3, pad 1), bias, batch norm (running statistics), relu,
// max pool; conv2 with bias and relu, avg pool, global average pool, the
// linear layer and the loss.
// CHECK: llvm.call @pfrt_cuda_load_input_boxes
// CHECK: llvm.call @pfrt_cuda_k_conv2d(
// CHECK: llvm.call @pfrt_cuda_k_bias_add(
// CHECK: llvm.call @pfrt_cuda_k_batch_norm(
// CHECK: llvm.call @pfrt_cuda_k_relu(
// CHECK: llvm.call @pfrt_cuda_k_max_pool2d(
// CHECK: llvm.call @pfrt_cuda_k_conv2d(
// CHECK: llvm.call @pfrt_cuda_k_bias_add_relu(
// CHECK: llvm.call @pfrt_cuda_k_avg_pool2d(
// CHECK: llvm.call @pfrt_cuda_k_global_avg_pool(
// CHECK: llvm.call @pfrt_cuda_k_matmul_bias(
// CHECK: llvm.call @pfrt_cuda_k_softmax_xent(

// Backward, in reverse.
// CHECK: llvm.call @pfrt_cuda_k_softmax_xent_grad(
// CHECK: llvm.call @pfrt_cuda_k_global_avg_pool_grad(
// CHECK: llvm.call @pfrt_cuda_k_avg_pool2d_grad(
// CHECK: llvm.call @pfrt_cuda_k_relu_grad(
// CHECK: llvm.call @pfrt_cuda_k_conv2d_grad_input(
// CHECK: llvm.call @pfrt_cuda_k_conv2d_grad_weight(
// CHECK: llvm.call @pfrt_cuda_k_max_pool2d_grad(
// CHECK: llvm.call @pfrt_cuda_k_relu_grad(
// CHECK: llvm.call @pfrt_cuda_k_batch_norm_grad_input(
// CHECK: llvm.call @pfrt_cuda_k_batch_norm_grad_params(
// CHECK: llvm.call @pfrt_cuda_k_conv2d_grad_weight(
// The 8 updates are one multi-tensor call (8 x 5 pointers).
// CHECK: llvm.alloca %{{.+}} x !llvm.array<40 x ptr>
// CHECK-NOT: llvm.call @pfrt_cuda_k_sgd(
// CHECK: llvm.call @pfrt_cuda_k_sgd_multi(
// CHECK-NOT: llvm.call @pfrt_cuda_k_sgd(
// CHECK: llvm.call @pfrt_cuda_report_loss

// No host kernel, host arena, host input or host report is called.
// HOST-NOT: @pfrt_k_
// HOST-NOT: @pfrt_arena_at
// HOST-NOT: @pfrt_arena_plan
// HOST-NOT: @pfrt_init_param
// HOST-NOT: @pfrt_load_input
// HOST-NOT: @pfrt_report_loss
// HOST-NOT: @pfrt_scalar(

// GEN-NOT: llvm.call @pfrt_cuda_k_relu(
// GEN-NOT: llvm.call @pfrt_cuda_k_relu_grad(
// GEN: llvm.call @pfrt_cuda_k_batch_norm(
// GEN-NEXT: llvm.call @pfrt_trace_end
// GEN: llvm.call @pfrt_cuda_launch_generated(
// GEN: llvm.call @pfrt_cuda_k_max_pool2d(
// GEN: @__pf_kernel_name_pf_ew_relu("pf_ew_relu\00")
