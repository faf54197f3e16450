// RUN: pf-opt %s -split-input-file | pf-opt -split-input-file | FileCheck %s
// RUN: pf-opt %s -split-input-file -mlir-print-op-generic | pf-opt -split-input-file | FileCheck %s

// DESIGN.md's syntax example, verbatim inside a function.
#P01 = #pf.placement<"cpu", [0, 1]>              // 1-D: ranks 0 and 1
#P2D = #pf.placement<"cuda", [[0, 1], [2, 3]]>   // 2-D hierarchy, 2x2
!X = !pf.global<16x784xf32, #P01, #pf.sbp<[S(0)]>>
!W = !pf.global<512x784xf32, #P2D, #pf.sbp<[B, S(0)]>>   // n-D SBP: one entry per hierarchy dim
// SBP entries: S(axis) | B | P   (P = partial sum)
// Stage of an op: the discardable attribute  pf.stage = <int>
// Explicit layout change (the user's to_global on a global tensor):
func.func @design_example(%x: !X, %w: !W) -> !pf.global<16x784xf32, #P01, #pf.sbp<[B]>> {
%y = pf.to_global %x : !X -> !pf.global<16x784xf32, #P01, #pf.sbp<[B]>>
  return %y : !pf.global<16x784xf32, #P01, #pf.sbp<[B]>>
}

// CHECK-DAG: #[[CPU01:.*]] = #pf.placement<"cpu", [0, 1]>
// CHECK-DAG: #[[CUDA2D:.*]] = #pf.placement<"cuda", {{\[}}[0, 1], [2, 3]]>
// CHECK-LABEL: func.func @design_example
// CHECK-SAME: (%[[X:.*]]: !pf.global<16x784xf32, #[[CPU01]], #pf.sbp<[S(0)]>>,
// CHECK-SAME: %{{.*}}: !pf.global<512x784xf32, #[[CUDA2D]], #pf.sbp<[B, S(0)]>>)
// CHECK: %[[Y:.*]] = pf.to_global %[[X]] : !pf.global<16x784xf32, #[[CPU01]], #pf.sbp<[S(0)]>> -> !pf.global<16x784xf32, #[[CPU01]], #pf.sbp<[B]>>
// CHECK: return %[[Y]]

// -----

// Every attribute and type form.
// CHECK-DAG: #pf.placement<"cpu", [3]>
// CHECK-DAG: #pf.placement<"cuda", {{\[}}{{\[}}[0, 1], [2, 3]], {{\[}}[4, 5], [6, 7]]]>
// CHECK-DAG: #pf.placement<"cpu", [5, 2, 7]>
// CHECK-LABEL: func.func @types
// CHECK-SAME: !pf.global<f32, #{{[a-z0-9_]+}}, #pf.sbp<[P]>>
// CHECK-SAME: !pf.global<8x4x2xf16, #{{[a-z0-9_]+}}, #pf.sbp<[S(0), B, S(2)]>>
// CHECK-SAME: !pf.global<6x9xbf16, #{{[a-z0-9_]+}}>
// CHECK-SAME: !pf.global<12xi64, #{{[a-z0-9_]+}}, #pf.sbp<[S(0)]>>
// CHECK-SAME: !pf.global<3xf64, #{{[a-z0-9_]+}}, #pf.sbp<[B]>>
func.func @types(
    %a: !pf.global<f32, #pf.placement<"cpu", [3]>, #pf.sbp<[P]>>,
    %b: !pf.global<8x4x2xf16, #pf.placement<"cuda", [[[0, 1], [2, 3]], [[4, 5], [6, 7]]]>, #pf.sbp<[S(0), B, S(2)]>>,
    %c: !pf.global<6x9xbf16, #pf.placement<"cpu", [3]>>,
    %d: !pf.global<12xi64, #pf.placement<"cpu", [5, 2, 7]>, #pf.sbp<[S(0)]>>,
    %e: !pf.global<3xf64, #pf.placement<"cpu", [5, 2, 7]>, #pf.sbp<[B]>>) {
  return
}

// -----

// Parameters: every initializer, buffers, reads and writes.
!T = !pf.global<4x3xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
// CHECK: pf.param @z : {{.*}} = #pf.init<zeros>
// CHECK: pf.param @o : {{.*}} = #pf.init<ones> buffer
// CHECK: pf.param @c : {{.*}} = #pf.init<constant(2.500000e-01)>
// CHECK: pf.param @u : {{.*}} = #pf.init<uniform(-1.000000e-01, 2.000000e-01)>
// CHECK: pf.param @n : {{.*}} = #pf.init<normal(0.000000e+00, 2.000000e-02)>
// CHECK: pf.param @layer.0.weight : {{.*}} = #pf.init<kaiming_uniform(3)>
pf.param @z : !T = #pf.init<zeros>
pf.param @o : !T = #pf.init<ones> buffer
pf.param @c : !T = #pf.init<constant(0.25)>
pf.param @u : !T = #pf.init<uniform(-0.1, 0.2)>
pf.param @n : !T = #pf.init<normal(0.0, 0.02)>
pf.param @layer.0.weight : !T = #pf.init<kaiming_uniform(3)>

// CHECK-LABEL: func.func @params
// CHECK: %[[W:.*]] = pf.read_param @layer.0.weight : !pf.global<4x3xf32
// CHECK: pf.write_param %[[W]] to @o : !pf.global<4x3xf32
func.func @params() {
  %w = pf.read_param @layer.0.weight : !T
  pf.write_param %w to @o : !T
  return
}

// -----

#P = #pf.placement<"cpu", [0, 1]>
// CHECK-LABEL: func.func @dense
func.func @dense(%x: !pf.global<16x784xf32, #P, #pf.sbp<[S(0)]>>,
                 %w: !pf.global<512x784xf32, #P, #pf.sbp<[B]>>,
                 %b: !pf.global<512xf32, #P, #pf.sbp<[B]>>,
                 %bx: !pf.global<4x8x16xf32, #P, #pf.sbp<[S(0)]>>,
                 %bw: !pf.global<4x16x2xf32, #P, #pf.sbp<[S(0)]>>,
                 %ta: !pf.global<784x16xf32, #P, #pf.sbp<[B]>>) {
  // CHECK: %[[MM:.*]] = pf.matmul %{{.*}}, %{{.*}} {transpose_b} : (!pf.global<16x784xf32, {{.*}}>, !pf.global<512x784xf32, {{.*}}>) -> !pf.global<16x512xf32, #{{.*}}, #pf.sbp<[S(0)]>>
  %h = pf.matmul %x, %w {transpose_b} : (!pf.global<16x784xf32, #P, #pf.sbp<[S(0)]>>, !pf.global<512x784xf32, #P, #pf.sbp<[B]>>) -> !pf.global<16x512xf32, #P, #pf.sbp<[S(0)]>>
  // CHECK: %[[BA:.*]] = pf.bias_add %[[MM]], %{{.*}} : {{.*}} -> !pf.global<16x512xf32
  %hb = pf.bias_add %h, %b : (!pf.global<16x512xf32, #P, #pf.sbp<[S(0)]>>, !pf.global<512xf32, #P, #pf.sbp<[B]>>) -> !pf.global<16x512xf32, #P, #pf.sbp<[S(0)]>>
  // CHECK: pf.mul %{{.*}}, %{{.*}} : {{.*}} -> !pf.global<16x512xf32
  %prod = pf.mul %hb, %hb : (!pf.global<16x512xf32, #P, #pf.sbp<[S(0)]>>, !pf.global<16x512xf32, #P, #pf.sbp<[S(0)]>>) -> !pf.global<16x512xf32, #P>
  // CHECK: pf.activation %{{.*}} {kind = "gelu"} : {{.*}} -> !pf.global<16x512xf32
  %gelu = pf.activation %hb {kind = "gelu"} : (!pf.global<16x512xf32, #P, #pf.sbp<[S(0)]>>) -> !pf.global<16x512xf32, #P>
  // CHECK: pf.layer_norm %{{.*}}, %{{.*}}, %{{.*}} {epsilon = {{.*}} : f64} : {{.*}} -> !pf.global<16x512xf32
  %ln = pf.layer_norm %hb, %b, %b {epsilon = 1.0e-6 : f64} : (!pf.global<16x512xf32, #P, #pf.sbp<[S(0)]>>, !pf.global<512xf32, #P, #pf.sbp<[B]>>, !pf.global<512xf32, #P, #pf.sbp<[B]>>) -> !pf.global<16x512xf32, #P>
  // CHECK: pf.softmax %{{.*}} {axis = 1 : i64} : {{.*}} -> !pf.global<16x512xf32
  %sm = pf.softmax %hb {axis = 1 : i64} : (!pf.global<16x512xf32, #P, #pf.sbp<[S(0)]>>) -> !pf.global<16x512xf32, #P>
  // CHECK: pf.softmax %{{.*}} {axis = 1 : i64, log}
  %lsm = pf.softmax %hb {axis = 1 : i64, log} : (!pf.global<16x512xf32, #P, #pf.sbp<[S(0)]>>) -> !pf.global<16x512xf32, #P>
  // CHECK: pf.activation %{{.*}} {kind = "sigmoid"}
  %sig = pf.activation %hb {kind = "sigmoid"} : (!pf.global<16x512xf32, #P, #pf.sbp<[S(0)]>>) -> !pf.global<16x512xf32, #P>
  // CHECK: %[[R:.*]] = pf.relu %[[BA]] {pf.stage = 1 : i64}
  %r = pf.relu %hb {pf.stage = 1} : (!pf.global<16x512xf32, #P, #pf.sbp<[S(0)]>>) -> !pf.global<16x512xf32, #P>
  // CHECK: %[[A:.*]] = pf.add %[[R]], %[[BA]] {pf.checkpoint}
  %a = pf.add %r, %hb {pf.checkpoint} : (!pf.global<16x512xf32, #P>, !pf.global<16x512xf32, #P, #pf.sbp<[S(0)]>>) -> !pf.global<16x512xf32, #P>
  // CHECK: pf.mul_scalar %[[A]] {scalar = 5.000000e-01 : f64}
  %m = pf.mul_scalar %a {scalar = 0.5 : f64} : (!pf.global<16x512xf32, #P>) -> !pf.global<16x512xf32, #P>
  // Batched matmul.
  // CHECK: pf.matmul {{.*}} -> !pf.global<4x8x2xf32
  %bm = pf.matmul %bx, %bw : (!pf.global<4x8x16xf32, #P, #pf.sbp<[S(0)]>>, !pf.global<4x16x2xf32, #P, #pf.sbp<[S(0)]>>) -> !pf.global<4x8x2xf32, #P, #pf.sbp<[S(0)]>>
  // A 2-D rhs shared by every batch, and a transposed lhs.
  // CHECK: pf.matmul {{.*}} -> !pf.global<4x8x784xf32
  %sh = pf.matmul %bx, %ta {transpose_b} : (!pf.global<4x8x16xf32, #P, #pf.sbp<[S(0)]>>, !pf.global<784x16xf32, #P, #pf.sbp<[B]>>) -> !pf.global<4x8x784xf32, #P>
  // CHECK: pf.matmul {{.*}} {transpose_a} {{.*}} -> !pf.global<16x16xf32
  %tt = pf.matmul %ta, %ta {transpose_a} : (!pf.global<784x16xf32, #P, #pf.sbp<[B]>>, !pf.global<784x16xf32, #P, #pf.sbp<[B]>>) -> !pf.global<16x16xf32, #P>
  return
}

// -----

#P = #pf.placement<"cpu", [0]>
// CHECK-LABEL: func.func @shapes
func.func @shapes(%x: !pf.global<16x1x28x28xf32, #P, #pf.sbp<[B]>>) {
  // CHECK: pf.flatten %{{.*}} : {{.*}} -> !pf.global<16x784xf32
  %f = pf.flatten %x : (!pf.global<16x1x28x28xf32, #P, #pf.sbp<[B]>>) -> !pf.global<16x784xf32, #P>
  // CHECK: pf.flatten %{{.*}} {end_dim = 2 : i64, start_dim = 0 : i64} : {{.*}} -> !pf.global<448x28xf32
  %f2 = pf.flatten %x {start_dim = 0, end_dim = 2} : (!pf.global<16x1x28x28xf32, #P, #pf.sbp<[B]>>) -> !pf.global<448x28xf32, #P>
  // CHECK: pf.reshape %{{.*}} : !pf.global<16x784xf32, #{{.*}}> -> !pf.global<16x28x28xf32
  %r = pf.reshape %f : !pf.global<16x784xf32, #P> -> !pf.global<16x28x28xf32, #P>
  // CHECK: pf.transpose %{{.*}} {perm = array<i64: 2, 0, 1>} : {{.*}} -> !pf.global<28x16x28xf32
  %t = pf.transpose %r {perm = array<i64: 2, 0, 1>} : (!pf.global<16x28x28xf32, #P>) -> !pf.global<28x16x28xf32, #P>
  return
}

// -----

#P = #pf.placement<"cpu", [1]>
// CHECK-LABEL: func.func @loss
// CHECK: pf.softmax_cross_entropy %{{.*}}, %{{.*}} : (!pf.global<16x10xf32, {{.*}}>, !pf.global<16xi64, {{.*}}>) -> !pf.global<f32, #{{.*}}>
func.func @loss(%logits: !pf.global<16x10xf32, #P, #pf.sbp<[B]>>, %labels: !pf.global<16xi64, #P, #pf.sbp<[B]>>) -> !pf.global<f32, #P> {
  %l = pf.softmax_cross_entropy %logits, %labels : (!pf.global<16x10xf32, #P, #pf.sbp<[B]>>, !pf.global<16xi64, #P, #pf.sbp<[B]>>) -> !pf.global<f32, #P>
  return %l : !pf.global<f32, #P>
}

// -----

#P = #pf.placement<"cpu", [0]>
// CHECK-LABEL: func.func @conv_pool_bn
func.func @conv_pool_bn(%x: !pf.global<8x4x32x32xf32, #P, #pf.sbp<[B]>>,
                        %w: !pf.global<16x2x3x3xf32, #P, #pf.sbp<[B]>>,
                        %c: !pf.global<16xf32, #P, #pf.sbp<[B]>>) {
  // CHECK: pf.conv2d %{{.*}}, %{{.*}} {dilation = array<i64: 2, 2>, groups = 2 : i64, padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : {{.*}} -> !pf.global<8x16x15x15xf32
  %y = pf.conv2d %x, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 2, 2>, groups = 2} : (!pf.global<8x4x32x32xf32, #P, #pf.sbp<[B]>>, !pf.global<16x2x3x3xf32, #P, #pf.sbp<[B]>>) -> !pf.global<8x16x15x15xf32, #P>
  // CHECK: pf.max_pool2d %{{.*}} {kernel = array<i64: 3, 3>, padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : {{.*}} -> !pf.global<8x16x8x8xf32
  %m = pf.max_pool2d %y {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (!pf.global<8x16x15x15xf32, #P>) -> !pf.global<8x16x8x8xf32, #P>
  // CHECK: pf.avg_pool2d %{{.*}} {kernel = array<i64: 2, 2>} : {{.*}} -> !pf.global<8x16x4x4xf32
  %a = pf.avg_pool2d %m {kernel = array<i64: 2, 2>} : (!pf.global<8x16x8x8xf32, #P>) -> !pf.global<8x16x4x4xf32, #P>
  // CHECK: pf.global_avg_pool %{{.*}} : {{.*}} -> !pf.global<8x16x1x1xf32
  %g = pf.global_avg_pool %a : (!pf.global<8x16x4x4xf32, #P>) -> !pf.global<8x16x1x1xf32, #P>
  // CHECK: %{{.*}}, %{{.*}}, %{{.*}} = pf.batch_norm %{{.*}} {epsilon = 1.000000e-03 : f64, momentum = 2.000000e-01 : f64} : {{.*}} -> (!pf.global<8x16x15x15xf32, {{.*}}>, !pf.global<16xf32, {{.*}}>, !pf.global<16xf32, {{.*}}>)
  %n:3 = pf.batch_norm %y, %c, %c, %c, %c {epsilon = 1.0e-3, momentum = 0.2} : (!pf.global<8x16x15x15xf32, #P>, !pf.global<16xf32, #P, #pf.sbp<[B]>>, !pf.global<16xf32, #P, #pf.sbp<[B]>>, !pf.global<16xf32, #P, #pf.sbp<[B]>>, !pf.global<16xf32, #P, #pf.sbp<[B]>>) -> (!pf.global<8x16x15x15xf32, #P>, !pf.global<16xf32, #P>, !pf.global<16xf32, #P>)
  return
}

// -----

#P = #pf.placement<"cpu", [0, 1]>
#Q = #pf.placement<"cpu", [2, 3]>
// CHECK-LABEL: func.func @conversions
func.func @conversions(%l: tensor<8x4xf32>) -> tensor<16x4xf32> {
  // CHECK: %[[G:.*]] = pf.to_global %{{.*}} : tensor<8x4xf32> -> !pf.global<16x4xf32, #{{.*}}, #pf.sbp<[S(0)]>>
  %g = pf.to_global %l : tensor<8x4xf32> -> !pf.global<16x4xf32, #P, #pf.sbp<[S(0)]>>
  // CHECK: %[[M:.*]] = pf.to_global %[[G]] : {{.*}} -> !pf.global<16x4xf32, #{{.*}}, #pf.sbp<[B]>>
  %m = pf.to_global %g : !pf.global<16x4xf32, #P, #pf.sbp<[S(0)]>> -> !pf.global<16x4xf32, #Q, #pf.sbp<[B]>>
  // CHECK: %[[P:.*]] = pf.to_global %{{.*}} : tensor<8x4xf32> -> !pf.global<8x4xf32, #{{.*}}, #pf.sbp<[P]>>
  %p = pf.to_global %l : tensor<8x4xf32> -> !pf.global<8x4xf32, #P, #pf.sbp<[P]>>
  // CHECK: pf.to_local %[[M]] : !pf.global<16x4xf32, #{{.*}}, #pf.sbp<[B]>> -> tensor<16x4xf32>
  %r = pf.to_local %m : !pf.global<16x4xf32, #Q, #pf.sbp<[B]>> -> tensor<16x4xf32>
  // CHECK: pf.constant dense<{{.*}}> : tensor<2x2xf32> : !pf.global<2x2xf32
  %c = pf.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32> : !pf.global<2x2xf32, #P, #pf.sbp<[B]>>
  return %r : tensor<16x4xf32>
}

// -----

// Backward ops.
#P = #pf.placement<"cpu", [0]>
// CHECK-LABEL: func.func @backward_ops
func.func @backward_ops(%y: !pf.global<4x6xf32, #P>, %labels: !pf.global<4xi64, #P>, %dl: !pf.global<f32, #P>,
                        %x: !pf.global<2x3x8x8xf32, #P>, %w: !pf.global<4x3x3x3xf32, #P>, %dy: !pf.global<2x4x6x6xf32, #P>,
                        %p: !pf.global<2x3x4x4xf32, #P>, %g: !pf.global<2x3x1x1xf32, #P>, %c: !pf.global<3xf32, #P>,
                        %lng: !pf.global<6xf32, #P>, %eids: !pf.global<4x4xi64, #P>) {
  // CHECK: pf.relu_grad %{{.*}}, %{{.*}} : {{.*}} -> !pf.global<4x6xf32
  %0 = pf.relu_grad %y, %y : (!pf.global<4x6xf32, #P>, !pf.global<4x6xf32, #P>) -> !pf.global<4x6xf32, #P>
  // CHECK: pf.layer_norm_grad_input %{{.*}}, %{{.*}}, %{{.*}} : {{.*}} -> !pf.global<4x6xf32
  %lgi = pf.layer_norm_grad_input %y, %lng, %y : (!pf.global<4x6xf32, #P>, !pf.global<6xf32, #P>, !pf.global<4x6xf32, #P>) -> !pf.global<4x6xf32, #P>
  // CHECK: pf.layer_norm_grad_params %{{.*}}, %{{.*}} : {{.*}} -> (!pf.global<6xf32, {{.*}}>, !pf.global<6xf32
  %lgg, %lgb = pf.layer_norm_grad_params %y, %y : (!pf.global<4x6xf32, #P>, !pf.global<4x6xf32, #P>) -> (!pf.global<6xf32, #P>, !pf.global<6xf32, #P>)
  // CHECK: pf.embedding %{{.*}}, %{{.*}} : {{.*}} -> !pf.global<4x4x6xf32
  %emb = pf.embedding %y, %eids : (!pf.global<4x6xf32, #P>, !pf.global<4x4xi64, #P>) -> !pf.global<4x4x6xf32, #P>
  // CHECK: pf.embedding_grad %{{.*}}, %{{.*}} {num_rows = 4 : i64} : {{.*}} -> !pf.global<4x6xf32
  %embg = pf.embedding_grad %eids, %emb {num_rows = 4 : i64} : (!pf.global<4x4xi64, #P>, !pf.global<4x4x6xf32, #P>) -> !pf.global<4x6xf32, #P>
  // CHECK: pf.softmax_grad %{{.*}}, %{{.*}} {axis = 0 : i64, log} : {{.*}} -> !pf.global<4x6xf32
  %sg = pf.softmax_grad %y, %y {axis = 0 : i64, log} : (!pf.global<4x6xf32, #P>, !pf.global<4x6xf32, #P>) -> !pf.global<4x6xf32, #P>
  // CHECK: pf.activation_grad %{{.*}}, %{{.*}} {kind = "gelu_tanh"} : {{.*}} -> !pf.global<4x6xf32
  %ag = pf.activation_grad %y, %y {kind = "gelu_tanh"} : (!pf.global<4x6xf32, #P>, !pf.global<4x6xf32, #P>) -> !pf.global<4x6xf32, #P>
  // CHECK: pf.reduce_sum %{{.*}} {axes = array<i64: 0>} : {{.*}} -> !pf.global<6xf32
  %1 = pf.reduce_sum %y {axes = array<i64: 0>} : (!pf.global<4x6xf32, #P>) -> !pf.global<6xf32, #P>
  // CHECK: pf.softmax_cross_entropy_grad
  %2 = pf.softmax_cross_entropy_grad %y, %labels, %dl : (!pf.global<4x6xf32, #P>, !pf.global<4xi64, #P>, !pf.global<f32, #P>) -> !pf.global<4x6xf32, #P>
  // CHECK: pf.conv2d_grad_input %{{.*}}, %{{.*}} : {{.*}} -> !pf.global<2x3x8x8xf32
  %3 = pf.conv2d_grad_input %dy, %w : (!pf.global<2x4x6x6xf32, #P>, !pf.global<4x3x3x3xf32, #P>) -> !pf.global<2x3x8x8xf32, #P>
  // CHECK: pf.conv2d_grad_weight %{{.*}}, %{{.*}} : {{.*}} -> !pf.global<4x3x3x3xf32
  %4 = pf.conv2d_grad_weight %x, %dy : (!pf.global<2x3x8x8xf32, #P>, !pf.global<2x4x6x6xf32, #P>) -> !pf.global<4x3x3x3xf32, #P>
  // CHECK: pf.max_pool2d_grad %{{.*}}, %{{.*}} {kernel = array<i64: 2, 2>}
  %5 = pf.max_pool2d_grad %x, %p {kernel = array<i64: 2, 2>} : (!pf.global<2x3x8x8xf32, #P>, !pf.global<2x3x4x4xf32, #P>) -> !pf.global<2x3x8x8xf32, #P>
  // CHECK: pf.avg_pool2d_grad %{{.*}} {kernel = array<i64: 2, 2>}
  %6 = pf.avg_pool2d_grad %p {kernel = array<i64: 2, 2>} : (!pf.global<2x3x4x4xf32, #P>) -> !pf.global<2x3x8x8xf32, #P>
  // CHECK: pf.global_avg_pool_grad %{{.*}} : {{.*}} -> !pf.global<2x3x4x4xf32
  %7 = pf.global_avg_pool_grad %g : (!pf.global<2x3x1x1xf32, #P>) -> !pf.global<2x3x4x4xf32, #P>
  // CHECK: pf.batch_norm_grad_input
  %8 = pf.batch_norm_grad_input %p, %c, %p : (!pf.global<2x3x4x4xf32, #P>, !pf.global<3xf32, #P>, !pf.global<2x3x4x4xf32, #P>) -> !pf.global<2x3x4x4xf32, #P>
  // CHECK: pf.batch_norm_grad_params
  %9:2 = pf.batch_norm_grad_params %p, %p : (!pf.global<2x3x4x4xf32, #P>, !pf.global<2x3x4x4xf32, #P>) -> (!pf.global<3xf32, #P>, !pf.global<3xf32, #P>)
  return
}

// -----

// Optimizer ops.
#P = #pf.placement<"cpu", [0]>
!W = !pf.global<4x3xf32, #P, #pf.sbp<[B]>>
!S = !pf.global<f32, #P, #pf.sbp<[B]>>
// CHECK-LABEL: func.func @optimizer_ops
func.func @optimizer_ops(%p: !W, %g: !W, %b: !W) {
  // CHECK: %[[LR:.*]] = pf.scalar_input "lr" : !pf.global<f32
  %lr = pf.scalar_input "lr" : !S
  %t = pf.scalar_input "step" : !S
  // CHECK: pf.sgd_update %{{.*}}, %{{.*}}, %[[LR]] {weight_decay = 1.000000e-01 : f64}
  %0 = pf.sgd_update %p, %g, %lr {weight_decay = 0.1 : f64} : (!W, !W, !S) -> !W
  // CHECK: pf.sgd_update %{{.*}}, %{{.*}}, %[[LR]] momentum_state(%{{.*}}, %{{.*}}) {momentum = 9.000000e-01 : f64, nesterov}
  %1:2 = pf.sgd_update %p, %g, %lr momentum_state(%b, %t) {momentum = 0.9 : f64, nesterov} : (!W, !W, !S, !W, !S) -> (!W, !W)
  // CHECK: pf.adam_update {{.*}} {decoupled}
  %2:3 = pf.adam_update %p, %g, %b, %b, %lr, %t {decoupled} : (!W, !W, !W, !W, !S, !S) -> (!W, !W, !W)
  // CHECK: %[[F:.*]] = pf.clip_scale %{{.*}} {max_norm = 1.000000e+00 : f64}
  %f = pf.clip_scale %t {max_norm = 1.0 : f64} : (!S) -> !S
  // CHECK: pf.scale_by %{{.*}}, %[[F]]
  %3 = pf.scale_by %g, %f : (!W, !S) -> !W
  return
}

// -----

// Layout changes on global values (pf-lower-boxing's output): collectives
// within rank groups, and moves between placements and devices.
#P4 = #pf.placement<"cpu", [0, 1, 2, 3]>
#Q = #pf.placement<"cpu", [[0, 1], [2, 3]]>
#P0 = #pf.placement<"cpu", [0]>
#P01 = #pf.placement<"cpu", [0, 1]>
#P23 = #pf.placement<"cpu", [2, 3]>
#G01 = #pf.placement<"cuda", [0, 1]>
// CHECK-LABEL: func.func @boxing
// CHECK-SAME: (%[[P:[^:]*]]: {{.*}}, %[[S0:[^:]*]]: {{.*}}, %[[B:[^:]*]]: {{.*}}, %[[Q:[^:]*]]: {{.*}}, %[[R:[^:]*]]: {{.*}}, %[[H:[^:]*]]:
func.func @boxing(%p: !pf.global<8x16xf32, #P4, #pf.sbp<[P]>>,
                  %s0: !pf.global<8x16xf32, #P4, #pf.sbp<[S(0)]>>,
                  %b: !pf.global<8x16xf32, #P4, #pf.sbp<[B]>>,
                  %q: !pf.global<8x16xf32, #Q, #pf.sbp<[S(0), P]>>,
                  %r: !pf.global<8x16xf32, #P0, #pf.sbp<[B]>>,
                  %h: !pf.global<16x4xf32, #P01, #pf.sbp<[S(0)]>>) {
  // CHECK: pf.all_reduce %[[P]] {groups = [array<i64: 0, 1, 2, 3>]} : !pf.global<8x16xf32, #{{.*}}, #pf.sbp<[P]>> -> !pf.global<8x16xf32, #{{.*}}, #pf.sbp<[B]>>
  %0 = pf.all_reduce %p {groups = [array<i64: 0, 1, 2, 3>]} : !pf.global<8x16xf32, #P4, #pf.sbp<[P]>> -> !pf.global<8x16xf32, #P4, #pf.sbp<[B]>>
  // A split all-reduce: started in slot 3, its sum taken by the wait.
  // CHECK: %[[ST:.*]] = pf.all_reduce %[[P]] {groups = [array<i64: 0, 1, 2, 3>], pf.async_slot = 3 : i64}
  // CHECK: pf.all_reduce_wait %[[ST]], %[[P]] {slot = 3 : i64} : !pf.global<8x16xf32, #{{.*}}, #pf.sbp<[B]>>, !pf.global<8x16xf32, #{{.*}}, #pf.sbp<[P]>> -> !pf.global<8x16xf32, #{{.*}}, #pf.sbp<[B]>>
  %st = pf.all_reduce %p {groups = [array<i64: 0, 1, 2, 3>], pf.async_slot = 3 : i64} : !pf.global<8x16xf32, #P4, #pf.sbp<[P]>> -> !pf.global<8x16xf32, #P4, #pf.sbp<[B]>>
  %sum = pf.all_reduce_wait %st, %p {slot = 3 : i64} : !pf.global<8x16xf32, #P4, #pf.sbp<[B]>>, !pf.global<8x16xf32, #P4, #pf.sbp<[P]>> -> !pf.global<8x16xf32, #P4, #pf.sbp<[B]>>
  // Within the rows of a 2x2 hierarchy.
  // CHECK: pf.all_reduce %[[Q]] {groups = [array<i64: 0, 1>, array<i64: 2, 3>]} : {{.*}}[S(0), P]>> -> {{.*}}[S(0), B]>>
  %1 = pf.all_reduce %q {groups = [array<i64: 0, 1>, array<i64: 2, 3>]} : !pf.global<8x16xf32, #Q, #pf.sbp<[S(0), P]>> -> !pf.global<8x16xf32, #Q, #pf.sbp<[S(0), B]>>
  // CHECK: pf.reduce_scatter %[[P]] {axis = 1 : i64, groups = [array<i64: 0, 1, 2, 3>]} : {{.*}}[P]>> -> {{.*}}[S(1)]>>
  %2 = pf.reduce_scatter %p {axis = 1, groups = [array<i64: 0, 1, 2, 3>]} : !pf.global<8x16xf32, #P4, #pf.sbp<[P]>> -> !pf.global<8x16xf32, #P4, #pf.sbp<[S(1)]>>
  // CHECK: pf.all_gather %[[S0]] {axis = 0 : i64, groups = [array<i64: 0, 1, 2, 3>]} : {{.*}}[S(0)]>> -> {{.*}}[B]>>
  %3 = pf.all_gather %s0 {axis = 0, groups = [array<i64: 0, 1, 2, 3>]} : !pf.global<8x16xf32, #P4, #pf.sbp<[S(0)]>> -> !pf.global<8x16xf32, #P4, #pf.sbp<[B]>>
  // CHECK: pf.all_to_all %[[S0]] {concat_axis = 0 : i64, groups = [array<i64: 0, 1, 2, 3>], split_axis = 1 : i64} : {{.*}}[S(0)]>> -> {{.*}}[S(1)]>>
  %4 = pf.all_to_all %s0 {split_axis = 1, concat_axis = 0, groups = [array<i64: 0, 1, 2, 3>]} : !pf.global<8x16xf32, #P4, #pf.sbp<[S(0)]>> -> !pf.global<8x16xf32, #P4, #pf.sbp<[S(1)]>>
  // CHECK: pf.shard %[[B]] {axis = 0 : i64, groups = [array<i64: 0, 1, 2, 3>]} : {{.*}}[B]>> -> {{.*}}[S(0)]>>
  %5 = pf.shard %b {axis = 0, groups = [array<i64: 0, 1, 2, 3>]} : !pf.global<8x16xf32, #P4, #pf.sbp<[B]>> -> !pf.global<8x16xf32, #P4, #pf.sbp<[S(0)]>>
  // CHECK: pf.unshard %[[S0]] {axis = 0 : i64, groups = [array<i64: 0, 1, 2, 3>]} : {{.*}}[S(0)]>> -> {{.*}}[P]>>
  %u = pf.unshard %s0 {axis = 0, groups = [array<i64: 0, 1, 2, 3>]} : !pf.global<8x16xf32, #P4, #pf.sbp<[S(0)]>> -> !pf.global<8x16xf32, #P4, #pf.sbp<[P]>>
  // CHECK: pf.keep_one %[[B]] {groups = [array<i64: 0, 1, 2, 3>]} : {{.*}}[B]>> -> {{.*}}[P]>>
  %6 = pf.keep_one %b {groups = [array<i64: 0, 1, 2, 3>]} : !pf.global<8x16xf32, #P4, #pf.sbp<[B]>> -> !pf.global<8x16xf32, #P4, #pf.sbp<[P]>>
  // CHECK: pf.broadcast %[[R]] {ranks = array<i64: 0, 1, 2, 3>, root = 0 : i64} : (!pf.global<8x16xf32, #{{.*}}, #pf.sbp<[B]>>) -> !pf.global<8x16xf32, #{{.*}}, #pf.sbp<[B]>>
  %7 = pf.broadcast %r {root = 0, ranks = array<i64: 0, 1, 2, 3>} : (!pf.global<8x16xf32, #P0, #pf.sbp<[B]>>) -> !pf.global<8x16xf32, #P4, #pf.sbp<[B]>>
  // CHECK: pf.reduce %[[P]] {ranks = array<i64: 0, 1, 2, 3>, root = 0 : i64} : (!pf.global<8x16xf32, #{{.*}}, #pf.sbp<[P]>>) -> !pf.global<8x16xf32, #{{.*}}, #pf.sbp<[B]>>
  %8 = pf.reduce %p {root = 0, ranks = array<i64: 0, 1, 2, 3>} : (!pf.global<8x16xf32, #P4, #pf.sbp<[P]>>) -> !pf.global<8x16xf32, #P0, #pf.sbp<[B]>>
  // CHECK: pf.transfer %[[H]] {moves = [array<i64: 0, 2, 0, 0, 8, 4>, array<i64: 1, 3, 8, 0, 8, 4>]} : !pf.global<16x4xf32, #{{.*}}, #pf.sbp<[S(0)]>> -> !pf.global<16x4xf32, #{{.*}}, #pf.sbp<[S(0)]>>
  %9 = pf.transfer %h {moves = [array<i64: 0, 2, 0, 0, 8, 4>, array<i64: 1, 3, 8, 0, 8, 4>]} : !pf.global<16x4xf32, #P01, #pf.sbp<[S(0)]>> -> !pf.global<16x4xf32, #P23, #pf.sbp<[S(0)]>>
  // CHECK: pf.device_copy %[[H]] : !pf.global<16x4xf32, #{{.*}}, #pf.sbp<[S(0)]>> -> !pf.global<16x4xf32, #{{.*}}, #pf.sbp<[S(0)]>>
  %10 = pf.device_copy %h : !pf.global<16x4xf32, #P01, #pf.sbp<[S(0)]>> -> !pf.global<16x4xf32, #G01, #pf.sbp<[S(0)]>>
  return
}

// -----

// A rank's program (pf-partition-ranks' output, local types): point-to-point
// messages, box copies, and the root-only halves of broadcast and reduce.
#R0 = #pf.placement<"cpu", [0]>
!T = !pf.global<8x4xf32, #R0, #pf.sbp<[B]>>
!H = !pf.global<4x4xf32, #R0, #pf.sbp<[B]>>
// CHECK-LABEL: module @rank0 attributes {pf.rank = 0 : i64}
// CHECK: func.func @per_rank(%[[X:[^:]*]]:
// CHECK-NEXT: %[[TOP:.*]] = pf.extract_box %[[X]] {offsets = array<i64: 0, 0>} : !pf.global<8x4xf32, #{{.*}}> -> !pf.global<4x4xf32, #{{.*}}>
// CHECK-NEXT: pf.send %[[TOP]] to 1 tag 3 : !pf.global<4x4xf32
// CHECK-NEXT: %[[IN:.*]] = pf.recv from 1 tag 4 : !pf.global<4x4xf32
// CHECK-NEXT: %[[ALL:.*]] = pf.assemble %[[TOP]], %[[IN]] {offsets = [array<i64: 0, 0>, array<i64: 4, 0>]} : (!pf.global<4x4xf32, {{.*}}>, !pf.global<4x4xf32, {{.*}}>) -> !pf.global<8x4xf32
// CHECK-NEXT: %[[BC:.*]] = pf.broadcast {ranks = array<i64: 1, 0>, root = 1 : i64} : () -> !pf.global<8x4xf32
// CHECK-NEXT: pf.reduce %[[BC]] {ranks = array<i64: 1, 0>, root = 1 : i64} : (!pf.global<8x4xf32, {{.*}}>) -> (){{$}}
// CHECK-NEXT: return %[[ALL]]
module @rank0 attributes {pf.rank = 0} {
  func.func @per_rank(%x: !T) -> !T {
    %top = pf.extract_box %x {offsets = array<i64: 0, 0>} : !T -> !H
    pf.send %top to 1 tag 3 : !H
    %in = pf.recv from 1 tag 4 : !H
    %all = pf.assemble %top, %in {offsets = [array<i64: 0, 0>, array<i64: 4, 0>]} : (!H, !H) -> !T
    %bc = pf.broadcast {root = 1, ranks = array<i64: 1, 0>} : () -> !T
    pf.reduce %bc {root = 1, ranks = array<i64: 1, 0>} : (!T) -> ()
    return %all : !T
  }
}

// -----

// Micro-batching, the packed losses, a pipeline schedule and dropout.
#P = #pf.placement<"cpu", [0]>
!X = !pf.global<16x4xf32, #P, #pf.sbp<[B]>>
!M = !pf.global<8x4xf32, #P, #pf.sbp<[B]>>
!L = !pf.global<f32, #P, #pf.sbp<[B]>>
// CHECK: pf.schedule {actions = {{\[\[}}"F0", "F1", "B0", "B1"], ["F0", "B0", "F1", "B1"]], kind = "1f1b", num_chunks = 1 : i64, num_microbatches = 2 : i64, num_stages = 2 : i64}
pf.schedule {kind = "1f1b", num_stages = 2, num_microbatches = 2, num_chunks = 1,
             actions = [["F0", "F1", "B0", "B1"], ["F0", "B0", "F1", "B1"]]}
// CHECK-LABEL: func.func @microbatches
// CHECK-SAME: (%[[X:[^:]*]]: {{.*}}, %[[L0:[^:]*]]: {{.*}}, %[[L1:[^:]*]]:
// CHECK: %[[M:.*]] = pf.microbatch %[[X]] {count = 2 : i64, index = 1 : i64} : !pf.global<16x4xf32, {{.*}}> -> !pf.global<8x4xf32
// CHECK: pf.dropout %[[M]] {p = 2.500000e-01 : f64, stream = 7 : i64} : (!pf.global<8x4xf32, {{.*}}>) -> !pf.global<8x4xf32
// CHECK: pf.pack %[[L0]], %[[L1]] : (!pf.global<f32, {{.*}}>, !pf.global<f32, {{.*}}>) -> !pf.global<2xf32
func.func @microbatches(%x: !X, %l0: !L, %l1: !L) -> !pf.global<2xf32, #P, #pf.sbp<[B]>> {
  %m = pf.microbatch %x {index = 1, count = 2} : !X -> !M
  %d = pf.dropout %m {p = 0.25 : f64, stream = 7 : i64} : (!M) -> !M
  %l = pf.pack %l0, %l1 : (!L, !L) -> !pf.global<2xf32, #P, #pf.sbp<[B]>>
  return %l : !pf.global<2xf32, #P, #pf.sbp<[B]>>
}

// -----

// The transformer ops of PFTensorOps.td: result types are inferred and
// round-trip in both forms.
#P = #pf.placement<"cpu", [0, 1]>
// CHECK-LABEL: func.func @tensor_ops
func.func @tensor_ops(%a: !pf.global<2x8x96xf32, #P>, %b: !pf.global<2x8x96xf32, #P>,
                      %pos: !pf.global<8x96xf32, #P>, %col: !pf.global<1x1x8x8xf32, #P>,
                      %mask: !pf.global<2x4x8x8xi64, #P>, %att: !pf.global<2x4x8x8xf32, #P>,
                      %a3: !pf.global<2x8x96xf32, #P, #pf.sbp<[S(2, 3)]>>) {
  // CHECK: pf.sub %{{.*}}, %{{.*}} : {{.*}} -> !pf.global<2x8x96xf32
  %d = pf.sub %a, %b : (!pf.global<2x8x96xf32, #P>, !pf.global<2x8x96xf32, #P>) -> !pf.global<2x8x96xf32, #P>
  // CHECK: pf.div %{{.*}}, %{{.*}} : {{.*}} -> !pf.global<2x8x96xf32
  %q = pf.div %a, %b : (!pf.global<2x8x96xf32, #P>, !pf.global<2x8x96xf32, #P>) -> !pf.global<2x8x96xf32, #P>
  // CHECK: pf.broadcast_to %{{.*}} {shape = array<i64: 2, 8, 96>} : {{.*}} -> !pf.global<2x8x96xf32
  %e = pf.broadcast_to %pos {shape = array<i64: 2, 8, 96>} : (!pf.global<8x96xf32, #P>) -> !pf.global<2x8x96xf32, #P>
  // CHECK: pf.broadcast_to %{{.*}} {shape = array<i64: 2, 4, 8, 8>} : {{.*}} -> !pf.global<2x4x8x8xf32
  %c = pf.broadcast_to %col {shape = array<i64: 2, 4, 8, 8>} : (!pf.global<1x1x8x8xf32, #P>) -> !pf.global<2x4x8x8xf32, #P>
  // CHECK: pf.masked_fill %{{.*}}, %{{.*}} {value = 0xFFF0000000000000 : f64} : {{.*}} -> !pf.global<2x4x8x8xf32
  %m = pf.masked_fill %att, %mask {value = 0xFFF0000000000000 : f64} : (!pf.global<2x4x8x8xf32, #P>, !pf.global<2x4x8x8xi64, #P>) -> !pf.global<2x4x8x8xf32, #P>
  // CHECK: pf.slice %{{.*}} {offsets = array<i64: 0, 0, 32>, sizes = array<i64: 2, 8, 32>} : {{.*}} -> !pf.global<2x8x32xf32
  %k = pf.slice %a {offsets = array<i64: 0, 0, 32>, sizes = array<i64: 2, 8, 32>} : (!pf.global<2x8x96xf32, #P>) -> !pf.global<2x8x32xf32, #P>
  // CHECK: pf.pad %{{.*}} {offsets = array<i64: 0, 0, 32>, shape = array<i64: 2, 8, 96>} : {{.*}} -> !pf.global<2x8x96xf32
  %p = pf.pad %k {offsets = array<i64: 0, 0, 32>, shape = array<i64: 2, 8, 96>} : (!pf.global<2x8x32xf32, #P>) -> !pf.global<2x8x96xf32, #P>
  // CHECK: pf.concat %{{.*}}, %{{.*}}, %{{.*}} {axis = 2 : i64} : {{.*}} -> !pf.global<2x8x160xf32
  %cat = pf.concat %k, %a, %k {axis = 2 : i64} : (!pf.global<2x8x32xf32, #P>, !pf.global<2x8x96xf32, #P>, !pf.global<2x8x32xf32, #P>) -> !pf.global<2x8x160xf32, #P>
  // CHECK: pf.reduce_sum %{{.*}} {axes = array<i64: 0, 2>} : {{.*}} -> !pf.global<8xf32
  %s = pf.reduce_sum %a {axes = array<i64: 0, 2>} : (!pf.global<2x8x96xf32, #P>) -> !pf.global<8xf32, #P>
  // CHECK: pf.constant dense<[0, 1, 2, 3]> : tensor<4xi64>
  %ar = pf.constant dense<[0, 1, 2, 3]> : tensor<4xi64> : !pf.global<4xi64, #P>
  // CHECK: pf.count_kept %{{.*}} {ignore_index = -1 : i64} : {{.*}} -> !pf.global<f32, #{{.*}}>
  %n = pf.count_kept %ar {ignore_index = -1 : i64} : (!pf.global<4xi64, #P>) -> !pf.global<f32, #P>
  // A grouped split round-trips.
  // CHECK: pf.relu %{{.*}} : {{.*}}#pf.sbp<[S(2, 3)]>>
  %g = pf.relu %a3 : (!pf.global<2x8x96xf32, #P, #pf.sbp<[S(2, 3)]>>) -> !pf.global<2x8x96xf32, #P, #pf.sbp<[S(2, 3)]>>
  return
}

// -----

// The ops of PFLogicalOps.td: comparisons make i1 tensors, the logical ops
// take them, pf.where selects by one, pf.cast converts element types.
#P = #pf.placement<"cpu", [0, 1]>
// CHECK-LABEL: func.func @logical_ops
func.func @logical_ops(%a: !pf.global<4x8xf32, #P>, %b: !pf.global<4x8xf32, #P>,
                       %i: !pf.global<4x8xi32, #P>, %m: !pf.global<4x8xi1, #P>) {
  // CHECK: %[[LT:.*]] = pf.compare %{{.*}}, %{{.*}} {predicate = "lt"} : {{.*}} -> !pf.global<4x8xi1
  %lt = pf.compare %a, %b {predicate = "lt"} : (!pf.global<4x8xf32, #P>, !pf.global<4x8xf32, #P>) -> !pf.global<4x8xi1, #P>
  // CHECK: pf.compare %{{.*}}, %{{.*}} {predicate = "eq"} : (!pf.global<4x8xi32{{.*}} -> !pf.global<4x8xi1
  %eq = pf.compare %i, %i {predicate = "eq"} : (!pf.global<4x8xi32, #P>, !pf.global<4x8xi32, #P>) -> !pf.global<4x8xi1, #P>
  // CHECK: pf.logical_and %[[LT]], %{{.*}} : {{.*}} -> !pf.global<4x8xi1
  %and = pf.logical_and %lt, %m : (!pf.global<4x8xi1, #P>, !pf.global<4x8xi1, #P>) -> !pf.global<4x8xi1, #P>
  // CHECK: pf.logical_or %{{.*}}, %{{.*}} : {{.*}} -> !pf.global<4x8xi1
  %or = pf.logical_or %and, %eq : (!pf.global<4x8xi1, #P>, !pf.global<4x8xi1, #P>) -> !pf.global<4x8xi1, #P>
  // CHECK: pf.logical_xor %{{.*}}, %{{.*}} : {{.*}} -> !pf.global<4x8xi1
  %xor = pf.logical_xor %or, %m : (!pf.global<4x8xi1, #P>, !pf.global<4x8xi1, #P>) -> !pf.global<4x8xi1, #P>
  // CHECK: pf.logical_not %{{.*}} : {{.*}} -> !pf.global<4x8xi1
  %not = pf.logical_not %xor : (!pf.global<4x8xi1, #P>) -> !pf.global<4x8xi1, #P>
  // CHECK: pf.where %{{.*}}, %{{.*}}, %{{.*}} : {{.*}} -> !pf.global<4x8xf32
  %w = pf.where %not, %a, %b : (!pf.global<4x8xi1, #P>, !pf.global<4x8xf32, #P>, !pf.global<4x8xf32, #P>) -> !pf.global<4x8xf32, #P>
  // CHECK: pf.masked_fill %{{.*}}, %{{.*}} {value = 0xFFF0000000000000 : f64} : (!pf.global<4x8xf32{{.*}}, !pf.global<4x8xi1
  %f = pf.masked_fill %w, %not {value = 0xFFF0000000000000 : f64} : (!pf.global<4x8xf32, #P>, !pf.global<4x8xi1, #P>) -> !pf.global<4x8xf32, #P>
  // CHECK: pf.cast %{{.*}} : !pf.global<4x8xi1, {{.*}}> -> !pf.global<4x8xf32
  %c = pf.cast %m : !pf.global<4x8xi1, #P> -> !pf.global<4x8xf32, #P>
  // CHECK: pf.cast %{{.*}} : !pf.global<4x8xf32, {{.*}}> -> !pf.global<4x8xi32
  %t = pf.cast %a : !pf.global<4x8xf32, #P> -> !pf.global<4x8xi32, #P>
  // CHECK: pf.constant dense<[true, false]> : tensor<2xi1>
  %k = pf.constant dense<[true, false]> : tensor<2xi1> : !pf.global<2xi1, #P>
  return
}

// -----

// Fused attention and its gradient: the optional mask, causal, dropout.
#P = #pf.placement<"cpu", [0]>
!Q = !pf.global<2x4x8x16xf32, #P>
!K = !pf.global<2x4x6x16xf32, #P>
!V = !pf.global<2x4x6x8xf32, #P>
!O = !pf.global<2x4x8x8xf32, #P>
!L = !pf.global<2x4x8xf32, #P>
// CHECK-LABEL: func.func @attention
func.func @attention(%q: !Q, %k: !K, %v: !V, %m: !pf.global<1x4x8x6xi1, #P>) {
  // CHECK: pf.attention %{{.*}}, %{{.*}}, %{{.*}} {causal, dropout_p = 1.000000e-01 : f64, scale = 2.500000e-01 : f64, stream = 3 : i64} : {{.*}} -> (!pf.global<2x4x8x8xf32{{.*}}, !pf.global<2x4x8xf32
  %o, %l = pf.attention %q, %k, %v {scale = 0.25 : f64, causal, dropout_p = 0.1 : f64, stream = 3 : i64} : (!Q, !K, !V) -> (!O, !L)
  // CHECK: pf.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {scale = 2.500000e-01 : f64} : ({{.*}}, !pf.global<1x4x8x6xi1
  %o2, %l2 = pf.attention %q, %k, %v, %m {scale = 0.25 : f64} : (!Q, !K, !V, !pf.global<1x4x8x6xi1, #P>) -> (!O, !L)
  // CHECK: pf.attention_grad {{.*}} {causal, scale = 2.500000e-01 : f64} : {{.*}} -> (!pf.global<2x4x8x16xf32{{.*}}, !pf.global<2x4x6x16xf32{{.*}}, !pf.global<2x4x6x8xf32
  %dq, %dk, %dv = pf.attention_grad %q, %k, %v, %o, %l, %o {scale = 0.25 : f64, causal} : (!Q, !K, !V, !O, !L, !O) -> (!Q, !K, !V)
  return
}
