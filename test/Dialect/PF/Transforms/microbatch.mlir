// RUN: pf-opt %s -pf-training-pipeline="accumulation-steps=2" -pf-microbatch="num-microbatches=2" | FileCheck %s
// RUN: not pf-opt %s -pf-training-pipeline -pf-microbatch="num-microbatches=3" 2>&1 | FileCheck %s --check-prefix=DIVIDE
// RUN: not pf-opt %s -pf-microbatch="num-microbatches=0" 2>&1 | FileCheck %s --check-prefix=ZERO

#P = #pf.placement<"cpu", [0]>
!X = !pf.global<4x8xf32, #P, #pf.sbp<[B]>>
!W = !pf.global<3x8xf32, #P, #pf.sbp<[B]>>
!Y = !pf.global<4xi64, #P, #pf.sbp<[B]>>
pf.param @w : !W = #pf.init<kaiming_uniform(8)>

// Inputs split into micro-batches; forward copies, then backward copies
// (GPipe order) with shapes of one micro-batch; gradients accumulate into
// the buffer twice; one update; the loss comes back packed as [2].
// CHECK-LABEL: func.func @step
// CHECK-SAME: (%[[X:[^:]*]]: !pf.global<4x8xf32, {{.*}}>, %[[Y:[^:]*]]: !pf.global<4xi64, {{.*}}>) -> !pf.global<2xf32
// CHECK-DAG: %[[X0:.*]] = pf.microbatch %[[X]] {count = 2 : i64, index = 0 : i64, pf.microbatch = 0 : i64} : {{.*}} -> !pf.global<2x8xf32
// CHECK-DAG: %[[Y0:.*]] = pf.microbatch %[[Y]] {count = 2 : i64, index = 0 : i64, pf.microbatch = 0 : i64} : {{.*}} -> !pf.global<2xi64
// CHECK: pf.matmul %[[X0]], %{{.*}} {pf.microbatch = 0 : i64, transpose_b} : {{.*}} -> !pf.global<2x3xf32
// CHECK: %[[L0:.*]] = pf.softmax_cross_entropy %{{.*}}, %[[Y0]] {pf.microbatch = 0 : i64}
// CHECK: %[[X1:.*]] = pf.microbatch %[[X]] {count = 2 : i64, index = 1 : i64, pf.microbatch = 1 : i64}
// CHECK: pf.matmul %[[X1]], %{{.*}} {pf.microbatch = 1 : i64, transpose_b}
// CHECK: %[[L1:.*]] = pf.softmax_cross_entropy {{.*}} {pf.microbatch = 1 : i64}
// CHECK: pf.softmax_cross_entropy_grad {{.*}} {pf.microbatch = 0 : i64, pf.phase = "backward_input"}
// CHECK: pf.write_param %{{.*}} to @w.grad {pf.microbatch = 0 : i64
// CHECK: pf.softmax_cross_entropy_grad {{.*}} {pf.microbatch = 1 : i64, pf.phase = "backward_input"}
// CHECK: pf.write_param %{{.*}} to @w.grad {pf.microbatch = 1 : i64
// CHECK-COUNT-1: pf.sgd_update
// CHECK-NOT: pf.sgd_update
// CHECK: %[[PACK:.*]] = pf.pack %[[L0]], %[[L1]] : {{.*}} -> !pf.global<2xf32
// CHECK: return %[[PACK]]
func.func @step(%x: !X, %y: !Y) -> !pf.global<f32, #P> {
  %w = pf.read_param @w : !W
  %h = pf.matmul %x, %w {transpose_b} : (!X, !W) -> !pf.global<4x3xf32, #P>
  %l = pf.softmax_cross_entropy %h, %y : (!pf.global<4x3xf32, #P>, !Y) -> !pf.global<f32, #P>
  return %l : !pf.global<f32, #P>
}

// DIVIDE: error: 'func.func' op pf-microbatch: input 0 has batch size 4, which does not divide into 3 micro-batches
// ZERO: error: pf-microbatch: num-microbatches must be >= 1, got 0
