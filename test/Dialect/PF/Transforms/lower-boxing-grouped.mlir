// RUN: pf-opt %s -split-input-file --pf-lower-boxing | FileCheck %s
// RUN: pf-opt %s -split-input-file --pf-lower-boxing -pf-partition-ranks | FileCheck %s --check-prefix=RANK

// Per rank, the grouped part (rank 1: rows 2-3, 6-7, 10-11 of 12, six rows
// in block order) is the cut tensor's split part 3 x 2 x 4, gathered to
// 3 x 4 x 4.
// RANK-LABEL: module @rank1
// RANK: pf.reshape %{{.*}} : !pf.global<6x4xf32, {{.*}}> -> !pf.global<3x2x4xf32
// RANK-NEXT: pf.all_gather %{{.*}} : !pf.global<3x2x4xf32, {{.*}}> -> !pf.global<3x4x4xf32
// RANK-NEXT: pf.reshape %{{.*}} : !pf.global<3x4x4xf32, {{.*}}> -> !pf.global<12x4xf32

// A grouped split S(0, 3) of 12 rows on 2 ranks (rank r holds rows
// 2r..2r+1 of each block of 4) is the plain split S(1) of its reshape to
// 3 x 4 (the same local rows in the same order): it changes to B by an
// all-gather there, and from P (a reduce-scatter) or B (each rank keeps
// its part) into it, each between the reshape and the reshape back.
#P = #pf.placement<"cpu", [0, 1]>
func.func @gather(%x: !pf.global<12x4xf32, #P, #pf.sbp<[S(0, 3)]>>) -> !pf.global<12x4xf32, #P, #pf.sbp<[B]>> {
  %y = pf.to_global %x : !pf.global<12x4xf32, #P, #pf.sbp<[S(0, 3)]>> -> !pf.global<12x4xf32, #P, #pf.sbp<[B]>>
  return %y : !pf.global<12x4xf32, #P, #pf.sbp<[B]>>
}
// CHECK-LABEL: func.func @gather
// CHECK: %[[C:.*]] = pf.reshape %{{.*}} : !pf.global<12x4xf32, #{{.*}}, #pf.sbp<[S(0, 3)]>> -> !pf.global<3x4x4xf32, #{{.*}}, #pf.sbp<[S(1)]>>
// CHECK-NEXT: %[[G:.*]] = pf.all_gather %[[C]] {axis = 1 : i64, groups = {{\[}}array<i64: 0, 1>]} : !pf.global<3x4x4xf32, #{{.*}}, #pf.sbp<[S(1)]>> -> !pf.global<3x4x4xf32, #{{.*}}, #pf.sbp<[B]>>
// CHECK-NEXT: %[[B:.*]] = pf.reshape %[[G]] : !pf.global<3x4x4xf32, #{{.*}}, #pf.sbp<[B]>> -> !pf.global<12x4xf32, #{{.*}}, #pf.sbp<[B]>>
// CHECK-NEXT: return %[[B]]

// -----

#P = #pf.placement<"cpu", [0, 1]>
func.func @reduce(%x: !pf.global<4x12xf32, #P, #pf.sbp<[P]>>, %b: !pf.global<4x12xf32, #P, #pf.sbp<[B]>>) -> (!pf.global<4x12xf32, #P, #pf.sbp<[S(1, 2)]>>, !pf.global<4x12xf32, #P, #pf.sbp<[S(1, 2)]>>) {
  %y = pf.to_global %x : !pf.global<4x12xf32, #P, #pf.sbp<[P]>> -> !pf.global<4x12xf32, #P, #pf.sbp<[S(1, 2)]>>
  %z = pf.to_global %b : !pf.global<4x12xf32, #P, #pf.sbp<[B]>> -> !pf.global<4x12xf32, #P, #pf.sbp<[S(1, 2)]>>
  return %y, %z : !pf.global<4x12xf32, #P, #pf.sbp<[S(1, 2)]>>, !pf.global<4x12xf32, #P, #pf.sbp<[S(1, 2)]>>
}
// CHECK-LABEL: func.func @reduce
// CHECK: %[[C:.*]] = pf.reshape %{{.*}} -> !pf.global<4x2x6xf32, #{{.*}}, #pf.sbp<[P]>>
// CHECK-NEXT: %[[R:.*]] = pf.reduce_scatter %[[C]] {axis = 2 : i64, {{.*}}} : !pf.global<4x2x6xf32, #{{.*}}, #pf.sbp<[P]>> -> !pf.global<4x2x6xf32, #{{.*}}, #pf.sbp<[S(2)]>>
// CHECK-NEXT: %[[Y:.*]] = pf.reshape %[[R]] : !pf.global<4x2x6xf32, #{{.*}}, #pf.sbp<[S(2)]>> -> !pf.global<4x12xf32, #{{.*}}, #pf.sbp<[S(1, 2)]>>
// CHECK: %[[D:.*]] = pf.reshape %{{.*}} -> !pf.global<4x2x6xf32, #{{.*}}, #pf.sbp<[B]>>
// CHECK-NEXT: %[[S:.*]] = pf.shard %[[D]] {axis = 2 : i64, {{.*}}} : !pf.global<4x2x6xf32, #{{.*}}, #pf.sbp<[B]>> -> !pf.global<4x2x6xf32, #{{.*}}, #pf.sbp<[S(2)]>>
// CHECK-NEXT: %[[Z:.*]] = pf.reshape %[[S]] : !pf.global<4x2x6xf32, #{{.*}}, #pf.sbp<[S(2)]>> -> !pf.global<4x12xf32, #{{.*}}, #pf.sbp<[S(1, 2)]>>
// CHECK: return %[[Y]], %[[Z]]

// -----

// To a partial sum: each rank keeps its part of every block and zeros
// elsewhere (pf.unshard on the cut axis), nothing moves.
#P = #pf.placement<"cpu", [0, 1]>
func.func @topartial(%x: !pf.global<12x4xf32, #P, #pf.sbp<[S(0, 3)]>>) -> !pf.global<12x4xf32, #P, #pf.sbp<[P]>> {
  %y = pf.to_global %x : !pf.global<12x4xf32, #P, #pf.sbp<[S(0, 3)]>> -> !pf.global<12x4xf32, #P, #pf.sbp<[P]>>
  return %y : !pf.global<12x4xf32, #P, #pf.sbp<[P]>>
}
// CHECK-LABEL: func.func @topartial
// CHECK: %[[C:.*]] = pf.reshape %{{.*}} -> !pf.global<3x4x4xf32, #{{.*}}, #pf.sbp<[S(1)]>>
// CHECK-NEXT: %[[U:.*]] = pf.unshard %[[C]] {axis = 1 : i64, {{.*}}} : !pf.global<3x4x4xf32, #{{.*}}, #pf.sbp<[S(1)]>> -> !pf.global<3x4x4xf32, #{{.*}}, #pf.sbp<[P]>>
// CHECK-NEXT: %[[Y:.*]] = pf.reshape %[[U]] : {{.*}} -> !pf.global<12x4xf32, #{{.*}}, #pf.sbp<[P]>>
// CHECK-NEXT: return %[[Y]]

// -----

// To a split of another axis: an all_to_all on the cut tensor. To and
// from a split of its own axis (or another grouping): through B, the
// grouped side's gather or slice between its reshapes, the plain side's
// gather or local slice. (On a mesh and to other ranks: the end of this
// file.)
#P = #pf.placement<"cpu", [0, 1]>
func.func @toother(%x: !pf.global<12x4xf32, #P, #pf.sbp<[S(0, 3)]>>) -> !pf.global<12x4xf32, #P, #pf.sbp<[S(1)]>> {
  %y = pf.to_global %x : !pf.global<12x4xf32, #P, #pf.sbp<[S(0, 3)]>> -> !pf.global<12x4xf32, #P, #pf.sbp<[S(1)]>>
  return %y : !pf.global<12x4xf32, #P, #pf.sbp<[S(1)]>>
}
// CHECK-LABEL: func.func @toother
// CHECK-NEXT: %[[C:.*]] = pf.reshape %{{.*}} -> !pf.global<3x4x4xf32, #{{.*}}, #pf.sbp<[S(1)]>>
// CHECK-NEXT: %[[A:.*]] = pf.all_to_all %[[C]] {concat_axis = 1 : i64, {{.*}}, split_axis = 2 : i64} : {{.*}} -> !pf.global<3x4x4xf32, #{{.*}}, #pf.sbp<[S(2)]>>
// CHECK-NEXT: %[[S:.*]] = pf.reshape %[[A]] : {{.*}} -> !pf.global<12x4xf32, #{{.*}}, #pf.sbp<[S(1)]>>
// CHECK-NEXT: return %[[S]]
// Rank 1: its 6 rows of blocks exchanged for its 2 columns of all 12 rows.
// RANK: module @rank1
// RANK: func.func @toother
// RANK: pf.all_to_all %{{.*}} : !pf.global<3x2x4xf32, {{.*}}> -> !pf.global<3x4x2xf32
// RANK: pf.reshape %{{.*}} : !pf.global<3x4x2xf32, {{.*}}> -> !pf.global<12x2xf32

func.func @fromother(%x: !pf.global<12x4xf32, #P, #pf.sbp<[S(0)]>>) -> !pf.global<12x4xf32, #P, #pf.sbp<[S(0, 2)]>> {
  %y = pf.to_global %x : !pf.global<12x4xf32, #P, #pf.sbp<[S(0)]>> -> !pf.global<12x4xf32, #P, #pf.sbp<[S(0, 2)]>>
  return %y : !pf.global<12x4xf32, #P, #pf.sbp<[S(0, 2)]>>
}
// CHECK-LABEL: func.func @fromother
// CHECK-NEXT: %[[G:.*]] = pf.all_gather %{{.*}} {axis = 0 : i64, {{.*}}} : {{.*}} -> !pf.global<12x4xf32, #{{.*}}, #pf.sbp<[B]>>
// CHECK-NEXT: %[[C:.*]] = pf.reshape %[[G]] : {{.*}} -> !pf.global<2x6x4xf32, #{{.*}}, #pf.sbp<[B]>>
// CHECK-NEXT: %[[S:.*]] = pf.shard %[[C]] {axis = 1 : i64, {{.*}}} : {{.*}} -> !pf.global<2x6x4xf32, #{{.*}}, #pf.sbp<[S(1)]>>
// CHECK-NEXT: %[[Y:.*]] = pf.reshape %[[S]] : {{.*}} -> !pf.global<12x4xf32, #{{.*}}, #pf.sbp<[S(0, 2)]>>
// CHECK-NEXT: return %[[Y]]

// -----

// On a mesh the cut works the same: the grouped entry (Megatron's tensor
// axis of a fused q/k/v projection whose heads its ranks do not divide)
// gathers within its groups only.
#M = #pf.placement<"cpu", [[0, 1], [2, 3]]>
func.func @mesh(%x: !pf.global<12x4xf32, #M, #pf.sbp<[B, S(0, 3)]>>) -> !pf.global<12x4xf32, #M, #pf.sbp<[B, B]>> {
  %y = pf.to_global %x : !pf.global<12x4xf32, #M, #pf.sbp<[B, S(0, 3)]>> -> !pf.global<12x4xf32, #M, #pf.sbp<[B, B]>>
  return %y : !pf.global<12x4xf32, #M, #pf.sbp<[B, B]>>
}
// CHECK-LABEL: func.func @mesh
// CHECK-NEXT: %[[C:.*]] = pf.reshape %{{.*}} -> !pf.global<3x4x4xf32, #{{.*}}, #pf.sbp<[B, S(1)]>>
// CHECK-NEXT: %[[G:.*]] = pf.all_gather %[[C]] {axis = 1 : i64, groups = {{\[}}array<i64: 0, 1>, array<i64: 2, 3>]} : {{.*}} -> !pf.global<3x4x4xf32, #{{.*}}, #pf.sbp<[B, B]>>
// CHECK-NEXT: %[[B:.*]] = pf.reshape %[[G]] : {{.*}} -> !pf.global<12x4xf32, #{{.*}}, #pf.sbp<[B, B]>>
// CHECK-NEXT: return %[[B]]
// Rank 1 (row 0, column 1 of the mesh): its 6 rows, 2 of each block.
// RANK: module @rank1
// RANK: func.func @mesh
// RANK-NEXT: pf.reshape %{{.*}} : !pf.global<6x4xf32, {{.*}}> -> !pf.global<3x2x4xf32
// RANK-NEXT: pf.all_gather %{{.*}} : !pf.global<3x2x4xf32, {{.*}}> -> !pf.global<3x4x4xf32

// -----

// Two grouped splits of different axes change one at a time: the one
// whose axis is cut first, the other staying grouped on the cut tensor
// (its axis shifted past the cut only when it comes after).
#M = #pf.placement<"cpu", [[0, 1], [2, 3]]>
func.func @two(%x: !pf.global<12x8xf32, #M, #pf.sbp<[S(1, 2), S(0, 3)]>>) -> !pf.global<12x8xf32, #M, #pf.sbp<[S(0), B]>> {
  %y = pf.to_global %x : !pf.global<12x8xf32, #M, #pf.sbp<[S(1, 2), S(0, 3)]>> -> !pf.global<12x8xf32, #M, #pf.sbp<[S(0), B]>>
  return %y : !pf.global<12x8xf32, #M, #pf.sbp<[S(0), B]>>
}
// CHECK-LABEL: func.func @two
// CHECK-NEXT: pf.reshape %{{.*}} -> !pf.global<12x2x4xf32, #{{.*}}, #pf.sbp<[S(2), S(0, 3)]>>
// CHECK-NEXT: pf.all_gather %{{.*}} {axis = 2 : i64, groups = {{\[}}array<i64: 0, 2>, array<i64: 1, 3>]} : {{.*}} -> !pf.global<12x2x4xf32, #{{.*}}, #pf.sbp<[B, S(0, 3)]>>
// CHECK-NEXT: pf.reshape %{{.*}} -> !pf.global<12x8xf32, #{{.*}}, #pf.sbp<[B, S(0, 3)]>>
// CHECK-NEXT: pf.reshape %{{.*}} -> !pf.global<3x4x8xf32, #{{.*}}, #pf.sbp<[B, S(1)]>>
// CHECK-NEXT: pf.all_gather %{{.*}} {axis = 1 : i64, groups = {{\[}}array<i64: 0, 1>, array<i64: 2, 3>]} : {{.*}} -> !pf.global<3x4x8xf32, #{{.*}}, #pf.sbp<[B, B]>>
// CHECK-NEXT: pf.reshape %{{.*}} -> !pf.global<12x8xf32, #{{.*}}, #pf.sbp<[B, B]>>
// CHECK-NEXT: pf.shard %{{.*}} {axis = 0 : i64, {{.*}}} : {{.*}} -> !pf.global<12x8xf32, #{{.*}}, #pf.sbp<[S(0), B]>>

// -----

// To other ranks: gathered where it is, moved, sliced into the grouped
// split where it goes.
#P = #pf.placement<"cpu", [0, 1]>
#Q = #pf.placement<"cpu", [2, 3]>
func.func @move(%x: !pf.global<12x4xf32, #P, #pf.sbp<[S(0, 3)]>>) -> !pf.global<12x4xf32, #Q, #pf.sbp<[S(0, 3)]>> {
  %y = pf.to_global %x : !pf.global<12x4xf32, #P, #pf.sbp<[S(0, 3)]>> -> !pf.global<12x4xf32, #Q, #pf.sbp<[S(0, 3)]>>
  return %y : !pf.global<12x4xf32, #Q, #pf.sbp<[S(0, 3)]>>
}
// CHECK-LABEL: func.func @move
// CHECK-NEXT: pf.reshape %{{.*}} -> !pf.global<3x4x4xf32, #{{.*}}, #pf.sbp<[S(1)]>>
// CHECK-NEXT: pf.all_gather
// CHECK-NEXT: pf.reshape %{{.*}} -> !pf.global<12x4xf32, #cpu_0_1, #pf.sbp<[B]>>
// CHECK-NEXT: pf.transfer %{{.*}} -> !pf.global<12x4xf32, #cpu_2_3, #pf.sbp<[B]>>
// CHECK-NEXT: pf.reshape %{{.*}} -> !pf.global<3x4x4xf32, #cpu_2_3, #pf.sbp<[B]>>
// CHECK-NEXT: pf.shard %{{.*}} {axis = 1 : i64, {{.*}}} : {{.*}} -> !pf.global<3x4x4xf32, #cpu_2_3, #pf.sbp<[S(1)]>>
// CHECK-NEXT: pf.reshape %{{.*}} -> !pf.global<12x4xf32, #cpu_2_3, #pf.sbp<[S(0, 3)]>>
