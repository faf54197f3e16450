// pf-optimizer's ZeRO stages: on each hierarchy axis where a parameter is
// replicated, stage 1 splits its optimizer states, stage 2 its gradient
// buffer too, stage 3 the parameter too; SBP inference then updates each
// shard (reduce-scatter of the gradient, all-gather of the new parameter).
// RUN: pf-opt %s -split-input-file -pf-autodiff -pf-optimizer="kind=adam" | FileCheck %s --check-prefix=OFF
// RUN: pf-opt %s -split-input-file -pf-autodiff -pf-optimizer="kind=adam zero-stage=1 zero-min-size=0" | FileCheck %s --check-prefix=ONE
// RUN: pf-opt %s -split-input-file -pf-autodiff -pf-optimizer="kind=adam zero-stage=2 zero-min-size=0" | FileCheck %s --check-prefix=TWO
// RUN: pf-opt %s -split-input-file -pf-autodiff -pf-optimizer="momentum=0.9 zero-stage=3 zero-min-size=0" | FileCheck %s --check-prefix=THREE
// RUN: pf-opt %s -split-input-file -pf-autodiff -pf-optimizer="kind=adam zero-stage=1" | FileCheck %s --check-prefix=MIN
// RUN: pf-opt %s -split-input-file -pf-autodiff -pf-optimizer="kind=adam zero-stage=1 zero-min-size=0" -pf-infer-sbp -pf-insert-boxing -pf-lower-boxing | FileCheck %s --check-prefix=COMM
// RUN: not pf-opt %s -split-input-file -pf-autodiff -pf-optimizer="zero-stage=4" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not pf-opt %s -split-input-file -pf-autodiff -pf-optimizer="zero-stage=1 zero-min-size=-1" 2>&1 | FileCheck %s --check-prefix=BADMIN

#DP = #pf.placement<"cpu", [0, 1]>
// 6 x 8 over 2 data-parallel ranks: axis 0 divides.
!W = !pf.global<6x8xf32, #DP, #pf.sbp<[B]>>
// 3 x 6: axis 0 does not divide by 2, axis 1 does.
!V = !pf.global<3x6xf32, #DP, #pf.sbp<[B]>>
// A 3-element bias: nothing divides, it stays replicated.
!C = !pf.global<3xf32, #DP, #pf.sbp<[B]>>
pf.param @w : !W = #pf.init<kaiming_uniform(8)>
pf.param @v : !V = #pf.init<kaiming_uniform(6)>
pf.param @c : !C = #pf.init<zeros>

func.func @step(%x: !pf.global<4x8xf32, #DP, #pf.sbp<[S(0)]>>, %y: !pf.global<4xi64, #DP, #pf.sbp<[S(0)]>>) -> !pf.global<f32, #DP> {
  %w = pf.read_param @w : !W
  %h = pf.matmul %x, %w {transpose_b} : (!pf.global<4x8xf32, #DP, #pf.sbp<[S(0)]>>, !W) -> !pf.global<4x6xf32, #DP>
  %v = pf.read_param @v : !V
  %o = pf.matmul %h, %v {transpose_b} : (!pf.global<4x6xf32, #DP>, !V) -> !pf.global<4x3xf32, #DP>
  %c = pf.read_param @c : !C
  %b = pf.bias_add %o, %c : (!pf.global<4x3xf32, #DP>, !C) -> !pf.global<4x3xf32, #DP>
  %l = pf.softmax_cross_entropy %b, %y : (!pf.global<4x3xf32, #DP>, !pf.global<4xi64, #DP, #pf.sbp<[S(0)]>>) -> !pf.global<f32, #DP>
  return %l : !pf.global<f32, #DP>
}

// -----

// Data x tensor parallel: split by rows on the tensor axis, replicated on
// the data axis; axis 0 (8) divides by 2 x 2.
#M = #pf.placement<"cpu", [[0, 1], [2, 3]]>
!T = !pf.global<8x8xf32, #M, #pf.sbp<[B, S(0)]>>
pf.param @t : !T = #pf.init<kaiming_uniform(8)>

func.func @mesh(%z: !pf.global<4x8xf32, #M, #pf.sbp<[S(0), B]>>) -> !pf.global<f32, #M> {
  %t = pf.read_param @t : !T
  %u = pf.matmul %z, %t {transpose_b} : (!pf.global<4x8xf32, #M, #pf.sbp<[S(0), B]>>, !T) -> !pf.global<4x8xf32, #M>
  %s = pf.reduce_sum %u {axes = array<i64: 0, 1>} : (!pf.global<4x8xf32, #M>) -> !pf.global<f32, #M>
  return %s : !pf.global<f32, #M>
}

// OFF: pf.param @w.exp_avg : !pf.global<6x8xf32, #{{.*}}, #pf.sbp<[B]>>
// OFF: pf.param @t.exp_avg : !pf.global<8x8xf32, #{{.*}}, #pf.sbp<[B, S(0)]>>

// ONE: pf.param @w : !pf.global<6x8xf32, #{{.*}}, #pf.sbp<[B]>>
// ONE: pf.param @w.exp_avg_sq : !pf.global<6x8xf32, #{{.*}}, #pf.sbp<[S(0)]>>
// ONE: pf.param @w.exp_avg : !pf.global<6x8xf32, #{{.*}}, #pf.sbp<[S(0)]>>
// ONE: pf.param @w.grad : !pf.global<6x8xf32, #{{.*}}> =
// ONE: pf.param @v : !pf.global<3x6xf32, #{{.*}}, #pf.sbp<[B]>>
// ONE: pf.param @v.exp_avg_sq : !pf.global<3x6xf32, #{{.*}}, #pf.sbp<[S(1)]>>
// ONE: pf.param @c.exp_avg_sq : !pf.global<3xf32, #{{.*}}, #pf.sbp<[B]>>
// The update reads the split states with the new type.
// ONE: pf.read_param @w.exp_avg {{.*}}: !pf.global<6x8xf32, #{{.*}}, #pf.sbp<[S(0)]>>
// ONE: pf.param @t.exp_avg_sq : !pf.global<8x8xf32, #{{.*}}, #pf.sbp<[S(0), S(0)]>>

// TWO: pf.param @w : !pf.global<6x8xf32, #{{.*}}, #pf.sbp<[B]>>
// TWO: pf.param @w.grad : !pf.global<6x8xf32, #{{.*}}, #pf.sbp<[S(0)]>>
// TWO: pf.param @t.grad : !pf.global<8x8xf32, #{{.*}}, #pf.sbp<[S(0), S(0)]>>

// SGD's momentum buffer is its state; the parameter is split too.
// THREE: pf.param @w : !pf.global<6x8xf32, #{{.*}}, #pf.sbp<[S(0)]>>
// THREE: pf.param @w.momentum_buffer : !pf.global<6x8xf32, #{{.*}}, #pf.sbp<[S(0)]>>
// THREE: pf.param @w.grad : !pf.global<6x8xf32, #{{.*}}, #pf.sbp<[S(0)]>>
// THREE: pf.param @c : !pf.global<3xf32, #{{.*}}, #pf.sbp<[B]>>
// THREE: pf.read_param @w : !pf.global<6x8xf32, #{{.*}}, #pf.sbp<[S(0)]>>
// THREE: pf.param @t : !pf.global<8x8xf32, #{{.*}}, #pf.sbp<[S(0), S(0)]>>

// Parameters under the default 1024 elements stay whole.
// MIN-NOT: pf.param @{{[wvc][.a-z_]*}} : {{.*}}S(

// The update of @w on its shard: the gradient's partial sums are
// reduce-scattered (not all-reduced) and the new parameter all-gathered.
// COMM-LABEL: func.func @step
// COMM: %[[G:.*]] = pf.reduce_scatter %{{.*}} {axis = 0 : i64, groups = [array<i64: 0, 1>]{{.*}} : !pf.global<6x8xf32, #{{.*}}, #pf.sbp<[P]>> -> !pf.global<6x8xf32, #{{.*}}, #pf.sbp<[S(0)]>>
// COMM: %[[P:.*]], %{{.*}}, %{{.*}} = pf.adam_update %{{.*}}, %[[G]], {{.*}} -> (!pf.global<6x8xf32, #{{.*}}, #pf.sbp<[S(0)]>>,
// COMM: %[[A:.*]] = pf.all_gather %[[P]] {axis = 0 : i64{{.*}} -> !pf.global<6x8xf32, #{{.*}}, #pf.sbp<[B]>>
// COMM: pf.write_param %[[A]] to @w

// BAD: error: pf-optimizer: zero-stage must be 0, 1, 2 or 3, got 4
// BADMIN: error: pf-optimizer: zero-min-size must be >= 0, got -1
