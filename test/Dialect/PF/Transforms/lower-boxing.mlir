// RUN: pf-opt %s --pf-lower-boxing --split-input-file --verify-diagnostics | FileCheck %s

// One case per row of DESIGN.md's boxing table (1-D, 4 ranks).
#P4 = #pf.placement<"cpu", [0, 1, 2, 3]>
// CHECK-LABEL: func.func @one_d
func.func @one_d(%p: !pf.global<8x16xf32, #P4, #pf.sbp<[P]>>,
                 %s0: !pf.global<8x16xf32, #P4, #pf.sbp<[S(0)]>>,
                 %s1: !pf.global<8x16xf32, #P4, #pf.sbp<[S(1)]>>,
                 %b: !pf.global<8x16xf32, #P4, #pf.sbp<[B]>>) {
  // CHECK: pf.all_reduce %arg0 {groups = [array<i64: 0, 1, 2, 3>]} : {{.*}}[P]>> -> {{.*}}[B]>>
  %0 = pf.to_global %p : !pf.global<8x16xf32, #P4, #pf.sbp<[P]>> -> !pf.global<8x16xf32, #P4, #pf.sbp<[B]>>
  // CHECK: pf.reduce_scatter %arg0 {axis = 0 : i64, groups = [array<i64: 0, 1, 2, 3>]} : {{.*}}[P]>> -> {{.*}}[S(0)]>>
  %1 = pf.to_global %p : !pf.global<8x16xf32, #P4, #pf.sbp<[P]>> -> !pf.global<8x16xf32, #P4, #pf.sbp<[S(0)]>>
  // CHECK: pf.reduce_scatter %arg0 {axis = 1 : i64, groups = [array<i64: 0, 1, 2, 3>]} : {{.*}}[P]>> -> {{.*}}[S(1)]>>
  %2 = pf.to_global %p : !pf.global<8x16xf32, #P4, #pf.sbp<[P]>> -> !pf.global<8x16xf32, #P4, #pf.sbp<[S(1)]>>
  // CHECK: pf.all_gather %arg1 {axis = 0 : i64, groups = [array<i64: 0, 1, 2, 3>]} : {{.*}}[S(0)]>> -> {{.*}}[B]>>
  %3 = pf.to_global %s0 : !pf.global<8x16xf32, #P4, #pf.sbp<[S(0)]>> -> !pf.global<8x16xf32, #P4, #pf.sbp<[B]>>
  // CHECK: pf.all_gather %arg2 {axis = 1 : i64, groups = [array<i64: 0, 1, 2, 3>]} : {{.*}}[S(1)]>> -> {{.*}}[B]>>
  %4 = pf.to_global %s1 : !pf.global<8x16xf32, #P4, #pf.sbp<[S(1)]>> -> !pf.global<8x16xf32, #P4, #pf.sbp<[B]>>
  // CHECK: pf.all_to_all %arg1 {concat_axis = 0 : i64, groups = [array<i64: 0, 1, 2, 3>], split_axis = 1 : i64} : {{.*}}[S(0)]>> -> {{.*}}[S(1)]>>
  %5 = pf.to_global %s0 : !pf.global<8x16xf32, #P4, #pf.sbp<[S(0)]>> -> !pf.global<8x16xf32, #P4, #pf.sbp<[S(1)]>>
  // CHECK: pf.shard %arg3 {axis = 1 : i64, groups = [array<i64: 0, 1, 2, 3>]} : {{.*}}[B]>> -> {{.*}}[S(1)]>>
  %6 = pf.to_global %b : !pf.global<8x16xf32, #P4, #pf.sbp<[B]>> -> !pf.global<8x16xf32, #P4, #pf.sbp<[S(1)]>>
  // CHECK: pf.keep_one %arg3 {groups = [array<i64: 0, 1, 2, 3>]} : {{.*}}[B]>> -> {{.*}}[P]>>
  %7 = pf.to_global %b : !pf.global<8x16xf32, #P4, #pf.sbp<[B]>> -> !pf.global<8x16xf32, #P4, #pf.sbp<[P]>>
  // S -> P moves nothing: each rank zero-pads its block.
  // CHECK: pf.unshard %arg1 {axis = 0 : i64, groups = [array<i64: 0, 1, 2, 3>]} : {{.*}}[S(0)]>> -> {{.*}}[P]>>
  // CHECK-NOT: pf.all_gather
  %8 = pf.to_global %s0 : !pf.global<8x16xf32, #P4, #pf.sbp<[S(0)]>> -> !pf.global<8x16xf32, #P4, #pf.sbp<[P]>>
  // CHECK-NOT: pf.to_global
  return
}

// -----

// n-D: per hierarchy dimension within its groups, and one collective over
// all ranks where the layout is the same on the flattened placement.
#Q = #pf.placement<"cpu", [[0, 1], [2, 3]]>
// CHECK-LABEL: func.func @n_d
func.func @n_d(%a: !pf.global<8x16xf32, #Q, #pf.sbp<[S(0), P]>>,
               %b: !pf.global<8x16xf32, #Q, #pf.sbp<[P, S(1)]>>,
               %c: !pf.global<8x16xf32, #Q, #pf.sbp<[S(0), S(0)]>>,
               %d: !pf.global<8x16xf32, #Q, #pf.sbp<[P, P]>>,
               %e: !pf.global<8x16xf32, #Q, #pf.sbp<[B, S(0)]>>) {
  // (S0, P) -> (S0, B): all-reduce within each dim-1 group (rows of the grid).
  // CHECK: pf.all_reduce %arg0 {groups = [array<i64: 0, 1>, array<i64: 2, 3>]} : {{.*}}[S(0), P]>> -> {{.*}}[S(0), B]>>
  %0 = pf.to_global %a : !pf.global<8x16xf32, #Q, #pf.sbp<[S(0), P]>> -> !pf.global<8x16xf32, #Q, #pf.sbp<[S(0), B]>>
  // (P, S1) -> (B, S1): across dim-0 groups (columns).
  // CHECK: pf.all_reduce %arg1 {groups = [array<i64: 0, 2>, array<i64: 1, 3>]} : {{.*}}[P, S(1)]>> -> {{.*}}[B, S(1)]>>
  %1 = pf.to_global %b : !pf.global<8x16xf32, #Q, #pf.sbp<[P, S(1)]>> -> !pf.global<8x16xf32, #Q, #pf.sbp<[B, S(1)]>>
  // (S0, S0) on 2x2 is S0 on 4: one all-gather over the four ranks.
  // CHECK: pf.all_gather %arg2 {axis = 0 : i64, groups = [array<i64: 0, 1, 2, 3>]} : {{.*}}[S(0), S(0)]>> -> {{.*}}[B, B]>>
  %2 = pf.to_global %c : !pf.global<8x16xf32, #Q, #pf.sbp<[S(0), S(0)]>> -> !pf.global<8x16xf32, #Q, #pf.sbp<[B, B]>>
  // (P, P) -> (B, B): one all-reduce over the four ranks.
  // CHECK: pf.all_reduce %arg3 {groups = [array<i64: 0, 1, 2, 3>]} : {{.*}}[P, P]>> -> {{.*}}[B, B]>>
  %3 = pf.to_global %d : !pf.global<8x16xf32, #Q, #pf.sbp<[P, P]>> -> !pf.global<8x16xf32, #Q, #pf.sbp<[B, B]>>
  // (S0, P) -> (B, B): the inner dimension first, then the outer.
  // CHECK: %[[R:.*]] = pf.all_reduce %arg0 {groups = [array<i64: 0, 1>, array<i64: 2, 3>]}
  // CHECK-NEXT: pf.all_gather %[[R]] {axis = 0 : i64, groups = [array<i64: 0, 2>, array<i64: 1, 3>]} : {{.*}}[S(0), B]>> -> {{.*}}[B, B]>>
  %4 = pf.to_global %a : !pf.global<8x16xf32, #Q, #pf.sbp<[S(0), P]>> -> !pf.global<8x16xf32, #Q, #pf.sbp<[B, B]>>
  // (B, S0) -> (S0, S0) has no per-dimension order (the inner split of
  // axis 0 would have to move; through (B, B) it gathers T/2 a rank): one
  // exchange of box intersections, in which ranks 1 and 2 swap a quarter
  // and ranks 0 and 3 keep theirs.
  // CHECK-NOT: pf.all_gather %arg4
  // CHECK: pf.transfer %arg4 {moves = [array<i64: 0, 0, 0, 0, 2, 16>, array<i64: 2, 1, 2, 0, 2, 16>, array<i64: 1, 2, 4, 0, 2, 16>, array<i64: 3, 3, 6, 0, 2, 16>]} : {{.*}}[B, S(0)]>> -> {{.*}}[S(0), S(0)]>>
  %5 = pf.to_global %e : !pf.global<8x16xf32, #Q, #pf.sbp<[B, S(0)]>> -> !pf.global<8x16xf32, #Q, #pf.sbp<[S(0), S(0)]>>
  return
}

// -----

// Across placements: slice intersections move with send/recv semantics.
#P01 = #pf.placement<"cpu", [0, 1]>
#P12 = #pf.placement<"cpu", [1, 2]>
#P23 = #pf.placement<"cpu", [2, 3]>
#P0 = #pf.placement<"cpu", [0]>
#P4 = #pf.placement<"cpu", [0, 1, 2, 3]>
// CHECK-LABEL: func.func @cross
func.func @cross(%a: !pf.global<8x16xf32, #P01, #pf.sbp<[S(0)]>>,
                 %one: !pf.global<8x16xf32, #P0, #pf.sbp<[B]>>,
                 %p: !pf.global<8x16xf32, #P4, #pf.sbp<[P]>>,
                 %pp: !pf.global<8x16xf32, #P01, #pf.sbp<[P]>>) {
  // Disjoint ranks, same split: rank 0's rows go to 2, rank 1's to 3.
  // CHECK: pf.transfer %arg0 {moves = [array<i64: 0, 2, 0, 0, 4, 16>, array<i64: 1, 3, 4, 0, 4, 16>]} : {{.*}}#cpu_0_1, #pf.sbp<[S(0)]>> -> {{.*}}#cpu_2_3, #pf.sbp<[S(0)]>>
  %0 = pf.to_global %a : !pf.global<8x16xf32, #P01, #pf.sbp<[S(0)]>> -> !pf.global<8x16xf32, #P23, #pf.sbp<[S(0)]>>
  // Disjoint ranks, S(0) -> S(1): each destination takes a column block of both sources' rows.
  // CHECK: pf.transfer %arg0 {moves = [array<i64: 0, 2, 0, 0, 4, 8>, array<i64: 1, 2, 4, 0, 4, 8>, array<i64: 0, 3, 0, 8, 4, 8>, array<i64: 1, 3, 4, 8, 4, 8>]}
  %1 = pf.to_global %a : !pf.global<8x16xf32, #P01, #pf.sbp<[S(0)]>> -> !pf.global<8x16xf32, #P23, #pf.sbp<[S(1)]>>
  // Overlapping ranks [0, 1] -> [1, 2]: rank 1 keeps its own rows locally
  // where it can; here it needs rank 0's rows and rank 2 needs rank 1's.
  // CHECK: pf.transfer %arg0 {moves = [array<i64: 0, 1, 0, 0, 4, 16>, array<i64: 1, 2, 4, 0, 4, 16>]}
  %2 = pf.to_global %a : !pf.global<8x16xf32, #P01, #pf.sbp<[S(0)]>> -> !pf.global<8x16xf32, #P12, #pf.sbp<[S(0)]>>
  // ... and to B on [1, 2]: rank 1 copies its own rows (1 -> 1).
  // CHECK: pf.transfer %arg0 {moves = [array<i64: 0, 1, 0, 0, 4, 16>, array<i64: 1, 1, 4, 0, 4, 16>, array<i64: 0, 2, 0, 0, 4, 16>, array<i64: 1, 2, 4, 0, 4, 16>]}
  %3 = pf.to_global %a : !pf.global<8x16xf32, #P01, #pf.sbp<[S(0)]>> -> !pf.global<8x16xf32, #P12, #pf.sbp<[B]>>
  // Size change [0] -> [0, 1, 2, 3] as B: a broadcast from rank 0.
  // CHECK: pf.broadcast %arg1 {ranks = array<i64: 0, 1, 2, 3>, root = 0 : i64} : (!pf.global<8x16xf32, #cpu_0, #pf.sbp<[B]>>) -> !pf.global<8x16xf32, #cpu_0_1_2_3, #pf.sbp<[B]>>
  %4 = pf.to_global %one : !pf.global<8x16xf32, #P0, #pf.sbp<[B]>> -> !pf.global<8x16xf32, #P4, #pf.sbp<[B]>>
  // [0] -> [0, 1, 2, 3] as S(0): rank 0 keeps its block, sends the others.
  // CHECK: pf.transfer %arg1 {moves = [array<i64: 0, 0, 0, 0, 2, 16>, array<i64: 0, 1, 2, 0, 2, 16>, array<i64: 0, 2, 4, 0, 2, 16>, array<i64: 0, 3, 6, 0, 2, 16>]}
  %5 = pf.to_global %one : !pf.global<8x16xf32, #P0, #pf.sbp<[B]>> -> !pf.global<8x16xf32, #P4, #pf.sbp<[S(0)]>>
  // N -> 1 of a partial sum: a reduction to the root.
  // CHECK: pf.reduce %arg2 {ranks = array<i64: 0, 1, 2, 3>, root = 0 : i64} : (!pf.global<8x16xf32, #cpu_0_1_2_3, #pf.sbp<[P]>>) -> !pf.global<8x16xf32, #cpu_0, #pf.sbp<[B]>>
  %6 = pf.to_global %p : !pf.global<8x16xf32, #P4, #pf.sbp<[P]>> -> !pf.global<8x16xf32, #P0, #pf.sbp<[B]>>
  // A partial source is reduce-scattered where it lives (half the bytes of
  // an all-reduce), then each piece moves.
  // CHECK-NOT: pf.all_reduce %arg3
  // CHECK: %[[R:.*]] = pf.reduce_scatter %arg3 {axis = 0 : i64, groups = [array<i64: 0, 1>]}
  // CHECK-NEXT: pf.transfer %[[R]] {moves = [array<i64: 0, 2, 0, 0, 4, 16>, array<i64: 1, 3, 4, 0, 4, 16>]}
  %7 = pf.to_global %pp : !pf.global<8x16xf32, #P01, #pf.sbp<[P]>> -> !pf.global<8x16xf32, #P23, #pf.sbp<[S(0)]>>
  return
}

// -----

// cpu <-> cuda on the same ranks: change the layout on the source device,
// then copy.
#H = #pf.placement<"cpu", [0, 1]>
#D = #pf.placement<"cuda", [0, 1]>
// CHECK-LABEL: func.func @devices
func.func @devices(%a: !pf.global<8x16xf32, #H, #pf.sbp<[S(0)]>>) {
  // CHECK: %[[G:.*]] = pf.all_gather %arg0 {axis = 0
  // CHECK-NEXT: pf.device_copy %[[G]] : !pf.global<8x16xf32, #cpu_0_1, #pf.sbp<[B]>> -> !pf.global<8x16xf32, #cuda_0_1, #pf.sbp<[B]>>
  %0 = pf.to_global %a : !pf.global<8x16xf32, #H, #pf.sbp<[S(0)]>> -> !pf.global<8x16xf32, #D, #pf.sbp<[B]>>
  return
}

// -----

#D = #pf.placement<"cuda", [0, 1]>
#H23 = #pf.placement<"cpu", [2, 3]>
func.func @cannot(%a: !pf.global<8x16xf32, #D, #pf.sbp<[S(0)]>>) {
  // expected-error @+1 {{pf-lower-boxing: cannot move}}
  %0 = pf.to_global %a : !pf.global<8x16xf32, #D, #pf.sbp<[S(0)]>> -> !pf.global<8x16xf32, #H23, #pf.sbp<[S(0)]>>
  return
}
