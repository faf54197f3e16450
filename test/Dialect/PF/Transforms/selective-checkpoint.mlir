// RUN: pf-opt %s -split-input-file -pf-selective-checkpoint | FileCheck %s

// A fused attention under selective checkpointing is recomputed as a whole;
// the layer norm and projection around it keep their results. An op with
// the full mark keeps it; the selective marks are gone.
#P = #pf.placement<"cpu", [0]>
!X = !pf.global<2x4x16xf32, #P>
!W = !pf.global<16x16xf32, #P>
!C = !pf.global<16xf32, #P>
!A = !pf.global<2x2x4x8xf32, #P>
!L = !pf.global<2x2x4xf32, #P>
func.func @fused(%x: !X, %g: !C, %b: !C, %q: !A, %k: !A, %v: !A, %w: !W) -> (!X, !A) {
  %ln = pf.layer_norm %x, %g, %b {pf.checkpoint_selective} : (!X, !C, !C) -> !X
  %o, %lse = pf.attention %q, %k, %v {scale = 0.35355339059327373 : f64, causal, pf.checkpoint_selective, pf.stage = 1 : i64} : (!A, !A, !A) -> (!A, !L)
  %p = pf.matmul %ln, %w {transpose_b, pf.checkpoint_selective} : (!X, !W) -> !X
  %r = pf.relu %o {pf.checkpoint} : (!A) -> !A
  return %p, %r : !X, !A
}
// CHECK-LABEL: func.func @fused
// CHECK-SAME: (%[[X:[^:]*]]: {{.*}}, %[[G:[^:]*]]: {{.*}}, %[[B:[^:]*]]: {{.*}}, %[[Q:[^:]*]]: {{.*}}, %[[K:[^:]*]]: {{.*}}, %[[V:[^:]*]]: {{.*}}, %[[W:[^:]*]]: {{.*}})
// CHECK: %[[LN:.*]] = pf.layer_norm %[[X]], %[[G]], %[[B]] : (
// CHECK: %[[O:.*]], %{{.*}} = pf.attention %[[Q]], %[[K]], %[[V]] {causal, pf.checkpoint, pf.stage = 1 : i64, scale = {{.*}}} : (
// CHECK: pf.matmul %[[LN]], %[[W]] {transpose_b} : (
// CHECK: pf.relu %[[O]] {pf.checkpoint} : (
// CHECK-NOT: pf.checkpoint_selective

// -----

// nanoGPT's block unfused: the scores q @ k^T, their scale, the causal
// mask's expansion and masked_fill, the softmax and its dropout are
// recomputed; the layer norms, the q/k/v and output projections, the
// reshapes and transposes, the mask constant, the product with v and the
// GELU MLP keep their results.
#P = #pf.placement<"cpu", [0]>
!X = !pf.global<2x4x16xf32, #P>
!W = !pf.global<16x16xf32, #P>
!C = !pf.global<16xf32, #P>
!H = !pf.global<2x4x2x8xf32, #P>
!A = !pf.global<2x2x4x8xf32, #P>
!KT = !pf.global<2x2x8x4xf32, #P>
!S = !pf.global<2x2x4x4xf32, #P>
!M = !pf.global<1x1x4x4xi1, #P>
!MB = !pf.global<2x2x4x4xi1, #P>
!F = !pf.global<2x4x64xf32, #P>
!W1 = !pf.global<64x16xf32, #P>
!W2 = !pf.global<16x64xf32, #P>
func.func @unfused(%x: !X, %g: !C, %b: !C, %wq: !W, %wk: !W, %wv: !W, %wo: !W, %w1: !W1, %w2: !W2) -> !X {
  %ln = pf.layer_norm %x, %g, %b {pf.checkpoint_selective} : (!X, !C, !C) -> !X
  %q0 = pf.matmul %ln, %wq {transpose_b, pf.checkpoint_selective} : (!X, !W) -> !X
  %k0 = pf.matmul %ln, %wk {transpose_b, pf.checkpoint_selective} : (!X, !W) -> !X
  %v0 = pf.matmul %ln, %wv {transpose_b, pf.checkpoint_selective} : (!X, !W) -> !X
  %q1 = pf.reshape %q0 {pf.checkpoint_selective} : !X -> !H
  %k1 = pf.reshape %k0 {pf.checkpoint_selective} : !X -> !H
  %v1 = pf.reshape %v0 {pf.checkpoint_selective} : !X -> !H
  %q = pf.transpose %q1 {perm = array<i64: 0, 2, 1, 3>, pf.checkpoint_selective} : (!H) -> !A
  %k = pf.transpose %k1 {perm = array<i64: 0, 2, 1, 3>, pf.checkpoint_selective} : (!H) -> !A
  %v = pf.transpose %v1 {perm = array<i64: 0, 2, 1, 3>, pf.checkpoint_selective} : (!H) -> !A
  %kt = pf.transpose %k {perm = array<i64: 0, 1, 3, 2>, pf.checkpoint_selective} : (!A) -> !KT
  %s = pf.matmul %q, %kt {pf.checkpoint_selective} : (!A, !KT) -> !S
  %a = pf.mul_scalar %s {scalar = 0.35355339059327373 : f64, pf.checkpoint_selective} : (!S) -> !S
  %m = pf.constant dense<[[[[false, true, true, true], [false, false, true, true], [false, false, false, true], [false, false, false, false]]]]> : tensor<1x1x4x4xi1> {pf.checkpoint_selective} : !M
  %mb = pf.broadcast_to %m {shape = array<i64: 2, 2, 4, 4>, pf.checkpoint_selective} : (!M) -> !MB
  %f = pf.masked_fill %a, %mb {value = 0xFFF0000000000000 : f64, pf.checkpoint_selective} : (!S, !MB) -> !S
  %p = pf.softmax %f {axis = 3 : i64, pf.checkpoint_selective} : (!S) -> !S
  %d = pf.dropout %p {p = 1.000000e-01 : f64, stream = 7 : i64, pf.checkpoint_selective} : (!S) -> !S
  %y = pf.matmul %d, %v {pf.checkpoint_selective} : (!S, !A) -> !A
  %yt = pf.transpose %y {perm = array<i64: 0, 2, 1, 3>, pf.checkpoint_selective} : (!A) -> !H
  %yr = pf.reshape %yt {pf.checkpoint_selective} : !H -> !X
  %o = pf.matmul %yr, %wo {transpose_b, pf.checkpoint_selective} : (!X, !W) -> !X
  %r = pf.add %x, %o {pf.checkpoint_selective} : (!X, !X) -> !X
  %ln2 = pf.layer_norm %r, %g, %b {pf.checkpoint_selective} : (!X, !C, !C) -> !X
  %h = pf.matmul %ln2, %w1 {transpose_b, pf.checkpoint_selective} : (!X, !W1) -> !F
  %gl = pf.activation %h {kind = "gelu", pf.checkpoint_selective} : (!F) -> !F
  %o2 = pf.matmul %gl, %w2 {transpose_b, pf.checkpoint_selective} : (!F, !W2) -> !X
  %out = pf.add %r, %o2 {pf.checkpoint_selective} : (!X, !X) -> !X
  return %out : !X
}
// CHECK-LABEL: func.func @unfused
// CHECK: %[[LN:.*]] = pf.layer_norm %{{[^ ,]+}}, %{{[^ ,]+}}, %{{[^ ,]+}} : (
// CHECK: pf.matmul %[[LN]], %{{[^ ,]+}} {transpose_b} : (
// CHECK: pf.matmul %[[LN]], %{{[^ ,]+}} {transpose_b} : (
// CHECK: pf.matmul %[[LN]], %{{[^ ,]+}} {transpose_b} : (
// CHECK: pf.reshape %{{[^ ,]+}} : !pf.global
// CHECK: pf.reshape %{{[^ ,]+}} : !pf.global
// CHECK: pf.reshape %{{[^ ,]+}} : !pf.global
// CHECK: %[[Q:.*]] = pf.transpose %{{[^ ,]+}} {perm = array<i64: 0, 2, 1, 3>} : (
// CHECK: pf.transpose %{{[^ ,]+}} {perm = array<i64: 0, 2, 1, 3>} : (
// CHECK: %[[V:.*]] = pf.transpose %{{[^ ,]+}} {perm = array<i64: 0, 2, 1, 3>} : (
// CHECK: %[[KT:.*]] = pf.transpose %{{[^ ,]+}} {perm = array<i64: 0, 1, 3, 2>} : (
// CHECK: %[[S:.*]] = pf.matmul %[[Q]], %[[KT]] {pf.checkpoint} : (
// CHECK: %[[A:.*]] = pf.mul_scalar %[[S]] {pf.checkpoint, scalar = {{.*}}} : (
// CHECK: %[[M:.*]] = pf.constant dense<{{.*}}> : tensor<1x1x4x4xi1> : !pf.global
// CHECK: %[[MB:.*]] = pf.broadcast_to %[[M]] {pf.checkpoint, shape = array<i64: 2, 2, 4, 4>} : (
// CHECK: %[[F:.*]] = pf.masked_fill %[[A]], %[[MB]] {pf.checkpoint, value = {{.*}}} : (
// CHECK: %[[P:.*]] = pf.softmax %[[F]] {axis = 3 : i64, pf.checkpoint} : (
// CHECK: %[[D:.*]] = pf.dropout %[[P]] {p = {{.*}}, pf.checkpoint, stream = 7 : i64} : (
// CHECK: %[[Y:.*]] = pf.matmul %[[D]], %[[V]] : (
// CHECK: pf.transpose %[[Y]] {perm = array<i64: 0, 2, 1, 3>} : (
// CHECK: pf.reshape %{{[^ ,]+}} : !pf.global
// CHECK: pf.matmul %{{[^ ,]+}}, %{{[^ ,]+}} {transpose_b} : (
// CHECK: pf.add %{{[^ ,]+}}, %{{[^ ,]+}} : (
// CHECK: pf.layer_norm %{{[^ ,]+}}, %{{[^ ,]+}}, %{{[^ ,]+}} : (
// CHECK: pf.matmul %{{[^ ,]+}}, %{{[^ ,]+}} {transpose_b} : (
// CHECK: pf.activation %{{[^ ,]+}} {kind = "gelu"} : (
// CHECK: pf.matmul %{{[^ ,]+}}, %{{[^ ,]+}} {transpose_b} : (
// CHECK: pf.add %{{[^ ,]+}}, %{{[^ ,]+}} : (
// CHECK-NOT: pf.checkpoint

// -----

// The other mask spellings: k through transpose_b and an additive mask
// (pf.add, either operand order) or a pf.where whose fill value is
// expanded from a scalar (recomputed too); without dropout the softmax
// feeds the product with v directly.
#P = #pf.placement<"cpu", [0]>
!A = !pf.global<2x2x4x8xf32, #P>
!S = !pf.global<2x2x4x4xf32, #P>
!MB = !pf.global<2x2x4x4xi1, #P>
!N = !pf.global<1x1x1x1xf32, #P>
func.func @masks(%q: !A, %k: !A, %v: !A, %bias: !S, %keep: !MB, %ninf: !N) -> (!A, !A) {
  %s = pf.matmul %q, %k {transpose_b, pf.checkpoint_selective} : (!A, !A) -> !S
  %a = pf.add %bias, %s {pf.checkpoint_selective} : (!S, !S) -> !S
  %p = pf.softmax %a {axis = 3 : i64, pf.checkpoint_selective} : (!S) -> !S
  %y = pf.matmul %p, %v {pf.checkpoint_selective} : (!S, !A) -> !A
  %s2 = pf.matmul %q, %k {transpose_b, pf.checkpoint_selective} : (!A, !A) -> !S
  %fill = pf.broadcast_to %ninf {shape = array<i64: 2, 2, 4, 4>, pf.checkpoint_selective} : (!N) -> !S
  %w = pf.where %keep, %s2, %fill {pf.checkpoint_selective} : (!MB, !S, !S) -> !S
  %p2 = pf.softmax %w {axis = 3 : i64, pf.checkpoint_selective} : (!S) -> !S
  %y2 = pf.matmul %p2, %v {pf.checkpoint_selective} : (!S, !A) -> !A
  return %y, %y2 : !A, !A
}
// CHECK-LABEL: func.func @masks
// CHECK: %[[S:.*]] = pf.matmul %{{[^ ,]+}}, %{{[^ ,]+}} {pf.checkpoint, transpose_b} : (
// CHECK: %[[A:.*]] = pf.add %{{[^ ,]+}}, %[[S]] {pf.checkpoint} : (
// CHECK: %[[P:.*]] = pf.softmax %[[A]] {axis = 3 : i64, pf.checkpoint} : (
// CHECK: pf.matmul %[[P]], %{{[^ ,]+}} : (
// CHECK: %[[S2:.*]] = pf.matmul %{{[^ ,]+}}, %{{[^ ,]+}} {pf.checkpoint, transpose_b} : (
// CHECK: %[[FILL:.*]] = pf.broadcast_to %{{[^ ,]+}} {pf.checkpoint, shape = array<i64: 2, 2, 4, 4>} : (
// CHECK: %[[W:.*]] = pf.where %{{[^ ,]+}}, %[[S2]], %[[FILL]] {pf.checkpoint} : (
// CHECK: %[[P2:.*]] = pf.softmax %[[W]] {axis = 3 : i64, pf.checkpoint} : (
// CHECK: pf.matmul %[[P2]], %{{[^ ,]+}} : (
// CHECK-NOT: pf.checkpoint

// -----

// Not attention, or not asked for: nothing is marked. The same attention
// without the selective marks; probabilities that never meet v (returned);
// a softmax over the queries; a chain with an unmarked op in the middle.
#P = #pf.placement<"cpu", [0]>
!A = !pf.global<2x2x4x8xf32, #P>
!S = !pf.global<2x2x4x4xf32, #P>
func.func @untouched(%q: !A, %k: !A, %v: !A) -> (!A, !S, !A, !A) {
  %s = pf.matmul %q, %k {transpose_b} : (!A, !A) -> !S
  %p = pf.softmax %s {axis = 3 : i64} : (!S) -> !S
  %y = pf.matmul %p, %v : (!S, !A) -> !A
  %s2 = pf.matmul %q, %k {transpose_b, pf.checkpoint_selective} : (!A, !A) -> !S
  %p2 = pf.softmax %s2 {axis = 3 : i64, pf.checkpoint_selective} : (!S) -> !S
  %s3 = pf.matmul %q, %k {transpose_b, pf.checkpoint_selective} : (!A, !A) -> !S
  %p3 = pf.softmax %s3 {axis = 2 : i64, pf.checkpoint_selective} : (!S) -> !S
  %y3 = pf.matmul %p3, %v {pf.checkpoint_selective} : (!S, !A) -> !A
  %s4 = pf.matmul %q, %k {transpose_b, pf.checkpoint_selective} : (!A, !A) -> !S
  %a4 = pf.mul_scalar %s4 {scalar = 0.5 : f64} : (!S) -> !S
  %p4 = pf.softmax %a4 {axis = 3 : i64, pf.checkpoint_selective} : (!S) -> !S
  %y4 = pf.matmul %p4, %v {pf.checkpoint_selective} : (!S, !A) -> !A
  return %y, %p2, %y3, %y4 : !A, !S, !A, !A
}
// CHECK-LABEL: func.func @untouched
// CHECK-NOT: pf.checkpoint
// CHECK: return
