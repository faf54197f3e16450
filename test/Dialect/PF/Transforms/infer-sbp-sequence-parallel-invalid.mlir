// RUN: pf-opt %s --split-input-file --pf-infer-sbp=sequence-parallel=true --verify-diagnostics | FileCheck %s

// Sequence parallelism without a tensor-parallel axis: a data-parallel
// MLP has no partial-sum activation to reduce-scatter along the sequence.
#P = #pf.placement<"cpu", [0, 1]>
// expected-error @+1 {{sequence parallelism needs a tensor-parallel axis, but no activation of this program is a partial sum}}
func.func @data_parallel(%x: !pf.global<4x8x16xf32, #P, #pf.sbp<[S(0)]>>, %w: !pf.global<16x16xf32, #P, #pf.sbp<[B]>>) -> !pf.global<4x8x16xf32, #P> {
  %h = pf.matmul %x, %w : (!pf.global<4x8x16xf32, #P, #pf.sbp<[S(0)]>>, !pf.global<16x16xf32, #P, #pf.sbp<[B]>>) -> !pf.global<4x8x16xf32, #P>
  return %h : !pf.global<4x8x16xf32, #P>
}

// -----

// A sequence of 7 tokens does not divide over two tensor-parallel ranks:
// the error is at the row-parallel GEMM whose sum would be scattered.
#P = #pf.placement<"cpu", [0, 1]>
func.func @odd_sequence(%x: !pf.global<2x7x16xf32, #P, #pf.sbp<[S(2)]>>, %w: !pf.global<16x16xf32, #P, #pf.sbp<[S(0)]>>) -> !pf.global<2x7x16xf32, #P> {
  // expected-error @+1 {{sequence parallelism splits the sequence axis (axis 1, 7 long) of this partial-sum result over the 2 ranks of hierarchy dimension 0, which does not divide it}}
  %o = pf.matmul %x, %w : (!pf.global<2x7x16xf32, #P, #pf.sbp<[S(2)]>>, !pf.global<16x16xf32, #P, #pf.sbp<[S(0)]>>) -> !pf.global<2x7x16xf32, #P>
  %r = pf.relu %o : (!pf.global<2x7x16xf32, #P>) -> !pf.global<2x7x16xf32, #P>
  return %r : !pf.global<2x7x16xf32, #P>
}

// -----

// Not an error: tensor parallel within the rows of a 2 x 2 mesh, data
// parallel over them. The sequence of 6 divides over the 2 tensor-parallel
// ranks, so the row-parallel sum [S(0), P] is scattered along it on the
// tensor-parallel dimension only, the batch split kept.
#M = #pf.placement<"cpu", [[0, 1], [2, 3]]>
func.func @mesh(%x: !pf.global<2x6x16xf32, #M, #pf.sbp<[S(0), S(2)]>>, %w: !pf.global<16x16xf32, #M, #pf.sbp<[B, S(0)]>>, %b: !pf.global<2x6x16xf32, #M, #pf.sbp<[S(0), B]>>) -> !pf.global<2x6x16xf32, #M> {
  %o = pf.matmul %x, %w : (!pf.global<2x6x16xf32, #M, #pf.sbp<[S(0), S(2)]>>, !pf.global<16x16xf32, #M, #pf.sbp<[B, S(0)]>>) -> !pf.global<2x6x16xf32, #M>
  %r = pf.add %b, %o : (!pf.global<2x6x16xf32, #M, #pf.sbp<[S(0), B]>>, !pf.global<2x6x16xf32, #M>) -> !pf.global<2x6x16xf32, #M>
  %n = pf.relu %r : (!pf.global<2x6x16xf32, #M>) -> !pf.global<2x6x16xf32, #M>
  return %n : !pf.global<2x6x16xf32, #M>
}
// CHECK-LABEL: func.func @mesh
// CHECK: pf.matmul {{.*}} -> !pf.global<2x6x16xf32, #{{.*}}, #pf.sbp<[S(0), P]>>
// CHECK: pf.add {{.*}}pf.sbp_operands = [#pf.sbp<[S(0), S(1)]>, #pf.sbp<[S(0), S(1)]>]{{.*}} -> !pf.global<2x6x16xf32, #{{.*}}, #pf.sbp<[S(0), S(1)]>>
