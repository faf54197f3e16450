// pf-early-gradient-shards: under ZeRO-2 autodiff accumulates both
// gradients into their sharded buffers after the whole backward (both
// whole gradients alive at once); the pass moves each buffer's read,
// reduce-scatter, add and write (and the GEMM only it needs) to just after
// the last value they take from elsewhere, so each whole gradient dies as
// soon as its shard is taken.
// RUN: pf-opt %s -pf-autodiff -pf-optimizer="momentum=0.9 zero-stage=2 zero-min-size=0" -pf-infer-sbp -pf-insert-boxing -pf-lower-boxing -cse -pf-early-gradient-shards | FileCheck %s
// RUN: pf-opt %s -pf-autodiff -pf-optimizer="momentum=0.9 zero-stage=2 zero-min-size=0" -pf-infer-sbp -pf-insert-boxing -pf-lower-boxing -cse | FileCheck %s --check-prefix=OFF

#DP = #pf.placement<"cpu", [0, 1]>
!W = !pf.global<6x8xf32, #DP, #pf.sbp<[B]>>
!V = !pf.global<4x6xf32, #DP, #pf.sbp<[B]>>
pf.param @w : !W = #pf.init<kaiming_uniform(8)>
pf.param @v : !V = #pf.init<kaiming_uniform(6)>

func.func @step(%x: !pf.global<64x8xf32, #DP, #pf.sbp<[S(0)]>>, %y: !pf.global<64xi64, #DP, #pf.sbp<[S(0)]>>) -> !pf.global<f32, #DP> {
  %w = pf.read_param @w : !W
  %h = pf.matmul %x, %w {transpose_b} : (!pf.global<64x8xf32, #DP, #pf.sbp<[S(0)]>>, !W) -> !pf.global<64x6xf32, #DP>
  %v = pf.read_param @v : !V
  %o = pf.matmul %h, %v {transpose_b} : (!pf.global<64x6xf32, #DP>, !V) -> !pf.global<64x4xf32, #DP>
  %l = pf.softmax_cross_entropy %o, %y : (!pf.global<64x4xf32, #DP>, !pf.global<64xi64, #DP, #pf.sbp<[S(0)]>>) -> !pf.global<f32, #DP>
  return %l : !pf.global<f32, #DP>
}
// Each weight gradient's GEMM is followed by its reduce-scatter into the
// buffer before the next gradient's GEMM.
// CHECK-LABEL: func.func @step
// CHECK: %[[GW:.*]] = pf.matmul {{.*}}pf.phase = "backward_weight"{{.*}} -> !pf.global<6x8xf32, #{{.*}}, #pf.sbp<[P]>>
// CHECK-NEXT: pf.read_param @w.grad
// CHECK-NEXT: pf.reduce_scatter %[[GW]]
// CHECK-NEXT: pf.add
// CHECK-NEXT: pf.write_param %{{.*}} to @w.grad
// CHECK-NEXT: %[[GV:.*]] = pf.matmul {{.*}}pf.phase = "backward_weight"{{.*}} -> !pf.global<4x6xf32, #{{.*}}, #pf.sbp<[P]>>
// CHECK-NEXT: pf.read_param @v.grad
// CHECK-NEXT: pf.reduce_scatter %[[GV]]
// CHECK-NEXT: pf.add
// CHECK-NEXT: pf.write_param %{{.*}} to @v.grad

// Without it both whole gradients are made before either is reduced.
// OFF-LABEL: func.func @step
// OFF: pf.matmul {{.*}}pf.phase = "backward_weight"{{.*}} -> !pf.global<4x6xf32
// OFF-NEXT: pf.matmul {{.*}}pf.phase = "backward_weight"{{.*}} -> !pf.global<6x8xf32
// OFF: pf.reduce_scatter
