// RUN: pf-opt %s -pf-fuse-bias-relu | FileCheck %s

// A relu whose bias_add has no other reader is computed by the bias_add;
// one whose pre-activation is also read elsewhere is not.
// CHECK-LABEL: func.func @train_step
// CHECK: %[[S:.+]] = pf.bias_add
// CHECK-NEXT: pf.relu %[[S]] {pf.fold = "bias_relu"}
// CHECK-NEXT: %[[T:.+]] = pf.bias_add
// CHECK-NEXT: pf.relu %[[T]] :
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
