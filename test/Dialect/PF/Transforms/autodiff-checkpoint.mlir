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
