// RUN: pf-opt %s -pf-autodiff -pf-infer-sbp -pf-insert-boxing -pf-lower-boxing=report -o /dev/null 2>&1 | FileCheck %s --check-prefix=BOXING
// RUN: pf-opt %s -pf-autodiff -pf-infer-sbp -pf-insert-boxing -pf-lower-boxing -pf-partition-ranks | FileCheck %s --check-prefix=RANK
// RUN: pf-opt %s -pf-autodiff -pf-infer-sbp -pf-insert-boxing -pf-lower-boxing -pf-partition-ranks -pf-cpu-folds -convert-pf-to-cpu=outline-actions=false | FileCheck %s

// Comparisons and boolean tensors, data parallel on 2 ranks: the batch
// stays split through pf.compare (f32 with a constant, i32 with i32),
// the logical ops on a bool input, pf.where, a bool-masked masked_fill and
// pf.cast; the only communication is the loss's all-reduce. A bool is one
// byte an element: the bool input's boxes are 2x6 bytes, its constant
// (true where a column is even) an i8 array.
#P = #pf.placement<"cpu", [0, 1]>
!F = !pf.global<4x6xf32, #P, #pf.sbp<[S(0)]>>
!M = !pf.global<4x6xi1, #P, #pf.sbp<[S(0)]>>
!I = !pf.global<4x6xi32, #P, #pf.sbp<[S(0)]>>
func.func @block(%x: !F, %k: !M, %n: !I, %j: !I) -> !pf.global<f32, #P> {
  %z = pf.constant dense<0.0> : tensor<4x6xf32> : !pf.global<4x6xf32, #P, #pf.sbp<[B]>>
  %even = pf.constant dense<[true, false, true, false, true, false]> : tensor<6xi1> : !pf.global<6xi1, #P, #pf.sbp<[B]>>
  %e = pf.broadcast_to %even {shape = array<i64: 4, 6>} : (!pf.global<6xi1, #P, #pf.sbp<[B]>>) -> !pf.global<4x6xi1, #P>
  %pos = pf.compare %x, %z {predicate = "gt"} : (!F, !pf.global<4x6xf32, #P, #pf.sbp<[B]>>) -> !pf.global<4x6xi1, #P>
  %le = pf.compare %n, %j {predicate = "le"} : (!I, !I) -> !pf.global<4x6xi1, #P>
  %a = pf.logical_and %pos, %k : (!pf.global<4x6xi1, #P>, !M) -> !pf.global<4x6xi1, #P>
  %o = pf.logical_or %a, %le : (!pf.global<4x6xi1, #P>, !pf.global<4x6xi1, #P>) -> !pf.global<4x6xi1, #P>
  %q = pf.logical_xor %o, %e : (!pf.global<4x6xi1, #P>, !pf.global<4x6xi1, #P>) -> !pf.global<4x6xi1, #P>
  %w = pf.where %q, %x, %z : (!pf.global<4x6xi1, #P>, !F, !pf.global<4x6xf32, #P, #pf.sbp<[B]>>) -> !pf.global<4x6xf32, #P>
  %f = pf.masked_fill %w, %k {value = 2.0 : f64} : (!pf.global<4x6xf32, #P>, !M) -> !pf.global<4x6xf32, #P>
  %c = pf.cast %q : !pf.global<4x6xi1, #P> -> !pf.global<4x6xf32, #P>
  %m = pf.mul %f, %c : (!pf.global<4x6xf32, #P>, !pf.global<4x6xf32, #P>) -> !pf.global<4x6xf32, #P>
  %s = pf.reduce_sum %m {axes = array<i64: 0, 1>} : (!pf.global<4x6xf32, #P>) -> !pf.global<f32, #P>
  return %s : !pf.global<f32, #P>
}
// BOXING: pf boxing report: 1 communication op(s)
// BOXING-NEXT: all_reduce f32 {{.*}} #pf.sbp<[P]> -> #pf.sbp<[B]>

// RANK-LABEL: func.func @block(%arg0: !pf.global<2x6xf32
// RANK-SAME: %arg1: !pf.global<2x6xi1
// RANK-SAME: %arg2: !pf.global<2x6xi32
// RANK: pf.compare {{.*}}predicate = "gt"{{.*}} -> !pf.global<2x6xi1
// RANK: pf.compare {{.*}}predicate = "le"{{.*}} -> !pf.global<2x6xi1
// RANK: pf.where {{.*}} -> !pf.global<2x6xf32
// RANK: pf.cast {{.*}} -> !pf.global<2x6xf32

// CHECK-LABEL: llvm.mlir.global private constant @__pf_const0(dense<[1, 0, 1, 0, 1, 0, 0, 0]> : tensor<8xi8>) {{.*}} : !llvm.array<8 x i8>
// CHECK-LABEL: llvm.func @pf_step
// The inputs' bytes: f32 2x6x4, bool 2x6, int32 2x6x4.
// CHECK: llvm.mlir.constant(48 : i64)
// CHECK: llvm.call @pfrt_load_input_boxes
// CHECK: llvm.mlir.constant(12 : i64)
// CHECK: llvm.call @pfrt_load_input_boxes
// CHECK: llvm.call @pfrt_k_copy(
// CHECK: llvm.call @pfrt_k_broadcast
// CHECK: llvm.call @pfrt_k_compare
// CHECK: llvm.call @pfrt_k_compare
// CHECK: llvm.call @pfrt_k_logical
// CHECK: llvm.call @pfrt_k_logical
// CHECK: llvm.call @pfrt_k_logical
// CHECK: llvm.call @pfrt_k_where
// CHECK: llvm.call @pfrt_k_masked_fill
// CHECK: llvm.call @pfrt_k_cast
// CHECK: llvm.call @pfrt_all_reduce_sum
