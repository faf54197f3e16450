// RUN: pf-opt %s -split-input-file -pf-split-stages | FileCheck %s
// pf-inline-stages puts the bodies back, in order.
// RUN: pf-opt %s -split-input-file -pf-split-stages | pf-opt -split-input-file -pf-inline-stages | FileCheck %s --check-prefix=INLINE

// 1F1B does not split W: one B action holds the input and weight gradients.
// Values crossing actions become results and arguments; the step calls the
// functions in its own order.
#P0 = #pf.placement<"cpu", [0]>
!A = !pf.global<4xf32, #P0, #pf.sbp<[B]>>
pf.schedule {kind = "1f1b", num_stages = 1, num_microbatches = 2, num_chunks = 1,
             actions = [["F0", "B0", "F1", "B1"]]}
// CHECK-LABEL: func.func private @stage0_forward_mb0
// CHECK-SAME: (%[[X:[^:]*]]: !pf.global<4xf32, {{.*}}>) -> (!pf.global<4xf32, {{.*}}>, !pf.global<4xf32, {{.*}}>)
// CHECK-SAME: attributes {pf.microbatch = 0 : i64, pf.phase = "forward", pf.stage = 0 : i64, pf.stage_function}
// CHECK-NEXT: %[[F:.*]] = pf.relu %[[X]]
// CHECK-NEXT: %[[G:.*]] = pf.mul_scalar %[[F]]
// CHECK-NEXT: return %[[F]], %[[G]]
// CHECK-LABEL: func.func private @stage0_backward_input_mb0
// CHECK-SAME: (%[[G:[^:]*]]: {{.*}}, %[[F:[^:]*]]: {{.*}}) -> !pf.global<4xf32, {{.*}}> attributes {pf.microbatch = 0 : i64, pf.phase = "backward_input", pf.stage = 0 : i64, pf.stage_function}
// CHECK-NEXT: %[[B:.*]] = pf.relu %[[G]] {{{.*}}pf.phase = "backward_input"
// CHECK-NEXT: %[[W:.*]] = pf.add %[[B]], %[[F]] {{{.*}}pf.phase = "backward_weight"
// CHECK-NEXT: return %[[W]]
// CHECK-LABEL: func.func private @stage0_forward_mb1
// CHECK-LABEL: func.func private @stage0_backward_input_mb1
// CHECK-LABEL: func.func private @stage0_update
// CHECK-SAME: attributes {pf.phase = "update", pf.stage = 0 : i64, pf.stage_function}
// CHECK-NOT: backward_weight_mb
// CHECK-LABEL: func.func @step
// CHECK-SAME: (%[[X0:[^:]*]]: {{.*}}, %[[X1:[^:]*]]:
// CHECK-NEXT: %[[F0:.*]]:2 = call @stage0_forward_mb0(%[[X0]])
// CHECK-NEXT: %[[B0:.*]] = call @stage0_backward_input_mb0(%[[F0]]#1, %[[F0]]#0)
// CHECK-NEXT: %[[F1:.*]] = call @stage0_forward_mb1(%[[X1]])
// CHECK-NEXT: %[[B1:.*]] = call @stage0_backward_input_mb1(%[[F1]], %[[B0]])
// CHECK-NEXT: %[[U:.*]] = call @stage0_update(%[[B1]])
// CHECK-NEXT: return %[[U]]
// INLINE-LABEL: func.func @step
// INLINE-SAME: (%[[X0:[^:]*]]: {{.*}}, %[[X1:[^:]*]]:
// INLINE-NEXT: %[[F0:.*]] = pf.relu %[[X0]]
// INLINE-NEXT: %[[G0:.*]] = pf.mul_scalar %[[F0]]
// INLINE-NEXT: %[[B0:.*]] = pf.relu %[[G0]]
// INLINE-NEXT: %[[W0:.*]] = pf.add %[[B0]], %[[F0]]
// INLINE-NEXT: %[[F1:.*]] = pf.relu %[[X1]]
// INLINE-NEXT: %[[B1:.*]] = pf.relu %[[F1]]
// INLINE-NEXT: %[[W1:.*]] = pf.add %[[B1]], %[[W0]]
// INLINE-NEXT: %[[U:.*]] = pf.mul_scalar %[[W1]]
// INLINE-NEXT: return %[[U]]
// INLINE-NOT: stage0_
func.func @step(%x0: !A, %x1: !A) -> !A {
  %f0 = pf.relu %x0 {pf.stage = 0, pf.microbatch = 0} : (!A) -> !A
  %g0 = pf.mul_scalar %f0 {scalar = 2.0 : f64, pf.stage = 0, pf.microbatch = 0} : (!A) -> !A
  %b0 = pf.relu %g0 {pf.stage = 0, pf.microbatch = 0, pf.phase = "backward_input"} : (!A) -> !A
  %w0 = pf.add %b0, %f0 {pf.stage = 0, pf.microbatch = 0, pf.phase = "backward_weight"} : (!A, !A) -> !A
  %f1 = pf.relu %x1 {pf.stage = 0, pf.microbatch = 1} : (!A) -> !A
  %b1 = pf.relu %f1 {pf.stage = 0, pf.microbatch = 1, pf.phase = "backward_input"} : (!A) -> !A
  %w1 = pf.add %b1, %w0 {pf.stage = 0, pf.microbatch = 1, pf.phase = "backward_weight"} : (!A, !A) -> !A
  %u = pf.mul_scalar %w1 {scalar = 0.5 : f64, pf.stage = 0, pf.phase = "update"} : (!A) -> !A
  return %u : !A
}

// -----

// ZB-H1 splits W: backward_weight ops get functions of their own. In rank
// modules each rank's step is split apart.
#P0 = #pf.placement<"cpu", [0]>
#P1 = #pf.placement<"cpu", [1]>
!A = !pf.global<4xf32, #P0, #pf.sbp<[B]>>
!B = !pf.global<4xf32, #P1, #pf.sbp<[B]>>
pf.schedule {kind = "zb-h1", num_stages = 2, num_microbatches = 1, num_chunks = 1,
             actions = [["F0", "B0", "W0"], ["F0", "B0", "W0"]]}
// CHECK-LABEL: module @rank0
// CHECK: func.func private @stage0_forward_mb0
// CHECK: func.func private @stage0_backward_input_mb0
// CHECK: func.func private @stage0_backward_weight_mb0(%{{.*}}) -> !pf.global<4xf32, {{.*}}> attributes {pf.microbatch = 0 : i64, pf.phase = "backward_weight", pf.stage = 0 : i64, pf.stage_function}
// CHECK-NEXT: pf.add {{.*}}pf.phase = "backward_weight"
// CHECK: func.func @step(%[[X:[^:]*]]:
// CHECK-NEXT: %[[F:.*]] = call @stage0_forward_mb0(%[[X]])
// CHECK-NEXT: %[[B:.*]] = call @stage0_backward_input_mb0(%[[F]])
// CHECK-NEXT: %[[W:.*]] = call @stage0_backward_weight_mb0(%[[B]])
// CHECK-NEXT: return %[[W]]
// CHECK-LABEL: module @rank1
// CHECK: func.func private @stage1_forward_mb0
// CHECK: func.func private @stage1_backward_input_mb0
// CHECK: func.func private @stage1_backward_weight_mb0
// CHECK: func.func @step
// CHECK-NEXT: call @stage1_forward_mb0
// CHECK-NEXT: call @stage1_backward_input_mb0
// CHECK-NEXT: call @stage1_backward_weight_mb0
// INLINE-LABEL: module @rank0
// INLINE: func.func @step
// INLINE-NEXT: pf.relu
// INLINE-NEXT: pf.relu
// INLINE-NEXT: pf.add
// INLINE-NEXT: return
module @rank0 attributes {pf.rank = 0} {
  func.func @step(%x: !A) -> !A {
    %f = pf.relu %x {pf.stage = 0, pf.microbatch = 0} : (!A) -> !A
    %b = pf.relu %f {pf.stage = 0, pf.microbatch = 0, pf.phase = "backward_input"} : (!A) -> !A
    %w = pf.add %b, %b {pf.stage = 0, pf.microbatch = 0, pf.phase = "backward_weight"} : (!A, !A) -> !A
    return %w : !A
  }
}
module @rank1 attributes {pf.rank = 1} {
  func.func @step(%x: !B) -> !B {
    %f = pf.relu %x {pf.stage = 1, pf.microbatch = 0} : (!B) -> !B
    %b = pf.relu %f {pf.stage = 1, pf.microbatch = 0, pf.phase = "backward_input"} : (!B) -> !B
    %w = pf.add %b, %b {pf.stage = 1, pf.microbatch = 0, pf.phase = "backward_weight"} : (!B, !B) -> !B
    return %w : !B
  }
}
