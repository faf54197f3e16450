// RUN: pf-opt %s -split-input-file -pf-forward-grad-buffers | FileCheck %s

// Two micro-batches accumulate into the buffer, the update reads it and the
// step resets it: the first add disappears (zeros + g0 = g0), the second
// adds the values directly, the update reads the sum, and the buffer with
// all its reads and writes is gone.
#P = #pf.placement<"cpu", [0]>
!G = !pf.global<4x3xf32, #P, #pf.sbp<[B]>>
pf.param @w : !G = #pf.init<ones>
pf.param @w.grad : !G = #pf.init<zeros> buffer {pf.grad_of = @w}
// CHECK-LABEL: pf.param @w :
// CHECK-NOT: @w.grad
// CHECK-LABEL: func.func @step
// CHECK-SAME: (%[[G0:.+]]: !{{.*}}, %[[G1:.+]]: !
// CHECK-NEXT: %[[SUM:.+]] = pf.add %[[G0]], %[[G1]]
// CHECK-NEXT: %[[W:.+]] = pf.read_param @w :
// CHECK-NEXT: pf.add %[[W]], %[[SUM]]
// CHECK-NOT: pf.constant
// CHECK-NOT: @w.grad
func.func @step(%g0: !G, %g1: !G) -> !G {
  %r0 = pf.read_param @w.grad : !G
  %a0 = pf.add %r0, %g0 : (!G, !G) -> !G
  pf.write_param %a0 to @w.grad : !G
  %r1 = pf.read_param @w.grad : !G
  %a1 = pf.add %r1, %g1 : (!G, !G) -> !G
  pf.write_param %a1 to @w.grad : !G
  %w = pf.read_param @w : !G
  %r2 = pf.read_param @w.grad : !G
  %new = pf.add %w, %r2 : (!G, !G) -> !G
  %zero = pf.constant dense<0.0> : tensor<4x3xf32> : !G
  pf.write_param %zero to @w.grad : !G
  return %new : !G
}

// -----

// Not reset at the end of the step: the buffer carries state across steps
// and stays.
#P = #pf.placement<"cpu", [0]>
!G = !pf.global<4x3xf32, #P, #pf.sbp<[B]>>
pf.param @w.grad : !G = #pf.init<zeros> buffer {pf.grad_of = @w}
pf.param @w : !G = #pf.init<ones>
// CHECK-LABEL: pf.param @w.grad
// CHECK-LABEL: func.func @carried
// CHECK: pf.read_param @w.grad
// CHECK: pf.add
// CHECK: pf.write_param {{.*}} to @w.grad
func.func @carried(%g0: !G) {
  %r0 = pf.read_param @w.grad : !G
  %a0 = pf.add %r0, %g0 : (!G, !G) -> !G
  pf.write_param %a0 to @w.grad : !G
  return
}

// -----

// The step's first read feeds something other than an add: left alone.
#P = #pf.placement<"cpu", [0]>
!G = !pf.global<4x3xf32, #P, #pf.sbp<[B]>>
pf.param @w.grad : !G = #pf.init<zeros> buffer {pf.grad_of = @w}
pf.param @w : !G = #pf.init<ones>
// CHECK-LABEL: func.func @other_use
// CHECK: pf.read_param @w.grad
// CHECK: pf.relu
// CHECK: pf.write_param {{.*}} to @w.grad
func.func @other_use(%g0: !G) -> !G {
  %r0 = pf.read_param @w.grad : !G
  %x = pf.relu %r0 : (!G) -> !G
  %zero = pf.constant dense<0.0> : tensor<4x3xf32> : !G
  pf.write_param %zero to @w.grad : !G
  return %x : !G
}

// -----

// Used by two functions: the second relies on the first one's writes, so
// the buffer stays.
#P = #pf.placement<"cpu", [0]>
!G = !pf.global<4x3xf32, #P, #pf.sbp<[B]>>
pf.param @w.grad : !G = #pf.init<zeros> buffer {pf.grad_of = @w}
pf.param @w : !G = #pf.init<ones>
// CHECK-LABEL: pf.param @w.grad
// CHECK-LABEL: func.func @accumulate
// CHECK: pf.read_param @w.grad
// CHECK: pf.write_param {{.*}} to @w.grad
// CHECK-LABEL: func.func @peek
// CHECK: pf.read_param @w.grad
func.func @accumulate(%g0: !G) {
  %r0 = pf.read_param @w.grad : !G
  %a0 = pf.add %r0, %g0 : (!G, !G) -> !G
  pf.write_param %a0 to @w.grad : !G
  %zero = pf.constant dense<0.0> : tensor<4x3xf32> : !G
  pf.write_param %zero to @w.grad : !G
  return
}
func.func @peek() -> !G {
  %r = pf.read_param @w.grad : !G
  return %r : !G
}
