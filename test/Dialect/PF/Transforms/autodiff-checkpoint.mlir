// RUN: pf-opt %s -pf-autodiff | FileCheck %s
// RUN: pf-opt %s -pf-autodiff="accumulation-steps=4" | FileCheck %s --check-prefix=ACC

// A module marked for activation checkpointing (pf.checkpoint on its ops) is
// recomputed in the backward pass: the backward reads the recomputed values,
// never the forward ones.
#P = #pf.placement<"cpu", [0]>
!X = !pf.global<4x8xf32, #P, #pf.sbp<[B]>>
!W = !pf.global<8x8xf32, #P, #pf.sbp<[B]>>
!H = !pf.global<4x8xf32, #P>
!Y = !pf.global<4xi64, #P, #pf.sbp<[B]>>
!L = !pf.global<f32, #P>
pf.param @w1 : !W = #pf.init<kaiming_uniform(8)>
pf.param @w2 : !W = #pf.init<kaiming_uniform(8)>

// CHECK-LABEL: func.func @checkpointed
// CHECK-SAME: (%[[X:[^:]*]]: !pf.global
// CHECK: %[[W1:.*]] = pf.read_param @w1 {pf.checkpoint, pf.stage = 0 : i64}
// CHECK: %[[H:.*]] = pf.matmul %[[X]], %[[W1]] {pf.checkpoint, pf.stage = 0 : i64, transpose_b}
// CHECK: %[[R:.*]] = pf.relu %[[H]] {pf.checkpoint, pf.stage = 0 : i64}
// CHECK: %[[W2:.*]] = pf.read_param @w2 {pf.stage = 0 : i64}
// CHECK: %[[O:.*]] = pf.matmul %[[R]], %[[W2]] {pf.stage = 0 : i64, transpose_b}
// CHECK: %[[DO:.*]] = pf.softmax_cross_entropy_grad %[[O]]
// The second matmul's rule needs relu's output: recomputed from scratch.
// CHECK: %[[RW1:.*]] = pf.read_param @w1 {pf.phase = "recompute", pf.stage = 0 : i64}
// CHECK: %[[RH:.*]] = pf.matmul %[[X]], %[[RW1]] {pf.phase = "recompute", pf.stage = 0 : i64, transpose_b}
// CHECK: %[[RR:.*]] = pf.relu %[[RH]] {pf.phase = "recompute", pf.stage = 0 : i64}
// CHECK: %[[DR:.*]] = pf.matmul %[[DO]], %[[W2]] {pf.phase = "backward_input", pf.stage = 0 : i64}
// CHECK: %[[DW2:.*]] = pf.matmul %[[DO]], %[[RR]] {pf.phase = "backward_weight", pf.stage = 0 : i64, transpose_a}
// relu's own rule reuses the same recomputed relu.
// CHECK: %[[DH:.*]] = pf.relu_grad %[[RR]], %[[DR]] {pf.phase = "backward_input", pf.stage = 0 : i64}
// CHECK-NOT: pf.relu_grad %[[R]]
// CHECK: %[[DW1:.*]] = pf.matmul %[[DH]], %[[X]] {pf.phase = "backward_weight", pf.stage = 0 : i64, transpose_a}
// CHECK-NOT: pf.matmul %{{.*}}, %[[R]]
// CHECK: return
func.func @checkpointed(%x: !X, %y: !Y) -> !L {
  %w1 = pf.read_param @w1 {pf.stage = 0, pf.checkpoint} : !W
  %h = pf.matmul %x, %w1 {transpose_b, pf.stage = 0, pf.checkpoint} : (!X, !W) -> !H
  %r = pf.relu %h {pf.stage = 0, pf.checkpoint} : (!H) -> !H
  %w2 = pf.read_param @w2 {pf.stage = 0} : !W
  %o = pf.matmul %r, %w2 {transpose_b, pf.stage = 0} : (!H, !W) -> !H
  %l = pf.softmax_cross_entropy %o, %y {pf.stage = 0} : (!H, !Y) -> !L
  return %l : !L
}

// With 4 accumulation steps the loss gradient is seeded with 1/4, so that
// the sum of 4 micro-batch gradients is the gradient of the mean loss.
// ACC: pf.constant dense<2.500000e-01> : tensor<f32> {pf.phase = "backward_input", pf.stage = 0 : i64}

// A checkpointed fused attention (selective checkpointing) is recomputed
// as a whole: the gradient reads the recomputed op's output and
// log-sum-exp, with the forward's dropout stream; the forward's lse has no
// reader left.
!QKV = !pf.global<1x2x4x8xf32, #P, #pf.sbp<[B]>>
!O = !pf.global<1x2x4x8xf32, #P>
!LSE = !pf.global<1x2x4xf32, #P>
pf.param @q : !QKV = #pf.init<normal(0.0, 1.0)>
pf.param @k : !QKV = #pf.init<normal(0.0, 1.0)>
pf.param @v : !QKV = #pf.init<normal(0.0, 1.0)>

// CHECK-LABEL: func.func @attention
// CHECK: %[[Q:.*]] = pf.read_param @q
// CHECK: %[[K:.*]] = pf.read_param @k
// CHECK: %[[V:.*]] = pf.read_param @v
// CHECK: %[[O:.*]], %[[LSE:.*]] = pf.attention %[[Q]], %[[K]], %[[V]] {causal, dropout_p = 1.000000e-01 : f64, pf.checkpoint, pf.stage = 0 : i64, scale = {{.*}}, stream = 3 : i64}
// CHECK: %[[RO:.*]], %[[RLSE:.*]] = pf.attention %[[Q]], %[[K]], %[[V]] {causal, dropout_p = 1.000000e-01 : f64, pf.phase = "recompute", pf.stage = 0 : i64, scale = {{.*}}, stream = 3 : i64}
// CHECK: pf.attention_grad %[[Q]], %[[K]], %[[V]], %[[RO]], %[[RLSE]], %{{[^ ,]+}} {causal
// CHECK-NOT: %[[LSE]]{{[ ,)]}}
// CHECK: return
func.func @attention(%x: !O) -> !L {
  %q = pf.read_param @q {pf.stage = 0} : !QKV
  %k = pf.read_param @k {pf.stage = 0} : !QKV
  %v = pf.read_param @v {pf.stage = 0} : !QKV
  %o, %lse = pf.attention %q, %k, %v {scale = 0.35355339059327373 : f64, causal, dropout_p = 0.1 : f64, stream = 3 : i64, pf.checkpoint, pf.stage = 0} : (!QKV, !QKV, !QKV) -> (!O, !LSE)
  %m = pf.mul %o, %x {pf.stage = 0} : (!O, !O) -> !O
  %l = pf.reduce_sum %m {axes = array<i64: 0, 1, 2, 3>, pf.stage = 0} : (!O) -> !L
  return %l : !L
}
