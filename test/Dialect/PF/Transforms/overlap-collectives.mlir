// RUN: pf-opt %s -split-input-file -pf-overlap-collectives | FileCheck %s
// RUN: pf-opt %s -split-input-file -pf-overlap-collectives=slots=1 | FileCheck %s --check-prefix=ONE
// RUN: not pf-opt %s -split-input-file -pf-overlap-collectives=slots=65 2>&1 | FileCheck %s --check-prefix=BAD

// A tensor-parallel layer's backward (Megatron-LM): the input gradient's
// partial sum dx is all-reduced, the weight gradient dw does not need it.
// The all-reduce starts right after dx's GEMM, dw's GEMM runs before the
// wait, and the wait is right before the first user of the sum.
#P = #pf.placement<"cuda", [0]>
!X = !pf.global<8x16xf32, #P, #pf.sbp<[B]>>
!W = !pf.global<16x16xf32, #P, #pf.sbp<[B]>>
// CHECK-LABEL: func.func @tp_backward
// CHECK: %[[DX:.*]] = pf.matmul %arg0, %arg1
// CHECK-NEXT: %[[S:.*]] = pf.all_reduce %[[DX]] {groups = [array<i64: 0, 1>], pf.async_slot = 0 : i64, pf.phase = "backward_input"}
// CHECK-NEXT: %[[DW:.*]] = pf.matmul %arg2, %arg0 {pf.phase = "backward_weight", transpose_a}
// CHECK-NEXT: %[[R:.*]] = pf.reshape %[[DW]]
// CHECK-NEXT: %[[SUM:.*]] = pf.all_reduce_wait %[[S]], %[[DX]] {pf.phase = "backward_input", slot = 0 : i64}
// CHECK-NEXT: pf.add %[[SUM]], %arg2
// ONE-LABEL: func.func @tp_backward
// ONE: pf.all_reduce {{.*}}pf.async_slot = 0 : i64
// ONE: pf.all_reduce_wait
module @rank0 attributes {pf.rank = 0 : i64} {
func.func @tp_backward(%dy: !X, %w: !W, %x: !X) -> (!X, !W) {
  %dx = pf.matmul %dy, %w {pf.phase = "backward_input"} : (!X, !W) -> !X
  %dw = pf.matmul %x, %dy {pf.phase = "backward_weight", transpose_a} : (!X, !X) -> !W
  %r = pf.reshape %dw : !W -> !W
  %s = pf.all_reduce %dx {groups = [array<i64: 0, 1>], pf.phase = "backward_input"} : !X -> !X
  %u = pf.add %s, %x : (!X, !X) -> !X
  return %u, %r : !X, !W
}
}

// -----

// The sum used at once with nothing independent to move (the ops after it
// all depend on it): it stays blocking.
#P = #pf.placement<"cuda", [0]>
!X = !pf.global<8x16xf32, #P, #pf.sbp<[B]>>
// CHECK-LABEL: func.func @used_at_once
// CHECK-NOT: pf.async_slot
// CHECK-NOT: pf.all_reduce_wait
// CHECK: return
module @rank0 attributes {pf.rank = 0 : i64} {
func.func @used_at_once(%a: !X) -> !X {
  %e = pf.mul %a, %a : (!X, !X) -> !X
  %s = pf.all_reduce %e {groups = [array<i64: 0, 1>]} : !X -> !X
  %u = pf.add %s, %a : (!X, !X) -> !X
  %v = pf.mul %u, %u : (!X, !X) -> !X
  return %v : !X
}
}

// -----

// Used at once, but a GEMM after its user does not depend on it: that
// GEMM (and the view it reads) moves up between the start and the wait,
// the ops depending on the sum stay after it, in order. Only one GEMM
// moves: the second stays where it was.
#P = #pf.placement<"cuda", [0]>
!X = !pf.global<8x16xf32, #P, #pf.sbp<[B]>>
!W = !pf.global<16x16xf32, #P, #pf.sbp<[B]>>
// CHECK-LABEL: func.func @hoist
// CHECK: %[[S:.*]] = pf.all_reduce %arg0 {groups = [array<i64: 0, 1>], pf.async_slot = 0 : i64}
// CHECK-NEXT: %[[V:.*]] = pf.reshape %arg1
// CHECK-NEXT: %[[G:.*]] = pf.matmul %[[V]], %arg2
// CHECK-NEXT: %[[SUM:.*]] = pf.all_reduce_wait %[[S]], %arg0 {slot = 0 : i64}
// CHECK-NEXT: %[[U:.*]] = pf.add %[[SUM]], %arg0
// CHECK-NEXT: pf.mul %[[U]], %[[U]]
// CHECK-NEXT: pf.matmul %[[G]], %arg2
module @rank0 attributes {pf.rank = 0 : i64} {
func.func @hoist(%a: !X, %b: !X, %w: !W) -> (!X, !X, !X) {
  %s = pf.all_reduce %a {groups = [array<i64: 0, 1>]} : !X -> !X
  %u = pf.add %s, %a : (!X, !X) -> !X
  %v = pf.reshape %b : !X -> !X
  %m = pf.mul %u, %u : (!X, !X) -> !X
  %g = pf.matmul %v, %w : (!X, !W) -> !X
  %h = pf.matmul %g, %w : (!X, !W) -> !X
  return %m, %g, %h : !X, !X, !X
}
}

// -----

// Side effects: a write_param after the user is never moved, and nothing
// crosses it (the GEMM after it stays), so this all-reduce stays blocking.
#P = #pf.placement<"cuda", [0]>
!X = !pf.global<8x16xf32, #P, #pf.sbp<[B]>>
!W = !pf.global<16x16xf32, #P, #pf.sbp<[B]>>
// CHECK-LABEL: func.func @side_effects
// CHECK-NOT: pf.async_slot
// CHECK: pf.all_reduce %arg0
// CHECK-NEXT: pf.add
// CHECK-NEXT: pf.write_param
// CHECK-NEXT: pf.matmul
module @rank0 attributes {pf.rank = 0 : i64} {
pf.param @p : !X = #pf.init<zeros>
func.func @side_effects(%a: !X, %b: !X, %w: !W) -> (!X, !X) {
  %s = pf.all_reduce %a {groups = [array<i64: 0, 1>]} : !X -> !X
  %u = pf.add %s, %a : (!X, !X) -> !X
  pf.write_param %b to @p : !X
  %g = pf.matmul %b, %w : (!X, !W) -> !X
  return %u, %g : !X, !X
}
}

// -----

// Three collectives keep their order. The all-reduce starts at the top
// (its input is an argument) and is waited for before the all-gather (the
// next communicating op), though its user is later: both GEMMs run while
// it travels. The all-gather's user comes right after it and what follows
// depends on it or communicates: it stays blocking. The reduce-scatter's
// start moves up above the GEMM that does not need it, but not above the
// all-gather; its wait is at the return.
#P = #pf.placement<"cuda", [0]>
!X = !pf.global<8x16xf32, #P, #pf.sbp<[B]>>
!H = !pf.global<4x16xf32, #P, #pf.sbp<[B]>>
!W = !pf.global<16x16xf32, #P, #pf.sbp<[B]>>
// CHECK-LABEL: func.func @order
// CHECK: %[[A:.*]] = pf.all_reduce %arg0 {groups = [array<i64: 0, 1>], pf.async_slot = 0 : i64}
// CHECK-NEXT: %[[M1:.*]] = pf.matmul %arg1, %arg2
// CHECK-NEXT: %[[M2:.*]] = pf.matmul %[[M1]], %arg2
// CHECK-NEXT: %[[AW:.*]] = pf.all_reduce_wait %[[A]], %arg0 {slot = 0 : i64}
// CHECK-NEXT: %[[G:.*]] = pf.all_gather %arg3 {axis = 0 : i64, groups = [array<i64: 0, 1>]} :
// CHECK-NEXT: %[[RS:.*]] = pf.reduce_scatter %[[M2]] {axis = 0 : i64, groups = [array<i64: 0, 1>], pf.async_slot = 0 : i64}
// CHECK-NEXT: %[[M3:.*]] = pf.matmul %[[G]], %arg2
// CHECK-NEXT: %[[U:.*]] = pf.add %[[AW]], %[[M3]]
// CHECK-NEXT: %[[RW:.*]] = pf.all_reduce_wait %[[RS]], %[[M2]] {slot = 0 : i64}
// CHECK-NEXT: return %[[U]], %[[RW]]
module @rank0 attributes {pf.rank = 0 : i64} {
func.func @order(%a: !X, %b: !X, %w: !W, %h: !H) -> (!X, !H) {
  %m1 = pf.matmul %b, %w : (!X, !W) -> !X
  %s = pf.all_reduce %a {groups = [array<i64: 0, 1>]} : !X -> !X
  %m2 = pf.matmul %m1, %w : (!X, !W) -> !X
  %g = pf.all_gather %h {axis = 0 : i64, groups = [array<i64: 0, 1>]} : !H -> !X
  %m3 = pf.matmul %g, %w : (!X, !W) -> !X
  %rs = pf.reduce_scatter %m2 {axis = 0 : i64, groups = [array<i64: 0, 1>]} : !X -> !H
  %u = pf.add %s, %m3 : (!X, !X) -> !X
  return %u, %rs : !X, !H
}
}

// -----

// Slots: a gradient bucket's all-reduce (pf-bucket-gradients{overlap})
// holds slot 0 over the whole block. With 64 slots the split all-reduce
// takes slot 1; with one slot none is free, and it stays blocking.
#P = #pf.placement<"cuda", [0]>
!X = !pf.global<8x16xf32, #P, #pf.sbp<[B]>>
!W = !pf.global<16x16xf32, #P, #pf.sbp<[B]>>
// CHECK-LABEL: func.func @slots
// CHECK: pf.all_reduce %arg0 {groups = [array<i64: 0, 1>], pf.async_slot = 1 : i64}
// CHECK: pf.all_reduce_wait {{.*}}slot = 1 : i64
// CHECK: pf.all_reduce_wait {{.*}}slot = 0 : i64
// ONE-LABEL: func.func @slots
// ONE: pf.all_reduce %arg0 {groups = [array<i64: 0, 1>]} :
// ONE-NOT: slot = 1
// ONE: return
module @rank0 attributes {pf.rank = 0 : i64} {
func.func @slots(%a: !X, %g: !X, %w: !W) -> (!X, !X, !X) {
  %b = pf.all_reduce %g {groups = [array<i64: 0, 1>], pf.async_slot = 0 : i64} : !X -> !X
  %m1 = pf.matmul %a, %w : (!X, !W) -> !X
  %s = pf.all_reduce %a {groups = [array<i64: 0, 1>]} : !X -> !X
  %m2 = pf.matmul %m1, %w : (!X, !W) -> !X
  %u = pf.add %s, %m2 : (!X, !X) -> !X
  %bw = pf.all_reduce_wait %b, %g {slot = 0 : i64} : !X, !X -> !X
  return %u, %m1, %bw : !X, !X, !X
}
}
// BAD: error: pf-overlap-collectives: slots = 65 is outside [0, 64]
