// RUN: pf-opt %s -pf-insert-boxing | FileCheck %s

// A layout change is reused by later consumers of the same stage, but a
// micro-batch's change is not the update's: in a micro-batch template it is
// copied once per micro-batch, and the update must read its own.
#P = #pf.placement<"cpu", [0, 1]>
!B = !pf.global<2x2xf32, #P, #pf.sbp<[B]>>
!S = !pf.global<2x2xf32, #P, #pf.sbp<[S(0)]>>
// CHECK-LABEL: func.func @shared
// CHECK: %[[C:.*]] = pf.constant
// CHECK-NEXT: %[[M:.*]] = pf.to_global %[[C]] {pf.microbatch = 0 : i64}
// CHECK-NEXT: pf.add %{{.*}}, %[[M]] {pf.microbatch = 0 : i64}
// CHECK-NEXT: pf.mul %{{.*}}, %[[M]] {pf.microbatch = 0 : i64, pf.phase = "backward_input"}
// CHECK-NEXT: %[[U:.*]] = pf.to_global %[[C]] {pf.phase = "update"}
// CHECK-NEXT: pf.add %{{.*}}, %[[U]] {pf.phase = "update"}
func.func @shared(%x: !S) -> (!S, !S, !S) {
  %c = pf.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32> : !B
  %a = pf.add %x, %c {pf.microbatch = 0 : i64, pf.sbp_operands = [#pf.sbp<[S(0)]>, #pf.sbp<[S(0)]>]} : (!S, !B) -> !S
  %g = pf.mul %x, %c {pf.microbatch = 0 : i64, pf.phase = "backward_input", pf.sbp_operands = [#pf.sbp<[S(0)]>, #pf.sbp<[S(0)]>]} : (!S, !B) -> !S
  %u = pf.add %x, %c {pf.phase = "update", pf.sbp_operands = [#pf.sbp<[S(0)]>, #pf.sbp<[S(0)]>]} : (!S, !B) -> !S
  return %a, %g, %u : !S, !S, !S
}
