// A two-layer MLP on a 2 x 2 grid of "cuda" ranks whose hidden activation
// changes layout from (B, S(0)) to (S(0), S(0)): one point-to-point
// exchange of box intersections (pf.transfer, planExchange: a quarter of
// the rows to two ranks, where gathering and re-slicing moves half), and
// its gradient the exchange back; the parameters replicated.
#P = #pf.placement<"cuda", [[0, 1], [2, 3]]>
#BB = #pf.sbp<[B, B]>
#BS = #pf.sbp<[B, S(0)]>
#SS = #pf.sbp<[S(0), S(0)]>
pf.param @w0 : !pf.global<64x32xf32, #P, #BB> = #pf.init<kaiming_uniform(32)>
pf.param @w1 : !pf.global<10x64xf32, #P, #BB> = #pf.init<kaiming_uniform(64)>
func.func @train_step(%x: !pf.global<16x32xf32, #P, #BS>, %y: !pf.global<16xi64, #P, #SS>) -> !pf.global<f32, #P> {
  %w0 = pf.read_param @w0 : !pf.global<64x32xf32, #P, #BB>
  %h = pf.matmul %x, %w0 {transpose_b} : (!pf.global<16x32xf32, #P, #BS>, !pf.global<64x32xf32, #P, #BB>) -> !pf.global<16x64xf32, #P, #BS>
  %hs = pf.to_global %h : !pf.global<16x64xf32, #P, #BS> -> !pf.global<16x64xf32, #P, #SS>
  %a = pf.relu %hs : (!pf.global<16x64xf32, #P, #SS>) -> !pf.global<16x64xf32, #P, #SS>
  %w1 = pf.read_param @w1 : !pf.global<10x64xf32, #P, #BB>
  %o = pf.matmul %a, %w1 {transpose_b} : (!pf.global<16x64xf32, #P, #SS>, !pf.global<10x64xf32, #P, #BB>) -> !pf.global<16x10xf32, #P, #SS>
  %l = pf.softmax_cross_entropy %o, %y : (!pf.global<16x10xf32, #P, #SS>, !pf.global<16xi64, #P, #SS>) -> !pf.global<f32, #P>
  return %l : !pf.global<f32, #P>
}
