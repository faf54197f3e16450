// RUN: pf-opt %s -pf-autodiff -pf-infer-sbp | FileCheck %s --check-prefix=SBP
// RUN: pf-opt %s -pf-autodiff -pf-infer-sbp -pf-insert-boxing -pf-lower-boxing=report -o /dev/null 2>&1 | FileCheck %s --check-prefix=BOXING
// RUN: pf-opt %s -pf-autodiff -pf-infer-sbp -pf-insert-boxing -pf-lower-boxing -pf-partition-ranks | FileCheck %s --check-prefix=RANK
// RUN: pf-opt %s -pf-autodiff -pf-infer-sbp -pf-insert-boxing -pf-lower-boxing -pf-partition-ranks -pf-cpu-folds -convert-pf-to-cpu=outline-actions=false | FileCheck %s

// Megatron's vocabulary-parallel embedding: the table's rows split over 2
// ranks, the ids whole. Each rank looks up the ids in its rows (zeros for
// the others): the lookup is a partial sum, reduced once; the gradient
// needs nothing, each rank accumulating the ids in its rows.
#P = #pf.placement<"cpu", [0, 1]>
!T = !pf.global<8x4xf32, #P, #pf.sbp<[S(0)]>>
pf.param @wte : !T = #pf.init<normal(0.0, 1.0)>
func.func @lookup(%ids: !pf.global<6xi64, #P, #pf.sbp<[B]>>) -> !pf.global<f32, #P> {
  %t = pf.read_param @wte : !T
  %e = pf.embedding %t, %ids : (!T, !pf.global<6xi64, #P, #pf.sbp<[B]>>) -> !pf.global<6x4xf32, #P>
  %r = pf.relu %e : (!pf.global<6x4xf32, #P>) -> !pf.global<6x4xf32, #P>
  %s = pf.reduce_sum %r {axes = array<i64: 0, 1>} : (!pf.global<6x4xf32, #P>) -> !pf.global<f32, #P>
  return %s : !pf.global<f32, #P>
}
// SBP: pf.param @wte.grad : !pf.global<8x4xf32, #{{.*}}, #pf.sbp<[S(0)]>>
// SBP: pf.embedding {{.*}} -> !pf.global<6x4xf32, #{{.*}}, #pf.sbp<[P]>>
// SBP: pf.embedding_grad {{.*}} -> !pf.global<8x4xf32, #{{.*}}, #pf.sbp<[S(0)]>>

// BOXING: pf boxing report: 1 communication op(s)
// BOXING-NEXT: all_reduce 6x4xf32 {{.*}}#pf.sbp<[P]> -> #pf.sbp<[B]>

// RANK-LABEL: module @rank1
// RANK: pf.embedding {{.*}}pf.logical_shape = array<i64: 8, 4>, pf.shard_offset = array<i64: 4, 0>
// RANK: pf.embedding_grad {{.*}}num_rows = 4 : i64, pf.logical_shape = array<i64: 8, 4>, {{.*}}pf.shard_offset = array<i64: 4, 0>

// CHECK-LABEL: module @rank1
// CHECK: llvm.func @pf_step
// Rank 1's rows start at 4 (its shard_offset, above) of 8.
// (n = 6 ids, v = 4 local rows, d = 4, row0 = 4, vocab = 8)
// CHECK: llvm.mlir.constant(6 : i64)
// CHECK-NEXT: llvm.mlir.constant(4 : i64)
// CHECK-NEXT: llvm.mlir.constant(4 : i64)
// CHECK-NEXT: %[[ROW0:[0-9]+]] = llvm.mlir.constant(4 : i64)
// CHECK-NEXT: %[[VOCAB:[0-9]+]] = llvm.mlir.constant(8 : i64)
// CHECK-NEXT: llvm.call @pfrt_k_embedding_rows({{.*}}, %[[ROW0]], %[[VOCAB]])
// CHECK: llvm.call @pfrt_k_embedding_grad_rows
