// RUN: pf-opt %s -split-input-file -pf-verify-comm | FileCheck %s

// A two-stage pipeline, two micro-batches in 1F1B order: activations go
// forward, gradients come back; rank 0 sends both forwards before it waits
// for the first gradient. The IR is unchanged.
#P0 = #pf.placement<"cpu", [0]>
#P1 = #pf.placement<"cpu", [1]>
!A0 = !pf.global<4x8xf32, #P0, #pf.sbp<[B]>>
!A1 = !pf.global<4x8xf32, #P1, #pf.sbp<[B]>>
// CHECK-LABEL: module @rank0
// CHECK: pf.send %{{.*}} to 1 tag 0
// CHECK-NEXT: pf.send %{{.*}} to 1 tag 1
// CHECK-NEXT: pf.recv from 1 tag 2
// CHECK-NEXT: pf.recv from 1 tag 3
// CHECK-LABEL: module @rank1
module attributes {pf.world_size = 2 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
    func.func @train_step(%x0: !A0, %x1: !A0) {
      pf.send %x0 to 1 tag 0 : !A0
      pf.send %x1 to 1 tag 1 : !A0
      %g0 = pf.recv from 1 tag 2 : !A0
      %g1 = pf.recv from 1 tag 3 : !A0
      return
    }
  }
  module @rank1 attributes {pf.rank = 1 : i64} {
    func.func @train_step() {
      %a0 = pf.recv from 0 tag 0 : !A1
      pf.send %a0 to 0 tag 2 : !A1
      %a1 = pf.recv from 0 tag 1 : !A1
      pf.send %a1 to 0 tag 3 : !A1
      return
    }
  }
}

// -----

// Data parallel: every rank all-reduces its gradient, then the root
// broadcasts a scalar.
#P0 = #pf.placement<"cpu", [0]>
#P1 = #pf.placement<"cpu", [1]>
!P0 = !pf.global<16xf32, #P0, #pf.sbp<[P]>>
!B0 = !pf.global<16xf32, #P0, #pf.sbp<[B]>>
!P1 = !pf.global<16xf32, #P1, #pf.sbp<[P]>>
!B1 = !pf.global<16xf32, #P1, #pf.sbp<[B]>>
!S0 = !pf.global<f32, #P0, #pf.sbp<[B]>>
!S1 = !pf.global<f32, #P1, #pf.sbp<[B]>>
// CHECK-LABEL: module @rank0
// CHECK: pf.all_reduce
// CHECK: pf.broadcast
// CHECK-LABEL: module @rank1
module attributes {pf.world_size = 2 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
    func.func @train_step(%g: !P0, %s: !S0) -> !B0 {
      %r = pf.all_reduce %g {groups = [array<i64: 0, 1>]} : !P0 -> !B0
      %b = pf.broadcast %s {root = 0, ranks = array<i64: 0, 1>} : (!S0) -> !S0
      return %r : !B0
    }
  }
  module @rank1 attributes {pf.rank = 1 : i64} {
    func.func @train_step(%g: !P1) -> !B1 {
      %r = pf.all_reduce %g {groups = [array<i64: 0, 1>]} : !P1 -> !B1
      %b = pf.broadcast {root = 0, ranks = array<i64: 0, 1>} : () -> !S1
      return %r : !B1
    }
  }
}

// -----

// A 2x2 grid: ranks 2d+t; tensor groups {0,1}, {2,3} all-gather, data
// groups {0,2}, {1,3} all-reduce. Rank 3 all-reduces first: a different
// order over different groups is fine as long as nobody waits in a cycle.
#P = #pf.placement<"cpu", [0]>
!S = !pf.global<2x4xf32, #P, #pf.sbp<[B]>>
!G = !pf.global<4x4xf32, #P, #pf.sbp<[B]>>
!Q = !pf.global<4x4xf32, #P, #pf.sbp<[P]>>
// CHECK-LABEL: module @rank0
// CHECK: pf.all_gather
// CHECK: pf.all_reduce
// CHECK-LABEL: module @rank3
module attributes {pf.world_size = 4 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
    func.func @train_step(%x: !S, %p: !Q) {
      %g = pf.all_gather %x {axis = 0 : i64, groups = [array<i64: 0, 1>, array<i64: 2, 3>]} : !S -> !G
      %r = pf.all_reduce %p {groups = [array<i64: 0, 2>, array<i64: 1, 3>]} : !Q -> !G
      return
    }
  }
  module @rank1 attributes {pf.rank = 1 : i64} {
    func.func @train_step(%x: !S, %p: !Q) {
      %g = pf.all_gather %x {axis = 0 : i64, groups = [array<i64: 0, 1>, array<i64: 2, 3>]} : !S -> !G
      %r = pf.all_reduce %p {groups = [array<i64: 0, 2>, array<i64: 1, 3>]} : !Q -> !G
      return
    }
  }
  module @rank2 attributes {pf.rank = 2 : i64} {
    func.func @train_step(%x: !S, %p: !Q) {
      %g = pf.all_gather %x {axis = 0 : i64, groups = [array<i64: 0, 1>, array<i64: 2, 3>]} : !S -> !G
      %r = pf.all_reduce %p {groups = [array<i64: 0, 2>, array<i64: 1, 3>]} : !Q -> !G
      return
    }
  }
  module @rank3 attributes {pf.rank = 3 : i64} {
    func.func @train_step(%x: !S, %p: !Q) {
      %r = pf.all_reduce %p {groups = [array<i64: 0, 2>, array<i64: 1, 3>]} : !Q -> !G
      %g = pf.all_gather %x {axis = 0 : i64, groups = [array<i64: 0, 1>, array<i64: 2, 3>]} : !S -> !G
      return
    }
  }
}
