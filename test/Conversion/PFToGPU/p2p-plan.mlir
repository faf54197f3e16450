// Every GPU rank's point-to-point plan reaches its pf_init_params
// (pfrt_cuda_p2p_plan: peer, 1 for a send or 0 for a receive, tag, count
// in 4-byte words, a row per message in the order its step posts them), so
// the pairs' NCCL communicators are made before the first step. ZB-H1 over
// the GPT's two stages with 2 micro-batches: rank 0 sends each micro-batch's
// activations (tags 0 and 2) and receives their gradients (1 and 3), rank 1
// the other way round; the two plans mirror each other. CPU ranks have no
// plan, and a job without point-to-point (TP2) none either.

// RUN: %python %S/../../Integration/Inputs/gpt_layout.py %S/Inputs/cuda-gpt.mlir --layout pp --device cuda \
// RUN:   | pf-opt -pf-compile-gpu-pipeline="optimizer=adamw accumulation-steps=2 schedule=zb-h1" \
// RUN:   | FileCheck %s
// RUN: %python %S/../../Integration/Inputs/gpt_layout.py %S/Inputs/cuda-gpt.mlir --layout pp --device cpu \
// RUN:   | pf-opt -pf-compile-cpu-pipeline="optimizer=adamw accumulation-steps=2 schedule=zb-h1" \
// RUN:   | FileCheck %s --check-prefix=NONE
// RUN: %python %S/../../Integration/Inputs/gpt_layout.py %S/Inputs/cuda-gpt.mlir --layout tp --device cuda \
// RUN:   | pf-opt -pf-compile-gpu-pipeline="optimizer=adamw" \
// RUN:   | FileCheck %s --check-prefix=NONE

// CHECK-LABEL: module @rank0
// CHECK: llvm.mlir.global private constant @[[T0:__pf_dims[0-9]+]](dense<[1, 1, 0, 128, 1, 1, 2, 128, 1, 0, 1, 128, 1, 0, 3, 128]> : tensor<16xi64>)
// CHECK: llvm.func @pf_init_params
// CHECK: %[[P0:.*]] = llvm.mlir.addressof @[[T0]]
// CHECK: llvm.call @pfrt_cuda_arena_plan
// CHECK-NEXT: %[[N0:.*]] = llvm.mlir.constant(16 : i64)
// CHECK-NEXT: llvm.call @pfrt_cuda_p2p_plan(%[[P0]], %[[N0]])
// CHECK-LABEL: module @rank1
// CHECK: llvm.mlir.global private constant @[[T1:__pf_dims[0-9]+]](dense<[0, 0, 0, 128, 0, 1, 1, 128, 0, 0, 2, 128, 0, 1, 3, 128]> : tensor<16xi64>)
// CHECK: llvm.func @pf_init_params
// CHECK: %[[P1:.*]] = llvm.mlir.addressof @[[T1]]
// CHECK: llvm.call @pfrt_cuda_p2p_plan(%[[P1]],

// NONE-NOT: pfrt_cuda_p2p_plan
