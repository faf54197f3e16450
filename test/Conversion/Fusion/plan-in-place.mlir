// RUN: pf-opt %s -pf-plan-in-place | FileCheck %s
// RUN: pf-opt %s -pf-plan-in-place -pf-reset-folds | FileCheck %s --check-prefix=RESET

// An update stored to its own parameter is computed in place; a read of
// the parameter still used after the update copies the old value first
// (and the update still goes in place); an update whose result is read by
// something besides its write_param is not in place.
// CHECK-LABEL: func.func @train_step
// CHECK: pf.read_param @w :
// CHECK: pf.sgd_update {{.*}}{pf.in_place = ["w"]}
// CHECK: pf.read_param @v {pf.copy_read}
// CHECK: pf.sgd_update {{.*}}{pf.in_place = ["v"]}
// CHECK: pf.read_param @u :
// CHECK: %[[NU:.+]] = pf.sgd_update
// CHECK-NOT: pf.in_place
// CHECK: pf.write_param %[[NU]] to @u
// RESET-NOT: pf.in_place
// RESET-NOT: pf.copy_read

#P = #pf.placement<"cpu", [0]>
!G = !pf.global<4x3xf32, #P, #pf.sbp<[B]>>
!S = !pf.global<f32, #P, #pf.sbp<[B]>>
module attributes {pf.world_size = 1 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
    pf.param @w : !G = #pf.init<ones>
    pf.param @v : !G = #pf.init<ones>
    pf.param @u : !G = #pf.init<ones>
    func.func @train_step(%g: !G) -> (!G, !G) {
      %w = pf.read_param @w : !G
      %lr = pf.scalar_input "lr" : !S
      %nw = pf.sgd_update %w, %g, %lr : (!G, !G, !S) -> !G
      pf.write_param %nw to @w : !G
      %v = pf.read_param @v : !G
      %nv = pf.sgd_update %v, %g, %lr : (!G, !G, !S) -> !G
      pf.write_param %nv to @v : !G
      %keep = pf.relu %v : (!G) -> !G
      %u = pf.read_param @u : !G
      %nu = pf.sgd_update %u, %g, %lr : (!G, !G, !S) -> !G
      pf.write_param %nu to @u : !G
      %out = pf.relu %nu : (!G) -> !G
      return %keep, %out : !G, !G
    }
  }
}
