// RUN: pf-opt %s -split-input-file --pf-lower-boxing --verify-diagnostics

// A grouped split holds each rank's part of every block: no collective
// turns that into another layout, so a change is a located error (the
// compiler only makes grouped splits where none is needed).
#P = #pf.placement<"cpu", [0, 1]>
func.func @gather_grouped(%x: !pf.global<12x4xf32, #P, #pf.sbp<[S(0, 3)]>>) -> !pf.global<12x4xf32, #P, #pf.sbp<[B]>> {
  // expected-error @+1 {{pf-lower-boxing: no boxing changes the grouped split}}
  %y = pf.to_global %x : !pf.global<12x4xf32, #P, #pf.sbp<[S(0, 3)]>> -> !pf.global<12x4xf32, #P, #pf.sbp<[B]>>
  return %y : !pf.global<12x4xf32, #P, #pf.sbp<[B]>>
}

// -----

#P = #pf.placement<"cpu", [0, 1]>
#Q = #pf.placement<"cpu", [2, 3]>
func.func @move_grouped(%x: !pf.global<12x4xf32, #P, #pf.sbp<[S(0, 3)]>>) -> !pf.global<12x4xf32, #Q, #pf.sbp<[S(0, 3)]>> {
  // expected-error @+1 {{pf-lower-boxing: no boxing changes the grouped split}}
  %y = pf.to_global %x : !pf.global<12x4xf32, #P, #pf.sbp<[S(0, 3)]>> -> !pf.global<12x4xf32, #Q, #pf.sbp<[S(0, 3)]>>
  return %y : !pf.global<12x4xf32, #Q, #pf.sbp<[S(0, 3)]>>
}
