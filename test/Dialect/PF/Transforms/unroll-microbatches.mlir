// pf-microbatch{template} keeps one micro-batch's copy; pf-unroll-microbatches
// makes the others. The two together give exactly what pf-microbatch gives.
// RUN: pf-opt %s -split-input-file -pf-training-pipeline="accumulation-steps=3" -pf-microbatch="num-microbatches=3 template" | FileCheck %s --check-prefix=TEMPLATE
// RUN: pf-opt %s -split-input-file -pf-training-pipeline="accumulation-steps=3" -pf-microbatch="num-microbatches=3 template" | pf-opt -split-input-file -pf-unroll-microbatches > %t.unrolled
// RUN: pf-opt %s -split-input-file -pf-training-pipeline="accumulation-steps=3" -pf-microbatch="num-microbatches=3" > %t.direct
// RUN: diff %t.unrolled %t.direct
// RUN: FileCheck %s --check-prefix=UNROLLED < %t.unrolled

#P = #pf.placement<"cpu", [0]>
!X = !pf.global<6x8xf32, #P, #pf.sbp<[B]>>
!W = !pf.global<3x8xf32, #P, #pf.sbp<[B]>>
!Y = !pf.global<6xi64, #P, #pf.sbp<[B]>>
pf.param @w : !W = #pf.init<kaiming_uniform(8)>

// TEMPLATE-LABEL: func.func @step
// TEMPLATE-SAME: -> !pf.global<3xf32
// TEMPLATE-SAME: attributes {pf.microbatch_template = 3 : i64}
// TEMPLATE-COUNT-2: pf.microbatch %{{.*}} {count = 3 : i64, index = 0 : i64, pf.microbatch = 0 : i64}
// TEMPLATE-NOT: pf.microbatch %
// TEMPLATE: %[[L:.*]] = pf.softmax_cross_entropy {{.*}} {pf.microbatch = 0 : i64}
// TEMPLATE-NOT: pf.softmax_cross_entropy %
// TEMPLATE: pf.softmax_cross_entropy_grad {{.*}}pf.microbatch = 0 : i64
// TEMPLATE-NOT: pf.softmax_cross_entropy_grad
// TEMPLATE-COUNT-1: pf.sgd_update
// TEMPLATE: pf.pack %[[L]], %[[L]], %[[L]] :

// UNROLLED-LABEL: func.func @step
// UNROLLED-NOT: pf.microbatch_template
// UNROLLED: %[[L0:.*]] = pf.softmax_cross_entropy {{.*}} {pf.microbatch = 0 : i64}
// UNROLLED: %[[L1:.*]] = pf.softmax_cross_entropy {{.*}} {pf.microbatch = 1 : i64}
// UNROLLED: %[[L2:.*]] = pf.softmax_cross_entropy {{.*}} {pf.microbatch = 2 : i64}
// UNROLLED: pf.softmax_cross_entropy_grad {{.*}}pf.microbatch = 0 : i64
// UNROLLED: pf.softmax_cross_entropy_grad {{.*}}pf.microbatch = 1 : i64
// UNROLLED: pf.softmax_cross_entropy_grad {{.*}}pf.microbatch = 2 : i64
// UNROLLED: pf.sgd_update
// UNROLLED: pf.pack %[[L0]], %[[L1]], %[[L2]] :
func.func @step(%x: !X, %y: !Y) -> !pf.global<f32, #P> {
  %w = pf.read_param @w : !W
  %h = pf.matmul %x, %w {transpose_b} : (!X, !W) -> !pf.global<6x3xf32, #P>
  %l = pf.softmax_cross_entropy %h, %y : (!pf.global<6x3xf32, #P>, !Y) -> !pf.global<f32, #P>
  return %l : !pf.global<f32, #P>
}
