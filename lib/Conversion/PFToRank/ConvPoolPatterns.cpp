//===- ConvPoolPatterns.cpp - convolutions, pooling, batch norm -----------===//

#include "pf/Conversion/PFToRank/RankLowering.h"

using namespace mlir;
using namespace mlir::pf;

namespace {

/// The runtime's convolution geometry:
/// {N, C, H, W, O, KH, KW, OH, OW, sh, sw, ph, pw, dh, dw, groups}, from the
/// forward input x, weight w and output y, as the array the kernels take.
template <typename ConvLikeOp>
Value convDims(RankLoweringState &state, OpBuilder &b, ConvLikeOp op,
               Value xValue, Value wValue, Value yValue) {
  ArrayRef<int64_t> x = localShape(xValue), w = localShape(wValue),
                    y = localShape(yValue);
  ArrayRef<int64_t> stride = op.getStride(), pad = op.getPadding(),
                    dil = op.getDilation();
  int64_t dims[] = {
      x[0],   x[1],      x[2],      x[3],
      w[0],   w[2],      w[3],      y[2],
      y[3],   stride[0], stride[1], pad[0],
      pad[1], dil[0],    dil[1],    static_cast<int64_t>(op.getGroups())};
  return state.rt.i64Array(b, op.getLoc(), dims);
}

void conv2D(RankLoweringState &state, Conv2DOp op,
            RankAdaptor<Conv2DOp> adaptor, ConversionPatternRewriter &b,
            Value out) {
  state.rt.pfrt_k_conv2d(
      b, op.getLoc(), adaptor.getInput(), adaptor.getWeight(), out,
      convDims(state, b, op, op.getInput(), op.getWeight(), op.getResult()));
}

void conv2DGradInput(RankLoweringState &state, Conv2DGradInputOp op,
                     RankAdaptor<Conv2DGradInputOp> adaptor,
                     ConversionPatternRewriter &b, Value out) {
  state.rt.pfrt_k_conv2d_grad_input(
      b, op.getLoc(), adaptor.getResultGrad(), adaptor.getWeight(), out,
      convDims(state, b, op, op.getResult(), op.getWeight(),
               op.getResultGrad()));
}

void conv2DGradWeight(RankLoweringState &state, Conv2DGradWeightOp op,
                      RankAdaptor<Conv2DGradWeightOp> adaptor,
                      ConversionPatternRewriter &b, Value out) {
  state.rt.pfrt_k_conv2d_grad_weight(
      b, op.getLoc(), adaptor.getInput(), adaptor.getResultGrad(), out,
      convDims(state, b, op, op.getInput(), op.getResult(),
               op.getResultGrad()));
}

/// The runtime's pooling geometry: {N, C, H, W, OH, OW, KH, KW, sh, sw, ph,
/// pw} from the forward input and output shapes.
Value poolDims(RankLoweringState &state, OpBuilder &b, Operation *op,
               ArrayRef<int64_t> in, ArrayRef<int64_t> out) {
  auto kernelAttr = op->getAttrOfType<DenseI64ArrayAttr>("kernel");
  auto strideAttr = op->getAttrOfType<DenseI64ArrayAttr>("stride");
  auto padAttr = op->getAttrOfType<DenseI64ArrayAttr>("padding");
  ArrayRef<int64_t> k = kernelAttr.asArrayRef();
  ArrayRef<int64_t> s = strideAttr ? strideAttr.asArrayRef() : k;
  static const int64_t kNoPad[2] = {0, 0};
  ArrayRef<int64_t> p =
      padAttr ? padAttr.asArrayRef() : ArrayRef<int64_t>(kNoPad);
  SmallVector<int64_t> dims = {in[0], in[1], in[2], in[3], out[2], out[3],
                               k[0],  k[1],  s[0],  s[1],  p[0],   p[1]};
  return state.rt.i64Array(b, op->getLoc(), dims);
}

/// Max and average pooling and their gradients: the same geometry (from
/// the forward input and output), one kernel each.
template <typename OpTy> struct PoolLowering : RankPattern<OpTy> {
  using Base = RankPattern<OpTy>;
  using Base::Base;
  using Base::state;
  LogicalResult lower(OpTy op, typename Base::OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    constexpr bool backward = std::is_same_v<OpTy, MaxPool2DGradOp> ||
                              std::is_same_v<OpTy, AvgPool2DGradOp>;
    return this->emitInto(op, b, [&](Value out) {
      Location loc = op.getLoc();
      rt::RuntimeABI &rt = state.rt;
      Value dims;
      if constexpr (backward)
        dims = poolDims(state, b, op, localShape(op.getResult()),
                        localShape(op.getResultGrad()));
      else
        dims = poolDims(state, b, op, localShape(op.getInput()),
                        localShape(op.getResult()));
      if constexpr (std::is_same_v<OpTy, MaxPool2DOp>)
        rt.pfrt_k_max_pool2d(b, loc, adaptor.getInput(), out, dims);
      else if constexpr (std::is_same_v<OpTy, AvgPool2DOp>)
        rt.pfrt_k_avg_pool2d(b, loc, adaptor.getInput(), out, dims);
      else if constexpr (std::is_same_v<OpTy, MaxPool2DGradOp>)
        rt.pfrt_k_max_pool2d_grad(b, loc, adaptor.getInput(),
                                  adaptor.getResultGrad(), out, dims);
      else
        rt.pfrt_k_avg_pool2d_grad(b, loc, adaptor.getResultGrad(), out, dims);
    });
  }
};

void globalAvgPool(RankLoweringState &state, GlobalAvgPoolOp op,
                   RankAdaptor<GlobalAvgPoolOp> adaptor,
                   ConversionPatternRewriter &b, Value out) {
  ArrayRef<int64_t> s = localShape(op.getInput());
  state.rt.pfrt_k_global_avg_pool(b, op.getLoc(), adaptor.getInput(), out, s[0],
                                  s[1], s[2] * s[3]);
}

void globalAvgPoolGrad(RankLoweringState &state, GlobalAvgPoolGradOp op,
                       RankAdaptor<GlobalAvgPoolGradOp> adaptor,
                       ConversionPatternRewriter &b, Value out) {
  ArrayRef<int64_t> s = localShape(op.getResult());
  state.rt.pfrt_k_global_avg_pool_grad(b, op.getLoc(), adaptor.getResultGrad(),
                                       out, s[0], s[1], s[2] * s[3]);
}

/// {N, C, H*W} of a batch-norm input (2-D inputs have H*W = 1).
std::tuple<int64_t, int64_t, int64_t> bnDims(Value input) {
  ArrayRef<int64_t> s = localShape(input);
  return {s[0], s[1], s.size() == 4 ? s[2] * s[3] : 1};
}

void batchNorm(RankLoweringState &state, BatchNormOp op,
               RankAdaptor<BatchNormOp> adaptor, ConversionPatternRewriter &b,
               ArrayRef<Value> outs) {
  auto [n, c, hw] = bnDims(op.getInput());
  Value y = outs[0], m = outs[1], v = outs[2];
  if (op.getInference()) {
    // The statistics come back unchanged.
    state.rt.pfrt_k_batch_norm_eval(
        b, op.getLoc(), adaptor.getInput(), adaptor.getGamma(),
        adaptor.getBeta(), adaptor.getRunningMean(), adaptor.getRunningVar(), y,
        n, c, hw, op.getEpsilon().convertToDouble());
    state.rt.pfrt_k_copy(b, op.getLoc(), adaptor.getRunningMean(), m, c);
    state.rt.pfrt_k_copy(b, op.getLoc(), adaptor.getRunningVar(), v, c);
    return;
  }
  state.rt.pfrt_k_batch_norm(
      b, op.getLoc(), adaptor.getInput(), adaptor.getGamma(), adaptor.getBeta(),
      adaptor.getRunningMean(), adaptor.getRunningVar(), y, m, v, n, c, hw,
      op.getEpsilon().convertToDouble(), op.getMomentum().convertToDouble());
}

void batchNormGradInput(RankLoweringState &state, BatchNormGradInputOp op,
                        RankAdaptor<BatchNormGradInputOp> adaptor,
                        ConversionPatternRewriter &b, Value out) {
  auto [n, c, hw] = bnDims(op.getInput());
  state.rt.pfrt_k_batch_norm_grad_input(b, op.getLoc(), adaptor.getInput(),
                                        adaptor.getGamma(),
                                        adaptor.getResultGrad(), out, n, c, hw,
                                        op.getEpsilon().convertToDouble());
}

void batchNormGradParams(RankLoweringState &state, BatchNormGradParamsOp op,
                         RankAdaptor<BatchNormGradParamsOp> adaptor,
                         ConversionPatternRewriter &b, ArrayRef<Value> outs) {
  auto [n, c, hw] = bnDims(op.getInput());
  state.rt.pfrt_k_batch_norm_grad_params(
      b, op.getLoc(), adaptor.getInput(), adaptor.getResultGrad(), outs[0],
      outs[1], n, c, hw, op.getEpsilon().convertToDouble());
}

/// [rows, C] of a layer-norm input (C the last axis).
std::pair<int64_t, int64_t> lnDims(Value input) {
  ArrayRef<int64_t> s = localShape(input);
  int64_t rows = 1;
  for (int64_t d : s.drop_back())
    rows *= d;
  return {rows, s.back()};
}

void layerNorm(RankLoweringState &state, LayerNormOp op,
               RankAdaptor<LayerNormOp> adaptor, ConversionPatternRewriter &b,
               Value out) {
  std::pair<int64_t, int64_t> d = lnDims(op.getInput());
  state.rt.pfrt_k_layer_norm(
      b, op.getLoc(), adaptor.getInput(), adaptor.getGamma(), adaptor.getBeta(),
      out, d.first, d.second, op.getEpsilon().convertToDouble());
}

void layerNormGradInput(RankLoweringState &state, LayerNormGradInputOp op,
                        RankAdaptor<LayerNormGradInputOp> adaptor,
                        ConversionPatternRewriter &b, Value out) {
  std::pair<int64_t, int64_t> d = lnDims(op.getInput());
  state.rt.pfrt_k_layer_norm_grad_input(
      b, op.getLoc(), adaptor.getInput(), adaptor.getGamma(),
      adaptor.getResultGrad(), out, d.first, d.second,
      op.getEpsilon().convertToDouble());
}

void layerNormGradParams(RankLoweringState &state, LayerNormGradParamsOp op,
                         RankAdaptor<LayerNormGradParamsOp> adaptor,
                         ConversionPatternRewriter &b, ArrayRef<Value> outs) {
  auto [rows, channels] = lnDims(op.getInput());
  state.rt.pfrt_k_layer_norm_grad_params(
      b, op.getLoc(), adaptor.getInput(), adaptor.getResultGrad(), outs[0],
      outs[1], rows, channels, op.getEpsilon().convertToDouble());
}

} // namespace

void mlir::pf::populatePFToCPUConvPoolPatterns(const TypeConverter &converter,
                                               RewritePatternSet &patterns,
                                               RankLoweringState &state) {
  patterns.add<EmitIntoPattern<Conv2DOp, conv2D>,
               EmitIntoPattern<Conv2DGradInputOp, conv2DGradInput>,
               EmitIntoPattern<Conv2DGradWeightOp, conv2DGradWeight>,
               PoolLowering<MaxPool2DOp>, PoolLowering<AvgPool2DOp>,
               PoolLowering<MaxPool2DGradOp>, PoolLowering<AvgPool2DGradOp>,
               EmitIntoPattern<GlobalAvgPoolOp, globalAvgPool>,
               EmitIntoPattern<GlobalAvgPoolGradOp, globalAvgPoolGrad>,
               EmitIntoPattern<BatchNormOp, batchNorm>,
               EmitIntoPattern<BatchNormGradInputOp, batchNormGradInput>,
               EmitIntoPattern<BatchNormGradParamsOp, batchNormGradParams>,
               EmitIntoPattern<LayerNormOp, layerNorm>,
               EmitIntoPattern<LayerNormGradInputOp, layerNormGradInput>,
               EmitIntoPattern<LayerNormGradParamsOp, layerNormGradParams>>(
      converter, state);
}
