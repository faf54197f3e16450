// RUN: pf-opt %s -pf-decompose-losses | FileCheck %s --check-prefix=SPLIT
// RUN: pf-opt %s -pf-decompose-losses -pf-autodiff="wrt-inputs=true" -pf-infer-sbp | FileCheck %s --check-prefix=SBP
// RUN: pf-opt %s -pf-decompose-losses -pf-autodiff="wrt-inputs=true" -pf-infer-sbp -pf-insert-boxing -pf-lower-boxing=report -o /dev/null 2>&1 | FileCheck %s --check-prefix=BOXING
// RUN: pf-opt %s -pf-decompose-losses -pf-autodiff="wrt-inputs=true" -pf-infer-sbp -pf-insert-boxing -pf-lower-boxing -pf-partition-ranks -pf-cpu-folds -convert-pf-to-cpu=outline-actions=false | FileCheck %s

// Cross-entropy with ignore_index on a data-parallel batch, written by
// pf-decompose-losses as the sum over the kept rows divided by their count:
// each rank's sum and count are partial sums, so the batch stays split and
// two scalars are all-reduced (the logits are not gathered, as they are
// for the mean itself: xent-ignore.mlir).
#P = #pf.placement<"cpu", [0, 1]>
func.func @ignore(%x: !pf.global<4x5xf32, #P, #pf.sbp<[S(0)]>>, %y: !pf.global<4xi64, #P, #pf.sbp<[S(0)]>>) -> !pf.global<f32, #P> {
  %l = pf.softmax_cross_entropy %x, %y {ignore_index = -1 : i64, pf.stage = 3 : i64} : (!pf.global<4x5xf32, #P, #pf.sbp<[S(0)]>>, !pf.global<4xi64, #P, #pf.sbp<[S(0)]>>) -> !pf.global<f32, #P>
  return %l : !pf.global<f32, #P>
}
// SPLIT-LABEL: func.func @ignore
// SPLIT: %[[S:.*]] = pf.softmax_cross_entropy %arg0, %arg1 {ignore_index = -1 : i64, pf.stage = 3 : i64, sum}
// SPLIT: %[[N:.*]] = pf.count_kept %arg1 {ignore_index = -1 : i64, pf.stage = 3 : i64}
// SPLIT: %[[M:.*]] = pf.div %[[S]], %[[N]] {pf.stage = 3 : i64}
// SPLIT: return %[[M]]

// SBP-LABEL: func.func @ignore
// SBP: pf.softmax_cross_entropy {{.*}}pf.sbp_operands = [#pf.sbp<[S(0)]>, #pf.sbp<[S(0)]>]{{.*}} -> !pf.global<f32, #{{.*}}, #pf.sbp<[P]>>
// SBP: pf.count_kept {{.*}} -> !pf.global<f32, #{{.*}}, #pf.sbp<[P]>>
// SBP: pf.softmax_cross_entropy_grad {{.*}}sum{{.*}} -> !pf.global<4x5xf32, #{{.*}}, #pf.sbp<[S(0)]>>

// BOXING: pf boxing report: 2 communication op(s)
// BOXING-NEXT: all_reduce f32 {{.*}}#pf.sbp<[P]> -> #pf.sbp<[B]>
// BOXING-NEXT: all_reduce f32 {{.*}}#pf.sbp<[P]> -> #pf.sbp<[B]>

// Two local rows per rank; the local sum is not rescaled.
// CHECK-LABEL: llvm.func @pf_step
// CHECK: llvm.call @pfrt_k_softmax_xent_sum
// CHECK-NOT: pfrt_k_scale
// CHECK: llvm.call @pfrt_k_count_kept
// CHECK: llvm.call @pfrt_k_softmax_xent_grad_sum
