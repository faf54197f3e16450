// RUN: pf-opt %s -pf-hoist-bias-reads | FileCheck %s

// A Linear's bias read between its GEMM and its bias_add moves before the
// GEMM (so the GEMM can start from the bias rows); a read with a write of
// the parameter in between stays.
// CHECK-LABEL: func.func @train_step
// CHECK: pf.read_param @b
// CHECK-NEXT: pf.matmul
// CHECK-NEXT: pf.bias_add
// CHECK: pf.matmul
// CHECK-NEXT: pf.write_param
// CHECK-NEXT: pf.read_param @c
// CHECK-NEXT: pf.bias_add
#P = #pf.placement<"cpu", [0]>
!X = !pf.global<4x4xf32, #P, #pf.sbp<[B]>>
!Bi = !pf.global<4xf32, #P, #pf.sbp<[B]>>
module attributes {pf.world_size = 1 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
    pf.param @b : !Bi = #pf.init<ones>
    pf.param @c : !Bi = #pf.init<ones>
    func.func @train_step(%x: !X, %nc: !Bi) -> (!X, !X) {
      %m = pf.matmul %x, %x : (!X, !X) -> !X
      %b = pf.read_param @b : !Bi
      %y = pf.bias_add %m, %b : (!X, !Bi) -> !X
      %m2 = pf.matmul %x, %x : (!X, !X) -> !X
      pf.write_param %nc to @c : !Bi
      %c = pf.read_param @c : !Bi
      %y2 = pf.bias_add %m2, %c : (!X, !Bi) -> !X
      return %y, %y2 : !X, !X
    }
  }
}
