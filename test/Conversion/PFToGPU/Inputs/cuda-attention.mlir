// A one-rank attention block on a GPU rank: layer norm, query/key
// projections, scores divided by a learned scale, a causal mask (a
// constant) filled with -1e9 (masked_fill), softmax, the weighted sum, a residual difference (sub) and
// a linear head under cross-entropy. Used by convert-pf-to-gpu-attention.mlir
// and Integration/gpu-attention-emulated.test.
#P = #pf.placement<"cuda", [0]>
#B = #pf.sbp<[B]>
pf.param @g : !pf.global<8xf32, #P, #B> = #pf.init<ones>
pf.param @b : !pf.global<8xf32, #P, #B> = #pf.init<zeros>
pf.param @wq : !pf.global<8x8xf32, #P, #B> = #pf.init<kaiming_uniform(8)>
pf.param @wk : !pf.global<8x8xf32, #P, #B> = #pf.init<kaiming_uniform(8)>
pf.param @sc : !pf.global<8x8xf32, #P, #B> = #pf.init<ones>
pf.param @wo : !pf.global<4x8xf32, #P, #B> = #pf.init<kaiming_uniform(8)>
func.func @step(%x: !pf.global<8x8xf32, #P, #B>, %y: !pf.global<8xi64, #P, #B>) -> !pf.global<f32, #P> {
  %g = pf.read_param @g : !pf.global<8xf32, #P, #B>
  %b = pf.read_param @b : !pf.global<8xf32, #P, #B>
  %wq = pf.read_param @wq : !pf.global<8x8xf32, #P, #B>
  %wk = pf.read_param @wk : !pf.global<8x8xf32, #P, #B>
  %sc = pf.read_param @sc : !pf.global<8x8xf32, #P, #B>
  %wo = pf.read_param @wo : !pf.global<4x8xf32, #P, #B>
  %mask = pf.constant dense<[[0, 1, 1, 1, 1, 1, 1, 1], [0, 0, 1, 1, 1, 1, 1, 1], [0, 0, 0, 1, 1, 1, 1, 1], [0, 0, 0, 0, 1, 1, 1, 1], [0, 0, 0, 0, 0, 1, 1, 1], [0, 0, 0, 0, 0, 0, 1, 1], [0, 0, 0, 0, 0, 0, 0, 1], [0, 0, 0, 0, 0, 0, 0, 0]]> : tensor<8x8xi64> : !pf.global<8x8xi64, #P, #B>
  %ln = pf.layer_norm %x, %g, %b {epsilon = 1.0e-5 : f64} : (!pf.global<8x8xf32, #P, #B>, !pf.global<8xf32, #P, #B>, !pf.global<8xf32, #P, #B>) -> !pf.global<8x8xf32, #P>
  %q = pf.matmul %ln, %wq {transpose_b} : (!pf.global<8x8xf32, #P>, !pf.global<8x8xf32, #P, #B>) -> !pf.global<8x8xf32, #P>
  %k = pf.matmul %ln, %wk {transpose_b} : (!pf.global<8x8xf32, #P>, !pf.global<8x8xf32, #P, #B>) -> !pf.global<8x8xf32, #P>
  %s = pf.matmul %q, %k {transpose_b} : (!pf.global<8x8xf32, #P>, !pf.global<8x8xf32, #P>) -> !pf.global<8x8xf32, #P>
  %sd = pf.div %s, %sc : (!pf.global<8x8xf32, #P>, !pf.global<8x8xf32, #P, #B>) -> !pf.global<8x8xf32, #P>
  %m = pf.masked_fill %sd, %mask {value = -1.0e9 : f64} : (!pf.global<8x8xf32, #P>, !pf.global<8x8xi64, #P, #B>) -> !pf.global<8x8xf32, #P>
  %p = pf.softmax %m {axis = 1 : i64} : (!pf.global<8x8xf32, #P>) -> !pf.global<8x8xf32, #P>
  %v = pf.matmul %p, %ln : (!pf.global<8x8xf32, #P>, !pf.global<8x8xf32, #P>) -> !pf.global<8x8xf32, #P>
  %r = pf.sub %v, %q : (!pf.global<8x8xf32, #P>, !pf.global<8x8xf32, #P>) -> !pf.global<8x8xf32, #P>
  %h = pf.matmul %r, %wo {transpose_b} : (!pf.global<8x8xf32, #P>, !pf.global<4x8xf32, #P, #B>) -> !pf.global<8x4xf32, #P>
  %l = pf.softmax_cross_entropy %h, %y : (!pf.global<8x4xf32, #P>, !pf.global<8xi64, #P, #B>) -> !pf.global<f32, #P>
  return %l : !pf.global<f32, #P>
}
