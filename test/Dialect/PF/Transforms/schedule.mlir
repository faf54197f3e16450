// RUN: pf-opt %s -split-input-file -pf-schedule="kind=1f1b num-stages=2 num-microbatches=3 report=true" | FileCheck %s

// The 1F1B action lists of Megatron-LM: rank 0 warms up with p - r - 1 = 1
// forward, then alternates, then cools down; the last rank alternates.
// CHECK: schedule 1f1b: 2 stages, 3 micro-batches, 1 chunk(s)
// CHECK-NEXT: rank 0: F0 F1 B0 F2 B1 B2
// CHECK-NEXT: rank 1: F0 B0 F1 B1 F2 B2
// CHECK: pf.schedule {actions = {{\[}}["F0", "F1", "B0", "F2", "B1", "B2"], ["F0", "B0", "F1", "B1", "F2", "B2"]], kind = "1f1b", num_chunks = 1 : i64, num_microbatches = 3 : i64, num_stages = 2 : i64}
module {}

// RUN: pf-opt %pf_src_root/examples/mlir/seed_mlp.mlir -pf-training-pipeline="accumulation-steps=4" -pf-microbatch="num-microbatches=4" -pf-schedule="kind=zb-h1 report=true" -o /dev/null | FileCheck %s --check-prefix=SEED
// The seed program's own stages (2) and micro-batches (4), from pf.stage
// and pf.microbatch; ZB-H1 fills the cool-down with weight gradients.
// SEED: schedule zb-h1: 2 stages, 4 micro-batches, 1 chunk(s)
// SEED-NEXT: rank 0: F0 F1 {{.*}}W3
// SEED-NEXT: rank 1: F0 B0 {{.*}}W3
// SEED: idle time per rank: 1 1
