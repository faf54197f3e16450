// RUN: pf-opt %s -split-input-file --pf-lower-boxing --verify-diagnostics

// A grouped split holds each rank's part of every block: it changes to
// and from B, P and other splits on its own 1-D placement
// (lower-boxing-grouped.mlir); a change on a mesh or to another placement
// is a located error.
#M = #pf.placement<"cpu", [[0, 1], [2, 3]]>
func.func @mesh_grouped(%x: !pf.global<12x4xf32, #M, #pf.sbp<[S(0, 3), B]>>) -> !pf.global<12x4xf32, #M, #pf.sbp<[B, B]>> {
  // expected-error @+1 {{pf-lower-boxing: no boxing changes the grouped split}}
  %y = pf.to_global %x : !pf.global<12x4xf32, #M, #pf.sbp<[S(0, 3), B]>> -> !pf.global<12x4xf32, #M, #pf.sbp<[B, B]>>
  return %y : !pf.global<12x4xf32, #M, #pf.sbp<[B, B]>>
}

// -----

#P = #pf.placement<"cpu", [0, 1]>
#Q = #pf.placement<"cpu", [2, 3]>
func.func @move_grouped(%x: !pf.global<12x4xf32, #P, #pf.sbp<[S(0, 3)]>>) -> !pf.global<12x4xf32, #Q, #pf.sbp<[S(0, 3)]>> {
  // expected-error @+1 {{pf-lower-boxing: no boxing changes the grouped split}}
  %y = pf.to_global %x : !pf.global<12x4xf32, #P, #pf.sbp<[S(0, 3)]>> -> !pf.global<12x4xf32, #Q, #pf.sbp<[S(0, 3)]>>
  return %y : !pf.global<12x4xf32, #Q, #pf.sbp<[S(0, 3)]>>
}
