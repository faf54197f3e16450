// A one-layer GPT on a GPU rank, the shapes of nanoGPT at toy size (batch 2,
// block 8, width 16, 2 heads, vocabulary 32): token and position
// embeddings (the positions broadcast over the batch), layer norm, the
// causal self-attention (one projection sliced into q, k, v; the mask
// broadcast and filled with -inf; softmax; dropout), a GELU MLP with
// dropout, the final layer norm, the vocabulary head and the cross-entropy
// with ignore_index = -1 (the test feeds tokens and
// targets with some -1s from .npy files). Used by
// convert-pf-to-gpu-gpt.mlir and Integration/gpu-gpt-emulated.test.
#P = #pf.placement<"cuda", [0]>
#B = #pf.sbp<[B]>
pf.param @wte : !pf.global<32x16xf32, #P, #B> = #pf.init<normal(0.0, 0.02)>
pf.param @wpe : !pf.global<8x16xf32, #P, #B> = #pf.init<normal(0.0, 0.02)>
pf.param @ln1_g : !pf.global<16xf32, #P, #B> = #pf.init<ones>
pf.param @ln1_b : !pf.global<16xf32, #P, #B> = #pf.init<zeros>
pf.param @attn_w : !pf.global<48x16xf32, #P, #B> = #pf.init<normal(0.0, 0.2)>
pf.param @attn_b : !pf.global<48xf32, #P, #B> = #pf.init<kaiming_uniform(16)>
pf.param @proj_w : !pf.global<16x16xf32, #P, #B> = #pf.init<normal(0.0, 0.1)>
pf.param @proj_b : !pf.global<16xf32, #P, #B> = #pf.init<zeros>
pf.param @ln2_g : !pf.global<16xf32, #P, #B> = #pf.init<ones>
pf.param @ln2_b : !pf.global<16xf32, #P, #B> = #pf.init<zeros>
pf.param @fc_w : !pf.global<64x16xf32, #P, #B> = #pf.init<normal(0.0, 0.1)>
pf.param @fc_b : !pf.global<64xf32, #P, #B> = #pf.init<kaiming_uniform(16)>
pf.param @fc2_w : !pf.global<16x64xf32, #P, #B> = #pf.init<normal(0.0, 0.1)>
pf.param @fc2_b : !pf.global<16xf32, #P, #B> = #pf.init<zeros>
pf.param @lnf_g : !pf.global<16xf32, #P, #B> = #pf.init<ones>
pf.param @lnf_b : !pf.global<16xf32, #P, #B> = #pf.init<zeros>
pf.param @head_w : !pf.global<32x16xf32, #P, #B> = #pf.init<normal(0.0, 0.2)>
func.func @step(%idx: !pf.global<2x8xi64, #P, #B>, %tgt: !pf.global<2x8xi64, #P, #B>) -> !pf.global<f32, #P> {
  %wte = pf.read_param @wte : !pf.global<32x16xf32, #P, #B>
  %tok = pf.embedding %wte, %idx : (!pf.global<32x16xf32, #P, #B>, !pf.global<2x8xi64, #P, #B>) -> !pf.global<2x8x16xf32, #P>
  %wpe = pf.read_param @wpe : !pf.global<8x16xf32, #P, #B>
  %positions = pf.constant dense<[0, 1, 2, 3, 4, 5, 6, 7]> : tensor<8xi64> : !pf.global<8xi64, #P, #B>
  %pos = pf.embedding %wpe, %positions : (!pf.global<8x16xf32, #P, #B>, !pf.global<8xi64, #P, #B>) -> !pf.global<8x16xf32, #P>
  %posb = pf.broadcast_to %pos {shape = array<i64: 2, 8, 16>} : (!pf.global<8x16xf32, #P>) -> !pf.global<2x8x16xf32, #P>
  %x0 = pf.add %tok, %posb : (!pf.global<2x8x16xf32, #P>, !pf.global<2x8x16xf32, #P>) -> !pf.global<2x8x16xf32, #P>
  %g1 = pf.read_param @ln1_g : !pf.global<16xf32, #P, #B>
  %b1 = pf.read_param @ln1_b : !pf.global<16xf32, #P, #B>
  %h1 = pf.layer_norm %x0, %g1, %b1 : (!pf.global<2x8x16xf32, #P>, !pf.global<16xf32, #P, #B>, !pf.global<16xf32, #P, #B>) -> !pf.global<2x8x16xf32, #P>
  %aw = pf.read_param @attn_w : !pf.global<48x16xf32, #P, #B>
  %qkv0 = pf.matmul %h1, %aw {transpose_b} : (!pf.global<2x8x16xf32, #P>, !pf.global<48x16xf32, #P, #B>) -> !pf.global<2x8x48xf32, #P>
  %ab = pf.read_param @attn_b : !pf.global<48xf32, #P, #B>
  %qkv = pf.bias_add %qkv0, %ab {axis = 2} : (!pf.global<2x8x48xf32, #P>, !pf.global<48xf32, #P, #B>) -> !pf.global<2x8x48xf32, #P>
  %q0 = pf.slice %qkv {offsets = array<i64: 0, 0, 0>, sizes = array<i64: 2, 8, 16>} : (!pf.global<2x8x48xf32, #P>) -> !pf.global<2x8x16xf32, #P>
  %k0 = pf.slice %qkv {offsets = array<i64: 0, 0, 16>, sizes = array<i64: 2, 8, 16>} : (!pf.global<2x8x48xf32, #P>) -> !pf.global<2x8x16xf32, #P>
  %v0 = pf.slice %qkv {offsets = array<i64: 0, 0, 32>, sizes = array<i64: 2, 8, 16>} : (!pf.global<2x8x48xf32, #P>) -> !pf.global<2x8x16xf32, #P>
  %q1 = pf.reshape %q0 : !pf.global<2x8x16xf32, #P> -> !pf.global<2x8x2x8xf32, #P>
  %q = pf.transpose %q1 {perm = array<i64: 0, 2, 1, 3>} : (!pf.global<2x8x2x8xf32, #P>) -> !pf.global<2x2x8x8xf32, #P>
  %k1 = pf.reshape %k0 : !pf.global<2x8x16xf32, #P> -> !pf.global<2x8x2x8xf32, #P>
  %k = pf.transpose %k1 {perm = array<i64: 0, 2, 1, 3>} : (!pf.global<2x8x2x8xf32, #P>) -> !pf.global<2x2x8x8xf32, #P>
  %v1 = pf.reshape %v0 : !pf.global<2x8x16xf32, #P> -> !pf.global<2x8x2x8xf32, #P>
  %v = pf.transpose %v1 {perm = array<i64: 0, 2, 1, 3>} : (!pf.global<2x8x2x8xf32, #P>) -> !pf.global<2x2x8x8xf32, #P>
  %kt = pf.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (!pf.global<2x2x8x8xf32, #P>) -> !pf.global<2x2x8x8xf32, #P>
  %s0 = pf.matmul %q, %kt : (!pf.global<2x2x8x8xf32, #P>, !pf.global<2x2x8x8xf32, #P>) -> !pf.global<2x2x8x8xf32, #P>
  %s = pf.mul_scalar %s0 {scalar = 0.35355339059327373 : f64} : (!pf.global<2x2x8x8xf32, #P>) -> !pf.global<2x2x8x8xf32, #P>
  %mask1 = pf.constant dense<[[[[0, 1, 1, 1, 1, 1, 1, 1], [0, 0, 1, 1, 1, 1, 1, 1], [0, 0, 0, 1, 1, 1, 1, 1], [0, 0, 0, 0, 1, 1, 1, 1], [0, 0, 0, 0, 0, 1, 1, 1], [0, 0, 0, 0, 0, 0, 1, 1], [0, 0, 0, 0, 0, 0, 0, 1], [0, 0, 0, 0, 0, 0, 0, 0]]]]> : tensor<1x1x8x8xi64> : !pf.global<1x1x8x8xi64, #P, #B>
  %mask = pf.broadcast_to %mask1 {shape = array<i64: 2, 2, 8, 8>} : (!pf.global<1x1x8x8xi64, #P, #B>) -> !pf.global<2x2x8x8xi64, #P>
  %sm = pf.masked_fill %s, %mask {value = 0xFFF0000000000000 : f64} : (!pf.global<2x2x8x8xf32, #P>, !pf.global<2x2x8x8xi64, #P>) -> !pf.global<2x2x8x8xf32, #P>
  %att0 = pf.softmax %sm {axis = 3} : (!pf.global<2x2x8x8xf32, #P>) -> !pf.global<2x2x8x8xf32, #P>
  %att = pf.dropout %att0 {p = 0.2 : f64, stream = 11 : i64} : (!pf.global<2x2x8x8xf32, #P>) -> !pf.global<2x2x8x8xf32, #P>
  %y0 = pf.matmul %att, %v : (!pf.global<2x2x8x8xf32, #P>, !pf.global<2x2x8x8xf32, #P>) -> !pf.global<2x2x8x8xf32, #P>
  %y1 = pf.transpose %y0 {perm = array<i64: 0, 2, 1, 3>} : (!pf.global<2x2x8x8xf32, #P>) -> !pf.global<2x8x2x8xf32, #P>
  %y = pf.reshape %y1 : !pf.global<2x8x2x8xf32, #P> -> !pf.global<2x8x16xf32, #P>
  %pw = pf.read_param @proj_w : !pf.global<16x16xf32, #P, #B>
  %o0 = pf.matmul %y, %pw {transpose_b} : (!pf.global<2x8x16xf32, #P>, !pf.global<16x16xf32, #P, #B>) -> !pf.global<2x8x16xf32, #P>
  %pb = pf.read_param @proj_b : !pf.global<16xf32, #P, #B>
  %o = pf.bias_add %o0, %pb {axis = 2} : (!pf.global<2x8x16xf32, #P>, !pf.global<16xf32, #P, #B>) -> !pf.global<2x8x16xf32, #P>
  %x1 = pf.add %x0, %o : (!pf.global<2x8x16xf32, #P>, !pf.global<2x8x16xf32, #P>) -> !pf.global<2x8x16xf32, #P>
  %g2 = pf.read_param @ln2_g : !pf.global<16xf32, #P, #B>
  %b2 = pf.read_param @ln2_b : !pf.global<16xf32, #P, #B>
  %h2 = pf.layer_norm %x1, %g2, %b2 : (!pf.global<2x8x16xf32, #P>, !pf.global<16xf32, #P, #B>, !pf.global<16xf32, #P, #B>) -> !pf.global<2x8x16xf32, #P>
  %fw = pf.read_param @fc_w : !pf.global<64x16xf32, #P, #B>
  %f0 = pf.matmul %h2, %fw {transpose_b} : (!pf.global<2x8x16xf32, #P>, !pf.global<64x16xf32, #P, #B>) -> !pf.global<2x8x64xf32, #P>
  %fb = pf.read_param @fc_b : !pf.global<64xf32, #P, #B>
  %f1 = pf.bias_add %f0, %fb {axis = 2} : (!pf.global<2x8x64xf32, #P>, !pf.global<64xf32, #P, #B>) -> !pf.global<2x8x64xf32, #P>
  %f = pf.activation %f1 {kind = "gelu"} : (!pf.global<2x8x64xf32, #P>) -> !pf.global<2x8x64xf32, #P>
  %f2w = pf.read_param @fc2_w : !pf.global<16x64xf32, #P, #B>
  %m0 = pf.matmul %f, %f2w {transpose_b} : (!pf.global<2x8x64xf32, #P>, !pf.global<16x64xf32, #P, #B>) -> !pf.global<2x8x16xf32, #P>
  %f2b = pf.read_param @fc2_b : !pf.global<16xf32, #P, #B>
  %m1 = pf.bias_add %m0, %f2b {axis = 2} : (!pf.global<2x8x16xf32, #P>, !pf.global<16xf32, #P, #B>) -> !pf.global<2x8x16xf32, #P>
  %m = pf.dropout %m1 {p = 0.1 : f64, stream = 12 : i64} : (!pf.global<2x8x16xf32, #P>) -> !pf.global<2x8x16xf32, #P>
  %x2 = pf.add %x1, %m : (!pf.global<2x8x16xf32, #P>, !pf.global<2x8x16xf32, #P>) -> !pf.global<2x8x16xf32, #P>
  %gf = pf.read_param @lnf_g : !pf.global<16xf32, #P, #B>
  %bf = pf.read_param @lnf_b : !pf.global<16xf32, #P, #B>
  %hf = pf.layer_norm %x2, %gf, %bf : (!pf.global<2x8x16xf32, #P>, !pf.global<16xf32, #P, #B>, !pf.global<16xf32, #P, #B>) -> !pf.global<2x8x16xf32, #P>
  %hw = pf.read_param @head_w : !pf.global<32x16xf32, #P, #B>
  %lg = pf.matmul %hf, %hw {transpose_b} : (!pf.global<2x8x16xf32, #P>, !pf.global<32x16xf32, #P, #B>) -> !pf.global<2x8x32xf32, #P>
  %lg2 = pf.reshape %lg : !pf.global<2x8x32xf32, #P> -> !pf.global<16x32xf32, #P>
  %t2 = pf.reshape %tgt : !pf.global<2x8xi64, #P, #B> -> !pf.global<16xi64, #P>
  %loss = pf.softmax_cross_entropy %lg2, %t2 {ignore_index = -1} : (!pf.global<16x32xf32, #P>, !pf.global<16xi64, #P>) -> !pf.global<f32, #P>
  return %loss : !pf.global<f32, #P>
}
