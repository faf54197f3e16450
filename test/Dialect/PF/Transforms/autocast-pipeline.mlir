// RUN: pf-opt %s -pf-training-pipeline="autocast=bf16 optimizer=adam" | FileCheck %s

// Mixed precision through pf-autodiff and pf-optimizer: the forward GEMM
// reads bf16 casts of the input and the weight, its bias is added in bf16
// (the bias's gradient, a bf16 sum, is cast back to float32); the weight-gradient GEMM is
// bf16 too and is cast back, so the gradient buffers, the Adam states and
// the updates are float32 (master weights); the loss and its gradient are
// float32.
// CHECK-DAG: pf.param @w1 : !pf.global<6x8xf32
// CHECK-DAG: pf.param @w1.exp_avg_sq : !pf.global<6x8xf32
// CHECK-DAG: pf.param @w1.exp_avg : !pf.global<6x8xf32
// CHECK-DAG: pf.param @w1.grad : !pf.global<6x8xf32, #{{.*}}> = #pf.init<zeros> buffer {pf.grad_of = @w1}
// CHECK-DAG: pf.param @b1.grad : !pf.global<6xf32, #{{.*}}> = #pf.init<zeros> buffer {pf.grad_of = @b1}
// CHECK-LABEL: func.func @step
// CHECK: %[[X:.*]] = pf.cast %arg0 : {{.*}} -> !pf.global<4x8xbf16
// CHECK: %[[W:.*]] = pf.read_param @w1 :
// CHECK: %[[WL:.*]] = pf.cast %[[W]] : {{.*}} -> !pf.global<6x8xbf16
// CHECK: %[[H:.*]] = pf.matmul %[[X]], %[[WL]] {transpose_b} : {{.*}} -> !pf.global<4x6xbf16
// CHECK: %[[BL:.*]] = pf.cast %{{.*}} : !pf.global<6xf32, {{.*}} -> !pf.global<6xbf16
// CHECK: %[[HB:.*]] = pf.bias_add %[[H]], %[[BL]] : {{.*}} -> !pf.global<4x6xbf16
// CHECK: %[[HF:.*]] = pf.cast %[[HB]] : {{.*}} -> !pf.global<4x6xf32
// CHECK: %[[LOSS:.*]] = pf.softmax_cross_entropy %[[HF]], {{.*}} -> !pf.global<f32
// CHECK: %[[DH:.*]] = pf.softmax_cross_entropy_grad {{.*}} -> !pf.global<4x6xf32
// CHECK: %[[DHL:.*]] = pf.cast %[[DH]] {pf.phase = "backward_input"} : {{.*}} -> !pf.global<4x6xbf16
// CHECK: pf.cast %{{.*}} {pf.phase = "backward_weight"} : !pf.global<6xbf16, {{.*}} -> !pf.global<6xf32
// CHECK: %[[DW:.*]] = pf.matmul %[[DHL]], %[[X]] {{.*}}transpose_a{{.*}} -> !pf.global<6x8xbf16
// CHECK: %[[DWF:.*]] = pf.cast %[[DW]] {{.*}} -> !pf.global<6x8xf32
// CHECK: %[[G:.*]] = pf.read_param @w1.grad
// CHECK: %[[SUM:.*]] = pf.add %[[G]], %[[DWF]] {{.*}} -> !pf.global<6x8xf32
// CHECK: pf.write_param %[[SUM]] to @w1.grad
// CHECK: pf.adam_update {{.*}} -> (!pf.global<6x8xf32, #{{.*}}>, !pf.global<6x8xf32, #{{.*}}>, !pf.global<6x8xf32, #{{.*}}>)
// CHECK: return %[[LOSS]] : !pf.global<f32
#P = #pf.placement<"cpu", [0]>
!X = !pf.global<4x8xf32, #P, #pf.sbp<[B]>>
!W1 = !pf.global<6x8xf32, #P, #pf.sbp<[B]>>
!B1 = !pf.global<6xf32, #P, #pf.sbp<[B]>>
!H = !pf.global<4x6xf32, #P>
!Y = !pf.global<4xi64, #P, #pf.sbp<[B]>>
!L = !pf.global<f32, #P>
pf.param @w1 : !W1 = #pf.init<kaiming_uniform(8)>
pf.param @b1 : !B1 = #pf.init<kaiming_uniform(8)>
func.func @step(%x: !X, %y: !Y) -> !L {
  %w1 = pf.read_param @w1 : !W1
  %h = pf.matmul %x, %w1 {transpose_b} : (!X, !W1) -> !H
  %b1 = pf.read_param @b1 : !B1
  %hb = pf.bias_add %h, %b1 : (!H, !B1) -> !H
  %l = pf.softmax_cross_entropy %hb, %y : (!H, !Y) -> !L
  return %l : !L
}
