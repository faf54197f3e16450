// RUN: pf-opt %s --pf-training-pipeline --pf-spmd-pipeline="sequence-parallel=true boxing-report=-" -o /dev/null | FileCheck %s --check-prefix=SP
// RUN: pf-opt %s --pf-training-pipeline --pf-spmd-pipeline="boxing-report=-" -o /dev/null | FileCheck %s --check-prefix=TP
// RUN: pf-opt %s --pf-training-pipeline --pf-spmd-pipeline="sequence-parallel=true" | FileCheck %s --check-prefix=IR

// A pre-norm transformer MLP block under Megatron's tensor parallelism on
// two ranks ([batch 2, sequence 8, hidden 16]): fc1 column-parallel, fc2
// row-parallel, then dropout, the residual, a second layer norm and a
// column-parallel head. Without sequence parallelism the row-parallel
// output is all-reduced (forward, and the gradient of fc1's input
// backward); with it, reduce-scattered along the sequence and all-gathered
// before the next column-parallel GEMM: the same bytes.
#P = #pf.placement<"cpu", [0, 1]>
pf.param @ln1.w : !pf.global<16xf32, #P, #pf.sbp<[B]>> = #pf.init<ones>
pf.param @ln1.b : !pf.global<16xf32, #P, #pf.sbp<[B]>> = #pf.init<zeros>
pf.param @fc1.w : !pf.global<64x16xf32, #P, #pf.sbp<[S(0)]>> = #pf.init<normal(0.0, 0.02)>
pf.param @fc1.b : !pf.global<64xf32, #P, #pf.sbp<[S(0)]>> = #pf.init<zeros>
pf.param @fc2.w : !pf.global<16x64xf32, #P, #pf.sbp<[S(1)]>> = #pf.init<normal(0.0, 0.02)>
pf.param @fc2.b : !pf.global<16xf32, #P, #pf.sbp<[B]>> = #pf.init<zeros>
pf.param @ln2.w : !pf.global<16xf32, #P, #pf.sbp<[B]>> = #pf.init<ones>
pf.param @ln2.b : !pf.global<16xf32, #P, #pf.sbp<[B]>> = #pf.init<zeros>
pf.param @head.w : !pf.global<32x16xf32, #P, #pf.sbp<[S(0)]>> = #pf.init<normal(0.0, 0.02)>
func.func @block(%x: !pf.global<2x8x16xf32, #P, #pf.sbp<[B]>>, %y: !pf.global<16xi64, #P, #pf.sbp<[B]>>) -> !pf.global<f32, #P> {
  %g1 = pf.read_param @ln1.w : !pf.global<16xf32, #P, #pf.sbp<[B]>>
  %b1 = pf.read_param @ln1.b : !pf.global<16xf32, #P, #pf.sbp<[B]>>
  %a = pf.layer_norm %x, %g1, %b1 : (!pf.global<2x8x16xf32, #P, #pf.sbp<[B]>>, !pf.global<16xf32, #P, #pf.sbp<[B]>>, !pf.global<16xf32, #P, #pf.sbp<[B]>>) -> !pf.global<2x8x16xf32, #P>
  %w1 = pf.read_param @fc1.w : !pf.global<64x16xf32, #P, #pf.sbp<[S(0)]>>
  %h = pf.matmul %a, %w1 {transpose_b} : (!pf.global<2x8x16xf32, #P>, !pf.global<64x16xf32, #P, #pf.sbp<[S(0)]>>) -> !pf.global<2x8x64xf32, #P>
  %c1 = pf.read_param @fc1.b : !pf.global<64xf32, #P, #pf.sbp<[S(0)]>>
  %hb = pf.bias_add %h, %c1 {axis = 2 : i64} : (!pf.global<2x8x64xf32, #P>, !pf.global<64xf32, #P, #pf.sbp<[S(0)]>>) -> !pf.global<2x8x64xf32, #P>
  %act = pf.activation %hb {kind = "gelu"} : (!pf.global<2x8x64xf32, #P>) -> !pf.global<2x8x64xf32, #P>
  %w2 = pf.read_param @fc2.w : !pf.global<16x64xf32, #P, #pf.sbp<[S(1)]>>
  %o = pf.matmul %act, %w2 {transpose_b} : (!pf.global<2x8x64xf32, #P>, !pf.global<16x64xf32, #P, #pf.sbp<[S(1)]>>) -> !pf.global<2x8x16xf32, #P>
  %c2 = pf.read_param @fc2.b : !pf.global<16xf32, #P, #pf.sbp<[B]>>
  %ob = pf.bias_add %o, %c2 {axis = 2 : i64} : (!pf.global<2x8x16xf32, #P>, !pf.global<16xf32, #P, #pf.sbp<[B]>>) -> !pf.global<2x8x16xf32, #P>
  %d = pf.dropout %ob {p = 1.000000e-01 : f64, stream = 1 : i64} : (!pf.global<2x8x16xf32, #P>) -> !pf.global<2x8x16xf32, #P>
  %r = pf.add %x, %d : (!pf.global<2x8x16xf32, #P, #pf.sbp<[B]>>, !pf.global<2x8x16xf32, #P>) -> !pf.global<2x8x16xf32, #P>
  %g2 = pf.read_param @ln2.w : !pf.global<16xf32, #P, #pf.sbp<[B]>>
  %b2 = pf.read_param @ln2.b : !pf.global<16xf32, #P, #pf.sbp<[B]>>
  %n = pf.layer_norm %r, %g2, %b2 : (!pf.global<2x8x16xf32, #P>, !pf.global<16xf32, #P, #pf.sbp<[B]>>, !pf.global<16xf32, #P, #pf.sbp<[B]>>) -> !pf.global<2x8x16xf32, #P>
  %wh = pf.read_param @head.w : !pf.global<32x16xf32, #P, #pf.sbp<[S(0)]>>
  %logits = pf.matmul %n, %wh {transpose_b} : (!pf.global<2x8x16xf32, #P>, !pf.global<32x16xf32, #P, #pf.sbp<[S(0)]>>) -> !pf.global<2x8x32xf32, #P>
  %flat = pf.reshape %logits : !pf.global<2x8x32xf32, #P> -> !pf.global<16x32xf32, #P>
  %l = pf.softmax_cross_entropy %flat, %y : (!pf.global<16x32xf32, #P>, !pf.global<16xi64, #P, #pf.sbp<[B]>>) -> !pf.global<f32, #P>
  return %l : !pf.global<f32, #P>
}

// Megatron's sequence parallelism: reduce-scattered right after the
// row-parallel GEMM (the bias, dropout, residual and second layer norm run
// on half the tokens; the input is sliced), all-gathered before the head;
// backward the mirror: the head's input gradient reduce-scattered, gathered
// before fc2's, fc1's input gradient reduce-scattered (the input needs no
// gradient, so nothing gathers it). Activations move 2560 bytes instead of
// 3072, the layer norms' and fc2's bias gradients (partial sums of the
// sequence shards) are all-reduced at the update.
// SP: pf boxing report: 13 communication op(s)
// SP-NEXT: reduce_scatter 2x8x16xf32 {{.*}}[P]> -> #pf.sbp<[S(1)]> {{.*}}: 512 bytes/rank at {{.*}}.mlir":34:
// SP-NEXT: shard 2x8x16xf32 {{.*}}[B]> -> #pf.sbp<[S(1)]> {{.*}}: 0 bytes/rank at {{.*}}.mlir":36:
// SP-NEXT: all_gather 2x8x16xf32 {{.*}}[S(1)]> -> #pf.sbp<[B]> {{.*}}: 512 bytes/rank at {{.*}}.mlir":41:
// SP-NEXT: reduce_scatter 2x8x16xf32 {{.*}}[P]> -> #pf.sbp<[S(1)]> {{.*}}: 512 bytes/rank at {{.*}}.mlir":39:
// SP-NEXT: all_gather 2x8x16xf32 {{.*}}[S(1)]> -> #pf.sbp<[B]> {{.*}}: 512 bytes/rank at {{.*}}.mlir":32:
// SP-NEXT: reduce_scatter 2x8x16xf32 {{.*}}[P]> -> #pf.sbp<[S(1)]> {{.*}}: 512 bytes/rank at {{.*}}.mlir":25:
// SP-NEXT: all_reduce 16xf32 {{.*}}[P]> -> #pf.sbp<[B]> {{.*}}: 64 bytes/rank at {{.*}}.mlir":13:
// SP-NEXT: all_reduce 16xf32 {{.*}}[P]> -> #pf.sbp<[B]> {{.*}}: 64 bytes/rank at {{.*}}.mlir":14:
// SP-NEXT: all_reduce 16xf32 {{.*}}[P]> -> #pf.sbp<[B]> {{.*}}: 64 bytes/rank at {{.*}}.mlir":18:
// SP-NEXT: all_reduce 16xf32 {{.*}}[P]> -> #pf.sbp<[B]> {{.*}}: 64 bytes/rank at {{.*}}.mlir":19:
// SP-NEXT: all_reduce 16xf32 {{.*}}[P]> -> #pf.sbp<[B]> {{.*}}: 64 bytes/rank at {{.*}}.mlir":20:
// SP-NEXT: softmax_cross_entropy 16x32xf32
// SP-NEXT: softmax_cross_entropy_grad 16x32xf32
// SP-NEXT: total: 3392 bytes/rank per step

// Off (the default): the all-reduces of Megatron's tensor parallelism, the
// layer norms' gradients whole on every rank.
// TP: pf boxing report: 6 communication op(s)
// TP-NOT: reduce_scatter
// TP-NOT: all_gather
// TP: all_reduce 2x8x16xf32 {{.*}}[P]> -> #pf.sbp<[B]> {{.*}}: 1024 bytes/rank at {{.*}}.mlir":36:
// TP-NEXT: all_reduce 2x8x16xf32 {{.*}}[P]> -> #pf.sbp<[B]> {{.*}}: 1024 bytes/rank at {{.*}}.mlir":39:
// TP-NEXT: all_reduce 2x8x16xf32 {{.*}}[P]> -> #pf.sbp<[B]> {{.*}}: 1024 bytes/rank at {{.*}}.mlir":25:
// TP-NOT: reduce_scatter
// TP-NOT: all_gather
// TP: total: 3584 bytes/rank per step

// The layouts: the layer norm's parameter gradients are partial sums over
// the tensor-parallel ranks (each rank's tokens give an addend).
// IR-DAG: pf.param @ln1.w.grad : !pf.global<16xf32, #{{.*}}, #pf.sbp<[P]>>
// IR-DAG: pf.param @ln2.b.grad : !pf.global<16xf32, #{{.*}}, #pf.sbp<[P]>>
// IR-DAG: pf.param @fc2.b.grad : !pf.global<16xf32, #{{.*}}, #pf.sbp<[P]>>
// IR-DAG: pf.param @fc1.w.grad : !pf.global<64x16xf32, #{{.*}}, #pf.sbp<[S(0)]>>
// IR-LABEL: func.func @block
// IR: pf.layer_norm %arg0, {{.*}} -> !pf.global<2x8x16xf32, #{{.*}}, #pf.sbp<[B]>>
// IR: %[[O:.*]] = pf.matmul {{.*}} -> !pf.global<2x8x16xf32, #{{.*}}, #pf.sbp<[P]>>
// IR: %[[RS:.*]] = pf.reduce_scatter %[[O]] {axis = 1 : i64, {{.*}}[P]>> -> {{.*}}[S(1)]>>
// IR: %[[OB:.*]] = pf.bias_add %[[RS]], {{.*}} -> !pf.global<2x8x16xf32, #{{.*}}, #pf.sbp<[S(1)]>>
// IR: %[[D:.*]] = pf.dropout %[[OB]] {{.*}} -> !pf.global<2x8x16xf32, #{{.*}}, #pf.sbp<[S(1)]>>
// IR: %[[X:.*]] = pf.shard %arg0 {{.*}}[B]>> -> {{.*}}[S(1)]>>
// IR: %[[R:.*]] = pf.add %[[X]], %[[D]] {{.*}} -> !pf.global<2x8x16xf32, #{{.*}}, #pf.sbp<[S(1)]>>
// IR: %[[N:.*]] = pf.layer_norm %[[R]], {{.*}} -> !pf.global<2x8x16xf32, #{{.*}}, #pf.sbp<[S(1)]>>
// IR: %[[G:.*]] = pf.all_gather %[[N]] {axis = 1 : i64
// IR: pf.matmul %[[G]], {{.*}} -> !pf.global<2x8x32xf32, #{{.*}}, #pf.sbp<[S(2)]>>
// IR: pf.layer_norm_grad_params %[[R]], {{.*}} -> (!pf.global<16xf32, #{{.*}}, #pf.sbp<[P]>>, !pf.global<16xf32, #{{.*}}, #pf.sbp<[P]>>)
