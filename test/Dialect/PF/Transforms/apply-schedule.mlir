// RUN: pf-opt %s -split-input-file -pf-apply-schedule | FileCheck %s

// 1F1B on two pipeline ranks: rank 1 (the last stage) alternates, F0 B0 F1
// B1, although the program lists both forwards first. Stage-less ops that
// read no micro-batch result stay in front; the update and the pack of the
// losses go after the micro-batches.
#P1 = #pf.placement<"cpu", [1]>
!T = !pf.global<4xf32, #P1, #pf.sbp<[B]>>
!L = !pf.global<f32, #P1, #pf.sbp<[B]>>
pf.schedule {kind = "1f1b", num_stages = 2, num_microbatches = 2, num_chunks = 1,
             actions = [["F0", "F1", "B0", "B1"], ["F0", "B0", "F1", "B1"]]}
// CHECK-LABEL: module @rank1
// CHECK: func.func @step(%[[X0:[^:]*]]: {{.*}}, %[[X1:[^:]*]]:
// CHECK-NEXT: pf.constant
// CHECK-NEXT: %[[F0:.*]] = pf.relu %[[X0]] {pf.microbatch = 0
// CHECK-NEXT: %[[L0:.*]] = pf.reduce_sum %[[F0]] {{{.*}}pf.microbatch = 0
// CHECK-NEXT: %[[B0:.*]] = pf.mul_scalar %[[F0]] {pf.microbatch = 0 : i64, pf.phase = "backward_input"
// CHECK-NEXT: %[[F1:.*]] = pf.relu %[[X1]] {pf.microbatch = 1
// CHECK-NEXT: %[[L1:.*]] = pf.reduce_sum %[[F1]] {{{.*}}pf.microbatch = 1
// CHECK-NEXT: %[[B1:.*]] = pf.mul_scalar %[[F1]] {pf.microbatch = 1 : i64, pf.phase = "backward_input"
// CHECK-NEXT: pf.add %[[B0]], %[[B1]] {pf.phase = "update"
// CHECK-NEXT: %[[LS:.*]] = pf.pack %[[L0]], %[[L1]]
// CHECK-NEXT: return %[[LS]]
module @rank1 attributes {pf.rank = 1} {
  func.func @step(%x0: !T, %x1: !T) -> !pf.global<2xf32, #P1, #pf.sbp<[B]>> {
    %f0 = pf.relu %x0 {pf.stage = 1, pf.microbatch = 0} : (!T) -> !T
    %f1 = pf.relu %x1 {pf.stage = 1, pf.microbatch = 1} : (!T) -> !T
    %b0 = pf.mul_scalar %f0 {scalar = 2.0 : f64, pf.stage = 1, pf.microbatch = 0, pf.phase = "backward_input"} : (!T) -> !T
    %b1 = pf.mul_scalar %f1 {scalar = 2.0 : f64, pf.stage = 1, pf.microbatch = 1, pf.phase = "backward_input"} : (!T) -> !T
    %u = pf.add %b0, %b1 {pf.stage = 1, pf.phase = "update"} : (!T, !T) -> !T
    %c = pf.constant dense<1.0> : tensor<4xf32> : !T
    %l0 = pf.reduce_sum %f0 {axes = array<i64: 0>, pf.stage = 1, pf.microbatch = 0} : (!T) -> !L
    %l1 = pf.reduce_sum %f1 {axes = array<i64: 0>, pf.stage = 1, pf.microbatch = 1} : (!T) -> !L
    %l = pf.pack %l0, %l1 : (!L, !L) -> !pf.global<2xf32, #P1, #pf.sbp<[B]>>
    return %l : !pf.global<2xf32, #P1, #pf.sbp<[B]>>
  }
}

// -----

// ZB-H1 splits W off B: each rank follows its own list (rank 0: F0 F1 B0
// W0 B1 W1, rank 1: F0 B0 F1 B1 W0 W1), and backward_weight ops are W
// actions.
#P0 = #pf.placement<"cpu", [0]>
#P1 = #pf.placement<"cpu", [1]>
!A = !pf.global<4xf32, #P0, #pf.sbp<[B]>>
!B = !pf.global<4xf32, #P1, #pf.sbp<[B]>>
pf.schedule {kind = "zb-h1", num_stages = 2, num_microbatches = 2, num_chunks = 1,
             actions = [["F0", "F1", "B0", "W0", "B1", "W1"], ["F0", "B0", "F1", "B1", "W0", "W1"]]}
// CHECK-LABEL: module @rank0
// CHECK: func.func @step
// CHECK-NEXT: %[[F0:.*]] = pf.relu %{{.*}} {pf.microbatch = 0
// CHECK-NEXT: %[[F1:.*]] = pf.relu %{{.*}} {pf.microbatch = 1
// CHECK-NEXT: pf.mul_scalar %[[F0]] {pf.microbatch = 0 : i64, pf.phase = "backward_input"
// CHECK-NEXT: pf.relu %[[F0]] {pf.microbatch = 0 : i64, pf.phase = "backward_weight"
// CHECK-NEXT: pf.mul_scalar %[[F1]] {pf.microbatch = 1 : i64, pf.phase = "backward_input"
// CHECK-NEXT: pf.relu %[[F1]] {pf.microbatch = 1 : i64, pf.phase = "backward_weight"
// CHECK-NEXT: return
// CHECK-LABEL: module @rank1
// CHECK: func.func @step
// CHECK-NEXT: %[[G0:.*]] = pf.relu %{{.*}} {pf.microbatch = 0
// CHECK-NEXT: pf.mul_scalar %[[G0]] {pf.microbatch = 0 : i64, pf.phase = "backward_input"
// CHECK-NEXT: %[[G1:.*]] = pf.relu %{{.*}} {pf.microbatch = 1
// CHECK-NEXT: pf.mul_scalar %[[G1]] {pf.microbatch = 1 : i64, pf.phase = "backward_input"
// CHECK-NEXT: pf.relu %[[G0]] {pf.microbatch = 0 : i64, pf.phase = "backward_weight"
// CHECK-NEXT: pf.relu %[[G1]] {pf.microbatch = 1 : i64, pf.phase = "backward_weight"
// CHECK-NEXT: return
module @rank0 attributes {pf.rank = 0} {
  func.func @step(%x0: !A, %x1: !A) {
    %f0 = pf.relu %x0 {pf.stage = 0, pf.microbatch = 0} : (!A) -> !A
    %w0 = pf.relu %f0 {pf.stage = 0, pf.microbatch = 0, pf.phase = "backward_weight"} : (!A) -> !A
    %b0 = pf.mul_scalar %f0 {scalar = 2.0 : f64, pf.stage = 0, pf.microbatch = 0, pf.phase = "backward_input"} : (!A) -> !A
    %f1 = pf.relu %x1 {pf.stage = 0, pf.microbatch = 1} : (!A) -> !A
    %w1 = pf.relu %f1 {pf.stage = 0, pf.microbatch = 1, pf.phase = "backward_weight"} : (!A) -> !A
    %b1 = pf.mul_scalar %f1 {scalar = 2.0 : f64, pf.stage = 0, pf.microbatch = 1, pf.phase = "backward_input"} : (!A) -> !A
    return
  }
}
module @rank1 attributes {pf.rank = 1} {
  func.func @step(%x0: !B, %x1: !B) {
    %f0 = pf.relu %x0 {pf.stage = 1, pf.microbatch = 0} : (!B) -> !B
    %w0 = pf.relu %f0 {pf.stage = 1, pf.microbatch = 0, pf.phase = "backward_weight"} : (!B) -> !B
    %b0 = pf.mul_scalar %f0 {scalar = 2.0 : f64, pf.stage = 1, pf.microbatch = 0, pf.phase = "backward_input"} : (!B) -> !B
    %f1 = pf.relu %x1 {pf.stage = 1, pf.microbatch = 1} : (!B) -> !B
    %w1 = pf.relu %f1 {pf.stage = 1, pf.microbatch = 1, pf.phase = "backward_weight"} : (!B) -> !B
    %b1 = pf.mul_scalar %f1 {scalar = 2.0 : f64, pf.stage = 1, pf.microbatch = 1, pf.phase = "backward_input"} : (!B) -> !B
    return
  }
}
