// RUN: pf-opt %s -split-input-file -pf-fuse-attention | FileCheck %s

// nanoGPT's spelling: k transposed, scaled, the causal buffer through
// masked_fill (a constant filling the upper triangle), softmax, dropout:
// one causal pf.attention with the dropout's p and stream.
#P = #pf.placement<"cpu", [0]>
!A = !pf.global<2x3x4x8xf32, #P>
!KT = !pf.global<2x3x8x4xf32, #P>
!S = !pf.global<2x3x4x4xf32, #P>
func.func @nanogpt(%q: !A, %k: !A, %v: !A) -> !A {
  %kt = pf.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (!A) -> !KT
  %s = pf.matmul %q, %kt : (!A, !KT) -> !S
  %a = pf.mul_scalar %s {scalar = 0.35355339059327373 : f64} : (!S) -> !S
  %m = pf.constant dense<[[[[false, true, true, true], [false, false, true, true], [false, false, false, true], [false, false, false, false]]]]> : tensor<1x1x4x4xi1> : !pf.global<1x1x4x4xi1, #P>
  %mb = pf.broadcast_to %m {shape = array<i64: 2, 3, 4, 4>} : (!pf.global<1x1x4x4xi1, #P>) -> !pf.global<2x3x4x4xi1, #P>
  %f = pf.masked_fill %a, %mb {value = 0xFFF0000000000000 : f64} : (!S, !pf.global<2x3x4x4xi1, #P>) -> !S
  %p = pf.softmax %f {axis = 3 : i64} : (!S) -> !S
  %d = pf.dropout %p {p = 1.000000e-01 : f64, stream = 7 : i64, pf.stage = 1 : i64} : (!S) -> !S
  %y = pf.matmul %d, %v {pf.stage = 1 : i64, pf.checkpoint} : (!S, !A) -> !A
  return %y : !A
}
// CHECK-LABEL: func.func @nanogpt
// CHECK-SAME: (%[[Q:.*]]: !pf.global<2x3x4x8xf32, #{{.*}}>, %[[K:.*]]: !pf.global<2x3x4x8xf32, #{{.*}}>, %[[V:.*]]: !pf.global
// CHECK-NOT: pf.softmax
// CHECK: %[[O:.*]], %{{.*}} = pf.attention %[[Q]], %[[K]], %[[V]] {causal, dropout_p = 1.000000e-01 : f64, pf.checkpoint, pf.stage = 1 : i64, scale = 0.35355339059327373 : f64, stream = 7 : i64}
// CHECK-SAME: -> (!pf.global<2x3x4x8xf32, #{{.*}}>, !pf.global<2x3x4xf32, #{{.*}}>)
// CHECK-NOT: pf.softmax
// CHECK-NOT: pf.dropout
// CHECK: return %[[O]]

// -----

// transpose_b, no scale, an additive float mask broadcast over the batch.
#P = #pf.placement<"cpu", [0]>
!Q = !pf.global<2x3x4x8xf32, #P>
!K = !pf.global<2x3x6x8xf32, #P>
!V = !pf.global<2x3x6x5xf32, #P>
!S = !pf.global<2x3x4x6xf32, #P>
func.func @additive(%q: !Q, %k: !K, %v: !V, %bias: !pf.global<1x3x4x6xf32, #P>) -> !pf.global<2x3x4x5xf32, #P> {
  %s = pf.matmul %q, %k {transpose_b} : (!Q, !K) -> !S
  %b = pf.broadcast_to %bias {shape = array<i64: 2, 3, 4, 6>} : (!pf.global<1x3x4x6xf32, #P>) -> !S
  %a = pf.add %s, %b : (!S, !S) -> !S
  %p = pf.softmax %a {axis = 3 : i64} : (!S) -> !S
  %y = pf.matmul %p, %v : (!S, !V) -> !pf.global<2x3x4x5xf32, #P>
  return %y : !pf.global<2x3x4x5xf32, #P>
}
// CHECK-LABEL: func.func @additive
// CHECK-SAME: %[[BIAS:[a-z0-9]*]]: !pf.global<1x3x4x6xf32
// CHECK: pf.attention %{{.*}}, %{{.*}}, %{{.*}}, %[[BIAS]] {scale = 1.000000e+00 : f64}
// CHECK-SAME: -> (!pf.global<2x3x4x5xf32, #{{.*}}>, !pf.global<2x3x4xf32, #{{.*}}>)
// CHECK-NOT: pf.softmax

// -----

// A constant mask that is not the causal triangle is inverted (attention
// keeps keys where its mask holds); a computed one goes through
// pf.logical_not.
#P = #pf.placement<"cpu", [0]>
!A = !pf.global<1x1x2x4xf32, #P>
!S = !pf.global<1x1x2x2xf32, #P>
!M = !pf.global<1x1x2x2xi1, #P>
func.func @masks(%q: !A, %k: !A, %v: !A, %computed: !M) -> (!A, !A) {
  %s = pf.matmul %q, %k {transpose_b} : (!A, !A) -> !S
  %m = pf.constant dense<[[[[true, false], [false, false]]]]> : tensor<1x1x2x2xi1> : !M
  %f = pf.masked_fill %s, %m {value = 0xFFF0000000000000 : f64} : (!S, !M) -> !S
  %p = pf.softmax %f {axis = 3 : i64} : (!S) -> !S
  %y = pf.matmul %p, %v : (!S, !A) -> !A
  %s2 = pf.matmul %q, %k {transpose_b} : (!A, !A) -> !S
  %f2 = pf.masked_fill %s2, %computed {value = 0xFFF0000000000000 : f64} : (!S, !M) -> !S
  %p2 = pf.softmax %f2 {axis = 3 : i64} : (!S) -> !S
  %y2 = pf.matmul %p2, %v : (!S, !A) -> !A
  return %y, %y2 : !A, !A
}
// CHECK-LABEL: func.func @masks
// CHECK-SAME: %[[COMPUTED:[a-z0-9]*]]: !pf.global<1x1x2x2xi1
// CHECK: %[[KEEP:.*]] = pf.constant dense<{{\[\[\[\[}}false, true], [true, true]]]]>
// CHECK: pf.attention %{{.*}}, %{{.*}}, %{{.*}}, %[[KEEP]] {scale
// CHECK-NOT: causal
// CHECK: %[[NOT:.*]] = pf.logical_not %[[COMPUTED]]
// CHECK: pf.attention %{{.*}}, %{{.*}}, %{{.*}}, %[[NOT]] {scale
// CHECK-NOT: pf.softmax

// -----

// Left alone: the probabilities used twice, a log-softmax, softmax over
// another axis, a fill value other than -inf, k transposed by another
// permutation, and rank-3 operands.
#P = #pf.placement<"cpu", [0]>
!A = !pf.global<1x2x4x4xf32, #P>
!R = !pf.global<2x4x4xf32, #P>
!M = !pf.global<1x2x4x4xi1, #P>
func.func @unfused(%q: !A, %k: !A, %v: !A, %m: !M, %q3: !R, %k3: !R, %v3: !R) -> (!A, !A, !A, !A, !A, !A, !R) {
  %s0 = pf.matmul %q, %k {transpose_b} : (!A, !A) -> !A
  %p0 = pf.softmax %s0 {axis = 3 : i64} : (!A) -> !A
  %y0 = pf.matmul %p0, %v : (!A, !A) -> !A
  %s1 = pf.matmul %q, %k {transpose_b} : (!A, !A) -> !A
  %p1 = pf.softmax %s1 {axis = 3 : i64, log} : (!A) -> !A
  %y1 = pf.matmul %p1, %v : (!A, !A) -> !A
  %s2 = pf.matmul %q, %k {transpose_b} : (!A, !A) -> !A
  %p2 = pf.softmax %s2 {axis = 2 : i64} : (!A) -> !A
  %y2 = pf.matmul %p2, %v : (!A, !A) -> !A
  %s3 = pf.matmul %q, %k {transpose_b} : (!A, !A) -> !A
  %f3 = pf.masked_fill %s3, %m {value = -1.000000e+04 : f64} : (!A, !M) -> !A
  %p3 = pf.softmax %f3 {axis = 3 : i64} : (!A) -> !A
  %y3 = pf.matmul %p3, %v : (!A, !A) -> !A
  %kt = pf.transpose %k {perm = array<i64: 1, 0, 2, 3>} : (!A) -> !pf.global<2x1x4x4xf32, #P>
  %kr = pf.reshape %kt : !pf.global<2x1x4x4xf32, #P> -> !A
  %s4 = pf.matmul %q, %kr : (!A, !A) -> !A
  %p4 = pf.softmax %s4 {axis = 3 : i64} : (!A) -> !A
  %y4 = pf.matmul %p4, %v : (!A, !A) -> !A
  %s5 = pf.matmul %q3, %k3 {transpose_b} : (!R, !R) -> !R
  %p5 = pf.softmax %s5 {axis = 2 : i64} : (!R) -> !R
  %y5 = pf.matmul %p5, %v3 : (!R, !R) -> !R
  return %y0, %p0, %y1, %y2, %y3, %y4, %y5 : !A, !A, !A, !A, !A, !A, !R
}
// CHECK-LABEL: func.func @unfused
// CHECK-NOT: pf.attention
// CHECK-COUNT-6: pf.softmax
// CHECK-NOT: pf.attention
// CHECK: return
