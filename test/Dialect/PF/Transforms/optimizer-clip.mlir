// RUN: pf-opt %s -split-input-file -verify-diagnostics -pf-autodiff -pf-optimizer | FileCheck %s

// Gradient clipping by global norm over two pipeline stages (one clip
// group): each stage squares and sums its gradient, the sums meet on the
// first member's placement, pf.clip_scale makes the factor there, and it
// goes back to the other stage, where it scales the gradient before the
// update. The moves between placements are unstaged, in the update phase.
#P0 = #pf.placement<"cpu", [0]>
#P1 = #pf.placement<"cpu", [1]>
!W0 = !pf.global<3x8xf32, #P0, #pf.sbp<[B]>>
!W1 = !pf.global<2x3xf32, #P1, #pf.sbp<[B]>>
pf.param @w0 : !W0 = #pf.init<kaiming_uniform(8)> {pf.optimizer = {clip_max_norm = 5.000000e-01 : f64, clip_group = 1}}
pf.param @w1 : !W1 = #pf.init<kaiming_uniform(3)> {pf.optimizer = {clip_max_norm = 5.000000e-01 : f64, clip_group = 1}}

// CHECK-LABEL: func.func @step
// CHECK: %[[G0:.*]] = pf.read_param @w0.grad {pf.phase = "update", pf.stage = 0 : i64}
// CHECK: %[[Q0:.*]] = pf.mul %[[G0]], %[[G0]] {pf.phase = "update", pf.stage = 0 : i64}
// CHECK: %[[S0:.*]] = pf.reduce_sum %[[Q0]] {axes = array<i64: 0, 1>, pf.phase = "update", pf.stage = 0 : i64} : {{.*}} -> !pf.global<f32, #[[P0:[^,]*]]>
// CHECK: %[[G1:.*]] = pf.read_param @w1.grad {pf.phase = "update", pf.stage = 1 : i64}
// CHECK: %[[Q1:.*]] = pf.mul %[[G1]], %[[G1]] {pf.phase = "update", pf.stage = 1 : i64}
// CHECK: %[[S1:.*]] = pf.reduce_sum %[[Q1]] {{.*}}pf.stage = 1 : i64}
// CHECK: %[[M1:.*]] = pf.to_global %[[S1]] {pf.phase = "update"} : {{.*}} -> !pf.global<f32, #[[P0]], #pf.sbp<[B]>>
// CHECK: %[[T:.*]] = pf.add %[[S0]], %[[M1]] {pf.phase = "update", pf.stage = 0 : i64}
// CHECK: %[[F:.*]] = pf.clip_scale %[[T]] {max_norm = 5.000000e-01 : f64, pf.phase = "update", pf.stage = 0 : i64}
// CHECK: %[[C0:.*]] = pf.scale_by %[[G0]], %[[F]] {pf.phase = "update", pf.stage = 0 : i64}
// CHECK: %[[F1:.*]] = pf.to_global %[[F]] {pf.phase = "update"} : {{.*}} -> !pf.global<f32, #[[P1:[^,]*]], #pf.sbp<[B]>>
// CHECK: %[[C1:.*]] = pf.scale_by %[[G1]], %[[F1]] {pf.phase = "update", pf.stage = 1 : i64}
// CHECK: pf.sgd_update %{{.*}}, %[[C0]], %{{.*}} {pf.phase = "update", pf.stage = 0 : i64}
// CHECK: pf.sgd_update %{{.*}}, %[[C1]], %{{.*}} {pf.phase = "update", pf.stage = 1 : i64}
func.func @step(%x: !pf.global<4x8xf32, #P0, #pf.sbp<[B]>>, %y: !pf.global<4xi64, #P1, #pf.sbp<[B]>>) -> !pf.global<f32, #P1> {
  %w0 = pf.read_param @w0 {pf.stage = 0} : !W0
  %h = pf.matmul %x, %w0 {transpose_b, pf.stage = 0} : (!pf.global<4x8xf32, #P0, #pf.sbp<[B]>>, !W0) -> !pf.global<4x3xf32, #P0>
  %m = pf.to_global %h : !pf.global<4x3xf32, #P0> -> !pf.global<4x3xf32, #P1, #pf.sbp<[B]>>
  %w1 = pf.read_param @w1 {pf.stage = 1} : !W1
  %o = pf.matmul %m, %w1 {transpose_b, pf.stage = 1} : (!pf.global<4x3xf32, #P1, #pf.sbp<[B]>>, !W1) -> !pf.global<4x2xf32, #P1>
  %l = pf.softmax_cross_entropy %o, %y {pf.stage = 1} : (!pf.global<4x2xf32, #P1>, !pf.global<4xi64, #P1, #pf.sbp<[B]>>) -> !pf.global<f32, #P1>
  return %l : !pf.global<f32, #P1>
}

// -----

// One clip group, two max norms: an error at the second parameter.
#P = #pf.placement<"cpu", [0]>
!W = !pf.global<2x2xf32, #P, #pf.sbp<[B]>>
pf.param @a : !W = #pf.init<ones> {pf.optimizer = {clip_max_norm = 1.0 : f64, clip_group = 3}}
// expected-error @+1 {{'pf.param' op pf.optimizer: clip group 3 has max norms 1.000000e+00 and 2.000000e+00}}
pf.param @b : !W = #pf.init<ones> {pf.optimizer = {clip_max_norm = 2.0 : f64, clip_group = 3}}
func.func @step(%x: !W) -> !pf.global<f32, #P> {
  %a = pf.read_param @a : !W
  %b = pf.read_param @b : !W
  %h = pf.matmul %x, %a : (!W, !W) -> !W
  %o = pf.matmul %h, %b : (!W, !W) -> !W
  %y = pf.constant dense<0> : tensor<2xi64> : !pf.global<2xi64, #P, #pf.sbp<[B]>>
  %l = pf.softmax_cross_entropy %o, %y : (!W, !pf.global<2xi64, #P, #pf.sbp<[B]>>) -> !pf.global<f32, #P>
  return %l : !pf.global<f32, #P>
}

// -----

#P = #pf.placement<"cpu", [0]>
!W = !pf.global<2x2xf32, #P, #pf.sbp<[B]>>
// expected-error @+1 {{unknown or ill-typed entry 'clip_max_norm'}}
pf.param @a : !W = #pf.init<ones> {pf.optimizer = {clip_max_norm = -1.0 : f64}}
func.func @step(%x: !W) -> !pf.global<f32, #P> {
  %a = pf.read_param @a : !W
  %o = pf.matmul %x, %a : (!W, !W) -> !W
  %y = pf.constant dense<0> : tensor<2xi64> : !pf.global<2xi64, #P, #pf.sbp<[B]>>
  %l = pf.softmax_cross_entropy %o, %y : (!W, !pf.global<2xi64, #P, #pf.sbp<[B]>>) -> !pf.global<f32, #P>
  return %l : !pf.global<f32, #P>
}
