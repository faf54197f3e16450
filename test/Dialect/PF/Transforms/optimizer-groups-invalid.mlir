// RUN: pf-opt %s -split-input-file -pf-optimizer -verify-diagnostics

// A parameter's own rule is checked like the pipeline's.
#P = #pf.placement<"cpu", [0]>
!W = !pf.global<4x3xf32, #P, #pf.sbp<[B]>>
// expected-error @+1 {{pf-optimizer (pf.optimizer): kind must be sgd, adam or adamw, got 'lamb'}}
pf.param @w : !W = #pf.init<ones> {pf.optimizer = {kind = "lamb"}}
pf.param @w.grad : !W = #pf.init<zeros> buffer {pf.grad_of = @w}
func.func @step(%g: !W) {
  %r = pf.read_param @w.grad : !W
  %a = pf.add %r, %g : (!W, !W) -> !W
  pf.write_param %a to @w.grad : !W
  return
}

// -----

#P = #pf.placement<"cpu", [0]>
!W = !pf.global<4x3xf32, #P, #pf.sbp<[B]>>
// expected-error @+1 {{pf.optimizer: unknown or ill-typed entry 'learning_rate'}}
pf.param @w : !W = #pf.init<ones> {pf.optimizer = {learning_rate = 0.1 : f64}}
pf.param @w.grad : !W = #pf.init<zeros> buffer {pf.grad_of = @w}
func.func @step(%g: !W) {
  %r = pf.read_param @w.grad : !W
  %a = pf.add %r, %g : (!W, !W) -> !W
  pf.write_param %a to @w.grad : !W
  return
}
