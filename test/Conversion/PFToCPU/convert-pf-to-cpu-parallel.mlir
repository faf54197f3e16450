// The rank modules are lowered in parallel; the diagnostics are those of a
// loop in rank order that stops at the first failure: rank 1's error only,
// not rank 2's, with threads or without.
// RUN: pf-opt %s -split-input-file -pf-cpu-folds -convert-pf-to-cpu -verify-diagnostics
// RUN: pf-opt %s -split-input-file -pf-cpu-folds -convert-pf-to-cpu -verify-diagnostics --mlir-disable-threading

// The lowered module does not depend on the threads either.
// RUN: pf-opt %s -split-input-file -pf-cpu-folds -convert-pf-to-cpu -verify-diagnostics > %t.threads
// RUN: pf-opt %s -split-input-file -pf-cpu-folds -convert-pf-to-cpu -verify-diagnostics --mlir-disable-threading > %t.serial
// RUN: diff %t.threads %t.serial
// RUN: FileCheck %s < %t.threads

#C = #pf.placement<"cpu", [0, 1, 2]>
#D = #pf.placement<"cuda", [0]>
!H = !pf.global<4x3xf32, #C, #pf.sbp<[B]>>
!G = !pf.global<4x3xf32, #D, #pf.sbp<[B]>>
module attributes {pf.world_size = 3 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
    pf.param @w : !H = #pf.init<ones>
    func.func @train_step() -> !H {
      %w = pf.read_param @w : !H
      %r = pf.relu %w : (!H) -> !H
      return %r : !H
    }
  }
  module @rank1 attributes {pf.rank = 1 : i64} {
    // expected-error @below {{is placed on 'cuda', but convert-pf-to-cpu compiles CPU ranks}}
    pf.param @w : !G = #pf.init<ones>
    func.func @train_step() -> !G {
      %w = pf.read_param @w : !G
      %r = pf.relu %w : (!G) -> !G
      return %r : !G
    }
  }
  module @rank2 attributes {pf.rank = 2 : i64} {
    pf.param @v : !G = #pf.init<ones>
    func.func @train_step() -> !G {
      %w = pf.read_param @v : !G
      %r = pf.activation %w {kind = "tanh"} : (!G) -> !G
      return %r : !G
    }
  }
}

// -----

// Every rank lowers: four rank modules, each its own pf_step.
#C = #pf.placement<"cpu", [0, 1, 2, 3]>
!H = !pf.global<4x3xf32, #C, #pf.sbp<[B]>>
module attributes {pf.world_size = 4 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
    pf.param @w : !H = #pf.init<ones>
    func.func @train_step() -> !H {
      %w = pf.read_param @w : !H
      %r = pf.relu %w : (!H) -> !H
      return %r : !H
    }
  }
  module @rank1 attributes {pf.rank = 1 : i64} {
    pf.param @w : !H = #pf.init<ones>
    func.func @train_step() -> !H {
      %w = pf.read_param @w : !H
      %r = pf.activation %w {kind = "tanh"} : (!H) -> !H
      return %r : !H
    }
  }
  module @rank2 attributes {pf.rank = 2 : i64} {
    pf.param @w : !H = #pf.init<ones>
    func.func @train_step() -> !H {
      %w = pf.read_param @w : !H
      %r = pf.activation %w {kind = "sigmoid"} : (!H) -> !H
      return %r : !H
    }
  }
  module @rank3 attributes {pf.rank = 3 : i64} {
    pf.param @w : !H = #pf.init<ones>
    func.func @train_step() -> !H {
      %w = pf.read_param @w : !H
      %r = pf.relu %w : (!H) -> !H
      return %r : !H
    }
  }
}
// Every rank module lowered, each with its own kernel.
// CHECK-LABEL: module @rank0
// CHECK: llvm.call @pfrt_k_relu(
// CHECK: llvm.func @pf_step
// CHECK-LABEL: module @rank1
// CHECK: llvm.call @pfrt_k_activation(
// CHECK: llvm.func @pf_step
// CHECK-LABEL: module @rank2
// CHECK: llvm.call @pfrt_k_activation(
// CHECK: llvm.func @pf_step
// CHECK-LABEL: module @rank3
// CHECK: llvm.call @pfrt_k_relu(
// CHECK: llvm.func @pf_step
