// An MLP whose output layer is split by class (a 2 x 2 mesh: the batch split across its rows, the classes within them): the logits
// [16, 96] are split by class, so the cross-entropy takes Megatron's
// vocabulary-parallel signature (the rows' max and sums all-reduced) rather
// than gathering the logits. Used by vocab-xent-cpu.test.

#P = #pf.placement<"cpu", [[0, 1], [2, 3]]>
#B = #pf.sbp<[B, B]>
#SX = #pf.sbp<[S(0), B]>
#SV = #pf.sbp<[B, S(0)]>

pf.param @m.l0.weight : !pf.global<128x64xf32, #P, #B> = #pf.init<kaiming_uniform(64)>
pf.param @m.l0.bias : !pf.global<128xf32, #P, #B> = #pf.init<kaiming_uniform(64)>
pf.param @m.l1.weight : !pf.global<96x128xf32, #P, #SV> = #pf.init<kaiming_uniform(128)>
pf.param @m.l1.bias : !pf.global<96xf32, #P, #SV> = #pf.init<kaiming_uniform(128)>

func.func @train_step(%x: !pf.global<16x64xf32, #P, #SX>,
                      %y: !pf.global<16xi64, #P, #SX>) -> !pf.global<f32, #P> {
  %w0 = pf.read_param @m.l0.weight : !pf.global<128x64xf32, #P, #B>
  %b0 = pf.read_param @m.l0.bias : !pf.global<128xf32, #P, #B>
  %h0 = pf.matmul %x, %w0 {transpose_b} : (!pf.global<16x64xf32, #P, #SX>, !pf.global<128x64xf32, #P, #B>) -> !pf.global<16x128xf32, #P>
  %h0b = pf.bias_add %h0, %b0 : (!pf.global<16x128xf32, #P>, !pf.global<128xf32, #P, #B>) -> !pf.global<16x128xf32, #P>
  %a0 = pf.relu %h0b : (!pf.global<16x128xf32, #P>) -> !pf.global<16x128xf32, #P>
  %w1 = pf.read_param @m.l1.weight : !pf.global<96x128xf32, #P, #SV>
  %b1 = pf.read_param @m.l1.bias : !pf.global<96xf32, #P, #SV>
  %h1 = pf.matmul %a0, %w1 {transpose_b} : (!pf.global<16x128xf32, #P>, !pf.global<96x128xf32, #P, #SV>) -> !pf.global<16x96xf32, #P>
  %h1b = pf.bias_add %h1, %b1 : (!pf.global<16x96xf32, #P>, !pf.global<96xf32, #P, #SV>) -> !pf.global<16x96xf32, #P>
  %a1 = pf.relu %h1b : (!pf.global<16x96xf32, #P>) -> !pf.global<16x96xf32, #P>
  %loss = pf.softmax_cross_entropy %a1, %y : (!pf.global<16x96xf32, #P>, !pf.global<16xi64, #P, #SX>) -> !pf.global<f32, #P>
  return %loss : !pf.global<f32, #P>
}
