// A small convolutional network on one CPU rank, for end-to-end checks of
// the conv, pooling and batch-norm gradients:
//   conv 1->4 (3x3, pad 1) + bias, batch norm, relu, max pool 2,
//   conv 4->8 (3x3) + bias, relu, avg pool 2, global average pool,
//   flatten, linear 8->10, cross-entropy.
#P = #pf.placement<"cpu", [0]>
#B = #pf.sbp<[B]>

pf.param @conv1.weight : !pf.global<4x1x3x3xf32, #P, #B> = #pf.init<kaiming_uniform(9)>
pf.param @conv1.bias : !pf.global<4xf32, #P, #B> = #pf.init<kaiming_uniform(9)>
pf.param @bn1.weight : !pf.global<4xf32, #P, #B> = #pf.init<ones>
pf.param @bn1.bias : !pf.global<4xf32, #P, #B> = #pf.init<zeros>
pf.param @bn1.running_mean : !pf.global<4xf32, #P, #B> = #pf.init<zeros> buffer
pf.param @bn1.running_var : !pf.global<4xf32, #P, #B> = #pf.init<ones> buffer
pf.param @conv2.weight : !pf.global<8x4x3x3xf32, #P, #B> = #pf.init<kaiming_uniform(36)>
pf.param @conv2.bias : !pf.global<8xf32, #P, #B> = #pf.init<kaiming_uniform(36)>
pf.param @fc.weight : !pf.global<10x8xf32, #P, #B> = #pf.init<kaiming_uniform(8)>
pf.param @fc.bias : !pf.global<10xf32, #P, #B> = #pf.init<kaiming_uniform(8)>

func.func @train_step(%x: !pf.global<8x1x12x12xf32, #P, #B>, %y: !pf.global<8xi64, #P, #B>) -> !pf.global<f32, #P> {
  %w1 = pf.read_param @conv1.weight : !pf.global<4x1x3x3xf32, #P, #B>
  %b1 = pf.read_param @conv1.bias : !pf.global<4xf32, #P, #B>
  %c1 = pf.conv2d %x, %w1 {padding = array<i64: 1, 1>} : (!pf.global<8x1x12x12xf32, #P, #B>, !pf.global<4x1x3x3xf32, #P, #B>) -> !pf.global<8x4x12x12xf32, #P>
  %c1b = pf.bias_add %c1, %b1 : (!pf.global<8x4x12x12xf32, #P>, !pf.global<4xf32, #P, #B>) -> !pf.global<8x4x12x12xf32, #P>
  %g = pf.read_param @bn1.weight : !pf.global<4xf32, #P, #B>
  %be = pf.read_param @bn1.bias : !pf.global<4xf32, #P, #B>
  %rm = pf.read_param @bn1.running_mean : !pf.global<4xf32, #P, #B>
  %rv = pf.read_param @bn1.running_var : !pf.global<4xf32, #P, #B>
  %n, %nm, %nv = pf.batch_norm %c1b, %g, %be, %rm, %rv : (!pf.global<8x4x12x12xf32, #P>, !pf.global<4xf32, #P, #B>, !pf.global<4xf32, #P, #B>, !pf.global<4xf32, #P, #B>, !pf.global<4xf32, #P, #B>) -> (!pf.global<8x4x12x12xf32, #P>, !pf.global<4xf32, #P>, !pf.global<4xf32, #P>)
  pf.write_param %nm to @bn1.running_mean : !pf.global<4xf32, #P>
  pf.write_param %nv to @bn1.running_var : !pf.global<4xf32, #P>
  %r1 = pf.relu %n : (!pf.global<8x4x12x12xf32, #P>) -> !pf.global<8x4x12x12xf32, #P>
  %p1 = pf.max_pool2d %r1 {kernel = array<i64: 2, 2>} : (!pf.global<8x4x12x12xf32, #P>) -> !pf.global<8x4x6x6xf32, #P>
  %w2 = pf.read_param @conv2.weight : !pf.global<8x4x3x3xf32, #P, #B>
  %b2 = pf.read_param @conv2.bias : !pf.global<8xf32, #P, #B>
  %c2 = pf.conv2d %p1, %w2 : (!pf.global<8x4x6x6xf32, #P>, !pf.global<8x4x3x3xf32, #P, #B>) -> !pf.global<8x8x4x4xf32, #P>
  %c2b = pf.bias_add %c2, %b2 : (!pf.global<8x8x4x4xf32, #P>, !pf.global<8xf32, #P, #B>) -> !pf.global<8x8x4x4xf32, #P>
  %r2 = pf.relu %c2b : (!pf.global<8x8x4x4xf32, #P>) -> !pf.global<8x8x4x4xf32, #P>
  %p2 = pf.avg_pool2d %r2 {kernel = array<i64: 2, 2>} : (!pf.global<8x8x4x4xf32, #P>) -> !pf.global<8x8x2x2xf32, #P>
  %gp = pf.global_avg_pool %p2 : (!pf.global<8x8x2x2xf32, #P>) -> !pf.global<8x8x1x1xf32, #P>
  %f = pf.flatten %gp : (!pf.global<8x8x1x1xf32, #P>) -> !pf.global<8x8xf32, #P>
  %wf = pf.read_param @fc.weight : !pf.global<10x8xf32, #P, #B>
  %bf = pf.read_param @fc.bias : !pf.global<10xf32, #P, #B>
  %h = pf.matmul %f, %wf {transpose_b} : (!pf.global<8x8xf32, #P>, !pf.global<10x8xf32, #P, #B>) -> !pf.global<8x10xf32, #P>
  %hb = pf.bias_add %h, %bf : (!pf.global<8x10xf32, #P>, !pf.global<10xf32, #P, #B>) -> !pf.global<8x10xf32, #P>
  %l = pf.softmax_cross_entropy %hb, %y : (!pf.global<8x10xf32, #P>, !pf.global<8xi64, #P, #B>) -> !pf.global<f32, #P>
  return %l : !pf.global<f32, #P>
}
