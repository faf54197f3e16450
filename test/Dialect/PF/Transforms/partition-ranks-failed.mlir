// RUN: pf-opt %s -split-input-file -pf-partition-ranks -verify-diagnostics

// A value without a layout (pf-infer-sbp has not run): a function argument.
#P0 = #pf.placement<"cpu", [0]>
// expected-error @+1 {{'func.func' op pf-partition-ranks: '!pf.global<4xf32, #pf.placement<"cpu", [0]>>' has no layout (run pf-spmd-pipeline first)}}
func.func @no_layout(%x: !pf.global<4xf32, #P0>) {
  return
}

// -----

// The same check covers parameters (before the per-rank rewrite would).
#P0 = #pf.placement<"cpu", [0]>
// expected-error @+1 {{'pf.param' op pf-partition-ranks: '!pf.global<4xf32, #pf.placement<"cpu", [0]>>' has no layout (run pf-spmd-pipeline first)}}
pf.param @w : !pf.global<4xf32, #P0> = #pf.init<zeros>

// -----

#P0 = #pf.placement<"cpu", [0]>
func.func @local_to_global(%x: tensor<4xf32>) -> !pf.global<4xf32, #P0, #pf.sbp<[B]>> {
  // expected-error @+1 {{'pf.to_global' op pf-partition-ranks: a local-to-global conversion inside the step has no per-rank meaning yet}}
  %g = pf.to_global %x : tensor<4xf32> -> !pf.global<4xf32, #P0, #pf.sbp<[B]>>
  return %g : !pf.global<4xf32, #P0, #pf.sbp<[B]>>
}

// -----

#P01 = #pf.placement<"cpu", [0, 1]>
func.func @not_lowered(%x: !pf.global<4xf32, #P01, #pf.sbp<[P]>>) -> !pf.global<4xf32, #P01, #pf.sbp<[B]>> {
  // expected-error @+1 {{'pf.to_global' op pf-partition-ranks: layout change '!pf.global<4xf32, #pf.placement<"cpu", [0, 1]>, #pf.sbp<[P]>>' -> '!pf.global<4xf32, #pf.placement<"cpu", [0, 1]>, #pf.sbp<[B]>>' is not lowered (run pf-lower-boxing first)}}
  %g = pf.to_global %x : !pf.global<4xf32, #P01, #pf.sbp<[P]>> -> !pf.global<4xf32, #P01, #pf.sbp<[B]>>
  return %g : !pf.global<4xf32, #P01, #pf.sbp<[B]>>
}

// -----

// Rank 1 calls @sink with a value computed on rank 0's placement and no
// transfer in between.
#P0 = #pf.placement<"cpu", [0]>
#P1 = #pf.placement<"cpu", [1]>
!A = !pf.global<4xf32, #P0, #pf.sbp<[B]>>
!B = !pf.global<4xf32, #P1, #pf.sbp<[B]>>
func.func private @sink(!B, !A)
func.func @foreign_value(%x: !A, %y: !B) {
  // expected-error @+1 {{'pf.relu' op pf-partition-ranks: a value on another rank's placement is used on rank 1 without a layout change}}
  %a = pf.relu %x : (!A) -> !A
  func.call @sink(%y, %a) : (!B, !A) -> ()
  return
}

// -----

// The same with rank 0's argument.
#P0 = #pf.placement<"cpu", [0]>
#P1 = #pf.placement<"cpu", [1]>
!A = !pf.global<4xf32, #P0, #pf.sbp<[B]>>
!B = !pf.global<4xf32, #P1, #pf.sbp<[B]>>
func.func private @sink(!B, !A)
// expected-error @+1 {{'func.func' op pf-partition-ranks: argument 0 of another rank is still used}}
func.func @foreign_arg(%x: !A, %y: !B) {
  func.call @sink(%y, %x) : (!B, !A) -> ()
  return
}
