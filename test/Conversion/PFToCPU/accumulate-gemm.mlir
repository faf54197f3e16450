// RUN: pf-opt %s -pf-cpu-folds -convert-pf-to-cpu=outline-actions=false | FileCheck %s
// RUN: pf-opt %s -pf-cpu-folds=fold-accumulation=false -convert-pf-to-cpu="outline-actions=false" | FileCheck %s --check-prefix=NOFOLD

// Weight gradients of two micro-batches summed: the second GEMM adds its
// product into the first one's buffer (beta = 1) and the add disappears; the
// sum then lives in that buffer.
// CHECK-LABEL: llvm.func @pf_step
// CHECK: %[[G:.+]] = llvm.call @pfrt_arena_at(
// CHECK: llvm.call @pfrt_k_matmul(%{{.+}}, %{{.+}}, %[[G]],
// CHECK: %[[G2:.+]] = llvm.call @pfrt_arena_at(
// CHECK: llvm.call @pfrt_k_matmul_acc(%{{.+}}, %{{.+}}, %[[G2]],
// CHECK-NOT: pfrt_k_add
// CHECK: llvm.call @pfrt_k_relu(%[[G2]],
// NOFOLD-LABEL: llvm.func @pf_step
// NOFOLD-NOT: pfrt_k_matmul_acc
// NOFOLD: llvm.call @pfrt_k_add(

#P = #pf.placement<"cpu", [0]>
!A = !pf.global<4x8xf32, #P, #pf.sbp<[B]>>
!W = !pf.global<8x8xf32, #P, #pf.sbp<[B]>>
module attributes {pf.world_size = 1 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
    pf.param @x : !A = #pf.init<ones>
    pf.param @y : !A = #pf.init<ones>
    func.func @train_step() -> !W {
      %x = pf.read_param @x : !A
      %y = pf.read_param @y : !A
      %g0 = pf.matmul %x, %y {transpose_a} : (!A, !A) -> !W
      %g1 = pf.matmul %y, %x {transpose_a} : (!A, !A) -> !W
      %s = pf.add %g0, %g1 : (!W, !W) -> !W
      %r = pf.relu %s : (!W) -> !W
      return %r : !W
    }
  }
}
