// RUN: pf-opt %s -pf-cpu-folds -convert-pf-to-cpu=outline-actions=false | FileCheck %s

// A bias_add over the last axis of a GEMM's only use is the GEMM's: it
// starts from the bias rows (pfrt_k_matmul_bias) and the bias_add is free,
// even when the bias is read after the GEMM (as traced Linears read it; the
// read moves before the GEMM). Not folded: a GEMM read twice, a bias_add
// feeding only a relu (fused with it instead), a bias over another axis,
// and a read after a write of the same parameter.
// CHECK-LABEL: llvm.func @pf_step
// CHECK: llvm.call @pfrt_k_matmul_bias(
// CHECK-NOT: llvm.call @pfrt_k_bias_add(
// CHECK: llvm.call @pfrt_k_matmul(
// CHECK: llvm.call @pfrt_k_bias_add(
// CHECK: llvm.call @pfrt_k_matmul(
// CHECK: llvm.call @pfrt_k_bias_add_relu(
// CHECK: llvm.call @pfrt_k_matmul(
// CHECK: llvm.call @pfrt_k_bias_add(
// CHECK: llvm.call @pfrt_k_matmul(
// CHECK: llvm.call @pfrt_k_bias_add(
// CHECK-NOT: llvm.call @pfrt_k_matmul_bias(
#P = #pf.placement<"cpu", [0]>
!X = !pf.global<4x8xf32, #P, #pf.sbp<[B]>>
!W = !pf.global<6x8xf32, #P, #pf.sbp<[B]>>
!Y = !pf.global<4x6xf32, #P, #pf.sbp<[B]>>
!Bi = !pf.global<6xf32, #P, #pf.sbp<[B]>>
!B4 = !pf.global<4xf32, #P, #pf.sbp<[B]>>
module attributes {pf.world_size = 1 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
    pf.param @w : !W = #pf.init<ones>
    pf.param @b : !Bi = #pf.init<ones>
    pf.param @c : !Bi = #pf.init<ones>
    pf.param @r : !B4 = #pf.init<ones>
    func.func @train_step(%x: !X) -> (!Y, !Y, !Y, !Y, !Y, !Y) {
      %w = pf.read_param @w : !W
      // Folded: the bias is read between the GEMM and its bias_add.
      %m0 = pf.matmul %x, %w {transpose_b} : (!X, !W) -> !Y
      %b = pf.read_param @b : !Bi
      %y0 = pf.bias_add %m0, %b {axis = 1} : (!Y, !Bi) -> !Y
      // Not folded: the product is read twice.
      %m1 = pf.matmul %x, %w {transpose_b} : (!X, !W) -> !Y
      %y1 = pf.bias_add %m1, %b {axis = 1} : (!Y, !Bi) -> !Y
      // Not folded: the relu takes the bias_add's pass.
      %m2 = pf.matmul %x, %w {transpose_b} : (!X, !W) -> !Y
      %s2 = pf.bias_add %m2, %b {axis = 1} : (!Y, !Bi) -> !Y
      %y2 = pf.relu %s2 : (!Y) -> !Y
      // Not folded: the bias runs along the rows.
      %m3 = pf.matmul %x, %w {transpose_b} : (!X, !W) -> !Y
      %r = pf.read_param @r : !B4
      %y3 = pf.bias_add %m3, %r {axis = 0} : (!Y, !B4) -> !Y
      // Not folded: @c is written between the GEMM and the read, which
      // must see the new value.
      %m4 = pf.matmul %x, %w {transpose_b} : (!X, !W) -> !Y
      %c0 = pf.read_param @c : !Bi
      %c1 = pf.mul_scalar %c0 {scalar = 0.5 : f64} : (!Bi) -> !Bi
      pf.write_param %c1 to @c : !Bi
      %c = pf.read_param @c : !Bi
      %y4 = pf.bias_add %m4, %c {axis = 1} : (!Y, !Bi) -> !Y
      return %y0, %m1, %y1, %y2, %y3, %y4 : !Y, !Y, !Y, !Y, !Y, !Y
    }
  }
}
