// RUN: pf-opt %s -split-input-file -pf-verify-comm -verify-diagnostics

// A wrong tag: rank 1 waits for tag 2, rank 0 sends tag 1.
#P0 = #pf.placement<"cpu", [0]>
#P1 = #pf.placement<"cpu", [1]>
!T0 = !pf.global<4xf32, #P0, #pf.sbp<[B]>>
!T1 = !pf.global<4xf32, #P1, #pf.sbp<[B]>>
module attributes {pf.world_size = 2 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
    func.func @train_step(%x: !T0) {
      // expected-error @+1 {{'pf.send' op on rank 0 sends to rank 1 with tag 1 but rank 1 has no matching pf.recv}}
      pf.send %x to 1 tag 1 : !T0
      return
    }
  }
  module @rank1 attributes {pf.rank = 1 : i64} {
    func.func @train_step() {
      // expected-note @+1 {{rank 1 receives from rank 0 with tag 2 here}}
      %y = pf.recv from 0 tag 2 : !T1
      return
    }
  }
}

// -----

// Two members of a group enter its collectives in a different order.
#P = #pf.placement<"cpu", [0]>
!S = !pf.global<2xf32, #P, #pf.sbp<[B]>>
!G = !pf.global<4xf32, #P, #pf.sbp<[B]>>
!Q = !pf.global<4xf32, #P, #pf.sbp<[P]>>
module attributes {pf.world_size = 2 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
    func.func @train_step(%x: !S, %p: !Q) {
      // expected-note @+1 {{rank 0's collective #0 on group [0, 1]}}
      %r = pf.all_reduce %p {groups = [array<i64: 0, 1>]} : !Q -> !G
      %g = pf.all_gather %x {axis = 0 : i64, groups = [array<i64: 0, 1>]} : !S -> !G
      return
    }
  }
  module @rank1 attributes {pf.rank = 1 : i64} {
    func.func @train_step(%x: !S, %p: !Q) {
      // expected-error @+1 {{'pf.all_gather' op on rank 1 enters 'pf.all_gather' of 2 x f32 as collective #0 on group [0, 1], where rank 0 enters 'pf.all_reduce' of 4 x f32}}
      %g = pf.all_gather %x {axis = 0 : i64, groups = [array<i64: 0, 1>]} : !S -> !G
      %r = pf.all_reduce %p {groups = [array<i64: 0, 1>]} : !Q -> !G
      return
    }
  }
}

// -----

// A size mismatch: rank 0 sends 4 floats, rank 1 expects 8.
#P0 = #pf.placement<"cpu", [0]>
#P1 = #pf.placement<"cpu", [1]>
!T0 = !pf.global<4xf32, #P0, #pf.sbp<[B]>>
!T1 = !pf.global<4xf32, #P1, #pf.sbp<[B]>>
!U0 = !pf.global<8xf32, #P0, #pf.sbp<[B]>>
!U1 = !pf.global<8xf32, #P1, #pf.sbp<[B]>>
module attributes {pf.world_size = 2 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
    func.func @train_step(%x: !T0) {
      // expected-note @+1 {{rank 0's matching send}}
      pf.send %x to 1 tag 0 : !T0
      return
    }
  }
  module @rank1 attributes {pf.rank = 1 : i64} {
    func.func @train_step() {
      // expected-error @+1 {{'pf.recv' op on rank 1 receives 32 bytes (8 x f32) from rank 0 tag 0, but rank 0 sends 16 bytes (4 x f32)}}
      %y = pf.recv from 0 tag 0 : !U1
      return
    }
  }
}

// -----

// A missing receive: rank 1 receives the first of two sends only.
#P0 = #pf.placement<"cpu", [0]>
#P1 = #pf.placement<"cpu", [1]>
!T0 = !pf.global<4xf32, #P0, #pf.sbp<[B]>>
!T1 = !pf.global<4xf32, #P1, #pf.sbp<[B]>>
module attributes {pf.world_size = 2 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
    func.func @train_step(%x: !T0) {
      pf.send %x to 1 tag 0 : !T0
      // expected-error @+1 {{'pf.send' op on rank 0 sends to rank 1 with tag 0 but rank 1 has no matching pf.recv}}
      pf.send %x to 1 tag 0 : !T0
      return
    }
  }
  module @rank1 attributes {pf.rank = 1 : i64} {
    func.func @train_step() {
      %y = pf.recv from 0 tag 0 : !T1
      return
    }
  }
}

// -----

// A receive without a send.
#P0 = #pf.placement<"cpu", [0]>
#P1 = #pf.placement<"cpu", [1]>
!T0 = !pf.global<4xf32, #P0, #pf.sbp<[B]>>
!T1 = !pf.global<4xf32, #P1, #pf.sbp<[B]>>
module attributes {pf.world_size = 2 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
    func.func @train_step() {
      // expected-error @+1 {{'pf.recv' op on rank 0 receives from rank 1 with tag 5 but rank 1 sends no matching pf.send}}
      %y = pf.recv from 1 tag 5 : !T0
      return
    }
  }
  module @rank1 attributes {pf.rank = 1 : i64} {
    func.func @train_step() {
      return
    }
  }
}

// -----

// A cycle of receives: each rank waits for the other before it sends.
#P0 = #pf.placement<"cpu", [0]>
#P1 = #pf.placement<"cpu", [1]>
!T0 = !pf.global<4xf32, #P0, #pf.sbp<[B]>>
!T1 = !pf.global<4xf32, #P1, #pf.sbp<[B]>>
module attributes {pf.world_size = 2 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
    func.func @train_step(%x: !T0) {
      // expected-error @+1 {{'pf.recv' op deadlock: rank 0 waits here for rank 1, which is blocked at pf.recv}}
      %y = pf.recv from 1 tag 0 : !T0
      pf.send %x to 1 tag 1 : !T0
      return
    }
  }
  module @rank1 attributes {pf.rank = 1 : i64} {
    func.func @train_step(%x: !T1) {
      // expected-note @+1 {{rank 1 is blocked here}}
      %y = pf.recv from 0 tag 1 : !T1
      pf.send %x to 0 tag 0 : !T1
      return
    }
  }
}

// -----

// The group lists differ between two members of the same group.
#P = #pf.placement<"cpu", [0]>
!Q = !pf.global<4xf32, #P, #pf.sbp<[P]>>
!B = !pf.global<4xf32, #P, #pf.sbp<[B]>>
module attributes {pf.world_size = 4 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
    func.func @train_step(%p: !Q) {
      // expected-note @+1 {{rank 0's collective}}
      %r = pf.all_reduce %p {groups = [array<i64: 0, 1>, array<i64: 2, 3>]} : !Q -> !B
      return
    }
  }
  module @rank1 attributes {pf.rank = 1 : i64} {
    func.func @train_step(%p: !Q) {
      // expected-error @+1 {{'pf.all_reduce' op on rank 1 has groups [array<i64: 0, 1>] but rank 0 enters the same collective with groups [array<i64: 0, 1>, array<i64: 2, 3>]}}
      %r = pf.all_reduce %p {groups = [array<i64: 0, 1>]} : !Q -> !B
      return
    }
  }
  module @rank2 attributes {pf.rank = 2 : i64} {
    func.func @train_step(%p: !Q) {
      %r = pf.all_reduce %p {groups = [array<i64: 0, 1>, array<i64: 2, 3>]} : !Q -> !B
      return
    }
  }
  module @rank3 attributes {pf.rank = 3 : i64} {
    func.func @train_step(%p: !Q) {
      %r = pf.all_reduce %p {groups = [array<i64: 0, 1>, array<i64: 2, 3>]} : !Q -> !B
      return
    }
  }
}

// -----

// Members disagree on the group itself: rank 0 all-reduces over {0, 1},
// rank 1 over {0, 1, 2}.
#P = #pf.placement<"cpu", [0]>
!Q = !pf.global<4xf32, #P, #pf.sbp<[P]>>
!B = !pf.global<4xf32, #P, #pf.sbp<[B]>>
module attributes {pf.world_size = 3 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
    func.func @train_step(%p: !Q) {
      // expected-error @+1 {{'pf.all_reduce' op on rank 0 runs over group [0, 1] but rank 1 enters a collective over group [0, 1, 2] instead}}
      %r = pf.all_reduce %p {groups = [array<i64: 0, 1>, array<i64: 2>]} : !Q -> !B
      return
    }
  }
  module @rank1 attributes {pf.rank = 1 : i64} {
    func.func @train_step(%p: !Q) {
      // expected-note @+1 {{rank 1's collective}}
      %r = pf.all_reduce %p {groups = [array<i64: 0, 1, 2>]} : !Q -> !B
      return
    }
  }
  module @rank2 attributes {pf.rank = 2 : i64} {
    func.func @train_step(%p: !Q) {
      %r = pf.all_reduce %p {groups = [array<i64: 0, 1, 2>]} : !Q -> !B
      return
    }
  }
}

// -----

// A member never enters: rank 1 has no all-reduce.
#P = #pf.placement<"cpu", [0]>
!Q = !pf.global<4xf32, #P, #pf.sbp<[P]>>
!B = !pf.global<4xf32, #P, #pf.sbp<[B]>>
module attributes {pf.world_size = 2 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
    func.func @train_step(%p: !Q) {
      // expected-error @+1 {{'pf.all_reduce' op on rank 0 waits for rank 1 of group [0, 1], which finishes its step without entering it}}
      %r = pf.all_reduce %p {groups = [array<i64: 0, 1>]} : !Q -> !B
      return
    }
  }
  module @rank1 attributes {pf.rank = 1 : i64} {
    func.func @train_step() {
      // expected-note @+1 {{rank 1 finishes here}}
      return
    }
  }
}

// -----

// An all-gather whose result is not the group's blocks.
#P = #pf.placement<"cpu", [0]>
!S = !pf.global<2xf32, #P, #pf.sbp<[B]>>
!G = !pf.global<6xf32, #P, #pf.sbp<[B]>>
module attributes {pf.world_size = 2 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
    func.func @train_step(%x: !S) {
      // expected-error @+1 {{'pf.all_gather' op on rank 0 has 2 input and 6 result elements, which a group of 2 ranks does not allow}}
      %g = pf.all_gather %x {axis = 0 : i64, groups = [array<i64: 0, 1>]} : !S -> !G
      return
    }
  }
  module @rank1 attributes {pf.rank = 1 : i64} {
    func.func @train_step(%x: !S) {
      %g = pf.all_gather %x {axis = 0 : i64, groups = [array<i64: 0, 1>]} : !S -> !G
      return
    }
  }
}

// -----

// A collective whose groups leave out the rank that runs it.
#P = #pf.placement<"cpu", [0]>
!Q = !pf.global<4xf32, #P, #pf.sbp<[P]>>
!B = !pf.global<4xf32, #P, #pf.sbp<[B]>>
module attributes {pf.world_size = 2 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
    func.func @train_step(%p: !Q) {
      // expected-error @+1 {{'pf.all_reduce' op on rank 0 is in none of its groups [array<i64: 1>]}}
      %r = pf.all_reduce %p {groups = [array<i64: 1>]} : !Q -> !B
      return
    }
  }
}

// -----

// A rank module with two step functions.
#P = #pf.placement<"cpu", [0]>
!T = !pf.global<4xf32, #P, #pf.sbp<[B]>>
module attributes {pf.world_size = 1 : i64} {
  // expected-error @+1 {{'builtin.module' op pf-verify-comm expects one step function of one block on rank 0, found 2 functions}}
  module @rank0 attributes {pf.rank = 0 : i64} {
    func.func @a(%x: !T) {
      return
    }
    func.func @b(%x: !T) {
      return
    }
  }
}

// -----

// A chain through a third rank: rank 0 waits for rank 2's send, rank 2
// for rank 1's, rank 1 for rank 0's, which comes only after.
#P0 = #pf.placement<"cpu", [0]>
#P1 = #pf.placement<"cpu", [1]>
#P2 = #pf.placement<"cpu", [2]>
!T0 = !pf.global<4xf32, #P0, #pf.sbp<[B]>>
!T1 = !pf.global<4xf32, #P1, #pf.sbp<[B]>>
!T2 = !pf.global<4xf32, #P2, #pf.sbp<[B]>>
module attributes {pf.world_size = 3 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
    func.func @train_step(%x: !T0) {
      // expected-error @+1 {{deadlock: rank 0 waits here for rank 2, which is blocked at pf.recv}}
      %y = pf.recv from 2 tag 0 : !T0
      pf.send %x to 1 tag 0 : !T0
      return
    }
  }
  module @rank1 attributes {pf.rank = 1 : i64} {
    func.func @train_step(%x: !T1) {
      %y = pf.recv from 0 tag 0 : !T1
      pf.send %x to 2 tag 0 : !T1
      return
    }
  }
  module @rank2 attributes {pf.rank = 2 : i64} {
    func.func @train_step(%x: !T2) {
      // expected-note @+1 {{rank 2 is blocked here}}
      %y = pf.recv from 1 tag 0 : !T2
      pf.send %x to 0 tag 0 : !T2
      return
    }
  }
}
