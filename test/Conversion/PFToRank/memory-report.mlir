// RUN: pf-opt %s -split-input-file -pf-memory-report -o /dev/null 2>&1 | FileCheck %s
// RUN: pf-opt %s -split-input-file -pf-memory-report=device-memory=10737418240 -o /dev/null 2>&1 | FileCheck %s --check-prefix=FITS
// RUN: pf-opt %s -split-input-file -pf-memory-report -o %t.mlir 2> /dev/null
// RUN: pf-opt %s -split-input-file -o %t.plain.mlir
// RUN: diff %t.mlir %t.plain.mlir

// pf-memory-report prints each rank's plan (`pfrt.memory`, written by the
// rank lowering) in rank order, in bytes and in the largest binary unit
// each reaches; then the step lower bound of the rank with the largest
// arena (here rank 1) by element type. The IR is unchanged.
// CHECK-LABEL: pf-memory-report: 2 ranks, bytes (arena = parameters + gradients + optimizer states + step peak)
// CHECK-NEXT: rank 0: parameters 71805312 (68.48 MiB), gradients 71805312 (68.48 MiB), optimizer states 143610624 (136.96 MiB), inputs 1000 (1000 bytes), activations 1024 (1.00 KiB), step peak 1048576 (1.00 MiB), arena 288269824 (274.92 MiB)
// CHECK-NEXT: rank 1: parameters 1073741824 (1.00 GiB), gradients 0 (0 bytes), optimizer states 0 (0 bytes), inputs 0 (0 bytes), activations 536870912 (512.00 MiB), step peak 1879048192 (1.75 GiB), arena 2952790016 (2.75 GiB)
// CHECK-NEXT: largest: rank 1, arena 2952790016 (2.75 GiB); step lower bound 1610612736 (1.50 GiB): bf16 536870912 (512.00 MiB), f32 1073741824 (1.00 GiB)
// FITS-LABEL: pf-memory-report: 2 ranks
// FITS: device memory 10737418240 (10.00 GiB): every rank fits, the largest (rank 1) leaves 7784628224 (7.25 GiB)
module attributes {pf.world_size = 2 : i64} {
  module @rank1 attributes {pf.rank = 1 : i64, pfrt.memory = {activation_peak_bytes = 536870912 : i64, activations_in_flight = 2 : i64, arena_bytes = 2952790016 : i64, gradient_bytes = 0 : i64, input_bytes = 0 : i64, parameter_bytes = 1073741824 : i64, persistent_bytes = 1073741824 : i64, state_bytes = 0 : i64, step_buffers = 9 : i64, step_lower_bound_bf16_bytes = 536870912 : i64, step_lower_bound_bytes = 1610612736 : i64, step_lower_bound_f32_bytes = 1073741824 : i64, step_peak_bytes = 1879048192 : i64}} {
  }
  module @rank0 attributes {pf.rank = 0 : i64, pfrt.memory = {activation_peak_bytes = 1024 : i64, activations_in_flight = 1 : i64, arena_bytes = 288269824 : i64, gradient_bytes = 71805312 : i64, input_bytes = 1000 : i64, parameter_bytes = 71805312 : i64, persistent_bytes = 287221248 : i64, state_bytes = 143610624 : i64, step_buffers = 3 : i64, step_lower_bound_bytes = 1048576 : i64, step_lower_bound_f32_bytes = 1048576 : i64, step_peak_bytes = 1048576 : i64}} {
  }
}

// -----

// A module that is itself a rank (convert-pf-to-cpu on one rank's module);
// the largest rank's lower bound without a dtype entry.
// CHECK-LABEL: pf-memory-report: 1 rank, bytes
// CHECK-NEXT: rank 3: parameters 64 (64 bytes), gradients 0 (0 bytes), optimizer states 0 (0 bytes), inputs 0 (0 bytes), activations 0 (0 bytes), step peak 128 (128 bytes), arena 192 (192 bytes)
// CHECK-NEXT: largest: rank 3, arena 192 (192 bytes); step lower bound 128 (128 bytes){{$}}
// FITS-LABEL: pf-memory-report: 1 rank
// FITS: device memory 10737418240 (10.00 GiB): every rank fits, the largest (rank 3) leaves 10737418048 (10.00 GiB)
module @rank3 attributes {pf.rank = 3 : i64, pfrt.memory = {activation_peak_bytes = 0 : i64, activations_in_flight = 0 : i64, arena_bytes = 192 : i64, gradient_bytes = 0 : i64, input_bytes = 0 : i64, parameter_bytes = 64 : i64, persistent_bytes = 64 : i64, state_bytes = 0 : i64, step_buffers = 2 : i64, step_lower_bound_bytes = 128 : i64, step_peak_bytes = 128 : i64}} {
}
