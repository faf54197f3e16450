// Under mixed precision the bf16 weight gradient of a data-parallel GEMM
// (a partial sum) is cast to f32 and accumulated as a partial sum (a
// widening cast passes it: infer-sbp-widening-cast.mlir): the reduction
// waits for the update (one f32 all-reduce a step, after every
// micro-batch), not one on each micro-batch's gradient before its cast.
// RUN: pf-opt %s -pf-autocast="dtype=bf16" -pf-autodiff -pf-optimizer -pf-infer-sbp -pf-insert-boxing | FileCheck %s

#DP = #pf.placement<"cpu", [0, 1]>
!W = !pf.global<6x8xf32, #DP, #pf.sbp<[B]>>
pf.param @w : !W = #pf.init<kaiming_uniform(8)>
// CHECK-LABEL: func.func @step
// CHECK: pf.cast %{{.*}} {pf.phase = "backward_weight"} : !pf.global<6x8xbf16, #{{.*}}, #pf.sbp<[P]>> -> !pf.global<6x8xf32, #{{.*}}, #pf.sbp<[P]>>
// CHECK: pf.write_param %{{.*}} to @w.grad {pf.phase = "backward_weight"} : !pf.global<6x8xf32, #{{.*}}, #pf.sbp<[P]>>
// CHECK: pf.read_param @w.grad {pf.phase = "update"} : !pf.global<6x8xf32, #{{.*}}, #pf.sbp<[P]>>
// CHECK-NOT: pf.to_global
// CHECK: pf.to_global %{{.*}} {pf.phase = "update"} : !pf.global<6x8xf32, #{{.*}}, #pf.sbp<[P]>> -> !pf.global<6x8xf32, #{{.*}}, #pf.sbp<[B]>>
func.func @step(%x: !pf.global<64x8xf32, #DP, #pf.sbp<[S(0)]>>, %y: !pf.global<64xi64, #DP, #pf.sbp<[S(0)]>>) -> !pf.global<f32, #DP> {
  %w = pf.read_param @w : !W
  %h = pf.matmul %x, %w {transpose_b} : (!pf.global<64x8xf32, #DP, #pf.sbp<[S(0)]>>, !W) -> !pf.global<64x6xf32, #DP>
  %l = pf.softmax_cross_entropy %h, %y : (!pf.global<64x6xf32, #DP>, !pf.global<64xi64, #DP, #pf.sbp<[S(0)]>>) -> !pf.global<f32, #DP>
  return %l : !pf.global<f32, #DP>
}
