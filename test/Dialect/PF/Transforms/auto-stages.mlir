// RUN: pf-opt %s -pf-auto-stages="num-stages=2 report" | FileCheck %s
// RUN: pf-opt %s -pf-auto-stages="num-stages=2 balance=params report" -o /dev/null | FileCheck %s --check-prefix=PARAMS
// RUN: pf-opt %s -pf-auto-stages="num-stages=2 num-chunks=2 report" | FileCheck %s --check-prefix=CHUNKS

// A data-parallel MLP (ranks 0-1) whose first matmul is much heavier than
// the rest. FLOPs of forward + input and weight gradients per op (B = 8):
//   l0 matmul 3*2*8*64*32 = 98304 (its input is data: still counted), its
//   bias_add and relu 2*256 each, l1 matmul 3*2*8*32*16 = 24576, relu 2*128,
//   l2 matmul 12288, loss 2*5*128.
// The optimum puts the first matmul alone on stage 0 (any larger stage 0
// costs more); its bias joins stage 1 with the bias_add that reads it.
// Stage 1 runs on ranks 2-3 (the data-parallel layout shifted), the
// activation crosses with its split kept, and the labels go to stage 1.

#P = #pf.placement<"cpu", [0, 1]>
!X = !pf.global<8x64xf32, #P, #pf.sbp<[S(0)]>>
!Y = !pf.global<8xi64, #P, #pf.sbp<[S(0)]>>
pf.param @l0.weight : !pf.global<32x64xf32, #P, #pf.sbp<[B]>> = #pf.init<zeros>
pf.param @l0.bias : !pf.global<32xf32, #P, #pf.sbp<[B]>> = #pf.init<zeros>
pf.param @l1.weight : !pf.global<16x32xf32, #P, #pf.sbp<[B]>> = #pf.init<zeros>
pf.param @l2.weight : !pf.global<16x16xf32, #P, #pf.sbp<[B]>> = #pf.init<zeros>

func.func @step(%x: !X, %y: !Y) -> !pf.global<f32, #P> {
  %w0 = pf.read_param @l0.weight : !pf.global<32x64xf32, #P, #pf.sbp<[B]>>
  %b0 = pf.read_param @l0.bias : !pf.global<32xf32, #P, #pf.sbp<[B]>>
  %h0 = pf.matmul %x, %w0 {transpose_b} : (!X, !pf.global<32x64xf32, #P, #pf.sbp<[B]>>) -> !pf.global<8x32xf32, #P, #pf.sbp<[S(0)]>>
  %c0 = pf.bias_add %h0, %b0 : (!pf.global<8x32xf32, #P, #pf.sbp<[S(0)]>>, !pf.global<32xf32, #P, #pf.sbp<[B]>>) -> !pf.global<8x32xf32, #P, #pf.sbp<[S(0)]>>
  %a0 = pf.relu %c0 : (!pf.global<8x32xf32, #P, #pf.sbp<[S(0)]>>) -> !pf.global<8x32xf32, #P, #pf.sbp<[S(0)]>>
  %w1 = pf.read_param @l1.weight : !pf.global<16x32xf32, #P, #pf.sbp<[B]>>
  %h1 = pf.matmul %a0, %w1 {transpose_b} : (!pf.global<8x32xf32, #P, #pf.sbp<[S(0)]>>, !pf.global<16x32xf32, #P, #pf.sbp<[B]>>) -> !pf.global<8x16xf32, #P>
  %a1 = pf.relu %h1 : (!pf.global<8x16xf32, #P>) -> !pf.global<8x16xf32, #P>
  %w2 = pf.read_param @l2.weight : !pf.global<16x16xf32, #P, #pf.sbp<[B]>>
  %h2 = pf.matmul %a1, %w2 {transpose_b} : (!pf.global<8x16xf32, #P>, !pf.global<16x16xf32, #P, #pf.sbp<[B]>>) -> !pf.global<8x16xf32, #P>
  %loss = pf.softmax_cross_entropy %h2, %y : (!pf.global<8x16xf32, #P>, !Y) -> !pf.global<f32, #P>
  return %loss : !pf.global<f32, #P>
}

// CHECK: pf-auto-stages: 7 ops into 2 stage(s) x 1 chunk(s), balance=flops
// CHECK-NEXT: stage 0 on #pf.placement<"cpu", [0, 1]>: ops 0..0 (pf.matmul .. pf.matmul), cost 98304 (71.2%)
// CHECK-NEXT: stage 1 on #pf.placement<"cpu", [2, 3]>: ops 1..6 (pf.bias_add .. pf.softmax_cross_entropy), cost 39680 (28.8%), input crossing 1024 bytes
// CHECK-NEXT: max stage cost 98304, ideal 68992, imbalance 1.4249, bytes crossing cuts 1024
// CHECK-DAG: #[[P0:.+]] = #pf.placement<"cpu", [0, 1]>
// CHECK-DAG: #[[P1:.+]] = #pf.placement<"cpu", [2, 3]>
// CHECK: pf.param @l0.weight : !pf.global<32x64xf32, #[[P0]], #pf.sbp<[B]>>
// CHECK: pf.param @l0.bias : !pf.global<32xf32, #[[P1]], #pf.sbp<[B]>>
// CHECK: pf.param @l1.weight : !pf.global<16x32xf32, #[[P1]], #pf.sbp<[B]>>
// CHECK: pf.param @l2.weight : !pf.global<16x16xf32, #[[P1]], #pf.sbp<[B]>>
// CHECK: func.func @step(%{{.*}}: !pf.global<8x64xf32, #[[P0]], #pf.sbp<[S(0)]>>, %{{.*}}: !pf.global<8xi64, #[[P1]], #pf.sbp<[S(0)]>>) -> !pf.global<f32, #[[P1]]>
// CHECK: pf.matmul {{.*}}{pf.stage = 0 : i64, transpose_b} : {{.*}} -> !pf.global<8x32xf32, #[[P0]], #pf.sbp<[S(0)]>>
// CHECK: %[[M:.+]] = pf.to_global %{{.*}} : !pf.global<8x32xf32, #[[P0]], #pf.sbp<[S(0)]>> -> !pf.global<8x32xf32, #[[P1]], #pf.sbp<[S(0)]>>
// CHECK: pf.bias_add %[[M]], %{{.*}} {pf.stage = 1 : i64}
// CHECK: pf.softmax_cross_entropy {{.*}}{pf.stage = 1 : i64}
// CHECK: return {{.*}} : !pf.global<f32, #[[P1]]>

// Parameter bytes: l0.weight 8192 against 128 + 2048 + 1024.
// PARAMS: stage 0 on #pf.placement<"cpu", [0, 1]>: ops 0..0 (pf.matmul .. pf.matmul), cost 8192
// PARAMS: stage 1 on #pf.placement<"cpu", [2, 3]>: ops 1..6 {{.*}}, cost 3200

// Four virtual stages on two pipeline ranks: stage g on rank g mod 2.
// CHUNKS: stage 0 on #pf.placement<"cpu", [0, 1]>: ops 0..0
// CHUNKS: stage 1 on #pf.placement<"cpu", [2, 3]>
// CHUNKS: stage 2 on #pf.placement<"cpu", [0, 1]>
// CHUNKS: stage 3 on #pf.placement<"cpu", [2, 3]>
// CHUNKS: per rank: 110592 27392
// CHUNKS: pf.softmax_cross_entropy {{.*}}{pf.stage = 3 : i64}
