// RUN: pf-opt %s -split-input-file -pf-unroll-microbatches -verify-diagnostics | FileCheck %s

// Per-rank templates: every copy's transfers get their own tags, the same
// on both ranks. The largest tag anywhere is 1, so the stride is 2:
// micro-batch k's transfer t has tag 2k + t, the transfers outside the
// micro-batches 2 * 3 + t. Constants serve every copy; ops using a copied
// value are copied even when unmarked.
#R0 = #pf.placement<"cpu", [0]>
#R1 = #pf.placement<"cpu", [1]>
!A = !pf.global<2x4xf32, #R0, #pf.sbp<[B]>>
!B = !pf.global<2x4xf32, #R1, #pf.sbp<[B]>>
module attributes {pf.world_size = 2 : i64} {
  // CHECK-LABEL: module @rank0
  module @rank0 attributes {pf.rank = 0 : i64} {
    // CHECK: func.func @step(%[[X:.*]]: !pf.global<6x4xf32
    // CHECK-NOT: pf.microbatch_template
    // CHECK: %[[C:.*]] = pf.constant
    // CHECK: %[[X0:.*]] = pf.microbatch %[[X]] {count = 3 : i64, index = 0 : i64, pf.microbatch = 0 : i64}
    // CHECK: %[[S0:.*]] = pf.mul %[[X0]], %[[C]] {pf.microbatch = 0 : i64}
    // CHECK: pf.send %[[S0]] to 1 tag 0 {pf.microbatch = 0 : i64}
    // CHECK: %[[X1:.*]] = pf.microbatch %[[X]] {count = 3 : i64, index = 1 : i64, pf.microbatch = 1 : i64}
    // CHECK: %[[S1:.*]] = pf.mul %[[X1]], %[[C]] {pf.microbatch = 1 : i64}
    // CHECK: pf.send %[[S1]] to 1 tag 2 {pf.microbatch = 1 : i64}
    // CHECK: %[[X2:.*]] = pf.microbatch %[[X]] {count = 3 : i64, index = 2 : i64, pf.microbatch = 2 : i64}
    // CHECK: pf.send %{{.*}} to 1 tag 4 {pf.microbatch = 2 : i64}
    // CHECK: pf.recv from 1 tag 1 {pf.microbatch = 0 : i64, pf.phase = "backward_input"}
    // CHECK: pf.recv from 1 tag 3 {pf.microbatch = 1 : i64, pf.phase = "backward_input"}
    // CHECK: pf.recv from 1 tag 5 {pf.microbatch = 2 : i64, pf.phase = "backward_input"}
    // CHECK: pf.send %{{.*}} to 1 tag 6 {pf.phase = "update"}
    func.func @step(%x: !pf.global<6x4xf32, #R0, #pf.sbp<[B]>>) attributes {pf.microbatch_template = 3 : i64} {
      %c = pf.constant dense<2.0> : tensor<2x4xf32> {pf.microbatch = 0 : i64} : !A
      %x0 = pf.microbatch %x {count = 3 : i64, index = 0 : i64, pf.microbatch = 0 : i64} : !pf.global<6x4xf32, #R0, #pf.sbp<[B]>> -> !A
      %s = pf.mul %x0, %c {pf.microbatch = 0 : i64} : (!A, !A) -> !A
      pf.send %s to 1 tag 0 {pf.microbatch = 0 : i64} : !A
      %g = pf.recv from 1 tag 1 {pf.microbatch = 0 : i64, pf.phase = "backward_input"} : !A
      %u = pf.constant dense<1.0> : tensor<2x4xf32> {pf.phase = "update"} : !A
      pf.send %u to 1 tag 0 {pf.phase = "update"} : !A
      return
    }
  }
  // CHECK-LABEL: module @rank1
  module @rank1 attributes {pf.rank = 1 : i64} {
    // CHECK: pf.recv from 0 tag 0 {pf.microbatch = 0 : i64}
    // CHECK: pf.relu {{.*}}pf.microbatch = 0
    // CHECK: pf.recv from 0 tag 2 {pf.microbatch = 1 : i64}
    // CHECK: pf.relu {{.*}}pf.microbatch = 1
    // CHECK: pf.recv from 0 tag 4 {pf.microbatch = 2 : i64}
    // The unmarked op using a copied value has a copy per micro-batch.
    // CHECK: %[[N0:.*]] = pf.mul_scalar %{{.*}} {pf.phase = "backward_input", scalar = -1.000000e+00 : f64} : (
    // CHECK: pf.send %[[N0]] to 0 tag 1 {pf.microbatch = 0 : i64, pf.phase = "backward_input"}
    // CHECK: %[[N1:.*]] = pf.mul_scalar %{{.*}} {pf.phase = "backward_input", scalar = -1.000000e+00 : f64} : (
    // CHECK: pf.send %[[N1]] to 0 tag 3 {pf.microbatch = 1 : i64, pf.phase = "backward_input"}
    // CHECK: pf.send %{{.*}} to 0 tag 5 {pf.microbatch = 2 : i64, pf.phase = "backward_input"}
    // CHECK: pf.recv from 0 tag 6 {pf.phase = "update"}
    func.func @step() attributes {pf.microbatch_template = 3 : i64} {
      %a = pf.recv from 0 tag 0 {pf.microbatch = 0 : i64} : !B
      %r = pf.relu %a {pf.microbatch = 0 : i64} : (!B) -> !B
      %n = pf.mul_scalar %r {pf.phase = "backward_input", scalar = -1.0 : f64} : (!B) -> !B
      pf.send %n to 0 tag 1 {pf.microbatch = 0 : i64, pf.phase = "backward_input"} : !B
      %u = pf.recv from 0 tag 0 {pf.phase = "update"} : !B
      return
    }
  }
}

// -----

#P = #pf.placement<"cpu", [0]>
!T = !pf.global<2x4xf32, #P, #pf.sbp<[B]>>
pf.param @p : !T = #pf.init<zeros>
func.func @update_reads_copy(%x: !pf.global<4x4xf32, #P, #pf.sbp<[B]>>) attributes {pf.microbatch_template = 2 : i64} {
  %x0 = pf.microbatch %x {count = 2 : i64, index = 0 : i64, pf.microbatch = 0 : i64} : !pf.global<4x4xf32, #P, #pf.sbp<[B]>> -> !T
  // expected-error @below {{pf-unroll-microbatches: the update uses a micro-batch's value}}
  pf.write_param %x0 to @p {pf.phase = "update"} : !T
  return
}

// -----

#P = #pf.placement<"cpu", [0]>
!T = !pf.global<2x4xf32, #P, #pf.sbp<[B]>>
func.func @returns_copy(%x: !pf.global<4x4xf32, #P, #pf.sbp<[B]>>) -> !T attributes {pf.microbatch_template = 2 : i64} {
  %x0 = pf.microbatch %x {count = 2 : i64, index = 0 : i64, pf.microbatch = 0 : i64} : !pf.global<4x4xf32, #P, #pf.sbp<[B]>> -> !T
  // expected-error @below {{pf-unroll-microbatches: uses a micro-batch's value outside the micro-batch copies}}
  return %x0 : !T
}

// -----

#P = #pf.placement<"cpu", [0]>
!T = !pf.global<2x4xf32, #P, #pf.sbp<[B]>>
func.func @short_pack(%x: !pf.global<6x4xf32, #P, #pf.sbp<[B]>>) -> !pf.global<2x2x4xf32, #P> attributes {pf.microbatch_template = 3 : i64} {
  %x0 = pf.microbatch %x {count = 3 : i64, index = 0 : i64, pf.microbatch = 0 : i64} : !pf.global<6x4xf32, #P, #pf.sbp<[B]>> -> !T
  // expected-error @below {{pf-unroll-microbatches: packs 2 values of 3 micro-batches}}
  %p = pf.pack %x0, %x0 : (!T, !T) -> !pf.global<2x2x4xf32, #P>
  return %p : !pf.global<2x2x4xf32, #P>
}

// -----

// expected-error @below {{'pf.microbatch_template' must be an integer >= 2 on a func.func}}
func.func @one() attributes {pf.microbatch_template = 1 : i64} {
  return
}

// -----

// An unmarked layout change feeding the gathering pack after the update is
// copied where it is: every micro-batch's gradient reaches the buffer
// before the update reads it.
#P = #pf.placement<"cpu", [0]>
!T = !pf.global<2x4xf32, #P, #pf.sbp<[B]>>
!X = !pf.global<4x4xf32, #P, #pf.sbp<[B]>>
pf.param @g : !T = #pf.init<zeros> buffer
// CHECK-LABEL: func.func @trailing
// CHECK: pf.write_param {{.*}} to @g {pf.microbatch = 0 : i64
// CHECK: pf.write_param {{.*}} to @g {pf.microbatch = 1 : i64
// CHECK: pf.read_param @g {pf.phase = "update"}
// CHECK: %[[M0:.*]] = pf.to_global
// CHECK-NEXT: %[[M1:.*]] = pf.to_global
// CHECK-NEXT: pf.pack %[[M0]], %[[M1]]
func.func @trailing(%x: !X) -> !pf.global<2x2x4xf32, #P> attributes {pf.microbatch_template = 2 : i64} {
  %x0 = pf.microbatch %x {count = 2 : i64, index = 0 : i64, pf.microbatch = 0 : i64} : !X -> !T
  %r = pf.relu %x0 {pf.microbatch = 0 : i64} : (!T) -> !T
  %old = pf.read_param @g {pf.microbatch = 0 : i64, pf.phase = "backward_weight"} : !T
  %s = pf.add %old, %r {pf.microbatch = 0 : i64, pf.phase = "backward_weight"} : (!T, !T) -> !T
  pf.write_param %s to @g {pf.microbatch = 0 : i64, pf.phase = "backward_weight"} : !T
  %u = pf.read_param @g {pf.phase = "update"} : !T
  pf.write_param %u to @g {pf.phase = "update"} : !T
  %m = pf.to_global %r : !T -> !T
  %p = pf.pack %m, %m : (!T, !T) -> !pf.global<2x2x4xf32, #P>
  return %p : !pf.global<2x2x4xf32, #P>
}

// -----

// An unmarked send of a micro-batch's value would be copied while its
// unmarked receive (no operand) would not: an error, not a hang.
#R0 = #pf.placement<"cpu", [0]>
!A = !pf.global<2x4xf32, #R0, #pf.sbp<[B]>>
func.func @unmarked_send(%x: !pf.global<4x4xf32, #R0, #pf.sbp<[B]>>) attributes {pf.microbatch_template = 2 : i64} {
  %x0 = pf.microbatch %x {count = 2 : i64, index = 0 : i64, pf.microbatch = 0 : i64} : !pf.global<4x4xf32, #R0, #pf.sbp<[B]>> -> !A
  // expected-error @below {{pf-unroll-microbatches: uses a micro-batch's value but has no pf.microbatch (a transfer or an effect copied without its mark)}}
  pf.send %x0 to 1 tag 0 : !A
  return
}
