// RUN: pf-opt %s -split-input-file -pf-cpu-folds -convert-pf-to-cpu -verify-diagnostics

// No silent fallback: a value on "cuda" is not compiled as CPU code.
#D = #pf.placement<"cuda", [0]>
!G = !pf.global<4x3xf32, #D, #pf.sbp<[B]>>
module attributes {pf.world_size = 1 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
    // expected-error @below {{is placed on 'cuda', but convert-pf-to-cpu compiles CPU ranks: compile with pf-compile-gpu-pipeline}}
    pf.param @w : !G = #pf.init<ones>
    func.func @train_step() -> !G {
      %w = pf.read_param @w : !G
      %r = pf.relu %w : (!G) -> !G
      return %r : !G
    }
  }
}

// -----

// expected-error @below {{convert-pf-to-cpu expects per-rank modules: run pf-partition-ranks first}}
module {
  func.func @f() {
    return
  }
}

// -----

#P = #pf.placement<"cpu", [0]>
!G = !pf.global<4x3xf32, #P, #pf.sbp<[B]>>
module attributes {pf.world_size = 1 : i64} {
  // expected-error @below {{convert-pf-to-cpu expects exactly one step function of one block per rank, found 2 functions}}
  module @rank0 attributes {pf.rank = 0 : i64} {
    func.func @a() {
      return
    }
    func.func @b() {
      return
    }
  }
}

// -----

// An element type the CPU kernels do not take.
#P = #pf.placement<"cpu", [0]>
!H = !pf.global<4x3xf64, #P, #pf.sbp<[B]>>
module attributes {pf.world_size = 1 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
    // expected-error @below {{convert-pf-to-cpu supports f32, i64, i32, i1 (bool), bf16 and f16 tensors, got 'f64'}}
    func.func @train_step(%x: !H) -> !H {
      %r = pf.relu %x : (!H) -> !H
      return %r : !H
    }
  }
}

// -----

// bf16 and f16 are storage types: an op computing on them is refused,
// naming the pass that widens it to float32 (a pf.cast is not).
#P = #pf.placement<"cpu", [0]>
!H = !pf.global<4x3xf16, #P, #pf.sbp<[B]>>
!F = !pf.global<4x3xf32, #P, #pf.sbp<[B]>>
module attributes {pf.world_size = 1 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
    func.func @train_step(%x: !F) -> !H {
      %h = pf.cast %x : !F -> !H
      // expected-error @below {{'pf.relu' op computes on bf16/f16 values, which the rank lowering does not take: run pf-widen-low-precision first}}
      %r = pf.relu %h : (!H) -> !H
      return %r : !H
    }
  }
}

// -----

// A rank module cannot hold rank modules (which would it lower?).
#C = #pf.placement<"cpu", [0]>
// expected-error @below {{convert-pf-to-cpu: a rank module (pf.rank) holds rank modules}}
module attributes {pf.rank = 0 : i64, pf.world_size = 1 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
    func.func @train_step() -> !pf.global<4xf32, #C, #pf.sbp<[B]>> {
      %c = pf.constant dense<1.0> : tensor<4xf32> : !pf.global<4xf32, #C, #pf.sbp<[B]>>
      return %c : !pf.global<4xf32, #C, #pf.sbp<[B]>>
    }
  }
  func.func @train_step() -> !pf.global<4xf32, #C, #pf.sbp<[B]>> {
    %c = pf.constant dense<1.0> : tensor<4xf32> : !pf.global<4xf32, #C, #pf.sbp<[B]>>
    return %c : !pf.global<4xf32, #C, #pf.sbp<[B]>>
  }
}

// -----

// The transpose kernel moves 4-byte elements: a bool (or int64) transpose
// is refused where it is, not miscomputed.
#P = #pf.placement<"cpu", [0]>
!M = !pf.global<2x3xi1, #P, #pf.sbp<[B]>>
!T = !pf.global<3x2xi1, #P, #pf.sbp<[B]>>
module attributes {pf.world_size = 1 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
    func.func @train_step(%x: !M) -> !T {
      // expected-error @below {{convert-pf-to-cpu transposes tensors of 4-byte elements (f32, i32), got 'i1'}}
      // expected-error @below {{failed to legalize operation 'pf.transpose'}}
      %t = pf.transpose %x {perm = array<i64: 1, 0>} : (!M) -> !T
      return %t : !T
    }
  }
}
