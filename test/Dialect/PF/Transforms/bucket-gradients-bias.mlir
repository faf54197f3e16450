// RUN: pf-opt %s -split-input-file -pf-bucket-gradients="bucket-bytes=128 overlap=true" | FileCheck %s

// A bias gradient's all-reduce waits for its weight gradient's GEMM: the
// lowering computes db = sum_rows(dz) inside the GEMM dW = dz^T x (BGRADB)
// only if nothing reads db before that GEMM. Here the gradients are made
// g (64 bytes), db (16), dW (64); by their defining ops alone the buckets
// would be {g, db} (started right after the reduce_sum, splitting the pair)
// and {dW}. With db made at the GEMM, nothing reads db before it.
#P = #pf.placement<"cpu", [0]>
!A = !pf.global<4x4xf32, #P, #pf.sbp<[B]>>
!V = !pf.global<4xf32, #P, #pf.sbp<[B]>>
// CHECK-LABEL: func.func @bias
// CHECK: %[[G:.*]] = pf.mul_scalar
// CHECK: %[[DB:.*]] = pf.reduce_sum %[[DZ:[^ ]*]]
// CHECK-NOT: %[[DB]]
// CHECK: %[[DW:.*]] = pf.matmul %[[DZ]], %{{.*}} {pf.phase = "backward_weight", transpose_a}
// CHECK: %[[S0:.*]] = pf.all_reduce {{.*}}pf.async_slot = 0
// CHECK: %[[S1:.*]] = pf.all_reduce {{.*}}pf.async_slot = 1
// CHECK: pf.all_reduce_wait %[[S0]]
// CHECK: pf.all_reduce_wait %[[S1]]
// CHECK: return
module @rank0 attributes {pf.rank = 0 : i64} {
func.func @bias(%x: !A, %dz: !A) -> (!A, !V, !A) {
  %g = pf.mul_scalar %x {scalar = 3.0 : f64, pf.phase = "backward_weight"} : (!A) -> !A
  %db = pf.reduce_sum %dz {axes = array<i64: 0>, pf.phase = "backward_weight"} : (!A) -> !V
  %dx = pf.matmul %dz, %x {pf.phase = "backward_input"} : (!A, !A) -> !A
  %dw = pf.matmul %dz, %x {pf.phase = "backward_weight", transpose_a} : (!A, !A) -> !A
  %r0 = pf.all_reduce %g {groups = [array<i64: 0, 1>], pf.phase = "update"} : !A -> !A
  %r1 = pf.all_reduce %db {groups = [array<i64: 0, 1>], pf.phase = "update"} : !V -> !V
  %r2 = pf.all_reduce %dw {groups = [array<i64: 0, 1>], pf.phase = "update"} : !A -> !A
  %s = pf.add %r0, %dx : (!A, !A) -> !A
  return %s, %r1, %r2 : !A, !V, !A
}
}

// -----

// Not a bias gradient's GEMM: one that is not dz^T x (no transpose_a), and
// one after the all-reduces (in the update). db is made at its reduce_sum:
// its bucket {g, db} starts right there.
#P = #pf.placement<"cpu", [0]>
!A = !pf.global<4x4xf32, #P, #pf.sbp<[B]>>
!V = !pf.global<4xf32, #P, #pf.sbp<[B]>>
// CHECK-LABEL: func.func @not_paired
// CHECK: %[[G:.*]] = pf.mul_scalar
// CHECK: %[[DB:.*]] = pf.reduce_sum
// CHECK: pf.concat %{{.*}}, %[[DB]]
// CHECK: pf.all_reduce {{.*}}pf.async_slot = 0
// CHECK: pf.matmul {{.*}}backward_input
// CHECK: pf.all_reduce {{.*}}pf.async_slot = 1
// CHECK: pf.matmul {{.*}}transpose_a
module @rank0 attributes {pf.rank = 0 : i64} {
func.func @not_paired(%x: !A, %dz: !A) -> (!A, !V, !A, !A) {
  %g = pf.mul_scalar %x {scalar = 3.0 : f64, pf.phase = "backward_weight"} : (!A) -> !A
  %db = pf.reduce_sum %dz {axes = array<i64: 0>, pf.phase = "backward_weight"} : (!A) -> !V
  %dx = pf.matmul %dz, %x {pf.phase = "backward_input"} : (!A, !A) -> !A
  %r0 = pf.all_reduce %g {groups = [array<i64: 0, 1>], pf.phase = "update"} : !A -> !A
  %r1 = pf.all_reduce %db {groups = [array<i64: 0, 1>], pf.phase = "update"} : !V -> !V
  %r2 = pf.all_reduce %dx {groups = [array<i64: 0, 1>], pf.phase = "update"} : !A -> !A
  %late = pf.matmul %dz, %x {pf.phase = "update", transpose_a} : (!A, !A) -> !A
  return %r0, %r1, %r2, %late : !A, !V, !A, !A
}
}
