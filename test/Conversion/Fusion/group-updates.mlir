// RUN: pf-opt %s -pf-plan-in-place -pf-group-updates | FileCheck %s
// RUN: pf-opt %s -pf-group-updates | FileCheck %s --check-prefix=NOTINPLACE

// In-place SGD updates of one lr are one multi-tensor call (b and c, with a
// read of a parameter no member writes between them). a's update is not in
// place (@a is read again after it), so it joins no run; d's has another
// lr, and a run needs two.
// CHECK-LABEL: func.func @train_step
// CHECK: pf.sgd_update %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}} :
// CHECK: pf.sgd_update {{.*}}{pf.in_place = ["b"], pf.update_group = 0 : i64}
// CHECK: pf.read_param @a
// CHECK: pf.sgd_update {{.*}}{pf.in_place = ["c"], pf.update_group = 0 : i64}
// CHECK: pf.sgd_update {{.*}}{pf.in_place = ["d"]} :
// Without in-place results there is nothing to group.
// NOTINPLACE-NOT: pf.update_group
#P = #pf.placement<"cpu", [0]>
!G = !pf.global<4x3xf32, #P, #pf.sbp<[B]>>
!S = !pf.global<f32, #P, #pf.sbp<[B]>>
module attributes {pf.world_size = 1 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
    pf.param @a : !G = #pf.init<ones>
    pf.param @b : !G = #pf.init<ones>
    pf.param @c : !G = #pf.init<ones>
    pf.param @d : !G = #pf.init<ones>
    func.func @train_step(%g: !G) -> !G {
      %lr = pf.scalar_input "lr" : !S
      %a = pf.read_param @a : !G
      %b = pf.read_param @b : !G
      %na = pf.sgd_update %a, %g, %lr : (!G, !G, !S) -> !G
      pf.write_param %na to @a : !G
      %nb = pf.sgd_update %b, %g, %lr : (!G, !G, !S) -> !G
      pf.write_param %nb to @b : !G
      %a2 = pf.read_param @a : !G
      %c = pf.read_param @c : !G
      %nc = pf.sgd_update %c, %a2, %lr : (!G, !G, !S) -> !G
      pf.write_param %nc to @c : !G
      %lr2 = pf.scalar_input "lr2" : !S
      %d = pf.read_param @d : !G
      %nd = pf.sgd_update %d, %g, %lr2 : (!G, !G, !S) -> !G
      pf.write_param %nd to @d : !G
      return %g : !G
    }
  }
}
