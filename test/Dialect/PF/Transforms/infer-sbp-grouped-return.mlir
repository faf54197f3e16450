// RUN: pf-opt %s -split-input-file -pf-infer-sbp -verify-diagnostics | FileCheck %s

// A step returns a grouped split whole: the host reads one box per rank, and
// a grouped part is g blocks, not one.
#P = #pf.placement<"cpu", [0, 1]>
pf.param @qkv : !pf.global<12x4xf32, #P, #pf.sbp<[S(0, 3)]>> = #pf.init<zeros>
// CHECK-LABEL: func.func @ret
// CHECK-SAME: -> !pf.global<12x4xf32, #{{.*}}, #pf.sbp<[B]>>
// CHECK: %[[Y:.*]] = pf.relu {{.*}} -> !pf.global<12x4xf32, #{{.*}}, #pf.sbp<[S(0, 3)]>>
// CHECK: %[[B:.*]] = pf.to_global %[[Y]] : !pf.global<12x4xf32, #{{.*}}, #pf.sbp<[S(0, 3)]>> -> !pf.global<12x4xf32, #{{.*}}, #pf.sbp<[B]>>
// CHECK: return %[[B]]
func.func @ret() -> !pf.global<12x4xf32, #P> {
  %w = pf.read_param @qkv : !pf.global<12x4xf32, #P, #pf.sbp<[S(0, 3)]>>
  %y = pf.relu %w : (!pf.global<12x4xf32, #P, #pf.sbp<[S(0, 3)]>>) -> !pf.global<12x4xf32, #P>
  return %y : !pf.global<12x4xf32, #P>
}

// -----

#P = #pf.placement<"cpu", [0, 1]>
pf.param @qkv : !pf.global<12x4xf32, #P, #pf.sbp<[S(0, 3)]>> = #pf.init<zeros>
func.func @declared() -> !pf.global<12x4xf32, #P, #pf.sbp<[S(0, 3)]>> {
  %w = pf.read_param @qkv : !pf.global<12x4xf32, #P, #pf.sbp<[S(0, 3)]>>
  // expected-error @below {{pf-infer-sbp: result 0 is declared with the grouped split #pf.sbp<[S(0, 3)]>, which a step cannot return (declare B or a plain split)}}
  return %w : !pf.global<12x4xf32, #P, #pf.sbp<[S(0, 3)]>>
}
