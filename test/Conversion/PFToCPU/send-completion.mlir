// RUN: pf-opt %s -pf-cpu-folds -convert-pf-to-cpu=outline-actions=false | FileCheck %s

// Rank 0 sends %a and later receives %g, which rank 1 sends only after it
// received %a: once rank 0's receive completes, its send is complete too,
// so it waits for the send right there and %a's block is free for %b
// (offset 64 again, after the parameter's 64 bytes). The handle is the
// send's number among the step's tracked sends (here the first). Rank 1's
// send has no such proof and completes at the end of the step.
// CHECK-LABEL: module @rank0
// CHECK: step_peak_bytes = 128 : i64
// CHECK-LABEL: llvm.func @pf_step
// CHECK: %[[OA:.+]] = llvm.mlir.constant(64 : i64)
// CHECK: %[[A:.+]] = llvm.call @pfrt_arena_at(%[[OA]],
// CHECK: llvm.call @pfrt_isend_tracked(%[[A]],
// CHECK: llvm.call @pfrt_recv(
// CHECK-NEXT: llvm.call @pfrt_trace_end
// CHECK-NEXT: %[[H:.+]] = llvm.mlir.constant(0 : i64)
// CHECK-NEXT: llvm.call @pfrt_wait_send(%[[H]])
// CHECK: %[[OB:.+]] = llvm.mlir.constant(64 : i64)
// CHECK: %[[B:.+]] = llvm.call @pfrt_arena_at(%[[OB]],
// CHECK: llvm.call @pfrt_k_relu(%{{.+}}, %[[B]],
// CHECK-LABEL: module @rank1
// CHECK-LABEL: llvm.func @pf_step
// CHECK-NOT: pfrt_isend_tracked
// CHECK: llvm.call @pfrt_isend(
// CHECK-NOT: pfrt_wait_send
// CHECK: llvm.call @pfrt_wait_sends

#P0 = #pf.placement<"cpu", [0]>
#P1 = #pf.placement<"cpu", [1]>
!G0 = !pf.global<4x3xf32, #P0, #pf.sbp<[B]>>
!G1 = !pf.global<4x3xf32, #P1, #pf.sbp<[B]>>
module attributes {pf.world_size = 2 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
    pf.param @w : !G0 = #pf.init<ones>
    func.func @train_step() -> !G0 {
      %w = pf.read_param @w : !G0
      %a = pf.relu %w : (!G0) -> !G0
      pf.send %a to 1 tag 1 : !G0
      %g = pf.recv from 1 tag 2 : !G0
      %b = pf.relu %g : (!G0) -> !G0
      return %b : !G0
    }
  }
  module @rank1 attributes {pf.rank = 1 : i64} {
    func.func @train_step() {
      %x = pf.recv from 0 tag 1 : !G1
      %y = pf.relu %x : (!G1) -> !G1
      pf.send %y to 0 tag 2 : !G1
      return
    }
  }
}
