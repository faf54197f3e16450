// RUN: pf-opt %s -split-input-file -pf-autodiff="wrt-inputs=true" | FileCheck %s

// A linear layer + loss: the backward graph of matmul{transpose_b}, bias_add
// and softmax_cross_entropy, the B/W split and the gradient buffers.
#P = #pf.placement<"cpu", [0]>
!X = !pf.global<4x8xf32, #P, #pf.sbp<[B]>>
!W = !pf.global<3x8xf32, #P, #pf.sbp<[B]>>
!V = !pf.global<3xf32, #P, #pf.sbp<[B]>>
!H = !pf.global<4x3xf32, #P>
!Y = !pf.global<4xi64, #P, #pf.sbp<[B]>>
!L = !pf.global<f32, #P>
pf.param @w : !W = #pf.init<kaiming_uniform(8)>
pf.param @b : !V = #pf.init<kaiming_uniform(8)>

// The buffers of broadcast parameters leave their layout to pf-infer-sbp
// (partial under data parallelism, whole under tensor parallelism).
// CHECK: pf.param @w : {{.*}} = #pf.init<kaiming_uniform(8)>
// CHECK-NEXT: pf.param @w.grad : !pf.global<3x8xf32, #{{[a-z0-9_]*}}> = #pf.init<zeros> buffer {pf.grad_of = @w}
// CHECK: pf.param @b.grad : !pf.global<3xf32, #{{[a-z0-9_]*}}> = #pf.init<zeros> buffer {pf.grad_of = @b}
// CHECK-LABEL: func.func @linear
// CHECK-SAME: (%[[X:.*]]: !pf.global<4x8xf32, {{.*}}>, %[[Y:.*]]: !pf.global<4xi64, {{.*}}>) -> (!pf.global<f32, #{{.*}}>, !pf.global<4x8xf32, #{{.*}}>)
// CHECK: %[[W:.*]] = pf.read_param @w {pf.stage = 2 : i64}
// CHECK: %[[H:.*]] = pf.matmul %[[X]], %[[W]] {pf.stage = 2 : i64, transpose_b}
// CHECK: %[[B:.*]] = pf.read_param @b
// CHECK: %[[HB:.*]] = pf.bias_add %[[H]], %[[B]]
// CHECK: %[[LOSS:.*]] = pf.softmax_cross_entropy %[[HB]], %[[Y]]
// CHECK: %[[SEED:.*]] = pf.constant dense<1.000000e+00> : tensor<f32> {pf.phase = "backward_input", pf.stage = 2 : i64}
// CHECK: %[[DL:.*]] = pf.softmax_cross_entropy_grad %[[HB]], %[[Y]], %[[SEED]] {pf.phase = "backward_input", pf.stage = 2 : i64} : {{.*}} -> !pf.global<4x3xf32, #{{.*}}>
// CHECK: %[[DB:.*]] = pf.reduce_sum %[[DL]] {axes = array<i64: 0>, pf.phase = "backward_weight", pf.stage = 2 : i64} : {{.*}} -> !pf.global<3xf32, #{{.*}}>
// CHECK: %[[DX:.*]] = pf.matmul %[[DL]], %[[W]] {pf.phase = "backward_input", pf.stage = 2 : i64} : {{.*}} -> !pf.global<4x8xf32, #{{.*}}>
// CHECK: %[[DW:.*]] = pf.matmul %[[DL]], %[[X]] {pf.phase = "backward_weight", pf.stage = 2 : i64, transpose_a} : {{.*}} -> !pf.global<3x8xf32, #{{.*}}>
// CHECK: %[[GB:.*]] = pf.read_param @b.grad {pf.phase = "backward_weight", pf.stage = 2 : i64}
// CHECK: %[[SB:.*]] = pf.add %[[GB]], %[[DB]]
// CHECK: pf.write_param %[[SB]] to @b.grad
// CHECK: %[[GW:.*]] = pf.read_param @w.grad
// CHECK: %[[SW:.*]] = pf.add %[[GW]], %[[DW]]
// CHECK: pf.write_param %[[SW]] to @w.grad
// CHECK: return %[[LOSS]], %[[DX]]
func.func @linear(%x: !X, %y: !Y) -> !L {
  %w = pf.read_param @w {pf.stage = 2} : !W
  %h = pf.matmul %x, %w {transpose_b, pf.stage = 2} : (!X, !W) -> !H
  %b = pf.read_param @b {pf.stage = 2} : !V
  %hb = pf.bias_add %h, %b {pf.stage = 2} : (!H, !V) -> !H
  %l = pf.softmax_cross_entropy %hb, %y {pf.stage = 2} : (!H, !Y) -> !L
  return %l : !L
}

// -----

// matmul without transposes, and with a transposed lhs.
#P = #pf.placement<"cpu", [0]>
!Y = !pf.global<4xi64, #P, #pf.sbp<[B]>>
!L = !pf.global<f32, #P>
pf.param @w : !pf.global<8x3xf32, #P, #pf.sbp<[B]>> = #pf.init<normal(0.0, 1.0)>
// CHECK-LABEL: func.func @matmul_plain
// CHECK-SAME: (%[[X:.*]]: !pf.global<4x8xf32
// CHECK: %[[W:.*]] = pf.read_param @w
// CHECK: %[[H:.*]] = pf.matmul %[[X]], %[[W]] :
// CHECK: %[[DL:.*]] = pf.softmax_cross_entropy_grad
// dA = dC * B^T, dB = A^T * dC
// CHECK-DAG: %[[DX:.*]] = pf.matmul %[[DL]], %[[W]] {pf.phase = "backward_input", transpose_b} : {{.*}} -> !pf.global<4x8xf32
// CHECK-DAG: %[[DW:.*]] = pf.matmul %[[X]], %[[DL]] {pf.phase = "backward_weight", transpose_a} : {{.*}} -> !pf.global<8x3xf32
// CHECK: pf.add %{{.*}}, %[[DW]]
// CHECK: return %{{.*}}, %[[DX]]
func.func @matmul_plain(%x: !pf.global<4x8xf32, #P, #pf.sbp<[B]>>, %y: !Y) -> !L {
  %w = pf.read_param @w : !pf.global<8x3xf32, #P, #pf.sbp<[B]>>
  %h = pf.matmul %x, %w : (!pf.global<4x8xf32, #P, #pf.sbp<[B]>>, !pf.global<8x3xf32, #P, #pf.sbp<[B]>>) -> !pf.global<4x3xf32, #P>
  %l = pf.softmax_cross_entropy %h, %y : (!pf.global<4x3xf32, #P>, !Y) -> !L
  return %l : !L
}

// CHECK-LABEL: func.func @matmul_transpose_a
// CHECK-SAME: (%[[X:.*]]: !pf.global<8x4xf32
// CHECK: %[[W:.*]] = pf.read_param @w
// CHECK: %[[DL:.*]] = pf.softmax_cross_entropy_grad
// C = A^T B: dA = B dC^T, dB = A dC
// CHECK-DAG: %[[DX:.*]] = pf.matmul %[[W]], %[[DL]] {pf.phase = "backward_input", transpose_b} : {{.*}} -> !pf.global<8x4xf32
// CHECK-DAG: %[[DW:.*]] = pf.matmul %[[X]], %[[DL]] {pf.phase = "backward_weight"} : {{.*}} -> !pf.global<8x3xf32
// CHECK: return %{{.*}}, %[[DX]]
func.func @matmul_transpose_a(%x: !pf.global<8x4xf32, #P, #pf.sbp<[B]>>, %y: !Y) -> !L {
  %w = pf.read_param @w : !pf.global<8x3xf32, #P, #pf.sbp<[B]>>
  %h = pf.matmul %x, %w {transpose_a} : (!pf.global<8x4xf32, #P, #pf.sbp<[B]>>, !pf.global<8x3xf32, #P, #pf.sbp<[B]>>) -> !pf.global<4x3xf32, #P>
  %l = pf.softmax_cross_entropy %h, %y : (!pf.global<4x3xf32, #P>, !Y) -> !L
  return %l : !L
}

// -----

// A batched lhs with a shared 2-D weight: the weight gradient folds the
// batch into the rows first (summing over it).
#P = #pf.placement<"cpu", [0]>
!Y = !pf.global<6xi64, #P, #pf.sbp<[B]>>
!L = !pf.global<f32, #P>
pf.param @w : !pf.global<5x8xf32, #P, #pf.sbp<[B]>> = #pf.init<normal(0.0, 1.0)>
// CHECK-LABEL: func.func @batched_shared_rhs
// CHECK-SAME: (%[[X:.*]]: !pf.global<2x3x8xf32
// CHECK: %[[W:.*]] = pf.read_param @w
// CHECK: %[[H:.*]] = pf.matmul %[[X]], %[[W]] {transpose_b}
// CHECK: %[[DH:.*]] = pf.reshape %{{.*}} {pf.phase = "backward_input"} : !pf.global<6x5xf32, #{{.*}}> -> !pf.global<2x3x5xf32
// CHECK-DAG: %[[DX:.*]] = pf.matmul %[[DH]], %[[W]] {pf.phase = "backward_input"} : {{.*}} -> !pf.global<2x3x8xf32
// CHECK-DAG: %[[XR:.*]] = pf.reshape %[[X]] {pf.phase = "backward_weight"} : {{.*}} -> !pf.global<6x8xf32
// CHECK-DAG: %[[DR:.*]] = pf.reshape %[[DH]] {pf.phase = "backward_weight"} : {{.*}} -> !pf.global<6x5xf32
// CHECK-DAG: %[[DW:.*]] = pf.matmul %[[DR]], %[[XR]] {pf.phase = "backward_weight", transpose_a} : {{.*}} -> !pf.global<5x8xf32
func.func @batched_shared_rhs(%x: !pf.global<2x3x8xf32, #P, #pf.sbp<[B]>>, %y: !Y) -> !L {
  %w = pf.read_param @w : !pf.global<5x8xf32, #P, #pf.sbp<[B]>>
  %h = pf.matmul %x, %w {transpose_b} : (!pf.global<2x3x8xf32, #P, #pf.sbp<[B]>>, !pf.global<5x8xf32, #P, #pf.sbp<[B]>>) -> !pf.global<2x3x5xf32, #P>
  %r = pf.reshape %h : !pf.global<2x3x5xf32, #P> -> !pf.global<6x5xf32, #P>
  %l = pf.softmax_cross_entropy %r, %y : (!pf.global<6x5xf32, #P>, !Y) -> !L
  return %l : !L
}

// -----

// add, mul_scalar, relu, transpose, flatten; a value used twice gets the sum
// of its gradients.
#P = #pf.placement<"cpu", [0]>
!T = !pf.global<4x6xf32, #P>
!Y = !pf.global<4xi64, #P, #pf.sbp<[B]>>
!L = !pf.global<f32, #P>
// CHECK-LABEL: func.func @elementwise
// CHECK-SAME: (%[[X:.*]]: !pf.global<4x2x3xf32
// CHECK: %[[F:.*]] = pf.flatten %[[X]]
// CHECK: %[[R:.*]] = pf.relu %[[F]]
// CHECK: %[[M:.*]] = pf.mul_scalar %[[R]] {scalar = 2.500000e-01 : f64}
// CHECK: %[[A:.*]] = pf.add %[[M]], %[[R]]
// CHECK: %[[T:.*]] = pf.transpose %[[A]] {perm = array<i64: 1, 0>}
// CHECK: %[[T2:.*]] = pf.transpose %[[T]] {perm = array<i64: 1, 0>}
// CHECK: %[[DL:.*]] = pf.softmax_cross_entropy_grad %[[T2]]
// CHECK: %[[DT:.*]] = pf.transpose %[[DL]] {perm = array<i64: 1, 0>, pf.phase = "backward_input"} : {{.*}} -> !pf.global<6x4xf32
// CHECK: %[[DA:.*]] = pf.transpose %[[DT]] {perm = array<i64: 1, 0>, pf.phase = "backward_input"} : {{.*}} -> !pf.global<4x6xf32
// CHECK: %[[DM:.*]] = pf.mul_scalar %[[DA]] {pf.phase = "backward_input", scalar = 2.500000e-01 : f64}
// CHECK: %[[DR:.*]] = pf.add %[[DA]], %[[DM]] {pf.phase = "backward_input"}
// CHECK: %[[DF:.*]] = pf.relu_grad %[[R]], %[[DR]] {pf.phase = "backward_input"}
// CHECK: %[[DX:.*]] = pf.reshape %[[DF]] {pf.phase = "backward_input"} : !pf.global<4x6xf32, #{{.*}}> -> !pf.global<4x2x3xf32
// CHECK: return %{{.*}}, %[[DX]]
func.func @elementwise(%x: !pf.global<4x2x3xf32, #P, #pf.sbp<[B]>>, %y: !Y) -> !L {
  %f = pf.flatten %x : (!pf.global<4x2x3xf32, #P, #pf.sbp<[B]>>) -> !T
  %r = pf.relu %f : (!T) -> !T
  %m = pf.mul_scalar %r {scalar = 0.25 : f64} : (!T) -> !T
  %a = pf.add %m, %r : (!T, !T) -> !T
  %t = pf.transpose %a {perm = array<i64: 1, 0>} : (!T) -> !pf.global<6x4xf32, #P>
  %t2 = pf.transpose %t {perm = array<i64: 1, 0>} : (!pf.global<6x4xf32, #P>) -> !T
  %l = pf.softmax_cross_entropy %t2, %y : (!T, !Y) -> !L
  return %l : !L
}

// -----

// Dropout's gradient is the same dropout (same p, same stream: the same
// mask) of the upstream gradient.
#P = #pf.placement<"cpu", [0]>
!T = !pf.global<4x6xf32, #P>
!Y = !pf.global<4xi64, #P, #pf.sbp<[B]>>
!L = !pf.global<f32, #P>
// CHECK-LABEL: func.func @dropout
// CHECK: %[[D:.*]] = pf.dropout %{{.*}} {p = 2.500000e-01 : f64, stream = 9 : i64}
// CHECK: %[[DL:.*]] = pf.softmax_cross_entropy_grad %[[D]]
// CHECK: %[[DX:.*]] = pf.dropout %[[DL]] {p = 2.500000e-01 : f64, pf.phase = "backward_input", stream = 9 : i64}
// CHECK: return %{{.*}}, %[[DX]]
func.func @dropout(%x: !T, %y: !Y) -> !L {
  %d = pf.dropout %x {p = 0.25 : f64, stream = 9 : i64} : (!T) -> !T
  %l = pf.softmax_cross_entropy %d, %y : (!T, !Y) -> !L
  return %l : !L
}

// -----

// conv2d, max/avg/global pooling and batch norm.
#P = #pf.placement<"cpu", [0]>
!Y = !pf.global<2xi64, #P, #pf.sbp<[B]>>
!L = !pf.global<f32, #P>
!C = !pf.global<4xf32, #P, #pf.sbp<[B]>>
pf.param @k : !pf.global<4x3x3x3xf32, #P, #pf.sbp<[B]>> = #pf.init<kaiming_uniform(27)>
pf.param @gamma : !C = #pf.init<ones>
pf.param @beta : !C = #pf.init<zeros>
pf.param @mean : !C = #pf.init<zeros> buffer
pf.param @var : !C = #pf.init<ones> buffer
// CHECK-NOT: pf.param @mean.grad
// CHECK-LABEL: func.func @conv_net
// CHECK-SAME: (%[[X:.*]]: !pf.global<2x3x8x8xf32
// CHECK: %[[K:.*]] = pf.read_param @k
// CHECK: %[[C:.*]] = pf.conv2d %[[X]], %[[K]] {padding = array<i64: 1, 1>}
// CHECK: %[[G:.*]] = pf.read_param @gamma
// CHECK: %[[N:.*]], %{{.*}}, %{{.*}} = pf.batch_norm %[[C]], %[[G]]
// CHECK: %[[MP:.*]] = pf.max_pool2d %[[N]] {kernel = array<i64: 2, 2>}
// CHECK: %[[AP:.*]] = pf.avg_pool2d %[[MP]] {kernel = array<i64: 2, 2>}
// CHECK: %[[GP:.*]] = pf.global_avg_pool %[[AP]]
// CHECK: %[[DGP:.*]] = pf.reshape %{{.*}} {pf.phase = "backward_input"} : {{.*}} -> !pf.global<2x4x1x1xf32
// CHECK: %[[DAP:.*]] = pf.global_avg_pool_grad %[[DGP]] {pf.phase = "backward_input"} : {{.*}} -> !pf.global<2x4x2x2xf32
// CHECK: %[[DMP:.*]] = pf.avg_pool2d_grad %[[DAP]] {kernel = array<i64: 2, 2>, pf.phase = "backward_input"} : {{.*}} -> !pf.global<2x4x4x4xf32
// CHECK: %[[DN:.*]] = pf.max_pool2d_grad %[[N]], %[[DMP]] {kernel = array<i64: 2, 2>, pf.phase = "backward_input"} : {{.*}} -> !pf.global<2x4x8x8xf32
// CHECK: %[[DC:.*]] = pf.batch_norm_grad_input %[[C]], %[[G]], %[[DN]] {pf.phase = "backward_input"}
// CHECK: %[[DG:.*]], %[[DB:.*]] = pf.batch_norm_grad_params %[[C]], %[[DN]] {pf.phase = "backward_weight"}
// CHECK: %[[DX:.*]] = pf.conv2d_grad_input %[[DC]], %[[K]] {padding = array<i64: 1, 1>, pf.phase = "backward_input"} : {{.*}} -> !pf.global<2x3x8x8xf32
// CHECK: %[[DK:.*]] = pf.conv2d_grad_weight %[[X]], %[[DC]] {padding = array<i64: 1, 1>, pf.phase = "backward_weight"} : {{.*}} -> !pf.global<4x3x3x3xf32
// CHECK-DAG: pf.add %{{.*}}, %[[DK]]
// CHECK-DAG: pf.add %{{.*}}, %[[DG]]
// CHECK-DAG: pf.add %{{.*}}, %[[DB]]
// CHECK: return %{{.*}}, %[[DX]]
func.func @conv_net(%x: !pf.global<2x3x8x8xf32, #P, #pf.sbp<[B]>>, %y: !Y) -> !L {
  %k = pf.read_param @k : !pf.global<4x3x3x3xf32, #P, #pf.sbp<[B]>>
  %c = pf.conv2d %x, %k {padding = array<i64: 1, 1>} : (!pf.global<2x3x8x8xf32, #P, #pf.sbp<[B]>>, !pf.global<4x3x3x3xf32, #P, #pf.sbp<[B]>>) -> !pf.global<2x4x8x8xf32, #P>
  %g = pf.read_param @gamma : !C
  %b = pf.read_param @beta : !C
  %m = pf.read_param @mean : !C
  %v = pf.read_param @var : !C
  %n, %nm, %nv = pf.batch_norm %c, %g, %b, %m, %v : (!pf.global<2x4x8x8xf32, #P>, !C, !C, !C, !C) -> (!pf.global<2x4x8x8xf32, #P>, !pf.global<4xf32, #P>, !pf.global<4xf32, #P>)
  pf.write_param %nm to @mean : !pf.global<4xf32, #P>
  pf.write_param %nv to @var : !pf.global<4xf32, #P>
  %mp = pf.max_pool2d %n {kernel = array<i64: 2, 2>} : (!pf.global<2x4x8x8xf32, #P>) -> !pf.global<2x4x4x4xf32, #P>
  %ap = pf.avg_pool2d %mp {kernel = array<i64: 2, 2>} : (!pf.global<2x4x4x4xf32, #P>) -> !pf.global<2x4x2x2xf32, #P>
  %gp = pf.global_avg_pool %ap : (!pf.global<2x4x2x2xf32, #P>) -> !pf.global<2x4x1x1xf32, #P>
  %f = pf.flatten %gp : (!pf.global<2x4x1x1xf32, #P>) -> !pf.global<2x4xf32, #P>
  %l = pf.softmax_cross_entropy %f, %y : (!pf.global<2x4xf32, #P>, !Y) -> !L
  return %l : !L
}

// -----

// Layout changes: the gradient runs the reverse change; a forward Broadcast
// becomes a Partial-sum gradient (OneFlow's grad-SBP rule).
#P0 = #pf.placement<"cpu", [0, 1]>
#P1 = #pf.placement<"cpu", [2, 3]>
!Y = !pf.global<4xi64, #P1, #pf.sbp<[B]>>
!L = !pf.global<f32, #P1>
// CHECK-LABEL: func.func @layout_change
// CHECK-SAME: (%[[X:.*]]: !pf.global<4x6xf32
// CHECK: %[[S:.*]] = pf.to_global %[[X]] : !pf.global<4x6xf32, #[[P0:.*]], #pf.sbp<[B]>> -> !pf.global<4x6xf32, #[[P0]], #pf.sbp<[S(1)]>>
// CHECK: %[[M:.*]] = pf.to_global %[[S]] : {{.*}} -> !pf.global<4x6xf32, #[[P1:.*]], #pf.sbp<[S(0)]>>
// CHECK: %[[DL:.*]] = pf.softmax_cross_entropy_grad
// CHECK: %[[DS:.*]] = pf.to_global %[[DL]] {pf.phase = "backward_input"} : !pf.global<4x6xf32, #[[P1]]> -> !pf.global<4x6xf32, #[[P0]], #pf.sbp<[S(1)]>>
// CHECK: %[[DX:.*]] = pf.to_global %[[DS]] {pf.phase = "backward_input"} : {{.*}} -> !pf.global<4x6xf32, #[[P0]], #pf.sbp<[P]>>
// CHECK: return %{{.*}}, %[[DX]]
func.func @layout_change(%x: !pf.global<4x6xf32, #P0, #pf.sbp<[B]>>, %y: !Y) -> !L {
  %s = pf.to_global %x : !pf.global<4x6xf32, #P0, #pf.sbp<[B]>> -> !pf.global<4x6xf32, #P0, #pf.sbp<[S(1)]>>
  %m = pf.to_global %s : !pf.global<4x6xf32, #P0, #pf.sbp<[S(1)]>> -> !pf.global<4x6xf32, #P1, #pf.sbp<[S(0)]>>
  %l = pf.softmax_cross_entropy %m, %y : (!pf.global<4x6xf32, #P1, #pf.sbp<[S(0)]>>, !Y) -> !L
  return %l : !L
}

// -----

// A constant operand (a Python number, a causal mask) passes no gradient on:
// the add's other operand gets the whole gradient, the constant none.
#P = #pf.placement<"cpu", [0]>
// CHECK-LABEL: func.func @constant_operand
// CHECK: %[[C:.*]] = pf.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]>
// CHECK: %[[S:.*]] = pf.add %{{.*}}, %[[C]]
// CHECK: %[[SEED:.*]] = pf.constant dense<1.000000e+00> : tensor<f32> {pf.phase = "backward_input"}
// CHECK: %[[R:.*]] = pf.reshape %[[SEED]]
// CHECK: %[[DX:.*]] = pf.broadcast_to %[[R]]
// CHECK-NEXT: return %{{.*}}, %[[DX]]
func.func @constant_operand(%x: !pf.global<3xf32, #P, #pf.sbp<[B]>>) -> !pf.global<f32, #P> {
  %c = pf.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32> : !pf.global<3xf32, #P>
  %s = pf.add %x, %c : (!pf.global<3xf32, #P, #pf.sbp<[B]>>, !pf.global<3xf32, #P>) -> !pf.global<3xf32, #P>
  %l = pf.reduce_sum %s {axes = array<i64: 0>} : (!pf.global<3xf32, #P>) -> !pf.global<f32, #P>
  return %l : !pf.global<f32, #P>
}

// -----

// Slices that cut one tensor along one axis (q, k and v of a fused
// projection): their gradients are pads of adjacent boxes, and their sum is
// one concatenation (no pad, no add) when the boxes cover the tensor, a
// concatenation padded once when they do not.
#P = #pf.placement<"cpu", [0]>
!T = !pf.global<2x12xf32, #P>
!B = !pf.global<2x4xf32, #P>
// CHECK-LABEL: func.func @slices_cover
// CHECK-NOT: pf.pad
// CHECK: %[[Q:.*]] = pf.slice %{{.*}} {offsets = array<i64: 0, 0>
// CHECK: %[[K:.*]] = pf.slice %{{.*}} {offsets = array<i64: 0, 4>
// CHECK-NOT: pf.add {{.*}}backward_input
// CHECK: %[[DV:.*]] = pf.broadcast_to
// CHECK: %[[DQ:.*]] = pf.mul %[[DV]], %[[K]]
// CHECK: %[[DK:.*]] = pf.mul %[[DV]], %[[Q]]
// CHECK: %[[C:.*]] = pf.concat %[[DQ]], %[[DK]], %[[DV]] {axis = 1 : i64, pf.phase = "backward_input"} : ({{.*}}) -> !pf.global<2x12xf32, #{{.*}}>
// CHECK-NEXT: %[[DX:.*]] = pf.mul_scalar %[[C]]
// CHECK-NEXT: return %{{.*}}, %[[DX]]
func.func @slices_cover(%x: !pf.global<2x12xf32, #P, #pf.sbp<[B]>>) -> !pf.global<f32, #P> {
  %t = pf.mul_scalar %x {scalar = 2.0 : f64} : (!pf.global<2x12xf32, #P, #pf.sbp<[B]>>) -> !T
  %q = pf.slice %t {offsets = array<i64: 0, 0>, sizes = array<i64: 2, 4>} : (!T) -> !B
  %k = pf.slice %t {offsets = array<i64: 0, 4>, sizes = array<i64: 2, 4>} : (!T) -> !B
  %v = pf.slice %t {offsets = array<i64: 0, 8>, sizes = array<i64: 2, 4>} : (!T) -> !B
  %qk = pf.mul %q, %k : (!B, !B) -> !B
  %o = pf.add %qk, %v : (!B, !B) -> !B
  %l = pf.reduce_sum %o {axes = array<i64: 0, 1>} : (!B) -> !pf.global<f32, #P>
  return %l : !pf.global<f32, #P>
}

// CHECK-LABEL: func.func @slices_part
// CHECK-NOT: pf.add {{.*}}backward_input
// CHECK: %[[C:.*]] = pf.concat %{{.*}}, %{{.*}} {axis = 1 : i64, pf.phase = "backward_input"} : ({{.*}}) -> !pf.global<2x8xf32, #{{.*}}>
// CHECK: %[[P:.*]] = pf.pad %[[C]] {offsets = array<i64: 0, 4>, pf.phase = "backward_input", shape = array<i64: 2, 12>}
// CHECK-NOT: pf.pad
func.func @slices_part(%x: !pf.global<2x12xf32, #P, #pf.sbp<[B]>>) -> !pf.global<f32, #P> {
  %t = pf.mul_scalar %x {scalar = 2.0 : f64} : (!pf.global<2x12xf32, #P, #pf.sbp<[B]>>) -> !T
  %k = pf.slice %t {offsets = array<i64: 0, 4>, sizes = array<i64: 2, 4>} : (!T) -> !B
  %v = pf.slice %t {offsets = array<i64: 0, 8>, sizes = array<i64: 2, 4>} : (!T) -> !B
  %o = pf.mul %k, %v : (!B, !B) -> !B
  %l = pf.reduce_sum %o {axes = array<i64: 0, 1>} : (!B) -> !pf.global<f32, #P>
  return %l : !pf.global<f32, #P>
}

// Boxes with a gap, overlapping boxes and boxes that differ along two axes
// are summed as before.
// CHECK-LABEL: func.func @slices_apart
// CHECK-NOT: pf.concat
// CHECK-COUNT-5: pf.add {{.*}}pf.phase = "backward_input"
// CHECK-NOT: pf.concat
// CHECK: return
func.func @slices_apart(%x: !pf.global<2x12xf32, #P, #pf.sbp<[B]>>) -> !pf.global<f32, #P> {
  %t = pf.mul_scalar %x {scalar = 2.0 : f64} : (!pf.global<2x12xf32, #P, #pf.sbp<[B]>>) -> !T
  %a = pf.slice %t {offsets = array<i64: 0, 0>, sizes = array<i64: 2, 4>} : (!T) -> !B
  %b = pf.slice %t {offsets = array<i64: 0, 8>, sizes = array<i64: 2, 4>} : (!T) -> !B
  %ab = pf.mul %a, %b : (!B, !B) -> !B
  %c = pf.slice %t {offsets = array<i64: 0, 2>, sizes = array<i64: 2, 4>} : (!T) -> !B
  %d = pf.slice %t {offsets = array<i64: 0, 4>, sizes = array<i64: 2, 4>} : (!T) -> !B
  %cd = pf.mul %c, %d : (!B, !B) -> !B
  %e = pf.slice %t {offsets = array<i64: 0, 0>, sizes = array<i64: 1, 4>} : (!T) -> !pf.global<1x4xf32, #P>
  %f = pf.slice %t {offsets = array<i64: 1, 4>, sizes = array<i64: 1, 4>} : (!T) -> !pf.global<1x4xf32, #P>
  %ef = pf.mul %e, %f : (!pf.global<1x4xf32, #P>, !pf.global<1x4xf32, #P>) -> !pf.global<1x4xf32, #P>
  %s1 = pf.reduce_sum %ab {axes = array<i64: 0, 1>} : (!B) -> !pf.global<f32, #P>
  %s2 = pf.reduce_sum %cd {axes = array<i64: 0, 1>} : (!B) -> !pf.global<f32, #P>
  %s3 = pf.reduce_sum %ef {axes = array<i64: 0, 1>} : (!pf.global<1x4xf32, #P>) -> !pf.global<f32, #P>
  %s12 = pf.add %s1, %s2 : (!pf.global<f32, #P>, !pf.global<f32, #P>) -> !pf.global<f32, #P>
  %l = pf.add %s12, %s3 : (!pf.global<f32, #P>, !pf.global<f32, #P>) -> !pf.global<f32, #P>
  return %l : !pf.global<f32, #P>
}

// -----

// The causal mask of attention: -inf into a softmax and nothing else. The
// softmax is 0 where the mask is set, so its input gradient is already 0
// there: the gradient passes the masked_fill without another one. With
// another value (or another consumer) the masked_fill's gradient stays.
#P = #pf.placement<"cpu", [0]>
!S = !pf.global<2x4x4xf32, #P>
// CHECK-LABEL: func.func @causal_softmax
// CHECK: pf.masked_fill
// CHECK: %[[Y:.*]] = pf.softmax
// CHECK-NOT: pf.masked_fill
// CHECK: %[[DX:.*]] = pf.softmax_grad %[[Y]]
// CHECK-NOT: pf.masked_fill
// CHECK: return %{{.*}}, %[[DX]]
func.func @causal_softmax(%x: !pf.global<2x4x4xf32, #P, #pf.sbp<[B]>>, %mask: !pf.global<2x4x4xf32, #P, #pf.sbp<[B]>>) -> !pf.global<f32, #P> {
  %m = pf.masked_fill %x, %mask {value = 0xFFF0000000000000 : f64} : (!pf.global<2x4x4xf32, #P, #pf.sbp<[B]>>, !pf.global<2x4x4xf32, #P, #pf.sbp<[B]>>) -> !S
  %y = pf.softmax %m {axis = 2 : i64} : (!S) -> !S
  %l = pf.reduce_sum %y {axes = array<i64: 0, 1, 2>} : (!S) -> !pf.global<f32, #P>
  return %l : !pf.global<f32, #P>
}

// CHECK-LABEL: func.func @finite_fill_softmax
// CHECK: pf.softmax_grad
// CHECK: pf.masked_fill {{.*}}value = 0.000000e+00
func.func @finite_fill_softmax(%x: !pf.global<2x4x4xf32, #P, #pf.sbp<[B]>>, %mask: !pf.global<2x4x4xf32, #P, #pf.sbp<[B]>>) -> !pf.global<f32, #P> {
  %m = pf.masked_fill %x, %mask {value = -1.0e9 : f64} : (!pf.global<2x4x4xf32, #P, #pf.sbp<[B]>>, !pf.global<2x4x4xf32, #P, #pf.sbp<[B]>>) -> !S
  %y = pf.softmax %m {axis = 2 : i64} : (!S) -> !S
  %l = pf.reduce_sum %y {axes = array<i64: 0, 1, 2>} : (!S) -> !pf.global<f32, #P>
  return %l : !pf.global<f32, #P>
}

// CHECK-LABEL: func.func @fill_two_uses
// CHECK: pf.softmax_grad
// CHECK: pf.masked_fill {{.*}}value = 0.000000e+00
func.func @fill_two_uses(%x: !pf.global<2x4x4xf32, #P, #pf.sbp<[B]>>, %mask: !pf.global<2x4x4xf32, #P, #pf.sbp<[B]>>) -> !pf.global<f32, #P> {
  %m = pf.masked_fill %x, %mask {value = 0xFFF0000000000000 : f64} : (!pf.global<2x4x4xf32, #P, #pf.sbp<[B]>>, !pf.global<2x4x4xf32, #P, #pf.sbp<[B]>>) -> !S
  %y = pf.softmax %m {axis = 2 : i64} : (!S) -> !S
  %z = pf.softmax %m {axis = 1 : i64} : (!S) -> !S
  %yz = pf.add %y, %z : (!S, !S) -> !S
  %l = pf.reduce_sum %yz {axes = array<i64: 0, 1, 2>} : (!S) -> !pf.global<f32, #P>
  return %l : !pf.global<f32, #P>
}
