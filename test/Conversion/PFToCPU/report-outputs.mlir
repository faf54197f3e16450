// RUN: pf-opt %s -pf-cpu-folds -convert-pf-to-cpu="report-outputs=true outline-actions=false" | FileCheck %s

// An inference step reports every result (this rank's local part) with
// pfrt_report_output, in order, and no losses; the rank module records
// each result's local shape, dtype, placement, SBP and global shape for
// the manifest.
// CHECK-LABEL: module @rank0
// CHECK-SAME: pfrt.outputs = [{dtype = "f32", index = 0 : i64, local_shape = array<i64: 4, 3>, placement = "#pf.placement<\22cpu\22, [0]>", sbp = "#pf.sbp<[B]>", shape = array<i64: 4, 3>}, {dtype = "f32", index = 1 : i64, local_shape = array<i64: 4, 3>
// CHECK-SAME: pfrt.reports_loss = false
// CHECK-LABEL: llvm.func @pf_step
// CHECK: llvm.call @pfrt_wait_sends
// CHECK-NEXT: %[[I0:.+]] = llvm.mlir.constant(0 : i32)
// CHECK: %[[N0:.+]] = llvm.mlir.constant(48 : i64)
// CHECK: llvm.call @pfrt_report_output(%[[I0]], %{{.+}}, %[[N0]])
// CHECK: %[[I1:.+]] = llvm.mlir.constant(1 : i32)
// CHECK: llvm.call @pfrt_report_output(%[[I1]],
// CHECK-NOT: pfrt_report_loss

#P = #pf.placement<"cpu", [0]>
!G = !pf.global<4x3xf32, #P, #pf.sbp<[B]>>
module attributes {pf.world_size = 1 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
    pf.param @w : !G = #pf.init<ones>
    func.func @forward(%x: !G {pf.input = 0 : i64}) -> (!G, !G) {
      %w = pf.read_param @w : !G
      %a = pf.add %x, %w : (!G, !G) -> !G
      %r = pf.relu %a : (!G) -> !G
      return %a, %r : !G, !G
    }
  }
}
