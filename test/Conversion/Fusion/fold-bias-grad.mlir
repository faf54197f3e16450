// RUN: pf-opt %s -split-input-file -pf-fold-bias-grad | FileCheck %s

// db = reduce_sum(dz, rows) and dW = dz^T x of one action are one BGRADB
// GEMM (run at the later of the two): both carry one pair id.
// CHECK-LABEL: func.func @pair
// CHECK: pf.reduce_sum {{.*}}pf.bias_grad_pair = 0 : i64
// CHECK: pf.matmul %arg1, %arg0 {pf.bias_grad_pair = 0 : i64, pf.phase = "backward_weight", transpose_a}
#P = #pf.placement<"cpu", [0]>
!A = !pf.global<4x4xf32, #P, #pf.sbp<[B]>>
!V = !pf.global<4xf32, #P, #pf.sbp<[B]>>
module @rank0 attributes {pf.rank = 0 : i64} {
func.func @pair(%x: !A, %dz: !A) -> (!V, !A) {
  %db = pf.reduce_sum %dz {axes = array<i64: 0>, pf.phase = "backward_weight"} : (!A) -> !V
  %dw = pf.matmul %dz, %x {pf.phase = "backward_weight", transpose_a} : (!A, !A) -> !A
  return %db, %dw : !V, !A
}
}

// -----

// Not paired: the GEMM is not dz^T x; db is read before the GEMM that would
// compute it; the two are of different actions.
// CHECK-LABEL: func.func @unpaired
// CHECK-NOT: pf.bias_grad_pair
#P = #pf.placement<"cpu", [0]>
!A = !pf.global<4x4xf32, #P, #pf.sbp<[B]>>
!V = !pf.global<4xf32, #P, #pf.sbp<[B]>>
module @rank0 attributes {pf.rank = 0 : i64} {
func.func @unpaired(%x: !A, %dz: !A, %dz2: !A, %dz3: !A) -> (!V, !A, !V, !A, !V, !A) {
  %db = pf.reduce_sum %dz {axes = array<i64: 0>, pf.phase = "backward_weight"} : (!A) -> !V
  %dx = pf.matmul %dz, %x {pf.phase = "backward_weight"} : (!A, !A) -> !A
  %db2 = pf.reduce_sum %dz2 {axes = array<i64: 0>, pf.phase = "backward_weight"} : (!A) -> !V
  %early = pf.relu %db2 {pf.phase = "backward_weight"} : (!V) -> !V
  %dw2 = pf.matmul %dz2, %x {pf.phase = "backward_weight", transpose_a} : (!A, !A) -> !A
  %db3 = pf.reduce_sum %dz3 {axes = array<i64: 0>, pf.phase = "backward_weight"} : (!A) -> !V
  %dw3 = pf.matmul %dz3, %x {pf.phase = "update", transpose_a} : (!A, !A) -> !A
  return %db, %dx, %early, %dw2, %db3, %dw3 : !V, !A, !V, !A, !V, !A
}
}
