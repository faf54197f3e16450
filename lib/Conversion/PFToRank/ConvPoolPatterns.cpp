//===- ConvPoolPatterns.cpp - convolutions, pooling, batch norm -----------===//

#include "pf/Conversion/PFToRank/RankLowering.h"

using namespace mlir;
using namespace mlir::pf;

namespace {

/// The runtime's convolution geometry:
/// {N, C, H, W, O, KH, KW, OH, OW, sh, sw, ph, pw, dh, dw, groups}, from the
/// forward input x, weight w and output y shapes.
template <typename ConvLikeOp>
SmallVector<int64_t> convDims(ConvLikeOp op, ArrayRef<int64_t> x,
                              ArrayRef<int64_t> w, ArrayRef<int64_t> y) {
  ArrayRef<int64_t> stride = op.getStride(), pad = op.getPadding(),
                    dil = op.getDilation();
  return {x[0],   x[1],      x[2],      x[3],
          w[0],   w[2],      w[3],      y[2],
          y[3],   stride[0], stride[1], pad[0],
          pad[1], dil[0],    dil[1],    static_cast<int64_t>(op.getGroups())};
}

struct Conv2DLowering : RankPattern<Conv2DOp> {
  using RankPattern::RankPattern;
  LogicalResult lower(Conv2DOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    return emitInto(op, b, [&](Value out) {
      auto dims =
          convDims(op, localShape(op.getInput()), localShape(op.getWeight()),
                   localShape(op.getResult()));
      state.rt.pfrt_k_conv2d(b, op.getLoc(), adaptor.getInput(),
                             adaptor.getWeight(), out,
                             state.rt.i64Array(b, op.getLoc(), dims));
    });
  }
};

struct Conv2DGradInputLowering : RankPattern<Conv2DGradInputOp> {
  using RankPattern::RankPattern;
  LogicalResult lower(Conv2DGradInputOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    return emitInto(op, b, [&](Value out) {
      auto dims =
          convDims(op, localShape(op.getResult()), localShape(op.getWeight()),
                   localShape(op.getResultGrad()));
      state.rt.pfrt_k_conv2d_grad_input(
          b, op.getLoc(), adaptor.getResultGrad(), adaptor.getWeight(), out,
          state.rt.i64Array(b, op.getLoc(), dims));
    });
  }
};

struct Conv2DGradWeightLowering : RankPattern<Conv2DGradWeightOp> {
  using RankPattern::RankPattern;
  LogicalResult lower(Conv2DGradWeightOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    return emitInto(op, b, [&](Value out) {
      auto dims =
          convDims(op, localShape(op.getInput()), localShape(op.getResult()),
                   localShape(op.getResultGrad()));
      state.rt.pfrt_k_conv2d_grad_weight(
          b, op.getLoc(), adaptor.getInput(), adaptor.getResultGrad(), out,
          state.rt.i64Array(b, op.getLoc(), dims));
    });
  }
};

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

struct GlobalAvgPoolLowering : RankPattern<GlobalAvgPoolOp> {
  using RankPattern::RankPattern;
  LogicalResult lower(GlobalAvgPoolOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    return emitInto(op, b, [&](Value out) {
      ArrayRef<int64_t> s = localShape(op.getInput());
      state.rt.pfrt_k_global_avg_pool(b, op.getLoc(), adaptor.getInput(), out,
                                      s[0], s[1], s[2] * s[3]);
    });
  }
};

struct GlobalAvgPoolGradLowering : RankPattern<GlobalAvgPoolGradOp> {
  using RankPattern::RankPattern;
  LogicalResult lower(GlobalAvgPoolGradOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    return emitInto(op, b, [&](Value out) {
      ArrayRef<int64_t> s = localShape(op.getResult());
      state.rt.pfrt_k_global_avg_pool_grad(b, op.getLoc(),
                                           adaptor.getResultGrad(), out, s[0],
                                           s[1], s[2] * s[3]);
    });
  }
};

/// {N, C, H*W} of a batch-norm input (2-D inputs have H*W = 1).
std::tuple<int64_t, int64_t, int64_t> bnDims(Value input) {
  ArrayRef<int64_t> s = localShape(input);
  return {s[0], s[1], s.size() == 4 ? s[2] * s[3] : 1};
}

struct BatchNormLowering : RankPattern<BatchNormOp> {
  using RankPattern::RankPattern;
  LogicalResult lower(BatchNormOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    FailureOr<Value> y = state.result(b, op, 0), m = state.result(b, op, 1),
                     v = state.result(b, op, 2);
    if (failed(y) || failed(m) || failed(v))
      return failure();
    auto [n, c, hw] = bnDims(op.getInput());
    if (op.getInference()) {
      // The statistics come back unchanged.
      state.rt.pfrt_k_batch_norm_eval(
          b, op.getLoc(), adaptor.getInput(), adaptor.getGamma(),
          adaptor.getBeta(), adaptor.getRunningMean(), adaptor.getRunningVar(),
          *y, n, c, hw, op.getEpsilon().convertToDouble());
      state.rt.pfrt_k_copy(b, op.getLoc(), adaptor.getRunningMean(), *m, c);
      state.rt.pfrt_k_copy(b, op.getLoc(), adaptor.getRunningVar(), *v, c);
      b.replaceOp(op, ValueRange{*y, *m, *v});
      return success();
    }
    state.rt.pfrt_k_batch_norm(
        b, op.getLoc(), adaptor.getInput(), adaptor.getGamma(),
        adaptor.getBeta(), adaptor.getRunningMean(), adaptor.getRunningVar(),
        *y, *m, *v, n, c, hw, op.getEpsilon().convertToDouble(),
        op.getMomentum().convertToDouble());
    b.replaceOp(op, ValueRange{*y, *m, *v});
    return success();
  }
};

struct BatchNormGradInputLowering : RankPattern<BatchNormGradInputOp> {
  using RankPattern::RankPattern;
  LogicalResult lower(BatchNormGradInputOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    return emitInto(op, b, [&](Value out) {
      auto [n, c, hw] = bnDims(op.getInput());
      state.rt.pfrt_k_batch_norm_grad_input(
          b, op.getLoc(), adaptor.getInput(), adaptor.getGamma(),
          adaptor.getResultGrad(), out, n, c, hw,
          op.getEpsilon().convertToDouble());
    });
  }
};

struct BatchNormGradParamsLowering : RankPattern<BatchNormGradParamsOp> {
  using RankPattern::RankPattern;
  LogicalResult lower(BatchNormGradParamsOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    FailureOr<Value> dg = state.result(b, op, 0), db = state.result(b, op, 1);
    if (failed(dg) || failed(db))
      return failure();
    auto [n, c, hw] = bnDims(op.getInput());
    state.rt.pfrt_k_batch_norm_grad_params(
        b, op.getLoc(), adaptor.getInput(), adaptor.getResultGrad(), *dg, *db,
        n, c, hw, op.getEpsilon().convertToDouble());
    b.replaceOp(op, ValueRange{*dg, *db});
    return success();
  }
};

/// [rows, C] of a layer-norm input (C the last axis).
std::pair<int64_t, int64_t> lnDims(Value input) {
  ArrayRef<int64_t> s = localShape(input);
  int64_t rows = 1;
  for (int64_t d : s.drop_back())
    rows *= d;
  return {rows, s.back()};
}

struct LayerNormLowering : RankPattern<LayerNormOp> {
  using RankPattern::RankPattern;
  LogicalResult lower(LayerNormOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    std::pair<int64_t, int64_t> d = lnDims(op.getInput());
    return emitInto(op, b, [&](Value out) {
      state.rt.pfrt_k_layer_norm(b, op.getLoc(), adaptor.getInput(),
                                 adaptor.getGamma(), adaptor.getBeta(), out,
                                 d.first, d.second,
                                 op.getEpsilon().convertToDouble());
    });
  }
};

struct LayerNormGradInputLowering : RankPattern<LayerNormGradInputOp> {
  using RankPattern::RankPattern;
  LogicalResult lower(LayerNormGradInputOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    std::pair<int64_t, int64_t> d = lnDims(op.getInput());
    return emitInto(op, b, [&](Value out) {
      state.rt.pfrt_k_layer_norm_grad_input(
          b, op.getLoc(), adaptor.getInput(), adaptor.getGamma(),
          adaptor.getResultGrad(), out, d.first, d.second,
          op.getEpsilon().convertToDouble());
    });
  }
};

struct LayerNormGradParamsLowering : RankPattern<LayerNormGradParamsOp> {
  using RankPattern::RankPattern;
  LogicalResult lower(LayerNormGradParamsOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    FailureOr<Value> dg = state.result(b, op, 0), db = state.result(b, op, 1);
    if (failed(dg) || failed(db))
      return failure();
    std::pair<int64_t, int64_t> d = lnDims(op.getInput());
    state.rt.pfrt_k_layer_norm_grad_params(
        b, op.getLoc(), adaptor.getInput(), adaptor.getResultGrad(), *dg, *db,
        d.first, d.second, op.getEpsilon().convertToDouble());
    b.replaceOp(op, ValueRange{*dg, *db});
    return success();
  }
};

} // namespace

void mlir::pf::populatePFToCPUConvPoolPatterns(const TypeConverter &converter,
                                               RewritePatternSet &patterns,
                                               RankLoweringState &state) {
  patterns
      .add<Conv2DLowering, Conv2DGradInputLowering, Conv2DGradWeightLowering,
           PoolLowering<MaxPool2DOp>, PoolLowering<AvgPool2DOp>,
           PoolLowering<MaxPool2DGradOp>, PoolLowering<AvgPool2DGradOp>,
           GlobalAvgPoolLowering, GlobalAvgPoolGradLowering, BatchNormLowering,
           BatchNormGradInputLowering, BatchNormGradParamsLowering,
           LayerNormLowering, LayerNormGradInputLowering,
           LayerNormGradParamsLowering>(converter, state);
}
