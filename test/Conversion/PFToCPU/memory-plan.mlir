// RUN: pf-opt %s -split-input-file -pf-cpu-folds -convert-pf-to-cpu=outline-actions=false | FileCheck %s

// The arena holds the parameter first (4x3 f32 = 48 bytes, rounded to 64),
// then the step's buffers. %a and %b overlap in time (b reads a) and get
// different offsets; %c is defined after %a's last reader, so it reuses
// %a's block; %d reuses %b's. The peak is two buffers: 64 + 2 * 64.
// CHECK: pfrt.memory = {{{.*}}arena_bytes = 192 : i64, {{.*}}parameter_bytes = 64 : i64, persistent_bytes = 64 : i64, {{.*}}step_lower_bound_bytes = 128 : i64, step_lower_bound_f32_bytes = 128 : i64, step_peak_bytes = 128 : i64}
// CHECK-LABEL: llvm.func @pf_init_params
// CHECK: %[[SIZE:.+]] = llvm.mlir.constant(192 : i64)
// CHECK: llvm.call @pfrt_arena_plan(%[[SIZE]])
// CHECK: %[[P0:.+]] = llvm.mlir.constant(0 : i64)
// CHECK: llvm.call @pfrt_arena_at(%[[P0]],
// CHECK-LABEL: llvm.func @pf_step
// CHECK: %[[OA:.+]] = llvm.mlir.constant(64 : i64)
// CHECK: %[[A:.+]] = llvm.call @pfrt_arena_at(%[[OA]],
// CHECK: llvm.call @pfrt_k_relu(%{{.+}}, %[[A]],
// CHECK: %[[OB:.+]] = llvm.mlir.constant(128 : i64)
// CHECK: %[[B:.+]] = llvm.call @pfrt_arena_at(%[[OB]],
// CHECK: llvm.call @pfrt_k_relu(%[[A]], %[[B]],
// CHECK: %[[OC:.+]] = llvm.mlir.constant(64 : i64)
// CHECK: %[[C:.+]] = llvm.call @pfrt_arena_at(%[[OC]],
// CHECK: llvm.call @pfrt_k_relu(%[[B]], %[[C]],
// CHECK: %[[OD:.+]] = llvm.mlir.constant(128 : i64)
// CHECK: %[[D:.+]] = llvm.call @pfrt_arena_at(%[[OD]],
// CHECK: llvm.call @pfrt_k_relu(%[[C]], %[[D]],

#P = #pf.placement<"cpu", [0]>
!G = !pf.global<4x3xf32, #P, #pf.sbp<[B]>>
module attributes {pf.world_size = 1 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
    pf.param @w : !G = #pf.init<ones>
    func.func @train_step() -> !G {
      %w = pf.read_param @w : !G
      %a = pf.relu %w : (!G) -> !G
      %b = pf.relu %a : (!G) -> !G
      %c = pf.relu %b : (!G) -> !G
      %d = pf.relu %c : (!G) -> !G
      return %d : !G
    }
  }
}

// -----

// A value sent with a non-blocking send stays until the end of the step:
// %c, defined after %a's last reader, may not take %a's block (without the
// send it would) and the step needs three blocks.
// CHECK: arena_bytes = 256 : i64
// CHECK-SAME: step_peak_bytes = 192 : i64
// CHECK-LABEL: llvm.func @pf_step
// CHECK: %[[OA:.+]] = llvm.mlir.constant(64 : i64)
// CHECK: %[[A:.+]] = llvm.call @pfrt_arena_at(%[[OA]],
// CHECK: llvm.call @pfrt_isend(%[[A]],
// CHECK: %[[OB:.+]] = llvm.mlir.constant(128 : i64)
// CHECK: llvm.call @pfrt_arena_at(%[[OB]],
// CHECK: %[[OC:.+]] = llvm.mlir.constant(192 : i64)
// CHECK: llvm.call @pfrt_arena_at(%[[OC]],

#P = #pf.placement<"cpu", [0]>
!G = !pf.global<4x3xf32, #P, #pf.sbp<[B]>>
module attributes {pf.world_size = 2 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
    pf.param @w : !G = #pf.init<ones>
    func.func @train_step() -> !G {
      %w = pf.read_param @w : !G
      %a = pf.relu %w : (!G) -> !G
      pf.send %a to 1 tag 7 : !G
      %b = pf.relu %a : (!G) -> !G
      %c = pf.relu %b : (!G) -> !G
      return %c : !G
    }
  }
}
