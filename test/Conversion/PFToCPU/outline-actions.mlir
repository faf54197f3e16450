// RUN: pf-opt %s -pf-cpu-folds -convert-pf-to-cpu | FileCheck %s

// The step becomes a loop over its actions. The two micro-batches' forward
// actions differ only in constants (the micro-batch's part and its buffer
// offsets): one function serves both, reading those constants from a
// table indexed by its instance argument; the packing action is another.
// CHECK-LABEL: module @rank0
// CHECK-SAME: pfrt.actions = {actions = 3 : i64, functions = 2 : i64}
// CHECK-DAG: llvm.mlir.global private constant @pf_action0_constants(dense<[{{.*}}]> : tensor<{{[0-9]+}}xi64>)
// CHECK-DAG: llvm.mlir.global private constant @pf_step_action_function(dense<[0, 0, 1]> : tensor<3xi32>)
// CHECK-DAG: llvm.mlir.global private constant @pf_step_action_instance(dense<[0, 1, 0]> : tensor<3xi64>)
// CHECK-LABEL: llvm.func internal @pf_action0(
// CHECK-SAME: %[[INST:.+]]: i64)
// CHECK: llvm.mul %[[INST]],
// CHECK: llvm.mlir.addressof @pf_action0_constants
// CHECK: llvm.call @pfrt_load_input_part(
// CHECK: llvm.call @pfrt_k_relu(
// CHECK-NOT: llvm.call @pfrt_k_relu(
// CHECK: llvm.return
// CHECK-LABEL: llvm.func internal @pf_action1(
// CHECK: llvm.call @pfrt_k_copy(
// CHECK-LABEL: llvm.func @pf_step(
// CHECK: llvm.icmp "slt"
// CHECK: %[[FN:.+]] = llvm.load %{{.+}} : !llvm.ptr -> !llvm.ptr
// CHECK: llvm.call %[[FN]](%{{.+}}) : !llvm.ptr, (i64) -> ()
// CHECK-NOT: pfrt_k_relu

#P = #pf.placement<"cpu", [0]>
!X = !pf.global<8x3xf32, #P, #pf.sbp<[B]>>
!M = !pf.global<4x3xf32, #P, #pf.sbp<[B]>>
!L = !pf.global<2xf32, #P, #pf.sbp<[B]>>
!S = !pf.global<f32, #P, #pf.sbp<[B]>>
module attributes {pf.world_size = 1 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
    func.func @train_step(%x: !X {pf.input = 0 : i64}) -> !L {
      %x0 = pf.microbatch %x {count = 2 : i64, index = 0 : i64, pf.microbatch = 0 : i64, pf.stage = 0 : i64} : !X -> !M
      %a0 = pf.relu %x0 {pf.microbatch = 0 : i64, pf.stage = 0 : i64} : (!M) -> !M
      %s0 = pf.reduce_sum %a0 {axes = array<i64: 0, 1>, pf.microbatch = 0 : i64, pf.stage = 0 : i64} : (!M) -> !S
      %x1 = pf.microbatch %x {count = 2 : i64, index = 1 : i64, pf.microbatch = 1 : i64, pf.stage = 0 : i64} : !X -> !M
      %a1 = pf.relu %x1 {pf.microbatch = 1 : i64, pf.stage = 0 : i64} : (!M) -> !M
      %s1 = pf.reduce_sum %a1 {axes = array<i64: 0, 1>, pf.microbatch = 1 : i64, pf.stage = 0 : i64} : (!M) -> !S
      %l = pf.pack %s0, %s1 {pf.stage = 0 : i64, pf.phase = "update"} : (!S, !S) -> !L
      return %l : !L
    }
  }
}
