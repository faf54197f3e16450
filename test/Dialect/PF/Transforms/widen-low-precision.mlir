// RUN: pf-opt %s -split-input-file -pf-widen-low-precision | FileCheck %s

// A bf16 layer: every op computes in f32 between casts; the values between
// ops stay bf16.
#P = #pf.placement<"cpu", [0]>
!X = !pf.global<4x8xbf16, #P, #pf.sbp<[B]>>
!W = !pf.global<8x6xbf16, #P, #pf.sbp<[B]>>
!Y = !pf.global<4x6xbf16, #P, #pf.sbp<[B]>>
!G = !pf.global<6xbf16, #P, #pf.sbp<[B]>>
!S = !pf.global<6xbf16, #P, #pf.sbp<[B]>>
// CHECK-LABEL: func.func @layer
// CHECK-SAME: (%[[X:.*]]: !pf.global<4x8xbf16{{.*}}, %[[W:.*]]: !pf.global<8x6xbf16{{.*}}, %[[G:.*]]: !pf.global<6xbf16
// CHECK-DAG: %[[XF:.*]] = pf.cast %[[X]] {pf.stage = 0 : i64} : !pf.global<4x8xbf16{{.*}} -> !pf.global<4x8xf32
// CHECK-DAG: %[[WF:.*]] = pf.cast %[[W]] {pf.stage = 0 : i64} : !pf.global<8x6xbf16{{.*}} -> !pf.global<8x6xf32
// CHECK: %[[MF:.*]] = pf.matmul %[[XF]], %[[WF]] {pf.stage = 0 : i64} : (!pf.global<4x8xf32{{.*}}, !pf.global<8x6xf32{{.*}}) -> !pf.global<4x6xf32
// CHECK: %[[M:.*]] = pf.cast %[[MF]] {pf.stage = 0 : i64} : !pf.global<4x6xf32{{.*}} -> !pf.global<4x6xbf16
// CHECK: %[[MF2:.*]] = pf.cast %[[M]] {{.*}} -> !pf.global<4x6xf32
// CHECK: %[[AF:.*]] = pf.add %[[MF2]], %[[MF2]] : (!pf.global<4x6xf32{{.*}}) -> !pf.global<4x6xf32
// CHECK: %[[A:.*]] = pf.cast %[[AF]] : !pf.global<4x6xf32{{.*}} -> !pf.global<4x6xbf16
// CHECK: %[[AF2:.*]] = pf.cast %[[A]] : {{.*}} -> !pf.global<4x6xf32
// CHECK: %[[SMF:.*]] = pf.softmax %[[AF2]] {axis = 1 : i64} : {{.*}} -> !pf.global<4x6xf32
// CHECK: %[[SM:.*]] = pf.cast %[[SMF]] : {{.*}} -> !pf.global<4x6xbf16
// CHECK: %[[GF:.*]] = pf.cast %[[G]] : {{.*}} -> !pf.global<6xf32
// CHECK: pf.layer_norm %{{.*}}, %[[GF]], %[[GF]] {{.*}} -> !pf.global<4x6xf32
// CHECK: pf.cast %{{.*}} : !pf.global<4x6xf32{{.*}} -> !pf.global<4x6xbf16
// CHECK: %[[RF:.*]] = pf.reduce_sum %{{.*}} {axes = array<i64: 0>} : (!pf.global<4x6xf32{{.*}}) -> !pf.global<6xf32
// CHECK: %[[R:.*]] = pf.cast %[[RF]] : !pf.global<6xf32{{.*}} -> !pf.global<6xbf16
// CHECK: return %[[SM]], %[[R]] : !pf.global<4x6xbf16{{.*}}, !pf.global<6xbf16
// CHECK-NOT: pf.matmul {{.*}}bf16{{.*}} -> !pf.global<{{.*}}bf16
func.func @layer(%x: !X, %w: !W, %g: !G) -> (!Y, !S) {
  %m = pf.matmul %x, %w {pf.stage = 0 : i64} : (!X, !W) -> !Y
  %a = pf.add %m, %m : (!Y, !Y) -> !Y
  %sm = pf.softmax %a {axis = 1 : i64} : (!Y) -> !Y
  %ln = pf.layer_norm %sm, %g, %g {epsilon = 1.0e-5 : f64} : (!Y, !G, !G) -> !Y
  %r = pf.reduce_sum %ln {axes = array<i64: 0>} : (!Y) -> !S
  return %sm, %r : !Y, !S
}

// -----

// f16 the same way; a where casts its f16 operands, not its i1 condition.
#P = #pf.placement<"cpu", [0]>
!H = !pf.global<4x8xf16, #P, #pf.sbp<[B]>>
!C = !pf.global<4x8xi1, #P, #pf.sbp<[B]>>
!HW = !pf.global<8x2xf16, #P, #pf.sbp<[B]>>
!HY = !pf.global<4x2xf16, #P, #pf.sbp<[B]>>
!HV = !pf.global<8xf16, #P, #pf.sbp<[B]>>
// CHECK-LABEL: func.func @half
// CHECK-SAME: (%[[H:.*]]: !pf.global<4x8xf16{{.*}}, %[[C:.*]]: !pf.global<4x8xi1{{.*}}, %[[W:.*]]: !pf.global<8x2xf16
// CHECK: %[[HF:.*]] = pf.cast %[[H]] : !pf.global<4x8xf16{{.*}} -> !pf.global<4x8xf32
// CHECK-NOT: pf.cast %[[C]]
// CHECK: %[[S:.*]] = pf.where %[[C]], %[[HF]], %[[HF]] : {{.*}} -> !pf.global<4x8xf32
// CHECK: %[[SH:.*]] = pf.cast %[[S]] : !pf.global<4x8xf32{{.*}} -> !pf.global<4x8xf16
// CHECK: pf.softmax {{.*}} -> !pf.global<4x8xf32
// CHECK: pf.layer_norm {{.*}} -> !pf.global<4x8xf32
// CHECK: pf.reduce_sum {{.*}} -> !pf.global<8xf32
// CHECK: pf.matmul {{.*}} : (!pf.global<4x8xf32{{.*}}, !pf.global<8x2xf32{{.*}}) -> !pf.global<4x2xf32
// CHECK: pf.cast {{.*}} : !pf.global<4x2xf32{{.*}} -> !pf.global<4x2xf16
// CHECK-NOT: pf.matmul {{.*}} -> !pf.global<4x2xf16
func.func @half(%h: !H, %c: !C, %w: !HW, %g: !HV) -> (!H, !HY, !HV) {
  %s = pf.where %c, %h, %h : (!C, !H, !H) -> !H
  %sm = pf.softmax %s {axis = 1 : i64} : (!H) -> !H
  %ln = pf.layer_norm %sm, %g, %g {epsilon = 1.0e-5 : f64} : (!H, !HV, !HV) -> !H
  %r = pf.reduce_sum %ln {axes = array<i64: 0>} : (!H) -> !HV
  %m = pf.matmul %ln, %w : (!H, !HW) -> !HY
  return %s, %m, %r : !H, !HY, !HV
}

// -----

// Casts, sends and receives keep bf16; a bf16 constant becomes an f32 one
// that the widened op reads directly (a cast back only for the send).
#P = #pf.placement<"cpu", [0]>
!B = !pf.global<2x2xbf16, #P, #pf.sbp<[B]>>
!F = !pf.global<2x2xf32, #P, #pf.sbp<[B]>>
// CHECK-LABEL: func.func @kept
// CHECK: %[[C:.*]] = pf.constant dense<{{\[\[}}1.000000e+00, 2.500000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32> : !pf.global<2x2xf32
// CHECK: %[[CB:.*]] = pf.cast %[[C]] : !pf.global<2x2xf32{{.*}} -> !pf.global<2x2xbf16
// CHECK: %[[XB:.*]] = pf.cast %{{.*}} : !pf.global<2x2xf32{{.*}} -> !pf.global<2x2xbf16
// CHECK: pf.send %[[XB]] to 1 tag 0
// CHECK: pf.send %[[CB]] to 1 tag 1
// CHECK: %[[R:.*]] = pf.recv from 1 tag 2 : !pf.global<2x2xbf16
// CHECK: %[[RF:.*]] = pf.cast %[[R]] : {{.*}} -> !pf.global<2x2xf32
// CHECK: pf.mul %[[RF]], %[[C]] : {{.*}} -> !pf.global<2x2xf32
func.func @kept(%x: !F) -> !B {
  %c = pf.constant dense<[[1.0, 2.5], [3.0, 4.0]]> : tensor<2x2xbf16> : !B
  %xb = pf.cast %x : !F -> !B
  pf.send %xb to 1 tag 0 : !B
  pf.send %c to 1 tag 1 : !B
  %r = pf.recv from 1 tag 2 : !B
  %p = pf.mul %r, %c : (!B, !B) -> !B
  return %p : !B
}

// -----

// Nothing in bf16 or f16: unchanged.
#P = #pf.placement<"cpu", [0]>
!F = !pf.global<4x8xf32, #P, #pf.sbp<[B]>>
// CHECK-LABEL: func.func @f32
// CHECK-NEXT: %[[A:.*]] = pf.add %arg0, %arg0 : (!pf.global<4x8xf32{{.*}}) -> !pf.global<4x8xf32
// CHECK-NEXT: %[[S:.*]] = pf.softmax %[[A]]
// CHECK-NEXT: return %[[S]]
// CHECK-NOT: pf.cast
func.func @f32(%x: !F) -> !F {
  %a = pf.add %x, %x : (!F, !F) -> !F
  %s = pf.softmax %a {axis = 1 : i64} : (!F) -> !F
  return %s : !F
}
