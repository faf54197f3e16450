// The seeds' two-stage pipeline MLP (OneFlow "pipelining parallelism" guide)
// written by hand in the pf dialect: forward pass and loss of one step.
//   stage 0 on rank 0: Flatten, Linear(784, 512), ReLU
//   stage 1 on rank 1: Linear(512, 512), ReLU, Linear(512, 10), ReLU,
//                      CrossEntropyLoss
// Parameters use nn.Linear's default initialisation; every user-fixed layout
// is Broadcast, as in the seed. Results of compute ops have no SBP yet:
// pf-infer-sbp chooses them.

#P0 = #pf.placement<"cpu", [0]>
#P1 = #pf.placement<"cpu", [1]>
#B = #pf.sbp<[B]>

pf.param @m_stage0.linear0.weight : !pf.global<512x784xf32, #P0, #B> = #pf.init<kaiming_uniform(784)>
pf.param @m_stage0.linear0.bias : !pf.global<512xf32, #P0, #B> = #pf.init<kaiming_uniform(784)>
pf.param @m_stage1.linear1.weight : !pf.global<512x512xf32, #P1, #B> = #pf.init<kaiming_uniform(512)>
pf.param @m_stage1.linear1.bias : !pf.global<512xf32, #P1, #B> = #pf.init<kaiming_uniform(512)>
pf.param @m_stage1.linear2.weight : !pf.global<10x512xf32, #P1, #B> = #pf.init<kaiming_uniform(512)>
pf.param @m_stage1.linear2.bias : !pf.global<10xf32, #P1, #B> = #pf.init<kaiming_uniform(512)>

func.func @train_step(%x: !pf.global<16x1x28x28xf32, #P0, #B>,
                      %y: !pf.global<16xi64, #P1, #B>) -> !pf.global<f32, #P1> {
  // Stage 0.
  %w0 = pf.read_param @m_stage0.linear0.weight {pf.stage = 0} : !pf.global<512x784xf32, #P0, #B>
  %b0 = pf.read_param @m_stage0.linear0.bias {pf.stage = 0} : !pf.global<512xf32, #P0, #B>
  %f = pf.flatten %x {pf.stage = 0} : (!pf.global<16x1x28x28xf32, #P0, #B>) -> !pf.global<16x784xf32, #P0>
  %h0 = pf.matmul %f, %w0 {transpose_b, pf.stage = 0} : (!pf.global<16x784xf32, #P0>, !pf.global<512x784xf32, #P0, #B>) -> !pf.global<16x512xf32, #P0>
  %h0b = pf.bias_add %h0, %b0 {pf.stage = 0} : (!pf.global<16x512xf32, #P0>, !pf.global<512xf32, #P0, #B>) -> !pf.global<16x512xf32, #P0>
  %a0 = pf.relu %h0b {pf.stage = 0} : (!pf.global<16x512xf32, #P0>) -> !pf.global<16x512xf32, #P0>

  // The seed's out_stage0.to_global(placement=P1, sbp=BROADCAST).
  %in1 = pf.to_global %a0 : !pf.global<16x512xf32, #P0> -> !pf.global<16x512xf32, #P1, #B>

  // Stage 1.
  %w1 = pf.read_param @m_stage1.linear1.weight {pf.stage = 1} : !pf.global<512x512xf32, #P1, #B>
  %b1 = pf.read_param @m_stage1.linear1.bias {pf.stage = 1} : !pf.global<512xf32, #P1, #B>
  %h1 = pf.matmul %in1, %w1 {transpose_b, pf.stage = 1} : (!pf.global<16x512xf32, #P1, #B>, !pf.global<512x512xf32, #P1, #B>) -> !pf.global<16x512xf32, #P1>
  %h1b = pf.bias_add %h1, %b1 {pf.stage = 1} : (!pf.global<16x512xf32, #P1>, !pf.global<512xf32, #P1, #B>) -> !pf.global<16x512xf32, #P1>
  %a1 = pf.relu %h1b {pf.stage = 1} : (!pf.global<16x512xf32, #P1>) -> !pf.global<16x512xf32, #P1>
  %w2 = pf.read_param @m_stage1.linear2.weight {pf.stage = 1} : !pf.global<10x512xf32, #P1, #B>
  %b2 = pf.read_param @m_stage1.linear2.bias {pf.stage = 1} : !pf.global<10xf32, #P1, #B>
  %h2 = pf.matmul %a1, %w2 {transpose_b, pf.stage = 1} : (!pf.global<16x512xf32, #P1>, !pf.global<10x512xf32, #P1, #B>) -> !pf.global<16x10xf32, #P1>
  %h2b = pf.bias_add %h2, %b2 {pf.stage = 1} : (!pf.global<16x10xf32, #P1>, !pf.global<10xf32, #P1, #B>) -> !pf.global<16x10xf32, #P1>
  %a2 = pf.relu %h2b {pf.stage = 1} : (!pf.global<16x10xf32, #P1>) -> !pf.global<16x10xf32, #P1>
  %loss = pf.softmax_cross_entropy %a2, %y {pf.stage = 1} : (!pf.global<16x10xf32, #P1>, !pf.global<16xi64, #P1, #B>) -> !pf.global<f32, #P1>
  return %loss : !pf.global<f32, #P1>
}
