// RUN: pf-opt %s -split-input-file -pf-plan-in-place -pf-fold-softmax | FileCheck %s

// Attention: the scale, the mask's broadcast over leading axes and the
// masked_fill are computed by the softmax; the scale after the softmax
// gradient by the gradient.
// CHECK-LABEL: func.func @attention
// CHECK: pf.mul_scalar {{.*}}pf.fold = "softmax_prologue"
// CHECK: pf.broadcast_to {{.*}}pf.fold = "softmax_prologue"
// CHECK: pf.masked_fill {{.*}}pf.fold = "softmax_prologue"
// CHECK: %[[P:.+]] = pf.softmax
// CHECK-NOT: pf.fold
// CHECK: pf.softmax_grad
// CHECK: pf.mul_scalar {{.*}}pf.fold = "softmax_grad_scale"
#P = #pf.placement<"cpu", [0]>
!T = !pf.global<2x3x3xf32, #P, #pf.sbp<[B]>>
!M = !pf.global<3x3xi64, #P, #pf.sbp<[B]>>
module @rank0 attributes {pf.rank = 0 : i64} {
func.func @attention(%x: !T, %m: !M, %dy: !T) -> (!T, !T) {
  %s = pf.mul_scalar %x {scalar = 0.5 : f64} : (!T) -> !T
  %b = pf.broadcast_to %m {shape = array<i64: 2, 3, 3>} : (!M) -> !pf.global<2x3x3xi64, #P, #pf.sbp<[B]>>
  %f = pf.masked_fill %s, %b {value = -1.0e+09 : f64} : (!T, !pf.global<2x3x3xi64, #P, #pf.sbp<[B]>>) -> !T
  %p = pf.softmax %f {axis = 2 : i64} : (!T) -> !T
  %g = pf.softmax_grad %p, %dy {axis = 2 : i64} : (!T, !T) -> !T
  %gs = pf.mul_scalar %g {scalar = 0.5 : f64} : (!T) -> !T
  return %p, %gs : !T, !T
}
}

// -----

// Not folded: a scale also read elsewhere; a softmax over another axis; a
// parameter written between the scale and the softmax.
// CHECK-LABEL: func.func @edges
// CHECK-NOT: pf.fold
#P = #pf.placement<"cpu", [0]>
!T = !pf.global<2x3x3xf32, #P, #pf.sbp<[B]>>
!S = !pf.global<f32, #P, #pf.sbp<[B]>>
module @rank0 attributes {pf.rank = 0 : i64} {
pf.param @w : !T = #pf.init<ones>
func.func @edges(%x: !T, %g: !T) -> (!T, !T, !T, !T) {
  %s = pf.mul_scalar %x {scalar = 0.5 : f64} : (!T) -> !T
  %p = pf.softmax %s {axis = 2 : i64} : (!T) -> !T
  %s2 = pf.mul_scalar %x {scalar = 0.5 : f64} : (!T) -> !T
  %q = pf.softmax %s2 {axis = 1 : i64} : (!T) -> !T
  %w = pf.read_param @w : !T
  %s3 = pf.mul_scalar %w {scalar = 0.5 : f64} : (!T) -> !T
  %lr = pf.scalar_input "lr" : !S
  %nw = pf.sgd_update %w, %g, %lr : (!T, !T, !S) -> !T
  pf.write_param %nw to @w : !T
  %r = pf.softmax %s3 {axis = 2 : i64} : (!T) -> !T
  return %p, %s, %q, %r : !T, !T, !T, !T
}
}
