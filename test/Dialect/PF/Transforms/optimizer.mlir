// RUN: pf-opt %s -pf-autodiff -pf-optimizer | FileCheck %s --check-prefix=SGD
// RUN: pf-opt %s -pf-autodiff -pf-optimizer="momentum=0.9 dampening=0.1 weight-decay=0.01" | FileCheck %s --check-prefix=MOM
// RUN: pf-opt %s -pf-autodiff -pf-optimizer="momentum=0.9 nesterov=true" | FileCheck %s --check-prefix=NES
// RUN: pf-opt %s -pf-autodiff -pf-optimizer="kind=adam beta1=0.8 beta2=0.99 eps=1e-6" | FileCheck %s --check-prefix=ADAM
// RUN: pf-opt %s -pf-autodiff -pf-optimizer="kind=adamw bias-correction=false" | FileCheck %s --check-prefix=ADAMW
// RUN: pf-opt %s -pf-autodiff -pf-optimizer="kind=adam" | pf-opt | FileCheck %s --check-prefix=ROUND

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

// Without momentum: p -= lr * g on each parameter's stage and placement,
// then the gradient buffer is cleared. lr is a run-time scalar on each
// placement.
// SGD-NOT: momentum_buffer
// SGD-LABEL: func.func @step
// SGD: pf.write_param %{{.*}} to @w0.grad {pf.phase = "backward_weight", pf.stage = 0 : i64}
// SGD: %[[W0:.*]] = pf.read_param @w0 {pf.phase = "update", pf.stage = 0 : i64} : !pf.global<3x8xf32, #[[P0:.*]], #pf.sbp<[B]>>
// SGD: %[[G0:.*]] = pf.read_param @w0.grad {pf.phase = "update", pf.stage = 0 : i64} : !pf.global<3x8xf32, #[[P0]]>
// SGD: %[[LR0:.*]] = pf.scalar_input "lr" {pf.phase = "update", pf.stage = 0 : i64} : !pf.global<f32, #[[P0]], #pf.sbp<[B]>>
// SGD: %[[N0:.*]] = pf.sgd_update %[[W0]], %[[G0]], %[[LR0]] {pf.phase = "update", pf.stage = 0 : i64} :
// SGD: pf.write_param %[[N0]] to @w0 {pf.phase = "update", pf.stage = 0 : i64}
// SGD: %[[Z0:.*]] = pf.constant dense<0.000000e+00> : tensor<3x8xf32> {pf.phase = "update", pf.stage = 0 : i64}
// SGD: pf.write_param %[[Z0]] to @w0.grad
// SGD: %[[W1:.*]] = pf.read_param @w1 {pf.phase = "update", pf.stage = 1 : i64} : !pf.global<2x3xf32, #[[P1:.*]], #pf.sbp<[B]>>
// SGD: %[[G1:.*]] = pf.read_param @w1.grad
// SGD: %[[LR1:.*]] = pf.scalar_input "lr" {pf.phase = "update", pf.stage = 1 : i64} : !pf.global<f32, #[[P1]], #pf.sbp<[B]>>
// SGD: %[[N1:.*]] = pf.sgd_update %[[W1]], %[[G1]], %[[LR1]]
// SGD: pf.write_param %[[N1]] to @w1 {pf.phase = "update", pf.stage = 1 : i64}
// SGD: return

// MOM: pf.param @w0.momentum_buffer : !pf.global<3x8xf32, #{{.*}}, #pf.sbp<[B]>> = #pf.init<zeros> buffer
// MOM-LABEL: func.func @step
// MOM: %[[W:.*]] = pf.read_param @w0 {pf.phase = "update"
// MOM: %[[G:.*]] = pf.read_param @w0.grad
// MOM: %[[LR:.*]] = pf.scalar_input "lr"
// MOM: %[[B:.*]] = pf.read_param @w0.momentum_buffer
// MOM: %[[T:.*]] = pf.scalar_input "step"
// MOM: %[[NW:.*]], %[[NB:.*]] = pf.sgd_update %[[W]], %[[G]], %[[LR]] momentum_state(%[[B]], %[[T]]) {dampening = 1.000000e-01 : f64, momentum = 9.000000e-01 : f64, pf.phase = "update", pf.stage = 0 : i64, weight_decay = 1.000000e-02 : f64}
// MOM: pf.write_param %[[NW]] to @w0
// MOM: pf.write_param %[[NB]] to @w0.momentum_buffer

// NES: pf.sgd_update {{.*}} momentum_state({{.*}}) {momentum = 9.000000e-01 : f64, nesterov,

// ADAM: pf.param @w0.exp_avg_sq : {{.*}} = #pf.init<zeros> buffer
// ADAM: pf.param @w0.exp_avg : {{.*}} = #pf.init<zeros> buffer
// ADAM-LABEL: func.func @step
// ADAM: %[[W:.*]] = pf.read_param @w0 {pf.phase = "update"
// ADAM: %[[G:.*]] = pf.read_param @w0.grad
// ADAM: %[[LR:.*]] = pf.scalar_input "lr"
// ADAM: %[[T:.*]] = pf.scalar_input "step"
// ADAM: %[[M:.*]] = pf.read_param @w0.exp_avg
// ADAM: %[[V:.*]] = pf.read_param @w0.exp_avg_sq
// ADAM: %[[NW:.*]], %[[NM:.*]], %[[NV:.*]] = pf.adam_update %[[W]], %[[G]], %[[M]], %[[V]], %[[LR]], %[[T]] {beta1 = 8.000000e-01 : f64, beta2 = {{.*}} : f64, epsilon = {{.*}} : f64, pf.phase = "update", pf.stage = 0 : i64}
// ADAM: pf.write_param %[[NW]] to @w0
// ADAM: pf.write_param %[[NM]] to @w0.exp_avg
// ADAM: pf.write_param %[[NV]] to @w0.exp_avg_sq

// AdamW: decoupled weight decay, 0.01 by default (as torch.optim.AdamW).
// ADAMW: pf.adam_update {{.*}} {bias_correction = false, decoupled, pf.phase = "update", pf.stage = 0 : i64, weight_decay = 1.000000e-02 : f64}

// ROUND: pf.adam_update
