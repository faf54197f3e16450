// A gated MLP block with element-wise chains (Integration/fused-elementwise.test):
//   h = x W1^T, u = x W2^T, k = x W3^T
//   z = sigmoid(h + k) * tanh(u) - h * sigmoid(k)
//   loss = cross_entropy(z Wo^T, y)
// Forward and backward have runs of consecutive element-wise ops that the
// generated kernels fuse (some results read again by the backward, some
// only inside their run).
#P = #pf.placement<"cpu", [0]>
#B = #pf.sbp<[B]>
!T = !pf.global<16x32xf32, #P>
!W = !pf.global<32x32xf32, #P, #B>
pf.param @w1 : !W = #pf.init<kaiming_uniform(32)>
pf.param @w2 : !W = #pf.init<kaiming_uniform(32)>
pf.param @w3 : !W = #pf.init<kaiming_uniform(32)>
pf.param @wo : !pf.global<10x32xf32, #P, #B> = #pf.init<kaiming_uniform(32)>
func.func @step(%x: !pf.global<16x32xf32, #P, #B>, %y: !pf.global<16xi64, #P, #B>) -> !pf.global<f32, #P> {
  %w1 = pf.read_param @w1 : !W
  %w2 = pf.read_param @w2 : !W
  %w3 = pf.read_param @w3 : !W
  %wo = pf.read_param @wo : !pf.global<10x32xf32, #P, #B>
  %h = pf.matmul %x, %w1 {transpose_b} : (!pf.global<16x32xf32, #P, #B>, !W) -> !T
  %u = pf.matmul %x, %w2 {transpose_b} : (!pf.global<16x32xf32, #P, #B>, !W) -> !T
  %k = pf.matmul %x, %w3 {transpose_b} : (!pf.global<16x32xf32, #P, #B>, !W) -> !T
  %hk = pf.add %h, %k : (!T, !T) -> !T
  %g = pf.activation %hk {kind = "sigmoid"} : (!T) -> !T
  %t = pf.activation %u {kind = "tanh"} : (!T) -> !T
  %gt = pf.mul %g, %t : (!T, !T) -> !T
  %sk = pf.activation %k {kind = "sigmoid"} : (!T) -> !T
  %hs = pf.mul %h, %sk : (!T, !T) -> !T
  %z = pf.sub %gt, %hs : (!T, !T) -> !T
  %o = pf.matmul %z, %wo {transpose_b} : (!T, !pf.global<10x32xf32, #P, #B>) -> !pf.global<16x10xf32, #P>
  %l = pf.softmax_cross_entropy %o, %y : (!pf.global<16x10xf32, #P>, !pf.global<16xi64, #P, #B>) -> !pf.global<f32, #P>
  return %l : !pf.global<f32, #P>
}
