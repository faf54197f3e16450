// A widening float cast passes a partial sum (bf16 -> f32 is exact: the
// wide partials add up to the narrow sum without its rounding); a
// narrowing one does not (rounding each partial is not rounding the sum).
// (infer-sbp-amp-gradient.mlir: what this does to a mixed-precision
// data-parallel gradient.)
// RUN: pf-opt %s -split-input-file -pf-infer-sbp | FileCheck %s

#DP = #pf.placement<"cpu", [0, 1]>
// CHECK-LABEL: func.func @widen
// CHECK: pf.cast %arg0 {pf.sbp_operands = [#pf.sbp<[P]>]} : !pf.global<6x8xbf16, #{{.*}}, #pf.sbp<[P]>> -> !pf.global<6x8xf32, #{{.*}}, #pf.sbp<[P]>>
// CHECK-NEXT: pf.to_global
func.func @widen(%g: !pf.global<6x8xbf16, #DP, #pf.sbp<[P]>>) -> !pf.global<6x8xf32, #DP> {
  %c = pf.cast %g : !pf.global<6x8xbf16, #DP, #pf.sbp<[P]>> -> !pf.global<6x8xf32, #DP>
  return %c : !pf.global<6x8xf32, #DP>
}

// -----

#DP = #pf.placement<"cpu", [0, 1]>
// CHECK-LABEL: func.func @narrow
// CHECK: pf.cast %arg0 {pf.sbp_operands = [#pf.sbp<[B]>]} : !pf.global<6x8xf32, #{{.*}}, #pf.sbp<[P]>> -> !pf.global<6x8xbf16, #{{.*}}, #pf.sbp<[B]>>
func.func @narrow(%g: !pf.global<6x8xf32, #DP, #pf.sbp<[P]>>) -> !pf.global<6x8xbf16, #DP> {
  %c = pf.cast %g : !pf.global<6x8xf32, #DP, #pf.sbp<[P]>> -> !pf.global<6x8xbf16, #DP>
  return %c : !pf.global<6x8xbf16, #DP>
}
