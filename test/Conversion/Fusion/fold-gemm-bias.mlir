// RUN: pf-opt %s -pf-fuse-bias-relu -pf-fold-gemm-bias | FileCheck %s
// RUN: pf-opt %s -pf-fuse-bias-relu -pf-fold-gemm-bias=relu=true | FileCheck %s --check-prefix=RELU

// A bias_add over the last axis of a GEMM's only use is computed by the
// GEMM. One fused with its relu stays a fused pass on CPU ranks; with
// relu=true (cuBLASLt's RELU_BIAS) the GEMM computes the relu too. A GEMM
// whose result is read twice, and a bias over the first axis, are not
// folded.
// CHECK-LABEL: func.func @train_step
// CHECK: pf.bias_add {{.*}}{pf.fold = "gemm_bias"}
// CHECK: %[[R:.+]] = pf.bias_add %{{.+}}, %{{.+}} :
// CHECK: pf.relu %[[R]] {pf.fold = "bias_relu"}
// CHECK: pf.bias_add %{{.+}}, %{{.+}} :
// CHECK: pf.bias_add %{{.+}}, %{{.+}} {axis = 0 : i64} :
// RELU-LABEL: func.func @train_step
// RELU: pf.bias_add {{.*}}{pf.fold = "gemm_bias"}
// RELU: pf.bias_add {{.*}}{pf.fold = "gemm_bias"}
// RELU: pf.relu {{.*}}{pf.fold = "gemm_bias_relu"}
// RELU: pf.bias_add %{{.+}}, %{{.+}} :
#P = #pf.placement<"cpu", [0]>
!X = !pf.global<4x8xf32, #P, #pf.sbp<[B]>>
!Y = !pf.global<4x4xf32, #P, #pf.sbp<[B]>>
!W = !pf.global<4x8xf32, #P, #pf.sbp<[B]>>
!Bi = !pf.global<4xf32, #P, #pf.sbp<[B]>>
module attributes {pf.world_size = 1 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
    pf.param @w : !W = #pf.init<ones>
    pf.param @b : !Bi = #pf.init<ones>
    func.func @train_step(%x: !X) -> (!Y, !Y, !Y, !Y, !Y) {
      %w = pf.read_param @w : !W
      %b = pf.read_param @b : !Bi
      %m0 = pf.matmul %x, %w {transpose_b} : (!X, !W) -> !Y
      %y0 = pf.bias_add %m0, %b : (!Y, !Bi) -> !Y
      %m1 = pf.matmul %x, %w {transpose_b} : (!X, !W) -> !Y
      %y1 = pf.bias_add %m1, %b : (!Y, !Bi) -> !Y
      %r1 = pf.relu %y1 : (!Y) -> !Y
      %m2 = pf.matmul %x, %w {transpose_b} : (!X, !W) -> !Y
      %y2 = pf.bias_add %m2, %b : (!Y, !Bi) -> !Y
      %m3 = pf.matmul %x, %w {transpose_b} : (!X, !W) -> !Y
      %y3 = pf.bias_add %m3, %b {axis = 0 : i64} : (!Y, !Bi) -> !Y
      return %y0, %r1, %y2, %m2, %y3 : !Y, !Y, !Y, !Y, !Y
    }
  }
}
