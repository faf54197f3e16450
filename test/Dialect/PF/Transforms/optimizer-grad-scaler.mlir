// RUN: pf-opt %s -pf-autodiff="loss-scale=loss_scale" -pf-optimizer="kind=adam grad-scaler=dynamic" | FileCheck %s

// Loss scaling (flow.amp.GradScaler) over two pipeline stages: the loss
// gradient's seed times the run-time scalar loss_scale; each gradient times
// inv_loss_scale before the update; the found-inf flag is the sum of every
// gradient's reduce_sum(g * 0), added on the first placement (one
// reduction) and written to pf.found_inf; every write of the update (the
// parameter and both Adam states) is guarded by pf.where(flag != flag,
// old, new), the flag moved to the other stage once.
// CHECK: pf.param @pf.found_inf : !pf.global<f32, #[[P0:[^,]*]], #pf.sbp<[B]>> = #pf.init<zeros> buffer
// CHECK-LABEL: func.func @step
// CHECK: %[[ONE:.*]] = pf.constant dense<1.000000e+00> {{.*}}pf.phase = "backward_input"
// CHECK: %[[LS:.*]] = pf.scalar_input "loss_scale" {pf.phase = "backward_input", pf.stage = 1 : i64}
// CHECK: pf.scale_by %[[ONE]], %[[LS]] {pf.phase = "backward_input", pf.stage = 1 : i64}
// CHECK: %[[G0:.*]] = pf.read_param @w0.grad {pf.phase = "update", pf.stage = 0 : i64}
// CHECK: %[[I0:.*]] = pf.scalar_input "inv_loss_scale" {pf.phase = "update", pf.stage = 0 : i64}
// CHECK: %[[U0:.*]] = pf.scale_by %[[G0]], %[[I0]]
// CHECK: %[[Z0:.*]] = pf.mul_scalar %[[U0]] {{.*}}scalar = 0.000000e+00 : f64}
// CHECK: %[[S0:.*]] = pf.reduce_sum %[[Z0]] {axes = array<i64: 0, 1>
// CHECK: %[[G1:.*]] = pf.read_param @w1.grad {pf.phase = "update", pf.stage = 1 : i64}
// CHECK: %[[I1:.*]] = pf.scalar_input "inv_loss_scale" {pf.phase = "update", pf.stage = 1 : i64}
// CHECK: %[[U1:.*]] = pf.scale_by %[[G1]], %[[I1]]
// CHECK: %[[Z1:.*]] = pf.mul_scalar %[[U1]]
// CHECK: %[[S1:.*]] = pf.reduce_sum %[[Z1]]
// CHECK: %[[M1:.*]] = pf.to_global %[[S1]] {pf.phase = "update"} : {{.*}} -> !pf.global<f32, #[[P0]], #pf.sbp<[B]>>
// CHECK: %[[FLAG:.*]] = pf.add %[[S0]], %[[M1]]
// CHECK-NOT: pf.reduce_sum
// CHECK: pf.write_param %[[FLAG]] to @pf.found_inf
// CHECK: %[[W0:.*]] = pf.read_param @w0 {pf.phase = "update"
// CHECK: %[[MA:.*]] = pf.read_param @w0.exp_avg {
// CHECK: %[[VA:.*]] = pf.read_param @w0.exp_avg_sq {
// CHECK: %[[NP:.*]], %[[NM:.*]], %[[NV:.*]] = pf.adam_update %[[W0]], %[[U0]], %[[MA]], %[[VA]]
// CHECK: %[[SKIP:.*]] = pf.compare %[[FLAG]], %[[FLAG]] {{.*}}predicate = "ne"
// CHECK: %[[B0:.*]] = pf.broadcast_to %[[SKIP]] {{.*}}shape = array<i64: 3, 8>
// CHECK: %[[K0:.*]] = pf.where %[[B0]], %[[W0]], %[[NP]]
// CHECK: pf.write_param %[[K0]] to @w0 {
// CHECK: pf.where %{{.*}}, %[[MA]], %[[NM]]
// CHECK: pf.write_param %{{.*}} to @w0.exp_avg {
// CHECK: pf.where %{{.*}}, %[[VA]], %[[NV]]
// CHECK: pf.write_param %{{.*}} to @w0.exp_avg_sq {
// CHECK: pf.adam_update %{{.*}}, %[[U1]],
// CHECK: %[[F1:.*]] = pf.to_global %[[FLAG]] {pf.phase = "update"}
// CHECK: pf.compare %[[F1]], %[[F1]] {{.*}}predicate = "ne"
// CHECK: pf.where
// CHECK: pf.write_param %{{.*}} to @w1 {
// CHECK-NOT: pf.compare
#P0 = #pf.placement<"cpu", [0]>
#P1 = #pf.placement<"cpu", [1]>
!W0 = !pf.global<3x8xf32, #P0, #pf.sbp<[B]>>
!W1 = !pf.global<2x3xf32, #P1, #pf.sbp<[B]>>
pf.param @w0 : !W0 = #pf.init<kaiming_uniform(8)>
pf.param @w1 : !W1 = #pf.init<kaiming_uniform(3)>
func.func @step(%x: !pf.global<4x8xf32, #P0, #pf.sbp<[B]>>, %y: !pf.global<4xi64, #P1, #pf.sbp<[B]>>) -> !pf.global<f32, #P1> {
  %w0 = pf.read_param @w0 {pf.stage = 0} : !W0
  %h = pf.matmul %x, %w0 {transpose_b, pf.stage = 0} : (!pf.global<4x8xf32, #P0, #pf.sbp<[B]>>, !W0) -> !pf.global<4x3xf32, #P0>
  %m = pf.to_global %h : !pf.global<4x3xf32, #P0> -> !pf.global<4x3xf32, #P1, #pf.sbp<[B]>>
  %w1 = pf.read_param @w1 {pf.stage = 1} : !W1
  %o = pf.matmul %m, %w1 {transpose_b, pf.stage = 1} : (!pf.global<4x3xf32, #P1, #pf.sbp<[B]>>, !W1) -> !pf.global<4x2xf32, #P1>
  %l = pf.softmax_cross_entropy %o, %y {pf.stage = 1} : (!pf.global<4x2xf32, #P1>, !pf.global<4xi64, #P1, #pf.sbp<[B]>>) -> !pf.global<f32, #P1>
  return %l : !pf.global<f32, #P1>
}
