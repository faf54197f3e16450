// RUN: pf-opt %s -split-input-file -pf-auto-stages="num-stages=2" -verify-diagnostics
// RUN: not pf-opt %s -split-input-file -pf-auto-stages="num-stages=2 balance=time" 2>&1 | FileCheck %s --check-prefix=BALANCE
// RUN: not pf-opt %s -split-input-file -pf-auto-stages="num-stages=0" 2>&1 | FileCheck %s --check-prefix=ZERO

// BALANCE: for the --balance option: Cannot find option named 'time'!
// ZERO: pf-auto-stages: num-stages (0) and num-chunks (1) must be at least 1

#P = #pf.placement<"cpu", [0]>
!T = !pf.global<4x4xf32, #P>
func.func @already_staged(%x: !T) -> !T {
  // expected-error @below {{already has a pipeline stage: pf-auto-stages partitions an unstaged program}}
  %a = pf.relu %x {pf.stage = 0} : (!T) -> !T
  %b = pf.relu %a : (!T) -> !T
  return %b : !T
}

// -----

#P0 = #pf.placement<"cpu", [0]>
#P1 = #pf.placement<"cpu", [1]>
// expected-note @below {{the first placement comes from here}}
func.func @two_placements(%x: !pf.global<4x4xf32, #P0>) -> !pf.global<4x4xf32, #P1> {
  %a = pf.relu %x : (!pf.global<4x4xf32, #P0>) -> !pf.global<4x4xf32, #P0>
  // expected-error @below {{is on #pf.placement<"cpu", [1]>, but pf-auto-stages needs the whole program on one placement}}
  %b = pf.to_global %a : !pf.global<4x4xf32, #P0> -> !pf.global<4x4xf32, #P1>
  return %b : !pf.global<4x4xf32, #P1>
}

// -----

#P = #pf.placement<"cpu", [0]>
!T = !pf.global<4x4xf32, #P>
// expected-error @below {{cannot cut 1 compute ops into 2 stages (2 x 1 chunks): every stage needs at least one op}}
func.func @too_few_ops(%x: !T) -> !T {
  %a = pf.relu %x : (!T) -> !T
  return %a : !T
}

// -----

// Weight tying across stages that land on different ranks.
#P = #pf.placement<"cpu", [0]>
!T = !pf.global<4x4xf32, #P>
!W = !pf.global<4x4xf32, #P, #pf.sbp<[B]>>
pf.param @tied : !W = #pf.init<zeros>
func.func @tied_weights(%x: !T) -> !T {
  // expected-note @below {{it is also read in stage 0 here}}
  %w = pf.read_param @tied : !W
  %a = pf.matmul %x, %w : (!T, !W) -> !T
  %b = pf.relu %a : (!T) -> !T
  // expected-error @below {{reads @tied in stage 1, which pf-auto-stages put on #pf.placement<"cpu", [1]>: a parameter shared by stages on different ranks is not supported}}
  %w2 = pf.read_param @tied : !W
  %c = pf.matmul %b, %w2 : (!T, !W) -> !T
  %d = pf.relu %c : (!T) -> !T
  return %d : !T
}
