// RUN: pf-opt %s -split-input-file -pf-fold-accumulation | FileCheck %s

// add(g0, matmul): the second GEMM accumulates into g0's buffer; the
// product's operand number is recorded.
// CHECK-LABEL: func.func @sum
// CHECK: pf.matmul
// CHECK: %[[G1:.+]] = pf.matmul
// CHECK: pf.add %{{.+}}, %[[G1]] {pf.fold = "gemm_accumulate", pf.fold_operand = 1 : i64}
#P = #pf.placement<"cpu", [0]>
!A = !pf.global<4x8xf32, #P, #pf.sbp<[B]>>
!W = !pf.global<8x8xf32, #P, #pf.sbp<[B]>>
module attributes {pf.world_size = 1 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
    pf.param @x : !A = #pf.init<ones>
    func.func @sum(%y: !A) -> !W {
      %x = pf.read_param @x : !A
      %g0 = pf.matmul %x, %y {transpose_a} : (!A, !A) -> !W
      %g1 = pf.matmul %y, %x {transpose_a} : (!A, !A) -> !W
      %s = pf.add %g0, %g1 : (!W, !W) -> !W
      return %s : !W
    }
  }
}

// -----

// Not folded: the accumulator is read by another op too, and the other
// accumulator is a parameter's buffer (not a fresh step buffer).
// CHECK-LABEL: func.func @shared
// CHECK-NOT: pf.fold
#P = #pf.placement<"cpu", [0]>
!A = !pf.global<4x8xf32, #P, #pf.sbp<[B]>>
!W = !pf.global<8x8xf32, #P, #pf.sbp<[B]>>
module attributes {pf.world_size = 1 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
    pf.param @x : !A = #pf.init<ones>
    pf.param @w : !W = #pf.init<ones>
    func.func @shared(%y: !A) -> (!W, !W, !W) {
      %x = pf.read_param @x : !A
      %g0 = pf.matmul %x, %y {transpose_a} : (!A, !A) -> !W
      %g1 = pf.matmul %y, %x {transpose_a} : (!A, !A) -> !W
      %s = pf.add %g0, %g1 : (!W, !W) -> !W
      %w = pf.read_param @w : !W
      %g2 = pf.matmul %y, %y {transpose_a} : (!A, !A) -> !W
      %t = pf.add %w, %g2 : (!W, !W) -> !W
      return %s, %g0, %t : !W, !W, !W
    }
  }
}
