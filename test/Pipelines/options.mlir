// The pipelines share option groups: every pf-optimizer option (its `kind`
// spelled `optimizer`) in each pipeline that trains, and the staging options
// (auto-stages, balance, schedule, num-chunks) in both staging pipelines.
// RUN: pf-opt %pf_src_root/examples/mlir/seed_mlp.mlir -pf-training-pipeline="optimizer=adamw beta2=0.99" | FileCheck %s --check-prefix=ADAMW
// RUN: pf-opt %pf_src_root/examples/mlir/seed_mlp.mlir -pf-stage-pipeline="accumulation-steps=2 optimizer=adam" | FileCheck %s --check-prefix=STAGE
// RUN: pf-opt %pf_src_root/examples/mlir/seed_mlp.mlir -pf-stage-pipeline="accumulation-steps=2 schedule=none" | FileCheck %s --check-prefix=NONE
// RUN: pf-opt %pf_src_root/examples/mlir/seed_mlp.mlir -pf-compile-cpu-pipeline="accumulation-steps=2 schedule=gpipe pf-compile-to=rank" | FileCheck %s --check-prefix=GPIPE
// RUN: not pf-opt %pf_src_root/examples/mlir/seed_mlp.mlir -pf-training-pipeline="optimizer=lamb" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not pf-opt %pf_src_root/examples/mlir/seed_mlp.mlir -pf-compile-cpu-pipeline="schedule=bubbly" 2>&1 | FileCheck %s --check-prefix=BADSCHEDULE

// ADAMW-COUNT-6: pf.adam_update {{.*}}beta2 = 0.98999999999999999 : f64, decoupled

// The stage pipeline trains with the optimizer it is given and schedules
// 1F1B unless told otherwise.
// STAGE-COUNT-6: pf.adam_update
// STAGE: pf.schedule {{.*}}kind = "1f1b"

// NONE: pf.param @
// NONE-NOT: pf.schedule

// GPIPE: pf.schedule {{.*}}kind = "gpipe"

// BAD: for the --optimizer option: Cannot find option named 'lamb'!
// BADSCHEDULE: for the --schedule option: Cannot find option named 'bubbly'!
