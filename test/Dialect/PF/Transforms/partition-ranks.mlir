// RUN: pf-opt %s -split-input-file -pf-partition-ranks | FileCheck %s

// Two stages on single-rank placements: the transfer between them becomes a
// send on rank 0 and a receive on rank 1 with the same tag; each rank keeps
// only its own ops; the input and the result leave the signature of the
// rank that does not hold them.
#P0 = #pf.placement<"cpu", [0]>
#P1 = #pf.placement<"cpu", [1]>
!A = !pf.global<4x8xf32, #P0, #pf.sbp<[B]>>
!B = !pf.global<4x8xf32, #P1, #pf.sbp<[B]>>
// CHECK-LABEL: module attributes {pf.world_size = 2 : i64}
// CHECK-LABEL: module @rank0 attributes {pf.rank = 0 : i64}
// CHECK: func.func @step(%[[X:.*]]: !pf.global<4x8xf32, #{{.*}}, #pf.sbp<[B]>> {{{.*}}pf.input = 0 : i64{{.*}}}) {
// CHECK-NEXT: %[[H:.*]] = pf.relu %[[X]] {pf.stage = 0 : i64}
// CHECK-NEXT: pf.send %[[H]] to 1 tag 0 :
// CHECK-NEXT: return{{$}}
// CHECK-LABEL: module @rank1 attributes {pf.rank = 1 : i64}
// CHECK: func.func @step() -> (!pf.global<4x8xf32, {{[^{]*}} {pf.global_type = !pf.global<4x8xf32, #cpu_1, #pf.sbp<[B]>>, pf.output = 0 : i64})
// CHECK-NEXT: %[[T:.*]] = pf.recv from 0 tag 0 :
// CHECK-NEXT: %[[Y:.*]] = pf.relu %[[T]] {pf.stage = 1 : i64}
// CHECK-NEXT: return %[[Y]]
// CHECK-NOT: pf.transfer
func.func @step(%x: !A) -> !B {
  %h = pf.relu %x {pf.stage = 0} : (!A) -> !A
  %t = pf.transfer %h {moves = [array<i64: 0, 1, 0, 0, 4, 8>]} : !A -> !B
  %y = pf.relu %t {pf.stage = 1} : (!B) -> !B
  return %y : !B
}

// -----

// Data parallel over two ranks: local shapes are the shards (S(0) input:
// rows 0-3 on rank 0, rows 4-7 on rank 1; S(1) parameter: columns 0-1 and
// 2-3), recorded with the logical shape. Collectives stay with local types.
// Under P only rank 0 holds the value: rank 1's input is zeros, and
// keep_one leaves rank 1 a zero constant.
#P = #pf.placement<"cpu", [0, 1]>
!S = !pf.global<8x4xf32, #P, #pf.sbp<[S(0)]>>
!W = !pf.global<4x4xf32, #P, #pf.sbp<[S(1)]>>
!Pt = !pf.global<8x4xf32, #P, #pf.sbp<[P]>>
!Bt = !pf.global<8x4xf32, #P, #pf.sbp<[B]>>
pf.param @w : !W = #pf.init<uniform(-0.1, 0.1)>
// CHECK-LABEL: module @rank0
// CHECK: pf.param @w : !pf.global<4x2xf32, {{.*}}> = {{.*}} {pf.logical_shape = array<i64: 4, 4>, pf.shard_offset = array<i64: 0, 0>}
// CHECK: func.func @dp(%{{.*}}: !pf.global<4x4xf32, {{.*}} {pf.box_shape = array<i64: 4, 4>, pf.boxes = [array<i64: 0, 0>], pf.input = 0 : i64, pf.logical_shape = array<i64: 8, 4>}, %[[P0:[^:]*]]: !pf.global<8x4xf32, {{.*}} {{{[^}]*}}pf.input = 1 : i64, pf.logical_shape = array<i64: 8, 4>})
// CHECK: %[[R0:.*]] = pf.all_reduce %[[P0]] {groups = [array<i64: 0, 1>]} : !pf.global<8x4xf32, #{{.*}}, #pf.sbp<[B]>> -> !pf.global<8x4xf32
// CHECK-NEXT: %[[Z0:.*]] = pf.all_reduce %[[R0]]
// CHECK-NEXT: return %[[Z0]]
// CHECK-LABEL: module @rank1
// CHECK: pf.param @w : !pf.global<4x2xf32, {{.*}} {pf.logical_shape = array<i64: 4, 4>, pf.shard_offset = array<i64: 0, 2>}
// CHECK: func.func @dp(%{{.*}}: !pf.global<4x4xf32, {{.*}} {pf.box_shape = array<i64: 4, 4>, pf.boxes = [array<i64: 4, 0>], pf.input = 0 : i64, pf.logical_shape = array<i64: 8, 4>}, %[[P1:[^:]*]]: !pf.global<8x4xf32, {{.*}}pf.zero_input})
// CHECK: pf.all_reduce %[[P1]]
// CHECK-NEXT: %[[ZERO:.*]] = pf.constant dense<0.000000e+00> : tensor<8x4xf32>
// CHECK-NEXT: %[[Z1:.*]] = pf.all_reduce %[[ZERO]]
// CHECK-NEXT: return %[[Z1]]
// CHECK-NOT: pf.keep_one
func.func @dp(%x: !S, %p: !Pt) -> !Bt {
  %w = pf.read_param @w : !W
  %r = pf.all_reduce %p {groups = [array<i64: 0, 1>]} : !Pt -> !Bt
  %k = pf.keep_one %r {groups = [array<i64: 0, 1>]} : !Bt -> !Pt
  %z = pf.all_reduce %k {groups = [array<i64: 0, 1>]} : !Pt -> !Bt
  return %z : !Bt
}

// -----

// A transfer whose source box is not the piece sent: rank 0 extracts each
// rank's rows; the way back, rank 0 assembles the received pieces at their
// offsets. Tags number the transfers in program order.
#P0 = #pf.placement<"cpu", [0]>
#P12 = #pf.placement<"cpu", [1, 2]>
!A = !pf.global<8x4xf32, #P0, #pf.sbp<[B]>>
!S = !pf.global<8x4xf32, #P12, #pf.sbp<[S(0)]>>
// CHECK-LABEL: module attributes {pf.world_size = 3 : i64}
// CHECK-LABEL: module @rank0
// CHECK: func.func @scatter_gather(%[[X:[^:]*]]:
// CHECK-NEXT: %[[TOP:.*]] = pf.extract_box %[[X]] {offsets = array<i64: 0, 0>} : !pf.global<8x4xf32, {{.*}}> -> !pf.global<4x4xf32
// CHECK-NEXT: pf.send %[[TOP]] to 1 tag 0
// CHECK-NEXT: %[[BOTTOM:.*]] = pf.extract_box %[[X]] {offsets = array<i64: 4, 0>}
// CHECK-NEXT: pf.send %[[BOTTOM]] to 2 tag 0
// CHECK-NEXT: %[[R1:.*]] = pf.recv from 1 tag 1 : !pf.global<4x4xf32
// CHECK-NEXT: %[[R2:.*]] = pf.recv from 2 tag 1 : !pf.global<4x4xf32
// CHECK-NEXT: %[[ALL:.*]] = pf.assemble %[[R1]], %[[R2]] {offsets = [array<i64: 0, 0>, array<i64: 4, 0>]} : {{.*}} -> !pf.global<8x4xf32
// CHECK-NEXT: return %[[ALL]]
// CHECK-LABEL: module @rank1
// CHECK: func.func @scatter_gather() {
// CHECK-NEXT: %[[IN:.*]] = pf.recv from 0 tag 0 : !pf.global<4x4xf32
// CHECK-NEXT: %[[OUT:.*]] = pf.relu %[[IN]]
// CHECK-NEXT: pf.send %[[OUT]] to 0 tag 1
// CHECK-NEXT: return{{$}}
// CHECK-LABEL: module @rank2
// CHECK: pf.recv from 0 tag 0
// CHECK: pf.send %{{.*}} to 0 tag 1
func.func @scatter_gather(%x: !A) -> !A {
  %t = pf.transfer %x {moves = [array<i64: 0, 1, 0, 0, 4, 4>, array<i64: 0, 2, 4, 0, 4, 4>]} : !A -> !S
  %r = pf.relu %t : (!S) -> !S
  %b = pf.transfer %r {moves = [array<i64: 1, 0, 0, 0, 4, 4>, array<i64: 2, 0, 4, 0, 4, 4>]} : !S -> !A
  return %b : !A
}

// -----

// Broadcast and reduce: only the root has the broadcast's input and the
// reduce's result.
#P0 = #pf.placement<"cpu", [0]>
#P01 = #pf.placement<"cpu", [0, 1]>
!R = !pf.global<8xf32, #P0, #pf.sbp<[B]>>
!Bt = !pf.global<8xf32, #P01, #pf.sbp<[B]>>
!Pt = !pf.global<8xf32, #P01, #pf.sbp<[P]>>
// CHECK-LABEL: module @rank0
// Each result records its place in the global signature and its global
// type (the host returns the outputs from them).
// CHECK: func.func @bcast_reduce(%[[X:[^:]*]]: {{.*}}, %[[P:[^:]*]]: {{.*}} -> (!pf.global<8xf32, #cpu_0, #pf.sbp<[B]>> {pf.global_type = !pf.global<8xf32, #cpu_0_1, #pf.sbp<[B]>>, pf.output = 0 : i64}, !pf.global<8xf32, #cpu_0, #pf.sbp<[B]>> {pf.global_type = !pf.global<8xf32, #cpu_0, #pf.sbp<[B]>>, pf.output = 1 : i64})
// CHECK-NEXT: %[[B:.*]] = pf.broadcast %[[X]] {ranks = array<i64: 0, 1>, root = 0 : i64} : (!pf.global<8xf32, {{.*}}>) -> !pf.global<8xf32
// CHECK-NEXT: %[[S:.*]] = pf.reduce %[[P]] {ranks = array<i64: 0, 1>, root = 0 : i64} : (!pf.global<8xf32, {{.*}}>) -> !pf.global<8xf32
// CHECK-NEXT: return %[[B]], %[[S]]
// CHECK-LABEL: module @rank1
// CHECK: func.func @bcast_reduce(%[[P1:[^:]*]]: !pf.global<8xf32, {{.*}}pf.input = 1 : i64{{.*}}) -> (!pf.global<8xf32, #cpu_1, #pf.sbp<[B]>> {pf.global_type = !pf.global<8xf32, #cpu_0_1, #pf.sbp<[B]>>, pf.output = 0 : i64})
// CHECK-NEXT: %[[B1:.*]] = pf.broadcast {ranks = array<i64: 0, 1>, root = 0 : i64} : () -> !pf.global<8xf32
// CHECK-NEXT: pf.reduce %[[P1]] {ranks = array<i64: 0, 1>, root = 0 : i64} : (!pf.global<8xf32, {{.*}}>) -> (){{$}}
// CHECK-NEXT: return %[[B1]] :
func.func @bcast_reduce(%x: !R, %p: !Pt) -> (!Bt, !R) {
  %b = pf.broadcast %x {root = 0, ranks = array<i64: 0, 1>} : (!R) -> !Bt
  %r = pf.reduce %p {root = 0, ranks = array<i64: 0, 1>} : (!Pt) -> !R
  return %b, %r : !Bt, !R
}
