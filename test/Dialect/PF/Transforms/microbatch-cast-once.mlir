// RUN: pf-opt %s -pf-training-pipeline="accumulation-steps=2 autocast=bf16" -pf-microbatch="num-microbatches=2" | FileCheck %s
// RUN: pf-opt %s -pf-training-pipeline="accumulation-steps=2 autocast=bf16" -pf-microbatch="num-microbatches=2" | FileCheck %s --check-prefix=ONCE-W
// RUN: pf-opt %s -pf-training-pipeline="accumulation-steps=2 autocast=bf16" -pf-microbatch="num-microbatches=2" | FileCheck %s --check-prefix=ONCE-V
// RUN: pf-opt %s -pf-training-pipeline="accumulation-steps=2 autocast=bf16" -pf-microbatch="num-microbatches=2" | FileCheck %s --check-prefix=PER-MB

// A weight is cast once per step, not once per micro-batch: the read of a
// parameter the step does not write before (not a gradient buffer) and its
// pf.cast to bf16 do not depend on the micro-batch, so pf-microbatch keeps
// one copy of them, unmarked (no pf.microbatch), before the first
// micro-batch's use; every micro-batch's GEMMs, forward and backward (the
// input gradient through @v), read it. The casts of batch values stay one
// per micro-batch.
#P = #pf.placement<"cpu", [0]>
!X = !pf.global<4x8xf32, #P, #pf.sbp<[B]>>
!W = !pf.global<3x8xf32, #P, #pf.sbp<[B]>>
!V = !pf.global<5x3xf32, #P, #pf.sbp<[B]>>
!Y = !pf.global<4xi64, #P, #pf.sbp<[B]>>
!H = !pf.global<4x3xf32, #P>
!O = !pf.global<4x5xf32, #P>
pf.param @w : !W = #pf.init<kaiming_uniform(8)>
pf.param @v : !V = #pf.init<kaiming_uniform(3)>

// CHECK-LABEL: func.func @step
// CHECK: %[[X0:.*]] = pf.microbatch %{{.*}} {count = 2 : i64, index = 0 : i64, pf.microbatch = 0 : i64}
// CHECK: %[[XL0:.*]] = pf.cast %[[X0]] {pf.microbatch = 0 : i64} : {{.*}} -> !pf.global<2x8xbf16
// CHECK: %[[W:.*]] = pf.read_param @w : !pf.global<3x8xf32
// CHECK-NEXT: %[[WL:.*]] = pf.cast %[[W]] : !pf.global<3x8xf32, {{.*}}> -> !pf.global<3x8xbf16
// CHECK: pf.matmul %[[XL0]], %[[WL]] {pf.microbatch = 0 : i64, transpose_b}
// CHECK: %[[V:.*]] = pf.read_param @v : !pf.global<5x3xf32
// CHECK-NEXT: %[[VL:.*]] = pf.cast %[[V]] : !pf.global<5x3xf32, {{.*}}> -> !pf.global<5x3xbf16
// CHECK: pf.matmul %{{.*}}, %[[VL]] {pf.microbatch = 0 : i64, transpose_b}
// CHECK: %[[X1:.*]] = pf.microbatch %{{.*}} {count = 2 : i64, index = 1 : i64, pf.microbatch = 1 : i64}
// CHECK: %[[XL1:.*]] = pf.cast %[[X1]] {pf.microbatch = 1 : i64} : {{.*}} -> !pf.global<2x8xbf16
// CHECK: pf.matmul %[[XL1]], %[[WL]] {pf.microbatch = 1 : i64, transpose_b}
// CHECK: pf.matmul %{{.*}}, %[[VL]] {pf.microbatch = 1 : i64, transpose_b}
// The input gradient through @v, in each micro-batch, reads the one cast.
// CHECK: pf.matmul %{{.*}}, %[[VL]] {pf.microbatch = 0 : i64, pf.phase = "backward_input"}
// CHECK: pf.matmul %{{.*}}, %[[VL]] {pf.microbatch = 1 : i64, pf.phase = "backward_input"}
// The gradient buffers are read per micro-batch (the step writes them).
// CHECK: pf.read_param @w.grad {pf.microbatch = 1 : i64
// CHECK: pf.sgd_update

// One cast of each weight for the two micro-batches; two of the input.
// ONCE-W-COUNT-1: pf.cast {{.*}} -> !pf.global<3x8xbf16
// ONCE-W-NOT: pf.cast {{.*}} -> !pf.global<3x8xbf16
// ONCE-V-COUNT-1: pf.cast {{.*}} -> !pf.global<5x3xbf16
// ONCE-V-NOT: pf.cast {{.*}} -> !pf.global<5x3xbf16
// PER-MB-COUNT-2: pf.cast {{.*}} -> !pf.global<2x8xbf16
// PER-MB-NOT: pf.cast {{.*}} -> !pf.global<2x8xbf16
func.func @step(%x: !X, %y: !Y) -> !pf.global<f32, #P> {
  %w = pf.read_param @w : !W
  %h = pf.matmul %x, %w {transpose_b} : (!X, !W) -> !H
  %v = pf.read_param @v : !V
  %o = pf.matmul %h, %v {transpose_b} : (!H, !V) -> !O
  %l = pf.softmax_cross_entropy %o, %y : (!O, !Y) -> !pf.global<f32, #P>
  return %l : !pf.global<f32, #P>
}
