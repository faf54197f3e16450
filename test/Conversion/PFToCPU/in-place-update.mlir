// RUN: pf-opt %s -pf-cpu-folds -convert-pf-to-cpu=outline-actions=false | FileCheck %s

// Optimizer updates write straight into the parameter they are stored to
// (no temporary, no copy), unless the old value is still read afterwards:
// then the read copies the old value first and the update still goes in
// place.
// CHECK-LABEL: llvm.func @pf_step
// CHECK: %[[W0:.+]] = llvm.mlir.addressof @__pf_param0
// CHECK: %[[W:.+]] = llvm.load %[[W0]]
// CHECK: %[[W1:.+]] = llvm.mlir.addressof @__pf_param0
// CHECK: %[[WOUT:.+]] = llvm.load %[[W1]]
// CHECK: llvm.call @pfrt_k_sgd(%[[W]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[WOUT]],
// CHECK-NOT: pfrt_k_copy({{.*}}%[[WOUT]]
// CHECK: %[[V0:.+]] = llvm.mlir.addressof @__pf_param1
// CHECK: %[[V:.+]] = llvm.load %[[V0]]
// CHECK: %[[OLD:.+]] = llvm.call @pfrt_arena_at
// CHECK: llvm.call @pfrt_k_copy(%[[V]], %[[OLD]],
// CHECK: %[[V1:.+]] = llvm.mlir.addressof @__pf_param1
// CHECK: %[[VOUT:.+]] = llvm.load %[[V1]]
// CHECK: llvm.call @pfrt_k_sgd(%[[OLD]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[VOUT]],
// CHECK-NOT: pfrt_k_copy
// CHECK: llvm.call @pfrt_k_relu(%[[OLD]],

#P = #pf.placement<"cpu", [0]>
!G = !pf.global<4x3xf32, #P, #pf.sbp<[B]>>
!S = !pf.global<f32, #P, #pf.sbp<[B]>>
module attributes {pf.world_size = 1 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
    pf.param @w : !G = #pf.init<ones>
    pf.param @v : !G = #pf.init<ones>
    func.func @train_step(%g: !G) -> !G {
      %w = pf.read_param @w : !G
      %lr = pf.scalar_input "lr" : !S
      %nw = pf.sgd_update %w, %g, %lr : (!G, !G, !S) -> !G
      pf.write_param %nw to @w : !G
      %v = pf.read_param @v : !G
      %nv = pf.sgd_update %v, %g, %lr : (!G, !G, !S) -> !G
      pf.write_param %nv to @v : !G
      %keep = pf.relu %v : (!G) -> !G
      return %keep : !G
    }
  }
}
