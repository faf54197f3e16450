// RUN: pf-opt %s -split-input-file -verify-diagnostics -pf-memory-report=device-memory=1000000 -o /dev/null 2> %t.stderr
// RUN: FileCheck %s --check-prefix=TABLE < %t.stderr
// RUN: not pf-opt %s -split-input-file -pf-memory-report=device-memory=-1 -o /dev/null 2>&1 | FileCheck %s --check-prefix=NEGATIVE

// Rank modules without memory plans (the rank stop of a compile pipeline,
// before the rank lowering).
// expected-error@+1 {{no memory plan: run a compile pipeline (pf-compile-cpu-pipeline or pf-compile-gpu-pipeline, to its end: the rank lowering plans each rank's memory) first}}
module attributes {pf.world_size = 2 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
  }
  module @rank1 attributes {pf.rank = 1 : i64} {
  }
}

// -----

// No rank modules at all.
// expected-error@+1 {{no memory plan: run a compile pipeline}}
module {
  func.func @f() {
    return
  }
}

// -----

// One rank's plan is missing, another's lacks a category.
module attributes {pf.world_size = 3 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64, pfrt.memory = {activation_peak_bytes = 0 : i64, arena_bytes = 64 : i64, gradient_bytes = 0 : i64, input_bytes = 0 : i64, parameter_bytes = 64 : i64, state_bytes = 0 : i64, step_peak_bytes = 0 : i64}} {
  }
  // expected-error@+1 {{rank 1 has no memory plan (pfrt.memory) while other ranks of the module have one}}
  module @rank1 attributes {pf.rank = 1 : i64} {
  }
  // expected-error@+1 {{rank 2's memory plan has no integer arena_bytes}}
  module @rank2 attributes {pf.rank = 2 : i64, pfrt.memory = {activation_peak_bytes = 0 : i64, gradient_bytes = 0 : i64, input_bytes = 0 : i64, parameter_bytes = 64 : i64, state_bytes = 0 : i64, step_peak_bytes = 0 : i64}} {
  }
}

// -----

// device-memory=1000000: rank 1's arena is larger, at its module, with the
// largest of the arena's parts (optimizer states); rank 0 fits.
// TABLE: rank 0: parameters 1000 (1000 bytes), {{.*}}, arena 5000 (4.88 KiB)
// TABLE-NEXT: rank 1: parameters 300000 (292.97 KiB), gradients 300000 (292.97 KiB), optimizer states 600000 (585.94 KiB), inputs 0 (0 bytes), activations 4096 (4.00 KiB), step peak 8192 (8.00 KiB), arena 1208192 (1.15 MiB)
// TABLE: device memory 1000000 (976.56 KiB): rank 1 does not fit
module attributes {pf.world_size = 2 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64, pfrt.memory = {activation_peak_bytes = 1024 : i64, arena_bytes = 5000 : i64, gradient_bytes = 1000 : i64, input_bytes = 0 : i64, parameter_bytes = 1000 : i64, state_bytes = 2000 : i64, step_peak_bytes = 1000 : i64}} {
  }
  // expected-error@+2 {{rank 1 does not fit: its memory plan needs 1208192 bytes (1.15 MiB), the device has 1000000 (976.56 KiB); the largest category is optimizer states 600000 (585.94 KiB)}}
  // expected-note@+1 {{ZeRO (pf-optimizer's zero-stage) splits optimizer states, gradients and parameters over the data-parallel ranks}}
  module @rank1 attributes {pf.rank = 1 : i64, pfrt.memory = {activation_peak_bytes = 4096 : i64, arena_bytes = 1208192 : i64, gradient_bytes = 300000 : i64, input_bytes = 0 : i64, parameter_bytes = 300000 : i64, state_bytes = 600000 : i64, step_peak_bytes = 8192 : i64}} {
  }
}

// NEGATIVE: error: pf-memory-report: device-memory must be at least 0 (0: no check), got -1
