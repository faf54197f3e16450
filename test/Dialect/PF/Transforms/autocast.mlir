// RUN: pf-opt %s -split-input-file -pf-autocast="dtype=bf16" | FileCheck %s --check-prefixes=CHECK,BF16
// RUN: pf-opt %s -split-input-file -pf-autocast="dtype=f16" | FileCheck %s --check-prefix=F16
// RUN: pf-opt %s -split-input-file -pf-autocast | FileCheck %s --check-prefix=NONE

// The MLP: both GEMMs take bf16 operands and give bf16; the bias of a bf16
// product is cast to bf16 (a linear layer is low as a whole, as torch's
// addmm), relu follows its bf16 input, the loss is f32. The signature is
// unchanged.
#P = #pf.placement<"cpu", [0]>
!X = !pf.global<4x8xf32, #P, #pf.sbp<[B]>>
!W1 = !pf.global<6x8xf32, #P, #pf.sbp<[B]>>
!B1 = !pf.global<6xf32, #P, #pf.sbp<[B]>>
!W2 = !pf.global<3x6xf32, #P, #pf.sbp<[B]>>
!H = !pf.global<4x6xf32, #P>
!O = !pf.global<4x3xf32, #P>
!Y = !pf.global<4xi64, #P, #pf.sbp<[B]>>
!L = !pf.global<f32, #P>
pf.param @w1 : !W1 = #pf.init<kaiming_uniform(8)>
pf.param @b1 : !B1 = #pf.init<kaiming_uniform(8)>
pf.param @w2 : !W2 = #pf.init<kaiming_uniform(6)>
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: (%[[X:.*]]: !pf.global<4x8xf32, {{.*}}>, %{{.*}}: !pf.global<4xi64, {{.*}}>) -> !pf.global<f32,
// CHECK: %[[XL:.*]] = pf.cast %[[X]] {pf.stage = 0 : i64} : !pf.global<4x8xf32, #{{.*}}, #pf.sbp<[B]>> -> !pf.global<4x8xbf16, #{{.*}}, #pf.sbp<[B]>>
// CHECK: %[[W1:.*]] = pf.read_param @w1
// CHECK: %[[W1L:.*]] = pf.cast %[[W1]] {pf.stage = 0 : i64} : {{.*}} -> !pf.global<6x8xbf16
// CHECK: %[[H:.*]] = pf.matmul %[[XL]], %[[W1L]] {pf.stage = 0 : i64, transpose_b} : {{.*}} -> !pf.global<4x6xbf16,
// CHECK: %[[B1:.*]] = pf.read_param @b1
// CHECK: %[[B1L:.*]] = pf.cast %[[B1]] {{.*}} -> !pf.global<6xbf16
// CHECK: %[[HB:.*]] = pf.bias_add %[[H]], %[[B1L]] {{.*}} -> !pf.global<4x6xbf16
// CHECK: %[[R:.*]] = pf.relu %[[HB]] {{.*}} -> !pf.global<4x6xbf16
// CHECK-NOT: pf.cast %[[R]]
// CHECK: %[[W2:.*]] = pf.read_param @w2
// CHECK: %[[W2L:.*]] = pf.cast %[[W2]] {{.*}} -> !pf.global<3x6xbf16
// CHECK: %[[O:.*]] = pf.matmul %[[R]], %[[W2L]] {{.*}} -> !pf.global<4x3xbf16,
// CHECK: %[[OF:.*]] = pf.cast %[[O]] {{.*}} -> !pf.global<4x3xf32
// CHECK: %[[LOSS:.*]] = pf.softmax_cross_entropy %[[OF]], %{{.*}} {{.*}} -> !pf.global<f32,
// CHECK: return %[[LOSS]]
// F16-LABEL: func.func @mlp
// F16: pf.cast {{.*}} -> !pf.global<4x8xf16
// F16: pf.matmul {{.*}} -> !pf.global<4x6xf16,
// F16: pf.bias_add {{.*}} -> !pf.global<4x6xf16
// F16: pf.matmul {{.*}} -> !pf.global<4x3xf16,
// F16: pf.softmax_cross_entropy {{.*}} : (!pf.global<4x3xf32
// F16-NOT: bf16
// NONE-LABEL: func.func @mlp
// NONE-NOT: pf.cast
// NONE-NOT: bf16
// NONE-NOT: f16
// NONE: return
func.func @mlp(%x: !X, %y: !Y) -> !L {
  %w1 = pf.read_param @w1 {pf.stage = 0} : !W1
  %h = pf.matmul %x, %w1 {transpose_b, pf.stage = 0} : (!X, !W1) -> !H
  %b1 = pf.read_param @b1 {pf.stage = 0} : !B1
  %hb = pf.bias_add %h, %b1 {pf.stage = 0} : (!H, !B1) -> !H
  %r = pf.relu %hb {pf.stage = 0} : (!H) -> !H
  %w2 = pf.read_param @w2 {pf.stage = 0} : !W2
  %o = pf.matmul %r, %w2 {transpose_b, pf.stage = 0} : (!H, !W2) -> !O
  %l = pf.softmax_cross_entropy %o, %y {pf.stage = 0} : (!O, !Y) -> !L
  return %l : !L
}

// -----

// Element-wise ops follow their operands: two bf16 products add in bf16,
// relu and a scalar multiple stay bf16; meeting an f32 input the sum is
// f32 (the bf16 operand cast). A parameter read once and used by two GEMMs
// is cast once. The softmax and the reduction are f32; the returned bf16
// value is given back as f32.
#P = #pf.placement<"cpu", [0]>
!X = !pf.global<4x4xf32, #P, #pf.sbp<[B]>>
!T = !pf.global<4x4xf32, #P>
!L = !pf.global<f32, #P>
pf.param @w : !X = #pf.init<normal(0.0, 1.0)>
// CHECK-LABEL: func.func @follow
// F16-LABEL: func.func @follow
// F16: pf.add {{.*}} -> !pf.global<4x4xf16
// CHECK-SAME: (%[[X:.*]]: !pf.global<4x4xf32, {{.*}}>) -> (!pf.global<f32, {{.*}}>, !pf.global<4x4xf32
// CHECK: %[[XL:.*]] = pf.cast %[[X]] {{.*}} -> !pf.global<4x4xbf16
// CHECK-NEXT: %[[W:.*]] = pf.read_param @w
// CHECK-NEXT: %[[WL:.*]] = pf.cast %[[W]] {{.*}} -> !pf.global<4x4xbf16
// CHECK-NOT: pf.cast %[[W]]
// CHECK: %[[A:.*]] = pf.matmul %[[XL]], %[[WL]] {{.*}}bf16
// CHECK: %[[B:.*]] = pf.matmul %[[WL]], %[[XL]] {{.*}}bf16
// CHECK: %[[S:.*]] = pf.add %[[A]], %[[B]] : {{.*}} -> !pf.global<4x4xbf16
// CHECK: %[[R:.*]] = pf.relu %[[S]] : {{.*}} -> !pf.global<4x4xbf16
// CHECK: %[[RF:.*]] = pf.cast %[[R]] {{.*}} -> !pf.global<4x4xf32
// CHECK: %[[M:.*]] = pf.mul_scalar %[[R]] {{.*}} -> !pf.global<4x4xbf16
// CHECK: %[[MF:.*]] = pf.cast %[[M]] {{.*}}bf16{{.*}} -> !pf.global<4x4xf32
// CHECK: %[[MIX:.*]] = pf.add %[[MF]], %[[X]] : {{.*}} -> !pf.global<4x4xf32
// CHECK: %[[SM:.*]] = pf.softmax %[[MIX]]
// CHECK: pf.reduce_sum %[[RF]] {{.*}} -> !pf.global<f32
// CHECK: return %{{.*}}, %[[MF]] :
func.func @follow(%x: !X) -> (!L, !T) {
  %w = pf.read_param @w : !X
  %a = pf.matmul %x, %w : (!X, !X) -> !T
  %b = pf.matmul %w, %x : (!X, !X) -> !T
  %s = pf.add %a, %b : (!T, !T) -> !T
  %r = pf.relu %s : (!T) -> !T
  %m = pf.mul_scalar %r {scalar = 0.5 : f64} : (!T) -> !T
  %mix = pf.add %m, %x : (!T, !X) -> !T
  %sm = pf.softmax %mix {axis = 1 : i64} : (!T) -> !T
  %l = pf.reduce_sum %r {axes = array<i64: 0, 1>} : (!T) -> !L
  return %l, %m : !L, !T
}

// -----

// Attribute-only: with dtype=none, only the ops marked pf.autocast are
// converted (the mark is consumed); "f32" keeps an op out of a global
// autocast.
#P = #pf.placement<"cpu", [0]>
!X = !pf.global<4x4xf32, #P, #pf.sbp<[B]>>
!T = !pf.global<4x4xf32, #P>
// NONE-LABEL: func.func @marked
// NONE: %[[A:.*]] = pf.matmul {{.*}} -> !pf.global<4x4xbf16
// NONE: %[[B:.*]] = pf.matmul {{.*}} -> !pf.global<4x4xf16
// NONE: %[[C:.*]] = pf.matmul {{.*}} -> !pf.global<4x4xf32
// NONE-NOT: pf.autocast
// NONE: return
// BF16-LABEL: func.func @marked
// BF16: pf.matmul {{.*}} -> !pf.global<4x4xbf16
// BF16: pf.matmul {{.*}} -> !pf.global<4x4xf16
// BF16: pf.matmul {{.*}} -> !pf.global<4x4xf32
func.func @marked(%x: !X) -> (!T, !T, !T) {
  %a = pf.matmul %x, %x {pf.autocast = "bf16"} : (!X, !X) -> !T
  %b = pf.matmul %x, %x {pf.autocast = "f16"} : (!X, !X) -> !T
  %c = pf.matmul %x, %x {pf.autocast = "f32"} : (!X, !X) -> !T
  return %a, %b, %c : !T, !T, !T
}
