// RUN: pf-opt %s -pf-cpu-folds -convert-pf-to-cpu=outline-actions=false | FileCheck %s

// A bias_add read only by a relu is one pass into the relu's buffer; one
// whose pre-activation is also read elsewhere stays two kernels.
// CHECK-LABEL: llvm.func @pf_step
// CHECK: llvm.call @pfrt_k_bias_add_relu(
// CHECK-NOT: llvm.call @pfrt_k_relu(
// CHECK: llvm.call @pfrt_k_bias_add(
// CHECK: llvm.call @pfrt_k_relu(
#P = #pf.placement<"cpu", [0]>
!X = !pf.global<4x3xf32, #P, #pf.sbp<[B]>>
!Bi = !pf.global<3xf32, #P, #pf.sbp<[B]>>
module attributes {pf.world_size = 1 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
    pf.param @b : !Bi = #pf.init<ones>
    func.func @train_step(%x: !X) -> !X {
      %b = pf.read_param @b : !Bi
      %s = pf.bias_add %x, %b : (!X, !Bi) -> !X
      %r = pf.relu %s : (!X) -> !X
      %t = pf.bias_add %r, %b : (!X, !Bi) -> !X
      %u = pf.relu %t : (!X) -> !X
      %v = pf.add %t, %u : (!X, !X) -> !X
      return %v : !X
    }
  }
}
