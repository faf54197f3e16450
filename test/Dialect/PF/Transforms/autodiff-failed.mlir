// RUN: pf-opt %s -split-input-file -pf-autodiff -verify-diagnostics
// RUN: not pf-opt %s -split-input-file -pf-autodiff="accumulation-steps=0" 2>&1 | FileCheck %s --check-prefix=STEPS

// STEPS: error: pf-autodiff: accumulation-steps must be >= 1, got 0

#P = #pf.placement<"cpu", [0]>
func.func @not_scalar(%x: !pf.global<4xf32, #P, #pf.sbp<[B]>>) -> !pf.global<4xf32, #P> {
  %r = pf.relu %x : (!pf.global<4xf32, #P, #pf.sbp<[B]>>) -> !pf.global<4xf32, #P>
  // expected-error @+1 {{'func.return' op the loss (first result) must be a scalar float global tensor, got '!pf.global<4xf32, #pf.placement<"cpu", [0]>>'}}
  return %r : !pf.global<4xf32, #P>
}

// -----

#P = #pf.placement<"cpu", [0]>
func.func @integer_loss(%x: !pf.global<i64, #P, #pf.sbp<[B]>>) -> !pf.global<i64, #P, #pf.sbp<[B]>> {
  // expected-error @+1 {{the loss (first result) must be a scalar float global tensor}}
  return %x : !pf.global<i64, #P, #pf.sbp<[B]>>
}

// -----

#P = #pf.placement<"cpu", [0]>
!T = !pf.global<4x3xf32, #P, #pf.sbp<[B]>>
!Y = !pf.global<4xi64, #P, #pf.sbp<[B]>>
pf.param @unused : !T = #pf.init<zeros>
pf.param @used : !T = #pf.init<zeros>
func.func @unreached(%y: !Y) -> !pf.global<f32, #P> {
  // expected-warning @+1 {{parameter @unused does not reach the loss; it gets no gradient}}
  %u = pf.read_param @unused : !T
  %w = pf.read_param @used : !T
  %l = pf.softmax_cross_entropy %w, %y : (!T, !Y) -> !pf.global<f32, #P>
  return %l : !pf.global<f32, #P>
}

// -----

#P = #pf.placement<"cpu", [0]>
!T = !pf.global<4x3xf32, #P, #pf.sbp<[B]>>
!Y = !pf.global<4xi64, #P, #pf.sbp<[B]>>
pf.param @w : !T = #pf.init<zeros>
func.func @no_rule(%y: !Y) -> !pf.global<f32, #P> {
  %w = pf.read_param @w : !T
  // expected-error @+1 {{'pf.relu_grad' op has no gradient rule; pf-autodiff cannot differentiate through it}}
  %g = pf.relu_grad %w, %w : (!T, !T) -> !T
  %c = pf.softmax_cross_entropy %g, %y : (!T, !Y) -> !pf.global<f32, #P>
  return %c : !pf.global<f32, #P>
}

// -----

#P = #pf.placement<"cpu", [0]>
!T = !pf.global<4x3xf32, #P, #pf.sbp<[B]>>
!Y = !pf.global<4xi64, #P, #pf.sbp<[B]>>
pf.param @w : !T = #pf.init<zeros>
func.func @local_round_trip(%y: !Y) -> !pf.global<f32, #P> {
  %w = pf.read_param @w : !T
  %l = pf.to_local %w : !T -> tensor<4x3xf32>
  // expected-error @+1 {{'pf.to_global' op has no gradient rule for a local input: the gradient of a local tensor is not defined}}
  %g = pf.to_global %l : tensor<4x3xf32> -> !T
  %c = pf.softmax_cross_entropy %g, %y : (!T, !Y) -> !pf.global<f32, #P>
  return %c : !pf.global<f32, #P>
}

// -----

// Eval-mode batch norm normalises with the running statistics; it has no
// gradient rule, so a training step through it is an error at the op.
#P = #pf.placement<"cpu", [0]>
!X = !pf.global<4x3xf32, #P, #pf.sbp<[B]>>
!C = !pf.global<3xf32, #P, #pf.sbp<[B]>>
pf.param @gamma : !C = #pf.init<ones>
pf.param @mean : !C = #pf.init<zeros> buffer
pf.param @var : !C = #pf.init<ones> buffer
func.func @eval_batch_norm(%x: !X, %y: !pf.global<4xi64, #P, #pf.sbp<[B]>>) -> !pf.global<f32, #P> {
  %g = pf.read_param @gamma : !C
  %m = pf.read_param @mean : !C
  %v = pf.read_param @var : !C
  // expected-error @+1 {{'pf.batch_norm' op eval-mode batch norm (inference) has no gradient rule}}
  %n, %nm, %nv = pf.batch_norm %x, %g, %g, %m, %v {inference} : (!X, !C, !C, !C, !C) -> (!X, !C, !C)
  %l = pf.softmax_cross_entropy %n, %y : (!X, !pf.global<4xi64, #P, #pf.sbp<[B]>>) -> !pf.global<f32, #P>
  return %l : !pf.global<f32, #P>
}
