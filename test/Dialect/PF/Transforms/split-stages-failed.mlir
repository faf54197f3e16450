// RUN: pf-opt %s -split-input-file -pf-split-stages -verify-diagnostics

// The step must be straight-line code.
#P0 = #pf.placement<"cpu", [0]>
!A = !pf.global<4xf32, #P0, #pf.sbp<[B]>>
// expected-error @+1 {{'func.func' op pf-split-stages expects one block}}
func.func @step(%x: !A) -> !A {
  %f = pf.relu %x {pf.stage = 0, pf.microbatch = 0} : (!A) -> !A
  return %f : !A
^unreachable:
  return %x : !A
}
