// Comparisons and boolean tensors on a GPU rank (Inputs/cuda-logical.mlir):
// every op is its device twin (pf.compare -> pfrt_cuda_k_compare with the
// operands' dtype code and the predicate's, pf.logical_* ->
// pfrt_cuda_k_logical with its kind, pf.where, pf.cast, and masked_fill with
// a bool mask, dtype 3); bool and int32 inputs load through the device
// input rows; no host kernel is called.
// RUN: pf-opt %S/Inputs/cuda-logical.mlir -pf-compile-gpu-pipeline="optimizer=sgd pf-compile-to=rank" \
// RUN:   | pf-opt -pf-gpu-folds=generated-kernels=false -convert-pf-to-gpu=generated-kernels=false | FileCheck %s
// RUN: pf-opt %S/Inputs/cuda-logical.mlir -pf-compile-gpu-pipeline="optimizer=sgd pf-compile-to=rank" \
// RUN:   | pf-opt -pf-gpu-folds=generated-kernels=false -convert-pf-to-gpu=generated-kernels=false \
// RUN:   | grep -B2 "llvm.call @pfrt_cuda_k_\(compare\|logical\|masked_fill\|where\|cast\)(" | FileCheck %s --check-prefix=CODES
// RUN: pf-opt %S/Inputs/cuda-logical.mlir -pf-compile-gpu-pipeline="optimizer=sgd" \
// RUN:   | FileCheck %s --check-prefix=HOST

// CHECK: module @rank0 attributes {{.*}}pfrt.backend = "cuda", pfrt.inputs = [{{.*}}dtype = "f32", index = 0 {{.*}}dtype = "bool", index = 1 {{.*}}dtype = "i32", index = 2 {{.*}}dtype = "i64", index = 3
// CHECK-LABEL: llvm.func @pf_step
// The bool input after the f32 one: dtype 3 (PFRT_DTYPE_BOOL).
// CHECK: llvm.call @pfrt_cuda_load_input_boxes(
// CHECK: %[[BOOL:.*]] = llvm.mlir.constant(3 : i32) : i32
// CHECK: llvm.call @pfrt_cuda_load_input_boxes(%{{.*}}, %{{.*}}, %{{.*}}, %[[BOOL]],
// CHECK: llvm.call @pfrt_cuda_k_compare(
// CHECK: llvm.call @pfrt_cuda_k_compare(
// CHECK-COUNT-4: llvm.call @pfrt_cuda_k_logical(
// CHECK: llvm.call @pfrt_cuda_k_where(
// CHECK: llvm.call @pfrt_cuda_k_masked_fill(
// CHECK: llvm.call @pfrt_cuda_k_softmax(
// CHECK: llvm.call @pfrt_cuda_k_cast(
// The backward: the masked_fill's gradient (masked by the bool input),
// then the selection's, masked fills of it by the condition's negation and
// by the condition; none reaches a comparison.
// CHECK: llvm.call @pfrt_cuda_k_softmax_grad(
// CHECK: llvm.call @pfrt_cuda_k_masked_fill(
// CHECK: llvm.call @pfrt_cuda_k_logical(
// CHECK: llvm.call @pfrt_cuda_k_masked_fill(
// CHECK: llvm.call @pfrt_cuda_k_masked_fill(
// CHECK-NOT: llvm.call @pfrt_cuda_k_compare
// CHECK: llvm.return

// The codes: h > 0 on f32 (dtype 0, predicate gt = 4), n < 1 on i32
// (dtype 2, predicate lt = 2); and, or, xor, not (kinds 0 to 3); where on
// f32; the bool mask (dtype 3) of masked_fill; cast bool (3) to f32 (0).
// CODES: llvm.mlir.constant(0 : i32)
// CODES-NEXT: llvm.mlir.constant(4 : i32)
// CODES-NEXT: llvm.call @pfrt_cuda_k_compare(
// CODES: llvm.mlir.constant(2 : i32)
// CODES-NEXT: llvm.mlir.constant(2 : i32)
// CODES-NEXT: llvm.call @pfrt_cuda_k_compare(
// CODES: llvm.mlir.constant(0 : i32)
// CODES-NEXT: llvm.call @pfrt_cuda_k_logical(
// CODES: llvm.mlir.constant(1 : i32)
// CODES-NEXT: llvm.call @pfrt_cuda_k_logical(
// CODES: llvm.mlir.constant(2 : i32)
// CODES-NEXT: llvm.call @pfrt_cuda_k_logical(
// CODES: llvm.mlir.constant(3 : i32)
// CODES-NEXT: llvm.call @pfrt_cuda_k_logical(
// CODES: llvm.mlir.constant(0 : i32)
// CODES-NEXT: llvm.call @pfrt_cuda_k_where(
// CODES: llvm.mlir.constant(3 : i32)
// CODES-NEXT: llvm.mlir.constant(-1.000000e+09 : f64)
// CODES-NEXT: llvm.call @pfrt_cuda_k_masked_fill(
// CODES: %[[TO:.*]] = llvm.mlir.constant(0 : i32)
// CODES-NEXT: llvm.mlir.constant(64 : i64)
// CODES-NEXT: llvm.call @pfrt_cuda_k_cast(%{{.*}}, %[[FROM:.*]], %{{.*}}, %[[TO]],

// HOST-NOT: llvm.call @pfrt_k_
// HOST-NOT: llvm.call @pfrt_arena_at
// HOST: llvm.func @pf_step
