// RUN: pf-opt %s -split-input-file --pf-training-pipeline --pf-spmd-pipeline | FileCheck %s
// RUN: pf-opt %s -split-input-file --pf-compile-cpu-pipeline | FileCheck %s --check-prefix=LLVM

// Megatron's head split: q, k and v split over heads (S(1)) keep attention
// and its gradient local; the only collective is the loss's.
#P = #pf.placement<"cpu", [0, 1]>
!H = !pf.global<2x4x16x8xf32, #P, #pf.sbp<[S(1)]>>
!A = !pf.global<2x4x16x8xf32, #P>
pf.param @v : !A = #pf.init<uniform(-0.1, 0.1)>
func.func @heads(%q: !H, %k: !H) -> !pf.global<f32, #P> {
  %v = pf.read_param @v : !A
  %o, %lse = pf.attention %q, %k, %v {scale = 0.35 : f64, causal} : (!H, !H, !A) -> (!A, !pf.global<2x4x16xf32, #P>)
  %s = pf.reduce_sum %o {axes = array<i64: 0, 1, 2, 3>} : (!A) -> !pf.global<f32, #P>
  return %s : !pf.global<f32, #P>
}
// CHECK-LABEL: func.func @heads
// CHECK: pf.attention {{.*}} -> (!pf.global<2x4x16x8xf32, #{{.*}}, #pf.sbp<[S(1)]>>, !pf.global<2x4x16xf32, #{{.*}}, #pf.sbp<[S(1)]>>)
// CHECK-NOT: pf.all_gather
// CHECK: pf.attention_grad {{.*}} -> (!pf.global<2x4x16x8xf32, #{{.*}}, #pf.sbp<[S(1)]>>, !pf.global<2x4x16x8xf32, #{{.*}}, #pf.sbp<[S(1)]>>, !pf.global<2x4x16x8xf32, #{{.*}}, #pf.sbp<[S(1)]>>)
// CHECK-COUNT-1: pf.all_reduce
// CHECK-NOT: pf.all_reduce
// CHECK: return
// Each rank calls the kernels on its two heads.
// LLVM: llvm.call @pfrt_k_attention(
// LLVM: llvm.call @pfrt_k_attention_grad(
// LLVM: llvm.call @pfrt_k_attention(
// LLVM: llvm.call @pfrt_k_attention_grad(

// -----

// Data parallel with a mask broadcast over the batch: the batch splits,
// the mask stays whole (B); no gradient flows into the inputs.
#P = #pf.placement<"cpu", [0, 1]>
!X = !pf.global<4x2x8x4xf32, #P, #pf.sbp<[S(0)]>>
!A = !pf.global<4x2x8x4xf32, #P>
!M = !pf.global<1x2x8x8xi1, #P>
pf.param @w : !pf.global<f32, #P> = #pf.init<uniform(0.5, 1.0)>
func.func @batch(%q: !X, %k: !X, %v: !X, %m: !M) -> !pf.global<f32, #P> {
  %o, %lse = pf.attention %q, %k, %v, %m {scale = 0.5 : f64} : (!X, !X, !X, !M) -> (!A, !pf.global<4x2x8xf32, #P>)
  %s = pf.reduce_sum %o {axes = array<i64: 0, 1, 2, 3>} : (!A) -> !pf.global<f32, #P>
  %w = pf.read_param @w : !pf.global<f32, #P>
  %l = pf.mul %s, %w : (!pf.global<f32, #P>, !pf.global<f32, #P>) -> !pf.global<f32, #P>
  return %l : !pf.global<f32, #P>
}
// CHECK-LABEL: func.func @batch
// CHECK: pf.attention {{.*}} : (!pf.global<4x2x8x4xf32, #{{.*}}, #pf.sbp<[S(0)]>>, !pf.global<4x2x8x4xf32, #{{.*}}, #pf.sbp<[S(0)]>>, !pf.global<4x2x8x4xf32, #{{.*}}, #pf.sbp<[S(0)]>>, !pf.global<1x2x8x8xi1, #{{.*}}, #pf.sbp<[B]>>) -> (!pf.global<4x2x8x4xf32, #{{.*}}, #pf.sbp<[S(0)]>>
// CHECK-NOT: pf.attention_grad
// LLVM-COUNT-2: llvm.call @pfrt_k_attention(
// LLVM-NOT: @pfrt_k_attention_grad(
