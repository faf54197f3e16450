// RUN: pf-opt %s -pf-training-pipeline="autocast=bf16" | FileCheck %s

// Under autocast the logits are a bf16 GEMM's, widened to f32 for the
// loss. The loss's gradient reads them again: pf-autodiff recomputes the
// widening cast in the backward, so the forward keeps the 2-byte logits
// alive until then, not their 4-byte copy (the activations the memory plan
// counts halve).
#P = #pf.placement<"cpu", [0]>
pf.param @w : !pf.global<16x32xf32, #P> = #pf.init<uniform(-0.1, 0.1)>
func.func @logits(%x: !pf.global<8x32xf32, #P>, %y: !pf.global<8xi64, #P>) -> !pf.global<f32, #P> {
  %w = pf.read_param @w : !pf.global<16x32xf32, #P>
  %h = pf.matmul %x, %w {transpose_b} : (!pf.global<8x32xf32, #P>, !pf.global<16x32xf32, #P>) -> !pf.global<8x16xf32, #P>
  %l = pf.softmax_cross_entropy %h, %y : (!pf.global<8x16xf32, #P>, !pf.global<8xi64, #P>) -> !pf.global<f32, #P>
  return %l : !pf.global<f32, #P>
}
// CHECK-LABEL: func.func @logits
// CHECK: %[[H:.*]] = pf.matmul {{.*}} -> !pf.global<8x16xbf16
// CHECK: %[[F:.*]] = pf.cast %[[H]] : !pf.global<8x16xbf16{{.*}} -> !pf.global<8x16xf32
// CHECK: pf.softmax_cross_entropy %[[F]]
// CHECK: %[[R:.*]] = pf.cast %[[H]] {pf.phase = "recompute"} : !pf.global<8x16xbf16{{.*}} -> !pf.global<8x16xf32
// CHECK: pf.softmax_cross_entropy_grad %[[R]]
// CHECK-NOT: pf.softmax_cross_entropy_grad %[[F]]
