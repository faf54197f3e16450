// RUN: pf-opt %s -pf-training-pipeline="accumulation-steps=2 autocast=bf16" -pf-microbatch="num-microbatches=2" | FileCheck %s

// A pf.cast of a batch-shaped value takes its micro-batch's shape in its
// own element type (a cast has no type inference: its result type names
// the element type). Before, mixed precision with gradient accumulation
// kept the full batch on the casts: 'mask shape [4, ...] differs from
// input shape [8, ...]'.
#P = #pf.placement<"cpu", [0]>
!X = !pf.global<4x8xf32, #P, #pf.sbp<[B]>>
!W = !pf.global<3x8xf32, #P, #pf.sbp<[B]>>
!Y = !pf.global<4xi64, #P, #pf.sbp<[B]>>
pf.param @w : !W = #pf.init<kaiming_uniform(8)>

// CHECK-LABEL: func.func @step
// CHECK: %[[X0:.*]] = pf.microbatch %{{.*}} {count = 2 : i64, index = 0 : i64, pf.microbatch = 0 : i64} : {{.*}} -> !pf.global<2x8xf32
// CHECK: %[[XL:.*]] = pf.cast %[[X0]] {pf.microbatch = 0 : i64} : !pf.global<2x8xf32, {{.*}}> -> !pf.global<2x8xbf16
// CHECK: %[[H:.*]] = pf.matmul %[[XL]], %{{.*}} -> !pf.global<2x3xbf16
// CHECK: pf.cast %[[H]] {pf.microbatch = 0 : i64} : !pf.global<2x3xbf16, {{.*}}> -> !pf.global<2x3xf32
// CHECK-NOT: !pf.global<4x8xbf16
// CHECK: pf.sgd_update
func.func @step(%x: !X, %y: !Y) -> !pf.global<f32, #P> {
  %w = pf.read_param @w : !W
  %h = pf.matmul %x, %w {transpose_b} : (!X, !W) -> !pf.global<4x3xf32, #P>
  %l = pf.softmax_cross_entropy %h, %y : (!pf.global<4x3xf32, #P>, !Y) -> !pf.global<f32, #P>
  return %l : !pf.global<f32, #P>
}
