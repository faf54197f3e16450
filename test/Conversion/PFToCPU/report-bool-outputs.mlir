// RUN: pf-opt %s -pf-cpu-folds -convert-pf-to-cpu="report-outputs=true outline-actions=false" | FileCheck %s

// Bool results: a comparison's (one byte an element, dtype "bool" in the
// manifest) and a pack of two micro-batches' (whose parts, 3 bytes each,
// are copied as boxes of bytes, dtype 3, not as 4-byte words).
// CHECK-LABEL: module @rank0
// CHECK-SAME: pfrt.outputs = [{dtype = "bool", index = 0 : i64, local_shape = array<i64: 3>{{.*}}}, {dtype = "bool", index = 1 : i64, local_shape = array<i64: 2, 3>
// CHECK-LABEL: llvm.func @pf_step
// CHECK: llvm.call @pfrt_k_compare
// CHECK: llvm.call @pfrt_k_compare
// CHECK: %[[BOOL:.+]] = llvm.mlir.constant(3 : i32)
// CHECK-NEXT: llvm.call @pfrt_copy_box({{.*}}, %[[BOOL]])
// CHECK: llvm.call @pfrt_copy_box(
// CHECK-NOT: llvm.call @pfrt_k_copy
// CHECK: %[[N0:.+]] = llvm.mlir.constant(3 : i64)
// CHECK-NEXT: llvm.call @pfrt_report_output(%{{.+}}, %{{.+}}, %[[N0]])
// CHECK: %[[N1:.+]] = llvm.mlir.constant(6 : i64)
// CHECK-NEXT: llvm.call @pfrt_report_output(%{{.+}}, %{{.+}}, %[[N1]])

#P = #pf.placement<"cpu", [0]>
!G = !pf.global<3xf32, #P, #pf.sbp<[B]>>
!M = !pf.global<3xi1, #P, #pf.sbp<[B]>>
module attributes {pf.world_size = 1 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
    func.func @forward(%x: !G {pf.input = 0 : i64}, %y: !G {pf.input = 1 : i64}) -> (!M, !pf.global<2x3xi1, #P, #pf.sbp<[B]>>) {
      %a = pf.compare %x, %y {predicate = "lt"} : (!G, !G) -> !M
      %b = pf.compare %x, %y {predicate = "ge"} : (!G, !G) -> !M
      %p = pf.pack %a, %b : (!M, !M) -> !pf.global<2x3xi1, #P, #pf.sbp<[B]>>
      return %a, %p : !M, !pf.global<2x3xi1, #P, #pf.sbp<[B]>>
    }
  }
}
