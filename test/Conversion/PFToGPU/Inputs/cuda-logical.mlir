// A one-rank block of comparisons and boolean tensors on a GPU rank: a
// comparison of a projection with zero (f32), of an int32 input with a
// constant, logical and/or/xor/not with a bool input, a selection
// (pf.where) between the projection and a learned tensor, a masked_fill
// with the bool input as its mask, a softmax, a cast of a bool to f32 and
// a linear head under cross-entropy. Used by
// convert-pf-to-gpu-logical.mlir and Integration/gpu-logical-emulated.test
// (which compiles it for a CPU rank too).
#P = #pf.placement<"cuda", [0]>
#B = #pf.sbp<[B]>
!F = !pf.global<8x8xf32, #P, #B>
!M = !pf.global<8x8xi1, #P, #B>
!I = !pf.global<8x8xi32, #P, #B>
pf.param @w : !pf.global<8x8xf32, #P, #B> = #pf.init<kaiming_uniform(8)>
pf.param @u : !pf.global<8x8xf32, #P, #B> = #pf.init<normal(0.0, 1.0)>
pf.param @wo : !pf.global<4x8xf32, #P, #B> = #pf.init<kaiming_uniform(8)>
func.func @step(%x: !F, %keep: !M, %n: !I, %y: !pf.global<8xi64, #P, #B>) -> !pf.global<f32, #P> {
  %w = pf.read_param @w : !F
  %u = pf.read_param @u : !F
  %wo = pf.read_param @wo : !pf.global<4x8xf32, #P, #B>
  %h = pf.matmul %x, %w {transpose_b} : (!F, !F) -> !pf.global<8x8xf32, #P>
  %zero = pf.constant dense<0.0> : tensor<8x8xf32> : !F
  %pos = pf.compare %h, %zero {predicate = "gt"} : (!pf.global<8x8xf32, #P>, !F) -> !pf.global<8x8xi1, #P>
  %one = pf.constant dense<1> : tensor<8x8xi32> : !I
  %small = pf.compare %n, %one {predicate = "lt"} : (!I, !I) -> !pf.global<8x8xi1, #P>
  %both = pf.logical_and %pos, %keep : (!pf.global<8x8xi1, #P>, !M) -> !pf.global<8x8xi1, #P>
  %either = pf.logical_or %both, %small : (!pf.global<8x8xi1, #P>, !pf.global<8x8xi1, #P>) -> !pf.global<8x8xi1, #P>
  %flip = pf.logical_xor %either, %keep : (!pf.global<8x8xi1, #P>, !M) -> !pf.global<8x8xi1, #P>
  %not = pf.logical_not %flip : (!pf.global<8x8xi1, #P>) -> !pf.global<8x8xi1, #P>
  %sel = pf.where %not, %h, %u : (!pf.global<8x8xi1, #P>, !pf.global<8x8xf32, #P>, !F) -> !pf.global<8x8xf32, #P>
  %m = pf.masked_fill %sel, %keep {value = -1.0e9 : f64} : (!pf.global<8x8xf32, #P>, !M) -> !pf.global<8x8xf32, #P>
  %p = pf.softmax %m {axis = 1 : i64} : (!pf.global<8x8xf32, #P>) -> !pf.global<8x8xf32, #P>
  %f = pf.cast %both : !pf.global<8x8xi1, #P> -> !pf.global<8x8xf32, #P>
  %g = pf.add %p, %f : (!pf.global<8x8xf32, #P>, !pf.global<8x8xf32, #P>) -> !pf.global<8x8xf32, #P>
  %o = pf.matmul %g, %wo {transpose_b} : (!pf.global<8x8xf32, #P>, !pf.global<4x8xf32, #P, #B>) -> !pf.global<8x4xf32, #P>
  %l = pf.softmax_cross_entropy %o, %y : (!pf.global<8x4xf32, #P>, !pf.global<8xi64, #P, #B>) -> !pf.global<f32, #P>
  return %l : !pf.global<f32, #P>
}
