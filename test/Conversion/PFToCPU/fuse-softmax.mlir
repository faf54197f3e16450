// RUN: pf-opt %s -split-input-file -pf-autodiff -pf-infer-sbp -pf-insert-boxing -pf-lower-boxing -pf-partition-ranks -pf-cpu-folds -convert-pf-to-cpu=outline-actions=false | FileCheck %s
// RUN: sed -e "s/\"cpu\"/\"cuda\"/g" %s | pf-opt - -split-input-file -pf-autodiff -pf-infer-sbp -pf-insert-boxing -pf-lower-boxing -pf-partition-ranks -pf-gpu-folds -convert-pf-to-gpu=outline-actions=false | FileCheck %s --check-prefix=GPU

// The attention softmax on CPU ranks: scale, causal mask (a constant
// broadcast over batch and heads) and softmax are one pass that reads the
// 3x3 mask's rows every 3 rows; the gradient's scale is computed by the
// softmax gradient. No scale, mask broadcast or masked_fill pass is left.
#P = #pf.placement<"cpu", [0, 1]>
pf.param @w : !pf.global<3x3xf32, #P, #pf.sbp<[B]>> = #pf.init<normal(0.0, 1.0)>
func.func @attn(%x: !pf.global<4x2x3x3xf32, #P, #pf.sbp<[S(0)]>>) -> !pf.global<f32, #P> {
  %mask = pf.constant dense<[[[[0, 1, 1], [0, 0, 1], [0, 0, 0]]]]> : tensor<1x1x3x3xi64> : !pf.global<1x1x3x3xi64, #P, #pf.sbp<[B]>>
  %w = pf.read_param @w : !pf.global<3x3xf32, #P, #pf.sbp<[B]>>
  %e = pf.broadcast_to %w {shape = array<i64: 4, 2, 3, 3>} : (!pf.global<3x3xf32, #P, #pf.sbp<[B]>>) -> !pf.global<4x2x3x3xf32, #P>
  %a = pf.mul %x, %e : (!pf.global<4x2x3x3xf32, #P, #pf.sbp<[S(0)]>>, !pf.global<4x2x3x3xf32, #P>) -> !pf.global<4x2x3x3xf32, #P>
  %s = pf.mul_scalar %a {scalar = 0.5 : f64} : (!pf.global<4x2x3x3xf32, #P>) -> !pf.global<4x2x3x3xf32, #P>
  %b = pf.broadcast_to %mask {shape = array<i64: 4, 2, 3, 3>} : (!pf.global<1x1x3x3xi64, #P, #pf.sbp<[B]>>) -> !pf.global<4x2x3x3xi64, #P>
  %f = pf.masked_fill %s, %b {value = 0xFFF0000000000000 : f64} : (!pf.global<4x2x3x3xf32, #P>, !pf.global<4x2x3x3xi64, #P>) -> !pf.global<4x2x3x3xf32, #P>
  %p = pf.softmax %f {axis = 3 : i64} : (!pf.global<4x2x3x3xf32, #P>) -> !pf.global<4x2x3x3xf32, #P>
  %y = pf.mul %p, %x : (!pf.global<4x2x3x3xf32, #P>, !pf.global<4x2x3x3xf32, #P, #pf.sbp<[S(0)]>>) -> !pf.global<4x2x3x3xf32, #P>
  %l = pf.reduce_sum %y {axes = array<i64: 0, 1, 2, 3>} : (!pf.global<4x2x3x3xf32, #P>) -> !pf.global<f32, #P>
  return %l : !pf.global<f32, #P>
}
// Each rank holds 2 of the 4 batch rows: 2 x 2 x 3 rows of 3, reading the
// mask's 3 rows every 3 rows; x is the product, read where the softmax runs.
// CHECK-LABEL: module @rank0
// CHECK: llvm.func @pf_step
// CHECK: llvm.call @pfrt_k_copy(%{{.*}}, %[[MASK:.*]], %{{.*}})
// CHECK: llvm.call @pfrt_k_broadcast(
// CHECK: llvm.call @pfrt_k_mul(%{{.*}}, %{{.*}}, %[[SCORES:.*]], %{{.*}})
// CHECK-NOT: llvm.call @pfrt_k_
// CHECK: %[[I64:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT: %[[ROWS:.*]] = llvm.mlir.constant(3 : i64) : i64
// CHECK-NEXT: %[[SCALE:.*]] = llvm.mlir.constant(5.000000e-01 : f64) : f64
// CHECK-NEXT: %[[FILL:.*]] = llvm.mlir.constant(0xFFF0000000000000 : f64) : f64
// CHECK-NEXT: %[[OUTER:.*]] = llvm.mlir.constant(12 : i64) : i64
// CHECK-NEXT: %[[N:.*]] = llvm.mlir.constant(3 : i64) : i64
// CHECK-NEXT: %[[LOG:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: llvm.call @pfrt_k_softmax_masked(%[[SCORES]], %[[MASK]], %[[I64]], %[[ROWS]], %[[SCALE]], %[[FILL]], %[[P:.*]], %[[OUTER]], %[[N]], %[[LOG]])
// The gradient: dx = 0.5 softmax_grad(p, dp), read by the next op as is.
// CHECK-NOT: llvm.call @pfrt_k_scale
// CHECK: %[[S2:.*]] = llvm.mlir.constant(5.000000e-01 : f64) : f64
// CHECK-NEXT: llvm.call @pfrt_k_softmax_grad_scaled(%[[P]], %{{.*}}, %[[DX:.*]], %{{.*}}, %{{.*}}, %{{.*}}, %[[S2]]) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i32, f64) -> ()
// CHECK-NOT: llvm.call @pfrt_k_scale
// CHECK: llvm.call @pfrt_k_mul(%[[DX]],
// CHECK-NOT: llvm.call @pfrt_k_scale
// CHECK-NOT: llvm.call @pfrt_k_masked_fill
// CHECK: llvm.return

// GPU ranks keep the separate kernels (the fused ones have no device twin).
// GPU: llvm.call @pfrt_cuda_k_scale
// GPU: llvm.call @pfrt_cuda_k_masked_fill
// GPU: llvm.call @pfrt_cuda_k_softmax
// GPU: llvm.call @pfrt_cuda_k_softmax_grad
// GPU: llvm.call @pfrt_cuda_k_scale

// -----

// Not fused: the scaled scores are read twice, the softmax is along
// another axis than the last, and the gradient's scale is not its only use.
#P = #pf.placement<"cpu", [0]>
func.func @other(%x: !pf.global<2x3xf32, #P, #pf.sbp<[B]>>, %m: !pf.global<2x3xi64, #P, #pf.sbp<[B]>>) -> (!pf.global<f32, #P>, !pf.global<2x3xf32, #P>) {
  %s = pf.mul_scalar %x {scalar = 2.0 : f64} : (!pf.global<2x3xf32, #P, #pf.sbp<[B]>>) -> !pf.global<2x3xf32, #P>
  %f = pf.masked_fill %s, %m {value = -1.0e9 : f64} : (!pf.global<2x3xf32, #P>, !pf.global<2x3xi64, #P, #pf.sbp<[B]>>) -> !pf.global<2x3xf32, #P>
  %p = pf.softmax %f {axis = 1 : i64} : (!pf.global<2x3xf32, #P>) -> !pf.global<2x3xf32, #P>
  %q = pf.softmax %p {axis = 0 : i64} : (!pf.global<2x3xf32, #P>) -> !pf.global<2x3xf32, #P>
  %l = pf.reduce_sum %q {axes = array<i64: 0, 1>} : (!pf.global<2x3xf32, #P>) -> !pf.global<f32, #P>
  return %l, %s : !pf.global<f32, #P>, !pf.global<2x3xf32, #P>
}
// The masked_fill still joins its softmax; the scale, read twice, does not.
// CHECK-LABEL: module @rank0
// CHECK: llvm.call @pfrt_k_scale
// CHECK-NOT: llvm.call @pfrt_k_masked_fill
// CHECK: %[[FILL:.*]] = llvm.mlir.constant(-1.000000e+09 : f64) : f64
// CHECK: llvm.call @pfrt_k_softmax_masked(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[FILL]],
// CHECK: llvm.call @pfrt_k_softmax(
// CHECK-NOT: pfrt_k_softmax_masked
