// RUN: pf-opt %s -pf-autodiff="wrt-inputs=true" -pf-infer-sbp | FileCheck %s --check-prefix=SBP
// RUN: pf-opt %s -pf-autodiff="wrt-inputs=true" -pf-infer-sbp -pf-insert-boxing -pf-lower-boxing -pf-partition-ranks -pf-cpu-folds -convert-pf-to-cpu=outline-actions=false | FileCheck %s

// Cross-entropy with ignore_index on a data-parallel batch: the local means
// of ranks would not add up to the mean over the kept rows, so the op runs
// on the whole batch (the logits are gathered) and calls the ignoring
// kernels; without ignore_index the loss is a partial sum of the split batch.
// The training pipeline first rewrites it as sum / count, which splits
// (xent-ignore-split.mlir).
#P = #pf.placement<"cpu", [0, 1]>
func.func @ignore(%x: !pf.global<4x5xf32, #P, #pf.sbp<[S(0)]>>, %y: !pf.global<4xi64, #P, #pf.sbp<[S(0)]>>) -> !pf.global<f32, #P> {
  %l = pf.softmax_cross_entropy %x, %y {ignore_index = -1 : i64} : (!pf.global<4x5xf32, #P, #pf.sbp<[S(0)]>>, !pf.global<4xi64, #P, #pf.sbp<[S(0)]>>) -> !pf.global<f32, #P>
  return %l : !pf.global<f32, #P>
}
// SBP-LABEL: func.func @ignore
// SBP: pf.softmax_cross_entropy {{.*}}{ignore_index = -1 : i64, pf.sbp_operands = [#pf.sbp<[B]>, #pf.sbp<[B]>]}
// SBP: pf.softmax_cross_entropy_grad {{.*}}ignore_index = -1 : i64
// CHECK-LABEL: llvm.func @pf_step
// CHECK: llvm.call @pfrt_k_softmax_xent_ignore({{.*}}) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64) -> ()
// CHECK: llvm.call @pfrt_k_softmax_xent_grad_ignore
