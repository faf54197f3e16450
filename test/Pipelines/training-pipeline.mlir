// RUN: pf-opt %pf_src_root/examples/mlir/seed_mlp.mlir -pf-training-pipeline="accumulation-steps=2" | FileCheck %s
// RUN: pf-opt %pf_src_root/examples/mlir/seed_mlp.mlir -pf-training-pipeline="optimizer=adam" | FileCheck %s --check-prefix=ADAM

// The seed MLP becomes a full training step: forward, backward on each op's
// stage, one update per parameter on its stage.
// CHECK-COUNT-6: pf.param @{{.*}}.grad : {{.*}} buffer {pf.grad_of =
// CHECK-LABEL: func.func @train_step
// Canonicalization hoists constants; the loss seed is 1/2 for 2 micro-batches.
// CHECK: pf.constant dense<5.000000e-01> : tensor<f32> {pf.phase = "backward_input", pf.stage = 1 : i64}
// CHECK: %[[LOSS:.*]] = pf.softmax_cross_entropy
// CHECK: pf.softmax_cross_entropy_grad {{.*}} {pf.phase = "backward_input", pf.stage = 1 : i64}
// The activation gradient crosses back from stage 1's placement to stage 0's.
// CHECK: pf.to_global %{{.*}} {pf.phase = "backward_input"} : !pf.global<16x512xf32, #[[P1:.*]]> -> !pf.global<16x512xf32, #[[P0:.*]]>
// CHECK: pf.relu_grad {{.*}} {pf.phase = "backward_input", pf.stage = 0 : i64}
// CHECK-COUNT-2: pf.sgd_update {{.*}} pf.stage = 0 : i64
// CHECK-COUNT-4: pf.sgd_update {{.*}} pf.stage = 1 : i64
// CHECK: return %[[LOSS]]

// ADAM-COUNT-6: pf.adam_update
