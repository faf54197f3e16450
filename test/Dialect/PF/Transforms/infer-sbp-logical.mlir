// RUN: pf-opt %s -split-input-file -pf-infer-sbp | FileCheck %s
// RUN: pf-opt %s -split-input-file -pf-infer-sbp -pf-insert-boxing -pf-lower-boxing | FileCheck %s --check-prefix=BOX

// Comparisons, logical ops, pf.where, pf.cast and a boolean masked_fill are
// element-wise: a split of any axis passes through them without
// communication (data parallel S(0), and a model-parallel S(1)).
#P = #pf.placement<"cpu", [0, 1]>
// CHECK-LABEL: func.func @split
// CHECK: pf.compare {{.*}} -> !pf.global<4x6xi1, #{{.*}}, #pf.sbp<[S(0)]>>
// CHECK: pf.logical_and {{.*}} -> !pf.global<4x6xi1, #{{.*}}, #pf.sbp<[S(0)]>>
// CHECK: pf.logical_not {{.*}} -> !pf.global<4x6xi1, #{{.*}}, #pf.sbp<[S(0)]>>
// CHECK: pf.where {{.*}} -> !pf.global<4x6xf32, #{{.*}}, #pf.sbp<[S(0)]>>
// CHECK: pf.masked_fill {{.*}} -> !pf.global<4x6xf32, #{{.*}}, #pf.sbp<[S(0)]>>
// CHECK: pf.cast {{.*}} -> !pf.global<4x6xi32, #{{.*}}, #pf.sbp<[S(0)]>>
// CHECK: pf.compare {{.*}} -> !pf.global<4x6xi1, #{{.*}}, #pf.sbp<[S(1)]>>
// CHECK: pf.logical_or {{.*}} -> !pf.global<4x6xi1, #{{.*}}, #pf.sbp<[S(1)]>>
// CHECK: pf.logical_xor {{.*}} -> !pf.global<4x6xi1, #{{.*}}, #pf.sbp<[S(1)]>>
// BOX-LABEL: func.func @split
// BOX-NOT: pf.all_gather
// BOX-NOT: pf.all_reduce
// BOX-NOT: pf.all_to_all
// BOX: return
func.func @split(%x: !pf.global<4x6xf32, #P, #pf.sbp<[S(0)]>>, %k: !pf.global<4x6xi1, #P, #pf.sbp<[S(0)]>>,
                 %m: !pf.global<4x6xf32, #P, #pf.sbp<[S(1)]>>, %j: !pf.global<4x6xi1, #P, #pf.sbp<[S(1)]>>)
    -> (!pf.global<4x6xf32, #P, #pf.sbp<[S(0)]>>, !pf.global<4x6xi32, #P, #pf.sbp<[S(0)]>>, !pf.global<4x6xi1, #P, #pf.sbp<[S(1)]>>) {
  %z = pf.constant dense<0.0> : tensor<4x6xf32> : !pf.global<4x6xf32, #P, #pf.sbp<[B]>>
  %c = pf.compare %x, %z {predicate = "lt"} : (!pf.global<4x6xf32, #P, #pf.sbp<[S(0)]>>, !pf.global<4x6xf32, #P, #pf.sbp<[B]>>) -> !pf.global<4x6xi1, #P>
  %a = pf.logical_and %c, %k : (!pf.global<4x6xi1, #P>, !pf.global<4x6xi1, #P, #pf.sbp<[S(0)]>>) -> !pf.global<4x6xi1, #P>
  %n = pf.logical_not %a : (!pf.global<4x6xi1, #P>) -> !pf.global<4x6xi1, #P>
  %w = pf.where %n, %x, %z : (!pf.global<4x6xi1, #P>, !pf.global<4x6xf32, #P, #pf.sbp<[S(0)]>>, !pf.global<4x6xf32, #P, #pf.sbp<[B]>>) -> !pf.global<4x6xf32, #P>
  %f = pf.masked_fill %w, %k {value = -1.0 : f64} : (!pf.global<4x6xf32, #P>, !pf.global<4x6xi1, #P, #pf.sbp<[S(0)]>>) -> !pf.global<4x6xf32, #P, #pf.sbp<[S(0)]>>
  %i = pf.cast %a : !pf.global<4x6xi1, #P> -> !pf.global<4x6xi32, #P, #pf.sbp<[S(0)]>>
  %c1 = pf.compare %m, %m {predicate = "eq"} : (!pf.global<4x6xf32, #P, #pf.sbp<[S(1)]>>, !pf.global<4x6xf32, #P, #pf.sbp<[S(1)]>>) -> !pf.global<4x6xi1, #P>
  %o = pf.logical_or %c1, %j : (!pf.global<4x6xi1, #P>, !pf.global<4x6xi1, #P, #pf.sbp<[S(1)]>>) -> !pf.global<4x6xi1, #P>
  %e = pf.logical_xor %o, %j : (!pf.global<4x6xi1, #P>, !pf.global<4x6xi1, #P, #pf.sbp<[S(1)]>>) -> !pf.global<4x6xi1, #P, #pf.sbp<[S(1)]>>
  return %f, %i, %e : !pf.global<4x6xf32, #P, #pf.sbp<[S(0)]>>, !pf.global<4x6xi32, #P, #pf.sbp<[S(0)]>>, !pf.global<4x6xi1, #P, #pf.sbp<[S(1)]>>
}

// -----

// A comparison of partial sums is not the ranks' comparisons: the partial
// operand is made whole (all-reduced to B) before pf.compare, whose result
// is never P. pf.where is linear in its two values for a fixed condition:
// partial values stay partial.
#P = #pf.placement<"cpu", [0, 1]>
// CHECK-LABEL: func.func @partial
// CHECK: pf.compare {{.*}}pf.sbp_operands = [#pf.sbp<[B]>, #pf.sbp<[B]>]{{.*}} -> !pf.global<4xi1, #{{.*}}, #pf.sbp<[B]>>
// CHECK: pf.where {{.*}}pf.sbp_operands = [#pf.sbp<[B]>, #pf.sbp<[P]>, #pf.sbp<[P]>]{{.*}} -> !pf.global<4xf32, #{{.*}}, #pf.sbp<[P]>>
// BOX-LABEL: func.func @partial
// BOX: %[[S:.*]] = pf.all_reduce %arg0
// BOX: pf.compare %[[S]], %arg1
// BOX-NOT: pf.all_reduce
// BOX: pf.where
// BOX-NOT: pf.all_reduce
// BOX: return
func.func @partial(%p: !pf.global<4xf32, #P, #pf.sbp<[P]>>, %b: !pf.global<4xf32, #P, #pf.sbp<[B]>>,
                   %q: !pf.global<4xf32, #P, #pf.sbp<[P]>>) -> !pf.global<4xf32, #P, #pf.sbp<[P]>> {
  %c = pf.compare %p, %b {predicate = "gt"} : (!pf.global<4xf32, #P, #pf.sbp<[P]>>, !pf.global<4xf32, #P, #pf.sbp<[B]>>) -> !pf.global<4xi1, #P>
  %w = pf.where %c, %p, %q : (!pf.global<4xi1, #P>, !pf.global<4xf32, #P, #pf.sbp<[P]>>, !pf.global<4xf32, #P, #pf.sbp<[P]>>) -> !pf.global<4xf32, #P, #pf.sbp<[P]>>
  return %w : !pf.global<4xf32, #P, #pf.sbp<[P]>>
}
