// S(0) -> P (pf.unshard: each rank zero-pads its rows), a matmul on the
// partial sums, P -> B, and a loss: on 4 ranks it must equal the same
// program on one rank (unshard-cpu.test rewrites the placement).
#P = #pf.placement<"cpu", [0, 1, 2, 3]>
pf.param @w : !pf.global<6x3xf32, #P, #pf.sbp<[B]>> = #pf.init<normal(0.0, 0.5)>
func.func @train_step(%x: !pf.global<8x6xf32, #P, #pf.sbp<[S(0)]>>,
                      %y: !pf.global<8xi64, #P, #pf.sbp<[B]>>) -> !pf.global<f32, #P, #pf.sbp<[B]>> {
  %xp = pf.to_global %x : !pf.global<8x6xf32, #P, #pf.sbp<[S(0)]>> -> !pf.global<8x6xf32, #P, #pf.sbp<[P]>>
  %w = pf.read_param @w : !pf.global<6x3xf32, #P, #pf.sbp<[B]>>
  %h = pf.matmul %xp, %w : (!pf.global<8x6xf32, #P, #pf.sbp<[P]>>, !pf.global<6x3xf32, #P, #pf.sbp<[B]>>) -> !pf.global<8x3xf32, #P, #pf.sbp<[P]>>
  %hb = pf.to_global %h : !pf.global<8x3xf32, #P, #pf.sbp<[P]>> -> !pf.global<8x3xf32, #P, #pf.sbp<[B]>>
  %l = pf.softmax_cross_entropy %hb, %y : (!pf.global<8x3xf32, #P, #pf.sbp<[B]>>, !pf.global<8xi64, #P, #pf.sbp<[B]>>) -> !pf.global<f32, #P, #pf.sbp<[B]>>
  return %l : !pf.global<f32, #P, #pf.sbp<[B]>>
}
