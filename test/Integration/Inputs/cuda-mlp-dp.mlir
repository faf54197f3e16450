// The one-rank MLP of Conversion/PFToGPU/Inputs/cuda-mlp.mlir, data parallel
// on two "cuda" ranks: the batch split, the parameters replicated (their
// gradients all-reduced).
#P = #pf.placement<"cuda", [0, 1]>
#B = #pf.sbp<[B]>
#S0 = #pf.sbp<[S(0)]>
pf.param @w0 : !pf.global<64x32xf32, #P, #B> = #pf.init<kaiming_uniform(32)>
pf.param @b0 : !pf.global<64xf32, #P, #B> = #pf.init<kaiming_uniform(32)>
pf.param @w1 : !pf.global<10x64xf32, #P, #B> = #pf.init<kaiming_uniform(64)>
pf.param @b1 : !pf.global<10xf32, #P, #B> = #pf.init<kaiming_uniform(64)>
func.func @train_step(%x: !pf.global<16x32xf32, #P, #S0>, %y: !pf.global<16xi64, #P, #S0>) -> !pf.global<f32, #P> {
  %w0 = pf.read_param @w0 : !pf.global<64x32xf32, #P, #B>
  %b0 = pf.read_param @b0 : !pf.global<64xf32, #P, #B>
  %h = pf.matmul %x, %w0 {transpose_b} : (!pf.global<16x32xf32, #P, #S0>, !pf.global<64x32xf32, #P, #B>) -> !pf.global<16x64xf32, #P>
  %hb = pf.bias_add %h, %b0 : (!pf.global<16x64xf32, #P>, !pf.global<64xf32, #P, #B>) -> !pf.global<16x64xf32, #P>
  %a = pf.relu %hb : (!pf.global<16x64xf32, #P>) -> !pf.global<16x64xf32, #P>
  %w1 = pf.read_param @w1 : !pf.global<10x64xf32, #P, #B>
  %b1 = pf.read_param @b1 : !pf.global<10xf32, #P, #B>
  %o = pf.matmul %a, %w1 {transpose_b} : (!pf.global<16x64xf32, #P>, !pf.global<10x64xf32, #P, #B>) -> !pf.global<16x10xf32, #P>
  %ob = pf.bias_add %o, %b1 : (!pf.global<16x10xf32, #P>, !pf.global<10xf32, #P, #B>) -> !pf.global<16x10xf32, #P>
  %l = pf.softmax_cross_entropy %ob, %y : (!pf.global<16x10xf32, #P>, !pf.global<16xi64, #P, #S0>) -> !pf.global<f32, #P>
  return %l : !pf.global<f32, #P>
}
