// The job's collective groups reach every GPU rank's pf_init_params as one
// table (pfrt_cuda_comm_groups: each group's size, then its ranks, sorted),
// so every rank makes the same communicators at start-up (split from the
// world's NCCL communicator). The 2 x 2 grid of vocab-mlp-grid.mlir: the
// loss's world all-reduce and the gradients' all-reduces down the columns
// ({0, 2}, {1, 3}); the same table on every rank. CPU ranks make their
// groups as before (no call), and a one-rank job has no table.

// RUN: sed 's/"cpu"/"cuda"/' %S/../../Integration/Inputs/vocab-mlp-grid.mlir \
// RUN:   | pf-opt -pf-compile-gpu-pipeline="optimizer=sgd accumulation-steps=2" \
// RUN:   | FileCheck %s
// RUN: pf-opt %S/../../Integration/Inputs/vocab-mlp-grid.mlir \
// RUN:   -pf-compile-cpu-pipeline="optimizer=sgd accumulation-steps=2" \
// RUN:   | FileCheck %s --check-prefix=CPU
// RUN: pf-opt %S/Inputs/cuda-mlp.mlir -pf-compile-gpu-pipeline="optimizer=sgd" \
// RUN:   | FileCheck %s --check-prefix=ONE

// CHECK-LABEL: module @rank0
// CHECK: llvm.mlir.global private constant @[[T0:__pf_dims[0-9]+]](dense<[4, 0, 1, 2, 3, 2, 0, 2, 2, 1, 3]> : tensor<11xi64>)
// CHECK: llvm.func @pf_init_params
// CHECK: %[[P0:.*]] = llvm.mlir.addressof @[[T0]]
// CHECK: llvm.call @pfrt_cuda_arena_plan
// CHECK-NEXT: %[[N0:.*]] = llvm.mlir.constant(11 : i64)
// CHECK-NEXT: llvm.call @pfrt_cuda_comm_groups(%[[P0]], %[[N0]])
// CHECK-LABEL: module @rank3
// CHECK: llvm.mlir.global private constant @[[T3:__pf_dims[0-9]+]](dense<[4, 0, 1, 2, 3, 2, 0, 2, 2, 1, 3]> : tensor<11xi64>)
// CHECK: llvm.func @pf_init_params
// CHECK: llvm.call @pfrt_cuda_comm_groups

// CPU-NOT: pfrt_cuda_comm_groups
// CPU: llvm.call @pfrt_all_reduce
// CPU-NOT: pfrt_cuda_comm_groups

// ONE: llvm.call @pfrt_cuda_arena_plan
// ONE-NOT: pfrt_cuda_comm_groups
