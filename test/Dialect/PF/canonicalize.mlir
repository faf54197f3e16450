// RUN: pf-opt %s -split-input-file -canonicalize | FileCheck %s

#P = #pf.placement<"cpu", [0, 1]>
!S0 = !pf.global<8x4xf32, #P, #pf.sbp<[S(0)]>>
!B = !pf.global<8x4xf32, #P, #pf.sbp<[B]>>

// CHECK-LABEL: func.func @to_global_same_layout
// CHECK-SAME: (%[[X:.*]]: !pf.global
// CHECK-NOT: pf.to_global
// CHECK: return %[[X]]
func.func @to_global_same_layout(%x: !S0) -> !S0 {
  %y = pf.to_global %x : !S0 -> !S0
  return %y : !S0
}

// -----

#P = #pf.placement<"cpu", [0, 1]>
#Q = #pf.placement<"cpu", [2, 3]>
!S0 = !pf.global<8x4xf32, #P, #pf.sbp<[S(0)]>>
!B = !pf.global<8x4xf32, #P, #pf.sbp<[B]>>
!QB = !pf.global<8x4xf32, #Q, #pf.sbp<[S(1)]>>

// A chain of layout changes keeps only its last target.
// CHECK-LABEL: func.func @to_global_chain
// CHECK-SAME: (%[[X:.*]]: !pf.global
// CHECK-NEXT: %[[Y:.*]] = pf.to_global %[[X]] : {{.*}}#pf.sbp<[S(0)]>> -> !pf.global<8x4xf32, #{{.*}}, #pf.sbp<[S(1)]>>
// CHECK-NEXT: return %[[Y]]
func.func @to_global_chain(%x: !S0) -> !QB {
  %b = pf.to_global %x : !S0 -> !B
  %q = pf.to_global %b : !B -> !QB
  return %q : !QB
}

// -----

#P = #pf.placement<"cpu", [0, 1]>
!B = !pf.global<8x4xf32, #P, #pf.sbp<[B]>>
!S1 = !pf.global<8x4xf32, #P, #pf.sbp<[S(1)]>>

// A layout change that goes back to where it started still folds away
// completely only when the last target is the source's own layout.
// CHECK-LABEL: func.func @to_global_round_trip
// CHECK-SAME: (%[[X:.*]]: !pf.global
// CHECK-NEXT: return %[[X]]
func.func @to_global_round_trip(%x: !B) -> !B {
  %s = pf.to_global %x : !B -> !S1
  %b = pf.to_global %s : !S1 -> !B
  return %b : !B
}

// -----

#P = #pf.placement<"cpu", [0, 1]>
!S0 = !pf.global<8x4xf32, #P, #pf.sbp<[S(0)]>>

// CHECK-LABEL: func.func @local_global_local
// CHECK-SAME: (%[[L:.*]]: tensor<4x4xf32>, %[[G:.*]]: !pf.global
// CHECK-NEXT: return %[[L]], %[[G]]
func.func @local_global_local(%l: tensor<4x4xf32>, %g: !S0) -> (tensor<4x4xf32>, !S0) {
  %a = pf.to_global %l : tensor<4x4xf32> -> !S0
  %b = pf.to_local %a : !S0 -> tensor<4x4xf32>
  %c = pf.to_local %g : !S0 -> tensor<4x4xf32>
  %d = pf.to_global %c : tensor<4x4xf32> -> !S0
  return %b, %d : tensor<4x4xf32>, !S0
}

// -----

#P = #pf.placement<"cpu", [0, 1]>
!S0 = !pf.global<8x4xf32, #P, #pf.sbp<[S(0)]>>
!B = !pf.global<8x4xf32, #P, #pf.sbp<[B]>>

// to_local of a different layout than the local was made with is a real
// layout change: it must stay.
// CHECK-LABEL: func.func @local_global_other_layout
// CHECK: pf.to_global
// CHECK: pf.to_global
// CHECK: pf.to_local
func.func @local_global_other_layout(%l: tensor<4x4xf32>) -> tensor<8x4xf32> {
  %a = pf.to_global %l : tensor<4x4xf32> -> !S0
  %b = pf.to_global %a : !S0 -> !B
  %c = pf.to_local %b : !B -> tensor<8x4xf32>
  return %c : tensor<8x4xf32>
}

// -----

#P = #pf.placement<"cpu", [0]>
!A = !pf.global<16x784xf32, #P, #pf.sbp<[B]>>

// CHECK-LABEL: func.func @reshape_of_reshape
// CHECK-SAME: (%[[X:.*]]: !pf.global
// CHECK-NEXT: %[[R:.*]] = pf.reshape %[[X]] : !pf.global<16x784xf32, {{.*}}> -> !pf.global<784x16xf32
// CHECK-NEXT: return %[[R]]
func.func @reshape_of_reshape(%x: !A) -> !pf.global<784x16xf32, #P> {
  %a = pf.reshape %x : !A -> !pf.global<16x28x28xf32, #P>
  %b = pf.reshape %a : !pf.global<16x28x28xf32, #P> -> !pf.global<784x16xf32, #P>
  return %b : !pf.global<784x16xf32, #P>
}

// -----

#P = #pf.placement<"cpu", [0]>
!A = !pf.global<16x784xf32, #P, #pf.sbp<[B]>>

// CHECK-LABEL: func.func @reshape_back
// CHECK-SAME: (%[[X:.*]]: !pf.global
// CHECK-NEXT: return %[[X]]
func.func @reshape_back(%x: !A) -> !A {
  %a = pf.reshape %x : !A -> !pf.global<16x28x28xf32, #P>
  %b = pf.reshape %a : !pf.global<16x28x28xf32, #P> -> !A
  return %b : !A
}

// -----

#P = #pf.placement<"cpu", [0]>
!A = !pf.global<16x1x28x28xf32, #P, #pf.sbp<[B]>>

// CHECK-LABEL: func.func @reshape_of_flatten
// CHECK-SAME: (%[[X:.*]]: !pf.global
// CHECK-NEXT: %[[R:.*]] = pf.reshape %[[X]] : !pf.global<16x1x28x28xf32, {{.*}}> -> !pf.global<16x28x28xf32
// CHECK-NEXT: return %[[R]]
func.func @reshape_of_flatten(%x: !A) -> !pf.global<16x28x28xf32, #P> {
  %f = pf.flatten %x : (!A) -> !pf.global<16x784xf32, #P>
  %r = pf.reshape %f : !pf.global<16x784xf32, #P> -> !pf.global<16x28x28xf32, #P>
  return %r : !pf.global<16x28x28xf32, #P>
}

// -----

#P = #pf.placement<"cpu", [0]>
!A = !pf.global<16x512xf32, #P, #pf.sbp<[B]>>

// Flattening an already 2-D tensor from axis 1 is the identity.
// CHECK-LABEL: func.func @flatten_2d
// CHECK-SAME: (%[[X:.*]]: !pf.global
// CHECK-NEXT: return %[[X]]
func.func @flatten_2d(%x: !A) -> !A {
  %f = pf.flatten %x : (!A) -> !A
  return %f : !A
}

// -----

#P = #pf.placement<"cpu", [0]>
!A = !pf.global<16x512xf32, #P, #pf.sbp<[B]>>

// A flatten that changes the SBP of its result is not a no-op: keep it.
// CHECK-LABEL: func.func @flatten_2d_new_layout
// CHECK: pf.flatten
func.func @flatten_2d_new_layout(%x: !A) -> !pf.global<16x512xf32, #P> {
  %f = pf.flatten %x : (!A) -> !pf.global<16x512xf32, #P>
  return %f : !pf.global<16x512xf32, #P>
}

// -----

#P = #pf.placement<"cpu", [0]>
!A = !pf.global<2x3x4xf32, #P, #pf.sbp<[B]>>

// CHECK-LABEL: func.func @transposes
// CHECK-SAME: (%[[X:.*]]: !pf.global
// The composed transpose keeps the outer op's phase (pf-microbatch reads it).
// CHECK-NEXT: %[[T:.*]] = pf.transpose %[[X]] {perm = array<i64: 2, 1, 0>, pf.phase = "backward_input"} : {{.*}} -> !pf.global<4x3x2xf32
// CHECK-NEXT: return %[[X]], %[[T]]
func.func @transposes(%x: !A) -> (!A, !pf.global<4x3x2xf32, #P, #pf.sbp<[B]>>) {
  %a = pf.transpose %x {perm = array<i64: 1, 2, 0>} : (!A) -> !pf.global<3x4x2xf32, #P, #pf.sbp<[B]>>
  %b = pf.transpose %a {perm = array<i64: 2, 0, 1>} : (!pf.global<3x4x2xf32, #P, #pf.sbp<[B]>>) -> !A
  %c = pf.transpose %a {perm = array<i64: 1, 0, 2>, pf.phase = "backward_input"} : (!pf.global<3x4x2xf32, #P, #pf.sbp<[B]>>) -> !pf.global<4x3x2xf32, #P, #pf.sbp<[B]>>
  return %b, %c : !A, !pf.global<4x3x2xf32, #P, #pf.sbp<[B]>>
}

// -----

#P = #pf.placement<"cpu", [0]>
!A = !pf.global<4xf32, #P, #pf.sbp<[B]>>

// CHECK-LABEL: func.func @mul_by_one
// CHECK-SAME: (%[[X:.*]]: !pf.global
// CHECK-NEXT: %[[H:.*]] = pf.mul_scalar %[[X]] {scalar = 5.000000e-01 : f64}
// CHECK-NEXT: return %[[X]], %[[H]]
func.func @mul_by_one(%x: !A) -> (!A, !A) {
  %a = pf.mul_scalar %x {scalar = 1.0 : f64} : (!A) -> !A
  %b = pf.mul_scalar %x {scalar = 0.5 : f64} : (!A) -> !A
  return %a, %b : !A, !A
}
