// RUN: pf-opt %s -pf-fuse-bias-relu -pf-group-elementwise | FileCheck %s
// RUN: pf-opt %s -pf-fuse-bias-relu -pf-group-elementwise=max-pointers=2 | FileCheck %s --check-prefix=SMALL

// Consecutive element-wise ops of one shape are one kernel; a matmul ends
// the run; a relu the bias_add before it computes joins none.
// CHECK-LABEL: func.func @train_step
// CHECK: pf.relu %arg0 {pf.kernel_group = 0 : i64}
// CHECK: pf.add {{.*}}{pf.kernel_group = 0 : i64}
// CHECK: pf.mul {{.*}}{pf.kernel_group = 0 : i64}
// CHECK: pf.matmul
// CHECK-NOT: pf.kernel_group
// CHECK: pf.relu {{.*}}{pf.kernel_group = 1 : i64}
// CHECK: pf.bias_add
// CHECK: pf.relu {{.*}}{pf.fold = "bias_relu"}
// At most two buffers a kernel: relu + add would take three (x, y, a).
// SMALL: pf.relu %arg0 {pf.kernel_group = 0 : i64}
// SMALL: pf.add {{.*}}{pf.kernel_group = 1 : i64}
// SMALL: pf.mul {{.*}}{pf.kernel_group = 2 : i64}
#P = #pf.placement<"cpu", [0]>
!X = !pf.global<4x4xf32, #P, #pf.sbp<[B]>>
!Bi = !pf.global<4xf32, #P, #pf.sbp<[B]>>
module attributes {pf.world_size = 1 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
    pf.param @b : !Bi = #pf.init<ones>
    func.func @train_step(%x: !X, %y: !X) -> (!X, !X) {
      %r = pf.relu %x : (!X) -> !X
      %a = pf.add %r, %y : (!X, !X) -> !X
      %m = pf.mul %a, %x : (!X, !X) -> !X
      %g = pf.matmul %m, %y : (!X, !X) -> !X
      %r2 = pf.relu %g : (!X) -> !X
      %b = pf.read_param @b : !Bi
      %s = pf.bias_add %r2, %b : (!X, !Bi) -> !X
      %r3 = pf.relu %s : (!X) -> !X
      return %m, %r3 : !X, !X
    }
  }
}
