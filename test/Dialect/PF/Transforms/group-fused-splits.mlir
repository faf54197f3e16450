// RUN: pf-opt %s -pf-group-fused-splits | FileCheck %s --check-prefix=GROUP
// RUN: pf-opt %s -pf-group-fused-splits -pf-autodiff -pf-infer-sbp | FileCheck %s --check-prefix=SBP
// RUN: pf-opt %s -pf-group-fused-splits -pf-autodiff -pf-infer-sbp -pf-insert-boxing -pf-lower-boxing=report -o /dev/null 2>&1 | FileCheck %s --check-prefix=BOXING
// RUN: pf-opt %s -pf-group-fused-splits -pf-autodiff -pf-infer-sbp -pf-insert-boxing -pf-lower-boxing -pf-partition-ranks | FileCheck %s --check-prefix=RANK
// RUN: pf-opt %s -pf-group-fused-splits -pf-autodiff -pf-infer-sbp -pf-insert-boxing -pf-lower-boxing -pf-partition-ranks -pf-cpu-folds -convert-pf-to-cpu=outline-actions=false | FileCheck %s --check-prefix=LLVM

// A fused projection cut into q, k and v (nanoGPT's c_attn), its weight
// column-split over 2 ranks. S(0) would put rows [0, 6) on rank 0: q and
// half of k. The grouped split S(0, 3) puts rows [0, 2), [4, 6), [8, 10) on
// rank 0 instead, so each block is split as if it were its own projection:
// the cuts and their gradients move nothing. The only communication is
// the loss's all-reduce: dx (the contraction over the split columns) is a
// partial sum, and so is the gain's gradient, which its buffer keeps as one
// (no optimizer here).
#P = #pf.placement<"cpu", [0, 1]>
!W = !pf.global<12x8xf32, #P, #pf.sbp<[S(0)]>>
!V = !pf.global<12xf32, #P, #pf.sbp<[S(0)]>>
pf.param @qkv.weight : !W = #pf.init<normal(0.0, 1.0)>
pf.param @qkv.bias : !V = #pf.init<normal(0.0, 1.0)>
pf.param @gain : !pf.global<4x8xf32, #P, #pf.sbp<[B]>> = #pf.init<normal(0.0, 1.0)>
func.func @attn(%in: !pf.global<4x8xf32, #P, #pf.sbp<[B]>>) -> !pf.global<f32, #P> {
  %g = pf.read_param @gain : !pf.global<4x8xf32, #P, #pf.sbp<[B]>>
  %x = pf.mul %in, %g : (!pf.global<4x8xf32, #P, #pf.sbp<[B]>>, !pf.global<4x8xf32, #P, #pf.sbp<[B]>>) -> !pf.global<4x8xf32, #P>
  %w = pf.read_param @qkv.weight : !W
  %y = pf.matmul %x, %w {transpose_b} : (!pf.global<4x8xf32, #P>, !W) -> !pf.global<4x12xf32, #P>
  %b = pf.read_param @qkv.bias : !V
  %z = pf.bias_add %y, %b {axis = 1 : i64} : (!pf.global<4x12xf32, #P>, !V) -> !pf.global<4x12xf32, #P>
  %q = pf.slice %z {offsets = array<i64: 0, 0>, sizes = array<i64: 4, 4>} : (!pf.global<4x12xf32, #P>) -> !pf.global<4x4xf32, #P>
  %k = pf.slice %z {offsets = array<i64: 0, 4>, sizes = array<i64: 4, 4>} : (!pf.global<4x12xf32, #P>) -> !pf.global<4x4xf32, #P>
  %v = pf.slice %z {offsets = array<i64: 0, 8>, sizes = array<i64: 4, 4>} : (!pf.global<4x12xf32, #P>) -> !pf.global<4x4xf32, #P>
  %qk = pf.mul %q, %k : (!pf.global<4x4xf32, #P>, !pf.global<4x4xf32, #P>) -> !pf.global<4x4xf32, #P>
  %o = pf.add %qk, %v : (!pf.global<4x4xf32, #P>, !pf.global<4x4xf32, #P>) -> !pf.global<4x4xf32, #P>
  %s = pf.reduce_sum %o {axes = array<i64: 0, 1>} : (!pf.global<4x4xf32, #P>) -> !pf.global<f32, #P>
  return %s : !pf.global<f32, #P>
}
// GROUP: pf.param @qkv.weight : !pf.global<12x8xf32, #{{.*}}, #pf.sbp<[S(0, 3)]>>
// GROUP: pf.param @qkv.bias : !pf.global<12xf32, #{{.*}}, #pf.sbp<[S(0, 3)]>>
// GROUP: pf.read_param @qkv.weight : !pf.global<12x8xf32, #{{.*}}, #pf.sbp<[S(0, 3)]>>

// The gradient buffers and every value of the projection's columns take
// the grouped split; each block is a plain split.
// SBP: pf.param @qkv.weight.grad : !pf.global<12x8xf32, #{{.*}}, #pf.sbp<[S(0, 3)]>>
// SBP: pf.param @gain.grad : !pf.global<4x8xf32, #{{.*}}, #pf.sbp<[P]>>
// SBP-LABEL: func.func @attn
// SBP: pf.matmul {{.*}} -> !pf.global<4x12xf32, #{{.*}}, #pf.sbp<[S(1, 3)]>>
// SBP: pf.bias_add {{.*}} -> !pf.global<4x12xf32, #{{.*}}, #pf.sbp<[S(1, 3)]>>
// SBP-COUNT-3: pf.slice {{.*}} -> !pf.global<4x4xf32, #{{.*}}, #pf.sbp<[S(1)]>>
// The blocks' gradients (pads of adjacent boxes, summed) become one
// concatenation of three S(1) blocks: the grouped split again.
// SBP-NOT: pf.pad
// SBP: pf.concat {{.*}}axis = 1 : i64{{.*}} -> !pf.global<4x12xf32, #{{.*}}, #pf.sbp<[S(1, 3)]>>
// SBP-NOT: pf.pad
// SBP: pf.matmul {{.*}}pf.phase = "backward_input"{{.*}} -> !pf.global<4x8xf32, #{{.*}}, #pf.sbp<[P]>>

// BOXING: pf boxing report: 1 communication op(s)
// BOXING-NEXT: all_reduce f32 {{.*}}#pf.sbp<[P]> -> #pf.sbp<[B]>

// Rank 1 holds rows 2-3 of each block: parts at rows 2, 6 and 10. Its
// blocks start at 0, 2 and 4 of its 6 local columns.
// RANK-LABEL: module @rank1
// RANK: pf.param @qkv.weight : !pf.global<6x8xf32, {{.*}}pf.logical_shape = array<i64: 12, 8>, pf.shard_groups = array<i64: 0, 3, 4>, pf.shard_offset = array<i64: 2, 0>
// RANK: pf.slice %{{.*}} {offsets = array<i64: 0, 0>, sizes = array<i64: 4, 2>}
// RANK: pf.slice %{{.*}} {offsets = array<i64: 0, 2>, sizes = array<i64: 4, 2>}
// RANK: pf.slice %{{.*}} {offsets = array<i64: 0, 4>, sizes = array<i64: 4, 2>}
// RANK: pf.concat {{.*}}: (!pf.global<4x2xf32, {{.*}}>, !pf.global<4x2xf32, {{.*}}>, !pf.global<4x2xf32, {{.*}}>) -> !pf.global<4x6xf32

// Each part is drawn and registered as its own box of the logical tensor.
// LLVM-LABEL: llvm.func @pf_init_params
// LLVM: llvm.call @pfrt_init_param
// LLVM: llvm.call @pfrt_state_register
// LLVM: llvm.call @pfrt_init_param
// LLVM: llvm.call @pfrt_state_add_part
// LLVM: llvm.call @pfrt_init_param
// LLVM: llvm.call @pfrt_state_add_part

