// RUN: pf-opt %s -split-input-file -pf-assign-stages -verify-diagnostics | FileCheck %s

#P0 = #pf.placement<"cpu", [0]>
#P1 = #pf.placement<"cpu", [1]>
!W0 = !pf.global<4x8xf32, #P0, #pf.sbp<[B]>>
!W1 = !pf.global<3x4xf32, #P1, #pf.sbp<[B]>>
pf.param @w0 : !W0 = #pf.init<zeros>
pf.param @w1 : !W1 = #pf.init<zeros>

// Unannotated ops inherit: the relu from its producer (stage 0), the
// parameter reads from their consumers; the layout change stays a boundary.
// CHECK-LABEL: func.func @inherit
// CHECK: pf.read_param @w0 {pf.stage = 0 : i64}
// CHECK: pf.matmul {{.*}}{pf.stage = 0 : i64, transpose_b}
// CHECK: pf.relu {{.*}}{pf.stage = 0 : i64}
// CHECK: pf.to_global
// CHECK-NOT: pf.stage
// CHECK-SAME: ->
// CHECK: pf.read_param @w1 {pf.stage = 1 : i64}
// CHECK: pf.matmul {{.*}}{pf.stage = 1 : i64, transpose_b}
func.func @inherit(%x: !pf.global<2x8xf32, #P0, #pf.sbp<[B]>>) -> !pf.global<2x3xf32, #P1> {
  %w0 = pf.read_param @w0 : !W0
  %h = pf.matmul %x, %w0 {transpose_b, pf.stage = 0} : (!pf.global<2x8xf32, #P0, #pf.sbp<[B]>>, !W0) -> !pf.global<2x4xf32, #P0>
  %r = pf.relu %h : (!pf.global<2x4xf32, #P0>) -> !pf.global<2x4xf32, #P0>
  %m = pf.to_global %r : !pf.global<2x4xf32, #P0> -> !pf.global<2x4xf32, #P1, #pf.sbp<[B]>>
  %w1 = pf.read_param @w1 : !W1
  %o = pf.matmul %m, %w1 {transpose_b, pf.stage = 1} : (!pf.global<2x4xf32, #P1, #pf.sbp<[B]>>, !W1) -> !pf.global<2x3xf32, #P1>
  return %o : !pf.global<2x3xf32, #P1>
}

// -----

#P0 = #pf.placement<"cpu", [0]>
func.func @backwards(%x: !pf.global<4xf32, #P0, #pf.sbp<[B]>>) {
  %a = pf.relu %x {pf.stage = 1} : (!pf.global<4xf32, #P0, #pf.sbp<[B]>>) -> !pf.global<4xf32, #P0>
  // expected-error @+1 {{'pf.relu' op reads a value of stage 1 in stage 0: a forward value must not flow from a later stage back to an earlier one}}
  %b = pf.relu %a {pf.stage = 0} : (!pf.global<4xf32, #P0>) -> !pf.global<4xf32, #P0>
  return
}

// -----

#P0 = #pf.placement<"cpu", [0]>
#P1 = #pf.placement<"cpu", [1]>
func.func @two_placements(%x: !pf.global<4xf32, #P0, #pf.sbp<[B]>>, %y: !pf.global<4xf32, #P1, #pf.sbp<[B]>>) {
  // expected-note @+1 {{stage 0's placement comes from here}}
  %a = pf.relu %x {pf.stage = 0} : (!pf.global<4xf32, #P0, #pf.sbp<[B]>>) -> !pf.global<4xf32, #P0>
  // expected-error @+1 {{'pf.relu' op is on #pf.placement<"cpu", [1]> but stage 0 is on #pf.placement<"cpu", [0]>}}
  %b = pf.relu %y {pf.stage = 0} : (!pf.global<4xf32, #P1, #pf.sbp<[B]>>) -> !pf.global<4xf32, #P1>
  return
}

// -----

#P0 = #pf.placement<"cpu", [0]>
#P2 = #pf.placement<"cpu", [2]>
// expected-error @+1 {{'func.func' op stage 1 is empty: stage ids must be 0..2 without gaps}}
func.func @gap(%x: !pf.global<4xf32, #P0, #pf.sbp<[B]>>) {
  %a = pf.relu %x {pf.stage = 0} : (!pf.global<4xf32, #P0, #pf.sbp<[B]>>) -> !pf.global<4xf32, #P0>
  %m = pf.to_global %a : !pf.global<4xf32, #P0> -> !pf.global<4xf32, #P2, #pf.sbp<[B]>>
  %b = pf.relu %m {pf.stage = 2} : (!pf.global<4xf32, #P2, #pf.sbp<[B]>>) -> !pf.global<4xf32, #P2>
  return
}
