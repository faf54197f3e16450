// RUN: pf-opt %s -split-input-file -pf-infer-sbp -pf-insert-boxing -pf-lower-boxing -pf-partition-ranks -pf-cpu-folds -convert-pf-to-cpu=outline-actions=false | FileCheck %s

// The edges of the attention softmax's fusion (fuse-softmax.mlir has the
// attention itself).

// A scale between a softmax gradient and a softmax is the softmax's: the
// gradient is not scaled too (the scale would apply twice).
#P = #pf.placement<"cpu", [0]>
!T = !pf.global<4x3xf32, #P, #pf.sbp<[B]>>
func.func @grad_then_softmax(%y: !T, %dy: !T) -> (!pf.global<f32, #P>, !T) {
  %g = pf.softmax_grad %y, %dy {axis = 1 : i64} : (!T, !T) -> !T
  %s = pf.mul_scalar %g {scalar = 3.0 : f64} : (!T) -> !T
  %p = pf.softmax %s {axis = 1 : i64} : (!T) -> !T
  %l = pf.reduce_sum %p {axes = array<i64: 0, 1>} : (!T) -> !pf.global<f32, #P>
  return %l, %p : !pf.global<f32, #P>, !T
}
// CHECK-LABEL: module @rank0
// CHECK-NOT: pfrt_k_softmax_grad_scaled
// CHECK: llvm.call @pfrt_k_softmax_grad(%{{.*}}, %{{.*}}, %[[G:.*]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
// CHECK-NOT: llvm.call @pfrt_k_scale
// CHECK: %[[S:.*]] = llvm.mlir.constant(3.000000e+00 : f64) : f64
// CHECK: llvm.call @pfrt_k_softmax_masked(%[[G]], %{{.*}}, %{{.*}}, %{{.*}}, %[[S]],
// CHECK-NOT: pfrt_k_softmax_grad_scaled
// CHECK: llvm.return

// -----

// A mask broadcast over an inner axis (heads 2, rows 1 -> 3) does not
// repeat by rows: it is broadcast, then read whole (mask_rows = all 24
// rows); a mask of the softmax's own shape also has mask_rows = rows.
#P = #pf.placement<"cpu", [0]>
!T = !pf.global<4x2x3x3xf32, #P, #pf.sbp<[B]>>
func.func @masks(%x: !T, %m: !pf.global<1x2x1x3xi64, #P, #pf.sbp<[B]>>, %f: !pf.global<4x2x3x3xf32, #P, #pf.sbp<[B]>>) -> (!pf.global<f32, #P>, !T, !T) {
  %b = pf.broadcast_to %m {shape = array<i64: 4, 2, 3, 3>} : (!pf.global<1x2x1x3xi64, #P, #pf.sbp<[B]>>) -> !pf.global<4x2x3x3xi64, #P, #pf.sbp<[B]>>
  %v = pf.masked_fill %x, %b {value = -5.0 : f64} : (!T, !pf.global<4x2x3x3xi64, #P, #pf.sbp<[B]>>) -> !T
  %p = pf.softmax %v {axis = 3 : i64} : (!T) -> !T
  %w = pf.masked_fill %x, %f {value = -7.0 : f64} : (!T, !T) -> !T
  %q = pf.softmax %w {axis = 3 : i64} : (!T) -> !T
  %l = pf.reduce_sum %p {axes = array<i64: 0, 1, 2, 3>} : (!T) -> !pf.global<f32, #P>
  return %l, %p, %q : !pf.global<f32, #P>, !T, !T
}
// CHECK-LABEL: module @rank0
// CHECK: llvm.call @pfrt_k_broadcast(%{{[0-9]+}}, %[[BIG:[0-9]+]],
// CHECK: %[[I64:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT: %[[ROWS:.*]] = llvm.mlir.constant(24 : i64) : i64
// CHECK-NEXT: llvm.mlir.constant(1.000000e+00 : f64) : f64
// CHECK-NEXT: llvm.mlir.constant(-5.000000e+00 : f64) : f64
// CHECK-NEXT: %[[OUTER:.*]] = llvm.mlir.constant(24 : i64) : i64
// CHECK: llvm.call @pfrt_k_softmax_masked(%{{.*}}, %[[BIG]], %[[I64]], %[[ROWS]], %{{.*}}, %{{.*}}, %{{.*}}, %[[OUTER]],
// A float mask of the full shape.
// CHECK: %[[F32:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: %[[ROWS2:.*]] = llvm.mlir.constant(24 : i64) : i64
// CHECK-NEXT: llvm.mlir.constant(1.000000e+00 : f64) : f64
// CHECK-NEXT: llvm.mlir.constant(-7.000000e+00 : f64) : f64
// CHECK: llvm.call @pfrt_k_softmax_masked(%{{.*}}, %{{.*}}, %[[F32]], %[[ROWS2]],

// -----

// A parameter written between the scale and the softmax: the scale reads
// the parameter's buffer, so it is not moved past the write (no fusion).
#P = #pf.placement<"cpu", [0]>
!T = !pf.global<2x3xf32, #P, #pf.sbp<[B]>>
pf.param @w : !T = #pf.init<ones>
func.func @written(%x: !T) -> (!pf.global<f32, #P>, !T) {
  %r = pf.read_param @w : !T
  %s = pf.mul_scalar %r {scalar = 2.0 : f64} : (!T) -> !T
  pf.write_param %x to @w : !T
  %p = pf.softmax %s {axis = 1 : i64} : (!T) -> !T
  %l = pf.reduce_sum %p {axes = array<i64: 0, 1>} : (!T) -> !pf.global<f32, #P>
  return %l, %p : !pf.global<f32, #P>, !T
}
// CHECK-LABEL: module @rank0
// CHECK: llvm.call @pfrt_k_scale
// CHECK: llvm.call @pfrt_k_softmax(
// CHECK-NOT: pfrt_k_softmax_masked
