// Per-stage functions (pf-split-stages) on the seed program's ranks.
// RUN: pf-opt %pf_src_root/examples/mlir/seed_mlp.mlir -pf-compile-cpu-pipeline="accumulation-steps=2 schedule=zb-h1 split-stages pf-compile-to=rank" | FileCheck %s --check-prefix=ZB
// RUN: pf-opt %pf_src_root/examples/mlir/seed_mlp.mlir -pf-compile-cpu-pipeline="accumulation-steps=2 schedule=zb-h1 split-stages pf-compile-to=rank" | FileCheck %s --check-prefix=RECV
// RUN: pf-opt %pf_src_root/examples/mlir/seed_mlp.mlir -pf-compile-cpu-pipeline="accumulation-steps=2 schedule=1f1b split-stages pf-compile-to=rank" | FileCheck %s --check-prefix=ONE
// Splitting and inlining back gives the unsplit program.
// RUN: pf-opt %pf_src_root/examples/mlir/seed_mlp.mlir -pf-compile-cpu-pipeline="accumulation-steps=2 schedule=zb-h1 pf-compile-to=rank" -o %t.plain.mlir
// RUN: pf-opt %pf_src_root/examples/mlir/seed_mlp.mlir -pf-compile-cpu-pipeline="accumulation-steps=2 schedule=zb-h1 split-stages pf-compile-to=rank" | pf-opt -pf-inline-stages -pf-forward-grad-buffers -pf-cpu-folds -o %t.roundtrip.mlir
// RUN: diff %t.plain.mlir %t.roundtrip.mlir

// ZB-H1 keeps B and W apart; the last stage runs F0 B0 F1 B1 W0 W1, then
// the update. Each function records its stage, phase and micro-batch.
// ZB-LABEL: module @rank1
// ZB-DAG: func.func private @stage1_forward_mb0({{.*}} attributes {pf.microbatch = 0 : i64, pf.phase = "forward", pf.stage = 1 : i64, pf.stage_function}
// ZB-DAG: func.func private @stage1_backward_weight_mb1(
// ZB-DAG: func.func private @stage1_update() attributes {pf.phase = "update", pf.stage = 1 : i64, pf.stage_function}
// ZB: func.func @train_step
// ZB-NEXT: call @stage1_forward_mb0
// ZB-NEXT: call @stage1_backward_input_mb0
// ZB-NEXT: call @stage1_forward_mb1
// ZB-NEXT: call @stage1_backward_input_mb1
// ZB-NEXT: call @stage1_backward_weight_mb0
// ZB-NEXT: call @stage1_backward_weight_mb1
// ZB-NEXT: call @stage1_update
// The receive of stage 1's input is inside its forward function.
// RECV-LABEL: func.func private @stage1_forward_mb0
// RECV: pf.recv from 0
// RECV: return

// 1F1B: one B action holds both gradients.
// ONE-LABEL: module @rank0
// ONE-NOT: backward_weight
// ONE: func.func private @stage0_backward_input_mb0
// ONE: func.func @train_step
// ONE-NEXT: call @stage0_forward_mb0
// ONE-NEXT: call @stage0_forward_mb1
// ONE-NEXT: call @stage0_backward_input_mb0
// ONE-NEXT: call @stage0_backward_input_mb1
// ONE-NEXT: call @stage0_update
