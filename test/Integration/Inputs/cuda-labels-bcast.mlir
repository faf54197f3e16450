// Labels that live on GPU rank 0 only, broadcast (int64) to the two ranks
// that compute the loss, and an input that is a partial sum over those
// ranks (its synthetic data on the first rank, zeros on the other).
#P = #pf.placement<"cuda", [0]>
#P01 = #pf.placement<"cuda", [0, 1]>
#B = #pf.sbp<[B]>
#PS = #pf.sbp<[P]>
pf.param @w : !pf.global<4x8xf32, #P01, #B> = #pf.init<kaiming_uniform(8)>
func.func @step(%x: !pf.global<6x8xf32, #P01, #PS>, %y: !pf.global<6xi64, #P, #B>) -> !pf.global<f32, #P01> {
  %w = pf.read_param @w : !pf.global<4x8xf32, #P01, #B>
  %xb = pf.to_global %x : !pf.global<6x8xf32, #P01, #PS> -> !pf.global<6x8xf32, #P01, #B>
  %h = pf.matmul %xb, %w {transpose_b} : (!pf.global<6x8xf32, #P01, #B>, !pf.global<4x8xf32, #P01, #B>) -> !pf.global<6x4xf32, #P01>
  %yb = pf.to_global %y : !pf.global<6xi64, #P, #B> -> !pf.global<6xi64, #P01, #B>
  %l = pf.softmax_cross_entropy %h, %yb : (!pf.global<6x4xf32, #P01>, !pf.global<6xi64, #P01, #B>) -> !pf.global<f32, #P01>
  return %l : !pf.global<f32, #P01>
}
