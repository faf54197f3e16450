// RUN: pf-opt %s --pf-insert-boxing --verify-diagnostics

// Hand-written layouts that are no signature of the op: pf-insert-boxing
// checks every op after boxing.
#P = #pf.placement<"cpu", [0, 1]>
func.func @not_a_signature(%x: !pf.global<8x16xf32, #P, #pf.sbp<[S(0)]>>) {
  // expected-error @+1 {{operand layouts (#pf.sbp<[S(0)]>) and result layouts (#pf.sbp<[S(1)]>) are not an SBP signature of this op}}
  %r = pf.relu %x : (!pf.global<8x16xf32, #P, #pf.sbp<[S(0)]>>) -> !pf.global<8x16xf32, #P, #pf.sbp<[S(1)]>>
  return
}
