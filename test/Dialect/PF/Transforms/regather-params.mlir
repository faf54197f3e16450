// pf-regather-params: under ZeRO-3 a parameter's gathered value is read by
// the forward's GEMM and by the backward's input-gradient GEMM; the
// backward gets a gather of its own, tagged with its phase, so the
// forward's gathered weight dies after the forward.
// RUN: pf-opt %s -pf-autodiff -pf-optimizer="momentum=0.9 zero-stage=3 zero-min-size=0" -pf-infer-sbp -pf-insert-boxing -pf-lower-boxing -cse -pf-regather-params | FileCheck %s
// RUN: pf-opt %s -pf-autocast="dtype=bf16" -pf-autodiff -pf-optimizer="momentum=0.9 zero-stage=3 zero-min-size=0" -pf-infer-sbp -pf-insert-boxing -pf-lower-boxing -cse -pf-regather-params | FileCheck %s --check-prefix=AMP
// Without the pass the backward reads the forward's gather.
// RUN: pf-opt %s -pf-autodiff -pf-optimizer="momentum=0.9 zero-stage=3 zero-min-size=0" -pf-infer-sbp -pf-insert-boxing -pf-lower-boxing -cse | FileCheck %s --check-prefix=OFF

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
// CHECK-LABEL: func.func @step
// CHECK: %[[V:.*]] = pf.read_param @v : !pf.global<4x6xf32, #{{.*}}, #pf.sbp<[S(0)]>>
// CHECK-NEXT: %[[FWD:.*]] = pf.all_gather %[[V]] {axis = 0 : i64, groups = {{.*}}} : {{.*}} -> !pf.global<4x6xf32, #{{.*}}, #pf.sbp<[B]>>
// CHECK-NEXT: pf.matmul %{{.*}}, %[[FWD]] {transpose_b}
// CHECK: %[[DY:.*]] = pf.softmax_cross_entropy_grad
// CHECK-NEXT: %[[BWD:.*]] = pf.all_gather %[[V]] {axis = 0 : i64, groups = {{.*}}, pf.phase = "backward_input"} : {{.*}} -> !pf.global<4x6xf32, #{{.*}}, #pf.sbp<[B]>>
// CHECK-NEXT: pf.matmul %[[DY]], %[[BWD]] {pf.phase = "backward_input"}
// @w's input gradient is not asked for (x is an input): its forward
// gather is its only one.
// CHECK-NOT: pf.all_gather %[[V]]
// CHECK-NOT: pf.all_gather %{{.*}} : !pf.global<6x8xf32

// OFF-LABEL: func.func @step
// OFF: %[[V:.*]] = pf.read_param @v : !pf.global<4x6xf32
// OFF-NEXT: %[[FWD:.*]] = pf.all_gather %[[V]]
// OFF: %[[DY:.*]] = pf.softmax_cross_entropy_grad
// OFF-NEXT: pf.matmul %[[DY]], %[[FWD]] {pf.phase = "backward_input"}
// OFF-NOT: pf.all_gather %[[V]]

// Mixed precision: the float32 shard is cast to bf16 first and the bf16
// copy gathered (half the bytes), in the forward and again in the backward.
// AMP-LABEL: func.func @step
// AMP: %[[V:.*]] = pf.read_param @v : !pf.global<4x6xf32
// AMP-NEXT: %[[C:.*]] = pf.cast %[[V]] : !pf.global<4x6xf32, #{{.*}}, #pf.sbp<[S(0)]>> -> !pf.global<4x6xbf16, #{{.*}}, #pf.sbp<[S(0)]>>
// AMP-NEXT: %[[FWD:.*]] = pf.all_gather %[[C]] {{.*}} : !pf.global<4x6xbf16, #{{.*}}, #pf.sbp<[S(0)]>> -> !pf.global<4x6xbf16, #{{.*}}, #pf.sbp<[B]>>
// AMP-NEXT: pf.matmul %{{.*}}, %[[FWD]] {transpose_b}
// AMP: %[[C2:.*]] = pf.cast %[[V]] {pf.phase = "backward_input"} : {{.*}} -> !pf.global<4x6xbf16
// AMP-NEXT: %[[BWD:.*]] = pf.all_gather %[[C2]] {{.*}}pf.phase = "backward_input"{{.*}} -> !pf.global<4x6xbf16, #{{.*}}, #pf.sbp<[B]>>
// AMP-NEXT: pf.matmul %{{.*}}, %[[BWD]] {pf.phase = "backward_input"}
