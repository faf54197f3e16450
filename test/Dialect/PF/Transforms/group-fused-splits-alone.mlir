// RUN: pf-opt %s -pf-group-fused-splits | FileCheck %s


// Left alone: a broadcast weight, cuts of unequal blocks, and a product
// with a user that is not a cut.
#P = #pf.placement<"cpu", [0, 1]>
!W = !pf.global<12x8xf32, #P, #pf.sbp<[S(0)]>>
pf.param @b : !pf.global<12x8xf32, #P, #pf.sbp<[B]>> = #pf.init<normal(0.0, 1.0)>
pf.param @uneven : !W = #pf.init<normal(0.0, 1.0)>
pf.param @used : !W = #pf.init<normal(0.0, 1.0)>
func.func @alone(%x: !pf.global<4x8xf32, #P, #pf.sbp<[B]>>) -> (!pf.global<4x4xf32, #P>, !pf.global<4x8xf32, #P>, !pf.global<4x12xf32, #P>) {
  %b = pf.read_param @b : !pf.global<12x8xf32, #P, #pf.sbp<[B]>>
  %yb = pf.matmul %x, %b {transpose_b} : (!pf.global<4x8xf32, #P, #pf.sbp<[B]>>, !pf.global<12x8xf32, #P, #pf.sbp<[B]>>) -> !pf.global<4x12xf32, #P>
  %q = pf.slice %yb {offsets = array<i64: 0, 0>, sizes = array<i64: 4, 4>} : (!pf.global<4x12xf32, #P>) -> !pf.global<4x4xf32, #P>
  %u = pf.read_param @uneven : !W
  %yu = pf.matmul %x, %u {transpose_b} : (!pf.global<4x8xf32, #P, #pf.sbp<[B]>>, !W) -> !pf.global<4x12xf32, #P>
  %a = pf.slice %yu {offsets = array<i64: 0, 0>, sizes = array<i64: 4, 4>} : (!pf.global<4x12xf32, #P>) -> !pf.global<4x4xf32, #P>
  %c = pf.slice %yu {offsets = array<i64: 0, 4>, sizes = array<i64: 4, 8>} : (!pf.global<4x12xf32, #P>) -> !pf.global<4x8xf32, #P>
  %w = pf.read_param @used : !W
  %yw = pf.matmul %x, %w {transpose_b} : (!pf.global<4x8xf32, #P, #pf.sbp<[B]>>, !W) -> !pf.global<4x12xf32, #P>
  %d = pf.slice %yw {offsets = array<i64: 0, 0>, sizes = array<i64: 4, 4>} : (!pf.global<4x12xf32, #P>) -> !pf.global<4x4xf32, #P>
  %s = pf.add %q, %d : (!pf.global<4x4xf32, #P>, !pf.global<4x4xf32, #P>) -> !pf.global<4x4xf32, #P>
  return %s, %c, %yw : !pf.global<4x4xf32, #P>, !pf.global<4x8xf32, #P>, !pf.global<4x12xf32, #P>
}
// CHECK-LABEL: pf.param @b : !pf.global<12x8xf32, #{{.*}}, #pf.sbp<[B]>>
// CHECK: pf.param @uneven : !pf.global<12x8xf32, #{{.*}}, #pf.sbp<[S(0)]>>
// CHECK: pf.param @used : !pf.global<12x8xf32, #{{.*}}, #pf.sbp<[S(0)]>>
