// RUN: pf-opt %s --split-input-file --pf-infer-sbp --verify-diagnostics

// A result layout that no signature produces: relu cannot make a partial
// sum.
#P = #pf.placement<"cpu", [0, 1]>
func.func @relu_partial(%x: !pf.global<8x16xf32, #P, #pf.sbp<[S(0)]>>) {
  // expected-error @+1 {{no SBP signature produces the result layout(s) #pf.sbp<[P]>}}
  %r = pf.relu %x : (!pf.global<8x16xf32, #P, #pf.sbp<[S(0)]>>) -> !pf.global<8x16xf32, #P, #pf.sbp<[P]>>
  return
}

