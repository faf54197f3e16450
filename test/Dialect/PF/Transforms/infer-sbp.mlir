// RUN: pf-opt %s --split-input-file --pf-training-pipeline --pf-spmd-pipeline | FileCheck %s
// RUN: pf-opt %s --split-input-file --pf-training-pipeline --pf-spmd-pipeline=boxing-report=- -o /dev/null | FileCheck %s --check-prefix=REPORT

// Data parallel over 4 ranks: the batch is split, parameters are free.
// After autodiff: exactly one all-reduce per parameter gradient, plus the
// step's loss (a partial sum returned as its value).
#P = #pf.placement<"cpu", [0, 1, 2, 3]>
pf.param @w1 : !pf.global<784x64xf32, #P> = #pf.init<uniform(-0.1, 0.1)>
pf.param @w2 : !pf.global<64x10xf32, #P> = #pf.init<uniform(-0.1, 0.1)>
func.func @dp(%x: !pf.global<16x784xf32, #P, #pf.sbp<[S(0)]>>, %y: !pf.global<16xi64, #P, #pf.sbp<[S(0)]>>) -> !pf.global<f32, #P> {
  %w1 = pf.read_param @w1 : !pf.global<784x64xf32, #P>
  %h = pf.matmul %x, %w1 : (!pf.global<16x784xf32, #P, #pf.sbp<[S(0)]>>, !pf.global<784x64xf32, #P>) -> !pf.global<16x64xf32, #P>
  %r = pf.relu %h : (!pf.global<16x64xf32, #P>) -> !pf.global<16x64xf32, #P>
  %w2 = pf.read_param @w2 : !pf.global<64x10xf32, #P>
  %o = pf.matmul %r, %w2 : (!pf.global<16x64xf32, #P>, !pf.global<64x10xf32, #P>) -> !pf.global<16x10xf32, #P>
  %l = pf.softmax_cross_entropy %o, %y : (!pf.global<16x10xf32, #P>, !pf.global<16xi64, #P, #pf.sbp<[S(0)]>>) -> !pf.global<f32, #P>
  return %l : !pf.global<f32, #P>
}
// CHECK-DAG: pf.param @w1 : !pf.global<784x64xf32, #[[P:.*]], #pf.sbp<[B]>>
// CHECK-DAG: pf.param @w1.grad : !pf.global<784x64xf32, #{{.*}}, #pf.sbp<[P]>>
// CHECK-LABEL: func.func @dp
// CHECK: pf.matmul {{.*}} -> !pf.global<16x64xf32, #{{.*}}, #pf.sbp<[S(0)]>>
// CHECK: pf.softmax_cross_entropy {{.*}} -> !pf.global<f32, #{{.*}}, #pf.sbp<[P]>>
// CHECK-NOT: pf.all_gather
// CHECK-NOT: pf.reduce_scatter
// CHECK-COUNT-3: pf.all_reduce
// CHECK-NOT: pf.all_reduce
// CHECK: return
// The report's bytes are DESIGN.md's closed forms: all-reduce 2(n-1)/n T
// with T = 784*64*4 = 200704 bytes, n = 4: 301056.
// REPORT: pf boxing report: 3 communication op(s)
// REPORT-NEXT: all_reduce 784x64xf32 {{.*}} #pf.sbp<[P]> -> #pf.sbp<[B]> groups {{\[\[}}0, 1, 2, 3]]: 301056 bytes/rank
// REPORT-NEXT: all_reduce 64x10xf32 {{.*}}: 3840 bytes/rank
// REPORT-NEXT: all_reduce f32 {{.*}}: 6 bytes/rank
// REPORT-NEXT: total: 304902 bytes/rank per step

// -----

// Seed 004's hybrid MLP: the hidden layer is data parallel, the output
// layer's weight [10, 512] is split by rows (output features); the gathered
// hidden activations (the user's to_global B) meet the split weight and the
// logits come out split by columns, S(1).
#P = #pf.placement<"cpu", [0, 1]>
pf.param @hidden.weight : !pf.global<512x784xf32, #P, #pf.sbp<[B]>> = #pf.init<kaiming_uniform(784)>
pf.param @output.weight : !pf.global<10x512xf32, #P, #pf.sbp<[S(0)]>> = #pf.init<kaiming_uniform(512)>
func.func @hybrid(%x: !pf.global<16x784xf32, #P, #pf.sbp<[S(0)]>>, %y: !pf.global<16xi64, #P, #pf.sbp<[B]>>) -> !pf.global<f32, #P> {
  %w = pf.read_param @hidden.weight : !pf.global<512x784xf32, #P, #pf.sbp<[B]>>
  %h = pf.matmul %x, %w {transpose_b} : (!pf.global<16x784xf32, #P, #pf.sbp<[S(0)]>>, !pf.global<512x784xf32, #P, #pf.sbp<[B]>>) -> !pf.global<16x512xf32, #P>
  %a = pf.relu %h : (!pf.global<16x512xf32, #P>) -> !pf.global<16x512xf32, #P>
  %g = pf.to_global %a : !pf.global<16x512xf32, #P> -> !pf.global<16x512xf32, #P, #pf.sbp<[B]>>
  %v = pf.read_param @output.weight : !pf.global<10x512xf32, #P, #pf.sbp<[S(0)]>>
  %o = pf.matmul %g, %v {transpose_b} : (!pf.global<16x512xf32, #P, #pf.sbp<[B]>>, !pf.global<10x512xf32, #P, #pf.sbp<[S(0)]>>) -> !pf.global<16x10xf32, #P>
  %l = pf.softmax_cross_entropy %o, %y : (!pf.global<16x10xf32, #P>, !pf.global<16xi64, #P, #pf.sbp<[B]>>) -> !pf.global<f32, #P>
  return %l : !pf.global<f32, #P>
}
// CHECK-LABEL: func.func @hybrid
// CHECK: %[[H:.*]] = pf.matmul %arg0, {{.*}} -> !pf.global<16x512xf32, #{{.*}}, #pf.sbp<[S(0)]>>
// CHECK: %[[G:.*]] = pf.all_gather {{.*}} {axis = 0 : i64, groups = {{\[}}array<i64: 0, 1>]} : {{.*}}[S(0)]>> -> {{.*}}[B]>>
// CHECK: %[[O:.*]] = pf.matmul %[[G]], {{.*}}transpose_b{{.*}} -> !pf.global<16x10xf32, #{{.*}}, #pf.sbp<[S(1)]>>
// The loss takes rows: the column split becomes a row split (all-to-all,
// fewer bytes than gathering).
// CHECK: pf.all_to_all %[[O]] {concat_axis = 1 : i64, groups = {{\[}}array<i64: 0, 1>], split_axis = 0 : i64}
// The split weight's gradient stays split: no communication for it.
// CHECK: pf.read_param @output.weight.grad {{.*}} : !pf.global<10x512xf32, #{{.*}}, #pf.sbp<[S(0)]>>

// -----

// A Megatron-style block: column-parallel fc1 (weight split by output
// features), row-parallel fc2 (weight split by input features), the block's
// output replicated (the user's to_global B). Exactly one all-reduce in the
// forward pass (fc2's partial output) and one in the backward pass (the
// partial gradient reaching the replicated layer before the block).
#P = #pf.placement<"cpu", [0, 1]>
pf.param @l0.weight : !pf.global<16x16xf32, #P, #pf.sbp<[B]>> = #pf.init<uniform(-0.1, 0.1)>
pf.param @fc1.weight : !pf.global<32x16xf32, #P, #pf.sbp<[S(0)]>> = #pf.init<uniform(-0.1, 0.1)>
pf.param @fc2.weight : !pf.global<16x32xf32, #P, #pf.sbp<[S(1)]>> = #pf.init<uniform(-0.1, 0.1)>
func.func @megatron(%x: !pf.global<8x16xf32, #P, #pf.sbp<[B]>>, %y: !pf.global<8xi64, #P, #pf.sbp<[B]>>) -> !pf.global<f32, #P> {
  %w0 = pf.read_param @l0.weight : !pf.global<16x16xf32, #P, #pf.sbp<[B]>>
  %h0 = pf.matmul %x, %w0 {transpose_b} : (!pf.global<8x16xf32, #P, #pf.sbp<[B]>>, !pf.global<16x16xf32, #P, #pf.sbp<[B]>>) -> !pf.global<8x16xf32, #P>
  %w1 = pf.read_param @fc1.weight : !pf.global<32x16xf32, #P, #pf.sbp<[S(0)]>>
  %h1 = pf.matmul %h0, %w1 {transpose_b} : (!pf.global<8x16xf32, #P>, !pf.global<32x16xf32, #P, #pf.sbp<[S(0)]>>) -> !pf.global<8x32xf32, #P>
  %a1 = pf.relu %h1 : (!pf.global<8x32xf32, #P>) -> !pf.global<8x32xf32, #P>
  %w2 = pf.read_param @fc2.weight : !pf.global<16x32xf32, #P, #pf.sbp<[S(1)]>>
  %o = pf.matmul %a1, %w2 {transpose_b} : (!pf.global<8x32xf32, #P>, !pf.global<16x32xf32, #P, #pf.sbp<[S(1)]>>) -> !pf.global<8x16xf32, #P>
  %r = pf.to_global %o : !pf.global<8x16xf32, #P> -> !pf.global<8x16xf32, #P, #pf.sbp<[B]>>
  %l = pf.softmax_cross_entropy %r, %y : (!pf.global<8x16xf32, #P, #pf.sbp<[B]>>, !pf.global<8xi64, #P, #pf.sbp<[B]>>) -> !pf.global<f32, #P>
  return %l : !pf.global<f32, #P>
}
// CHECK-LABEL: func.func @megatron
// CHECK: pf.matmul {{.*}} -> !pf.global<8x32xf32, #{{.*}}, #pf.sbp<[S(1)]>>
// CHECK: pf.matmul {{.*}} -> !pf.global<8x16xf32, #{{.*}}, #pf.sbp<[P]>>
// CHECK: pf.all_reduce {{.*}} : !pf.global<8x16xf32, #{{.*}}, #pf.sbp<[P]>> -> !pf.global<8x16xf32, #{{.*}}, #pf.sbp<[B]>>
// CHECK-NOT: pf.all_gather
// CHECK-NOT: pf.reduce_scatter
// CHECK: pf.all_reduce {{.*}} {{.*}}pf.phase = "update"{{.*}} : !pf.global<16x16xf32
// CHECK-NOT: pf.all_reduce
// CHECK: return

// -----

// 2x2: data parallel across the rows of the grid, tensor parallel within.
#Q = #pf.placement<"cpu", [[0, 1], [2, 3]]>
pf.param @w : !pf.global<32x16xf32, #Q, #pf.sbp<[B, S(0)]>> = #pf.init<uniform(-0.1, 0.1)>
func.func @grid(%x: !pf.global<8x16xf32, #Q, #pf.sbp<[S(0), B]>>, %y: !pf.global<8xi64, #Q, #pf.sbp<[S(0), B]>>) -> !pf.global<f32, #Q> {
  %w = pf.read_param @w : !pf.global<32x16xf32, #Q, #pf.sbp<[B, S(0)]>>
  %o = pf.matmul %x, %w {transpose_b} : (!pf.global<8x16xf32, #Q, #pf.sbp<[S(0), B]>>, !pf.global<32x16xf32, #Q, #pf.sbp<[B, S(0)]>>) -> !pf.global<8x32xf32, #Q>
  %l = pf.softmax_cross_entropy %o, %y : (!pf.global<8x32xf32, #Q>, !pf.global<8xi64, #Q, #pf.sbp<[S(0), B]>>) -> !pf.global<f32, #Q>
  return %l : !pf.global<f32, #Q>
}
// CHECK-LABEL: func.func @grid
// CHECK: pf.matmul {{.*}} -> !pf.global<8x32xf32, #{{.*}}, #pf.sbp<[S(0), S(1)]>>
// The cross-entropy takes the class split as it is (its lowering
// all-reduces each row's max and sums, 80 bytes a rank, where an all-to-all
// of the logits would move 128).
// CHECK-NOT: pf.all_to_all
// CHECK: pf.softmax_cross_entropy {{.*}} : (!pf.global<8x32xf32, #{{.*}}, #pf.sbp<[S(0), S(1)]>>, !pf.global<8xi64, #{{.*}}, #pf.sbp<[S(0), B]>>) -> !pf.global<f32, #{{.*}}, #pf.sbp<[P, B]>>
// CHECK-NOT: pf.all_to_all
// The weight gradient is summed across the data-parallel dimension only.
// CHECK: pf.all_reduce {{.*}} {groups = [array<i64: 0, 2>, array<i64: 1, 3>]{{.*}} : !pf.global<32x16xf32, #{{.*}}, #pf.sbp<[P, S(0)]>> -> !pf.global<32x16xf32, #{{.*}}, #pf.sbp<[B, S(0)]>>

// -----

// A pipeline boundary between placements: stage 0 data parallel on [0, 1],
// stage 1 on [2, 3]; the activation crosses with its split kept (the
// to_global leaves the layout open), rank 0's rows to 2, rank 1's to 3.
#A = #pf.placement<"cpu", [0, 1]>
#C = #pf.placement<"cpu", [2, 3]>
pf.param @a : !pf.global<16x16xf32, #A> = #pf.init<uniform(-0.1, 0.1)>
pf.param @c : !pf.global<16x4xf32, #C> = #pf.init<uniform(-0.1, 0.1)>
func.func @boundary(%x: !pf.global<8x16xf32, #A, #pf.sbp<[S(0)]>>, %y: !pf.global<8xi64, #C, #pf.sbp<[S(0)]>>) -> !pf.global<f32, #C> {
  %a = pf.read_param @a {pf.stage = 0} : !pf.global<16x16xf32, #A>
  %h = pf.matmul %x, %a {pf.stage = 0} : (!pf.global<8x16xf32, #A, #pf.sbp<[S(0)]>>, !pf.global<16x16xf32, #A>) -> !pf.global<8x16xf32, #A>
  %m = pf.to_global %h : !pf.global<8x16xf32, #A> -> !pf.global<8x16xf32, #C>
  %c = pf.read_param @c {pf.stage = 1} : !pf.global<16x4xf32, #C>
  %o = pf.matmul %m, %c {pf.stage = 1} : (!pf.global<8x16xf32, #C>, !pf.global<16x4xf32, #C>) -> !pf.global<8x4xf32, #C>
  %l = pf.softmax_cross_entropy %o, %y {pf.stage = 1} : (!pf.global<8x4xf32, #C>, !pf.global<8xi64, #C, #pf.sbp<[S(0)]>>) -> !pf.global<f32, #C>
  return %l : !pf.global<f32, #C>
}
// CHECK-LABEL: func.func @boundary
// CHECK: pf.transfer {{.*}} {moves = [array<i64: 0, 2, 0, 0, 4, 16>, array<i64: 1, 3, 4, 0, 4, 16>]} : !pf.global<8x16xf32, #{{.*}}, #pf.sbp<[S(0)]>> -> !pf.global<8x16xf32, #{{.*}}, #pf.sbp<[S(0)]>>
// The gradient goes back the same way.
// CHECK: pf.transfer {{.*}} {moves = [array<i64: 2, 0, 0, 0, 4, 16>, array<i64: 3, 1, 4, 0, 4, 16>]
