// RUN: pf-opt %s -split-input-file -pf-cpu-folds -convert-pf-to-cpu=outline-actions=false | FileCheck %s
// RUN: pf-opt %s -split-input-file -pf-load-inputs-by-parts | FileCheck %s --check-prefix=FOLD

// pf-load-inputs-by-parts marks the argument (what the lowering reads); an
// input also read whole is not.
// FOLD: func.func @train_step(%arg0: {{.*}} {pf.input = 0 : i64, pf.load_by_parts})
// FOLD: func.func @train_step(%arg0: {{.*}} {pf.input = 0 : i64})

// An input read only through micro-batch slices is loaded one micro-batch
// at a time where each slice is taken, into the slice's own buffer: no
// whole-input load, and micro-batch 1 takes micro-batch 0's block once its
// last reader has run (three 64-byte blocks live at most: %x0 or %x1, %a0,
// %a1; with the whole 96-byte input resident it would be more).
// CHECK-LABEL: module @rank0
// CHECK: input_bytes = 0 : i64
// CHECK: step_peak_bytes = 192 : i64
// CHECK-LABEL: llvm.func @pf_step
// CHECK-NOT: pfrt_load_input_boxes
// CHECK: %[[O0:.+]] = llvm.mlir.constant(0 : i64)
// CHECK: %[[X0:.+]] = llvm.call @pfrt_arena_at(%[[O0]],
// CHECK: llvm.call @pfrt_load_input_part(%{{.+}}, %[[X0]],
// CHECK: llvm.call @pfrt_k_relu(%[[X0]],
// CHECK: %[[O1:.+]] = llvm.mlir.constant(0 : i64)
// CHECK: %[[X1:.+]] = llvm.call @pfrt_arena_at(%[[O1]],
// CHECK: llvm.call @pfrt_load_input_part(%{{.+}}, %[[X1]],
// CHECK: llvm.call @pfrt_k_relu(%[[X1]],

#P = #pf.placement<"cpu", [0]>
!X = !pf.global<8x3xf32, #P, #pf.sbp<[B]>>
!M = !pf.global<4x3xf32, #P, #pf.sbp<[B]>>
module attributes {pf.world_size = 1 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
    func.func @train_step(%x: !X {pf.input = 0 : i64}) -> !M {
      %x0 = pf.microbatch %x {count = 2 : i64, index = 0 : i64} : !X -> !M
      %a0 = pf.relu %x0 : (!M) -> !M
      %x1 = pf.microbatch %x {count = 2 : i64, index = 1 : i64} : !X -> !M
      %a1 = pf.relu %x1 : (!M) -> !M
      %s = pf.add %a0, %a1 : (!M, !M) -> !M
      return %s : !M
    }
  }
}

// -----

// An input also read whole is loaded whole, once, and stays resident.
// CHECK-LABEL: llvm.func @pf_step
// CHECK: llvm.call @pfrt_load_input_boxes(
// CHECK-NOT: pfrt_load_input_part

#P = #pf.placement<"cpu", [0]>
!X = !pf.global<8x3xf32, #P, #pf.sbp<[B]>>
!M = !pf.global<4x3xf32, #P, #pf.sbp<[B]>>
module attributes {pf.world_size = 1 : i64} {
  module @rank0 attributes {pf.rank = 0 : i64} {
    func.func @train_step(%x: !X {pf.input = 0 : i64}) -> !X {
      %x0 = pf.microbatch %x {count = 2 : i64, index = 0 : i64} : !X -> !M
      %r = pf.relu %x : (!X) -> !X
      return %r : !X
    }
  }
}
