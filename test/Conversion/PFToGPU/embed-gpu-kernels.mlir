// pf-embed-gpu-kernels: each GPU rank's gpu.module @pf_kernels (from
// convert-pf-to-gpu) becomes the image global its pf_init_params registers.
// REQUIRES: cuda
// RUN: pf-opt %S/Inputs/cuda-mlp.mlir -pf-compile-gpu-pipeline="optimizer=sgd pf-compile-to=rank" \
// RUN:   | pf-opt -pf-gpu-folds -convert-pf-to-gpu -pf-embed-gpu-kernels="toolkit=%cuda_toolkit" \
// RUN:   | FileCheck %s
// RUN: pf-opt %S/Inputs/cuda-mlp.mlir -pf-compile-gpu-pipeline="optimizer=sgd pf-compile-to=rank" \
// RUN:   | pf-opt -pf-gpu-folds -convert-pf-to-gpu -pf-embed-gpu-kernels="toolkit=%cuda_toolkit format=isa" \
// RUN:   | FileCheck %s --check-prefix=PTX
// Without kernels (libpfrt's twins) there is nothing to embed.
// RUN: pf-opt %S/Inputs/cuda-mlp.mlir -pf-compile-gpu-pipeline="optimizer=sgd pf-compile-to=rank" \
// RUN:   | pf-opt -pf-gpu-folds=generated-kernels=false -convert-pf-to-gpu=generated-kernels=false -pf-embed-gpu-kernels="toolkit=/nonexistent" \
// RUN:   | FileCheck %s --check-prefix=NONE
// A toolkit without ptxas is an error, before anything is compiled.
// RUN: pf-opt %S/Inputs/cuda-mlp.mlir -pf-compile-gpu-pipeline="optimizer=sgd pf-compile-to=rank" \
// RUN:   | pf-opt -pf-gpu-folds -convert-pf-to-gpu | not pf-opt -pf-embed-gpu-kernels="toolkit=/nonexistent" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NOTOOLKIT

// CHECK-NOT: gpu.container_module
// CHECK-NOT: gpu.module
// CHECK-NOT: gpu.binary
// CHECK: llvm.mlir.global internal constant @__pf_kernels_image("P\EDU\BA{{.*}}") {addr_space = 0 : i32, alignment = 16 : i64}
// CHECK-NOT: @__pf_kernels_image_bytes(0 : i64)
// CHECK: llvm.mlir.global internal constant @__pf_kernels_image_bytes({{[1-9][0-9]*}} : i64)

// PTX text, NUL-terminated, for the driver to compile at load time.
// PTX: @__pf_kernels_image("{{.*}}.target sm_90{{.*}}.visible .entry pf_ew_relu_grad({{.*}}\00")

// NONE-NOT: __pf_kernels_image
// NONE: llvm.call @pfrt_cuda_k_relu_grad

// NOTOOLKIT: error: pf-embed-gpu-kernels: no ptxas at '/nonexistent/bin/ptxas': the GPU kernels need a CUDA toolkit (the pass's toolkit option, or PF_CUDA_TOOLKIT)
