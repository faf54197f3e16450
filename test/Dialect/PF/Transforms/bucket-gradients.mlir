// RUN: pf-opt %s -split-input-file -pf-bucket-gradients | FileCheck %s
// RUN: pf-opt %s -split-input-file -pf-bucket-gradients=bucket-bytes=128 | FileCheck %s --check-prefix=SMALL
// RUN: pf-opt %s -split-input-file -pf-bucket-gradients=bucket-bytes=0 | FileCheck %s --check-prefix=OFF
// RUN: not pf-opt %s -split-input-file -pf-bucket-gradients=bucket-bytes=-1 2>&1 | FileCheck %s --check-prefix=NEG
// RUN: pf-opt %s -split-input-file -pf-bucket-gradients="bucket-bytes=128 overlap=true" | FileCheck %s --check-prefix=OVERLAP

// One rank's update after data parallelism: three gradients (64, 16 and
// 64 bytes) reduced over ranks 0 and 1, one after the other.
#P = #pf.placement<"cpu", [0]>
!A = !pf.global<4x4xf32, #P, #pf.sbp<[B]>>
!V = !pf.global<4xf32, #P, #pf.sbp<[B]>>
// CHECK-LABEL: func.func @update
// CHECK-SAME: (%[[GA:.*]]: !pf.global<4x4xf32{{.*}}, %[[GB:.*]]: !pf.global<4xf32{{.*}}, %[[GC:.*]]: !pf.global<4x4xf32
// CHECK: %[[FA:.*]] = pf.reshape %[[GA]] : {{.*}} -> !pf.global<16xf32
// CHECK-NOT: pf.reshape %[[GB]]
// CHECK: %[[FC:.*]] = pf.reshape %[[GC]] : {{.*}} -> !pf.global<16xf32
// CHECK: %[[CAT:.*]] = pf.concat %[[FA]], %[[GB]], %[[FC]] {axis = 0 : i64, pf.phase = "update", pf.stage = 1 : i64}{{.*}} -> !pf.global<36xf32
// CHECK: %[[R:.*]] = pf.all_reduce %[[CAT]] {groups = [array<i64: 0, 1>], pf.phase = "update", pf.stage = 1 : i64} : !pf.global<36xf32
// CHECK-NOT: pf.all_reduce
// CHECK: %[[SA:.*]] = pf.slice %[[R]] {offsets = array<i64: 0>, {{.*}}sizes = array<i64: 16>}
// CHECK: %[[A:.*]] = pf.reshape %[[SA]] {{.*}}-> !pf.global<4x4xf32
// CHECK: pf.mul_scalar %[[A]]
// CHECK: %[[B:.*]] = pf.slice %[[R]] {offsets = array<i64: 16>, {{.*}}sizes = array<i64: 4>}
// CHECK-NOT: pf.reshape %[[B]]
// CHECK: %[[SC:.*]] = pf.slice %[[R]] {offsets = array<i64: 20>, {{.*}}sizes = array<i64: 16>}
// CHECK: %[[C:.*]] = pf.reshape %[[SC]]
// CHECK: return %{{.*}}, %[[B]], %[[C]]
// At most 128 bytes: the first two (80 bytes) share a bucket, the third
// (another 64) is alone and stays as it was.
// SMALL-LABEL: func.func @update
// SMALL: pf.concat {{.*}} -> !pf.global<20xf32
// SMALL: pf.all_reduce {{.*}} : !pf.global<20xf32
// SMALL: pf.all_reduce {{.*}} : !pf.global<4x4xf32
// SMALL-NOT: pf.all_reduce
// SMALL: return
// OFF-LABEL: func.func @update
// OFF-NOT: pf.concat
// OFF-COUNT-3: pf.all_reduce
// OFF: return
// NEG: error: pf-bucket-gradients: bucket-bytes = -1 is negative
module @rank0 attributes {pf.rank = 0 : i64} {
func.func @update(%ga: !A, %gb: !V, %gc: !A) -> (!A, !V, !A) {
  %a = pf.all_reduce %ga {groups = [array<i64: 0, 1>], pf.phase = "update", pf.stage = 1 : i64} : !A -> !A
  %x = pf.mul_scalar %a {scalar = 2.0 : f64, pf.phase = "update"} : (!A) -> !A
  %b = pf.all_reduce %gb {groups = [array<i64: 0, 1>], pf.phase = "update", pf.stage = 1 : i64} : !V -> !V
  %c = pf.all_reduce %gc {groups = [array<i64: 0, 1>], pf.phase = "update", pf.stage = 0 : i64} : !A -> !A
  return %x, %b, %c : !A, !V, !A
}
}

// -----

// What ends a bucket, one reason between each pair of neighbours: other
// groups (a, b), a message (b, c), a gradient computed after the bucket's
// first all-reduce (c, e), an all-reduce outside the update (an
// activation's, the loss's), which never joins and is itself a collective
// between (e, d, f).
#P = #pf.placement<"cpu", [0]>
!A = !pf.global<4x4xf32, #P, #pf.sbp<[B]>>
// CHECK-LABEL: func.func @apart
// CHECK-NOT: pf.concat
// CHECK-COUNT-2: pf.all_reduce
// CHECK: pf.send
// CHECK: pf.all_reduce
// CHECK: pf.mul_scalar
// CHECK-COUNT-3: pf.all_reduce
// CHECK-NOT: pf.concat
// CHECK: return
module @rank0 attributes {pf.rank = 0 : i64} {
func.func @apart(%g0: !A, %g1: !A, %g2: !A, %g3: !A, %g4: !A, %g5: !A) -> (!A, !A, !A, !A, !A, !A) {
  %a = pf.all_reduce %g0 {groups = [array<i64: 0, 1>], pf.phase = "update"} : !A -> !A
  %b = pf.all_reduce %g1 {groups = [array<i64: 0, 2>], pf.phase = "update"} : !A -> !A
  pf.send %b to 1 tag 7 : !A
  %c = pf.all_reduce %g2 {groups = [array<i64: 0, 2>], pf.phase = "update"} : !A -> !A
  %late = pf.mul_scalar %g4 {scalar = 2.0 : f64} : (!A) -> !A
  %e = pf.all_reduce %late {groups = [array<i64: 0, 2>], pf.phase = "update"} : !A -> !A
  %d = pf.all_reduce %g3 {groups = [array<i64: 0, 2>]} : !A -> !A
  %f = pf.all_reduce %g5 {groups = [array<i64: 0, 2>], pf.phase = "update"} : !A -> !A
  return %a, %b, %c, %d, %e, %f : !A, !A, !A, !A, !A, !A
}
}

// -----

// Overlap: the backward computes the gradients last layer first (g2, then
// g1, then g0); the update reduces them in parameter order. The buckets
// are cut in the order the gradients are computed ({g2, g1} fills 128
// bytes, {g0} is alone), each all-reduce starts right after its last
// gradient (pf.async_slot), and pf.all_reduce_wait hands its sum to the
// update where the bucket's first all-reduce was.
#P = #pf.placement<"cpu", [0]>
!A = !pf.global<4x4xf32, #P, #pf.sbp<[B]>>
// OVERLAP-LABEL: func.func @overlap
// OVERLAP: %[[G2:.*]] = pf.mul_scalar %{{.*}} {pf.microbatch = 1 : i64, pf.phase = "backward_weight", scalar = 3.0
// OVERLAP: %[[G1:.*]] = pf.mul_scalar %[[G2]] {pf.microbatch = 1 : i64, pf.phase = "backward_weight", scalar = 2.0
// OVERLAP: %[[F2:.*]] = pf.reshape %[[G2]]
// OVERLAP: %[[F1:.*]] = pf.reshape %[[G1]]
// OVERLAP: %[[CAT:.*]] = pf.concat %[[F2]], %[[F1]] {axis = 0 : i64, pf.microbatch = 1 : i64, pf.phase = "backward_weight"}
// OVERLAP: %[[S0:.*]] = pf.all_reduce %[[CAT]] {groups = [array<i64: 0, 1>], pf.async_slot = 0 : i64, pf.microbatch = 1 : i64, pf.phase = "backward_weight"}
// OVERLAP: %[[G0:.*]] = pf.mul_scalar %[[G1]] {pf.microbatch = 1 : i64, pf.phase = "backward_weight", scalar = 1.0
// OVERLAP: %[[S1:.*]] = pf.all_reduce %[[G0]] {groups = [array<i64: 0, 1>], pf.async_slot = 1 : i64, pf.microbatch = 1 : i64, pf.phase = "backward_weight"}
// OVERLAP: %[[W1:.*]] = pf.all_reduce_wait %[[S1]], %[[G0]] {pf.phase = "update", slot = 1 : i64}
// OVERLAP: %[[W0:.*]] = pf.all_reduce_wait %[[S0]], %[[CAT]] {pf.phase = "update", slot = 0 : i64}
// OVERLAP: pf.slice %[[W0]] {offsets = array<i64: 16>
// OVERLAP: pf.slice %[[W0]] {offsets = array<i64: 0>
// OVERLAP: return %[[W1]]
// OVERLAP-NOT: pf.all_reduce
module @rank0 attributes {pf.rank = 0 : i64} {
func.func @overlap(%x: !A) -> (!A, !A, !A) {
  %g2 = pf.mul_scalar %x {scalar = 3.0 : f64, pf.phase = "backward_weight", pf.microbatch = 1 : i64} : (!A) -> !A
  %g1 = pf.mul_scalar %g2 {scalar = 2.0 : f64, pf.phase = "backward_weight", pf.microbatch = 1 : i64} : (!A) -> !A
  %g0 = pf.mul_scalar %g1 {scalar = 1.0 : f64, pf.phase = "backward_weight", pf.microbatch = 1 : i64} : (!A) -> !A
  %r0 = pf.all_reduce %g0 {groups = [array<i64: 0, 1>], pf.phase = "update"} : !A -> !A
  %r1 = pf.all_reduce %g1 {groups = [array<i64: 0, 1>], pf.phase = "update"} : !A -> !A
  %r2 = pf.all_reduce %g2 {groups = [array<i64: 0, 1>], pf.phase = "update"} : !A -> !A
  return %r0, %r1, %r2 : !A, !A, !A
}
}
