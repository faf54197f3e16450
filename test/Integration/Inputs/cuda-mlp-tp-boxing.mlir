// A two-layer MLP under tensor parallelism on two "cuda" ranks whose
// boxing is a reduce-scatter and an all-gather along an inner axis: x split
// by features (S(1)), w0 by rows, so x @ w0 is a partial sum (P) that
// becomes S(1) (a reduce-scatter of axis 1; its gradient an all-gather of
// axis 1), then w1 split by rows gives P again, all-reduced to B for the
// loss.
#P = #pf.placement<"cuda", [0, 1]>
#B = #pf.sbp<[B]>
#S0 = #pf.sbp<[S(0)]>
#S1 = #pf.sbp<[S(1)]>
#PS = #pf.sbp<[P]>
pf.param @w0 : !pf.global<32x64xf32, #P, #S0> = #pf.init<kaiming_uniform(32)>
pf.param @w1 : !pf.global<64x10xf32, #P, #S0> = #pf.init<kaiming_uniform(64)>
func.func @train_step(%x: !pf.global<16x32xf32, #P, #S1>, %y: !pf.global<16xi64, #P, #B>) -> !pf.global<f32, #P, #B> {
  %w0 = pf.read_param @w0 : !pf.global<32x64xf32, #P, #S0>
  %h = pf.matmul %x, %w0 : (!pf.global<16x32xf32, #P, #S1>, !pf.global<32x64xf32, #P, #S0>) -> !pf.global<16x64xf32, #P, #PS>
  %hs = pf.to_global %h : !pf.global<16x64xf32, #P, #PS> -> !pf.global<16x64xf32, #P, #S1>
  %a = pf.relu %hs : (!pf.global<16x64xf32, #P, #S1>) -> !pf.global<16x64xf32, #P, #S1>
  %w1 = pf.read_param @w1 : !pf.global<64x10xf32, #P, #S0>
  %o = pf.matmul %a, %w1 : (!pf.global<16x64xf32, #P, #S1>, !pf.global<64x10xf32, #P, #S0>) -> !pf.global<16x10xf32, #P, #PS>
  %ob = pf.to_global %o : !pf.global<16x10xf32, #P, #PS> -> !pf.global<16x10xf32, #P, #B>
  %l = pf.softmax_cross_entropy %ob, %y : (!pf.global<16x10xf32, #P, #B>, !pf.global<16xi64, #P, #B>) -> !pf.global<f32, #P, #B>
  return %l : !pf.global<f32, #P, #B>
}
