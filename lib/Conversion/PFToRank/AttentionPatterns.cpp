//===- AttentionPatterns.cpp - pf.attention to the flash kernels ----------===//
//
// pf.attention and pf.attention_grad lower to pfrt_k_attention(_grad) (on
// GPU ranks their device twins): the kernels tile the keys, so no [T, S]
// buffer is planned. The mask's strides broadcast its axes of size 1; the
// queries' box in the logical tensor (pf-partition-ranks) places causal
// masking and the dropout draw. On GPU ranks the bf16/f16 ops that
// pf-select-cudnn-attention gave to cuDNN lower to
// pfrt_k_attention_typed(_grad), whose twins are cuDNN's fused attention.
//
//===----------------------------------------------------------------------===//

#include "pf/Conversion/PFToRank/RankLowering.h"
#include "pf/Dialect/PF/IR/LowPrecision.h"

#include <type_traits>

using namespace mlir;
using namespace mlir::pf;

namespace {

/// What both attention ops pass the kernels besides their buffers.
struct AttentionArgs {
  Value maskPtr, maskStrides, dims, logical;
  int32_t maskDtype = 0;
  int64_t microbatch = 0;
};

template <typename OpTy>
FailureOr<AttentionArgs> attentionArgs(RankLoweringState &state, OpTy op,
                                       Value mask,
                                       ConversionPatternRewriter &b) {
  Location loc = op.getLoc();
  rt::RuntimeABI &rt = state.rt;
  ArrayRef<int64_t> q = localShape(op.getQuery());
  ArrayRef<int64_t> k = localShape(op.getKey());
  ArrayRef<int64_t> v = localShape(op.getValue());
  AttentionArgs args;
  args.dims = rt.i64Array(b, loc, {q[0], q[1], q[2], k[2], q[3], v[3]});
  SmallVector<int64_t> strides(4, 0);
  if (Value m = op.getMask()) {
    ArrayRef<int64_t> ms = localShape(m);
    int64_t stride = 1;
    for (int64_t i = 3; i >= 0; --i) {
      strides[i] = ms[i] == 1 ? 0 : stride;
      stride *= ms[i];
    }
    args.maskPtr = mask;
    args.maskDtype = dtypeCode(m);
    Type elem = cast<GlobalType>(m.getType()).getElementType();
    if (!elem.isF32() && !elem.isInteger(1))
      return op.emitOpError("the attention kernels take an f32 or i1 mask, "
                            "got ")
             << elem << " (run pf-widen-low-precision first)";
  } else {
    args.maskPtr = rt.nullPtr(b, loc);
  }
  args.maskStrides = rt.i64Array(b, loc, strides);
  // The queries' box: logical [B, H, T] and offsets (the keys are whole).
  auto logical = op->template getAttrOfType<DenseI64ArrayAttr>(
      PFDialect::LogicalShapeAttrHelper::getNameStr());
  auto offset = op->template getAttrOfType<DenseI64ArrayAttr>(
      PFDialect::ShardOffsetAttrHelper::getNameStr());
  SmallVector<int64_t> box = {q[0], q[1], q[2], k[2], 0, 0, 0, 0};
  if (logical && offset)
    box = {logical[0], logical[1], logical[2], k[2],
           offset[0],  offset[1],  offset[2],  0};
  args.logical = rt.i64Array(b, loc, box);
  auto mb = op->template getAttrOfType<IntegerAttr>(
      PFDialect::MicrobatchAttrHelper::getNameStr());
  args.microbatch = mb ? mb.getInt() : 0;
  return args;
}

/// The kernels compute in float32 (pf-widen-low-precision widens 2-byte
/// operands around the op).
LogicalResult checkF32(Operation *op) {
  for (Type t : op->getOperandTypes())
    if (auto g = dyn_cast<GlobalType>(t);
        g && isa<FloatType>(g.getElementType()) && !g.getElementType().isF32())
      return op->emitOpError("the attention kernels compute in f32, got ")
             << g.getElementType() << " (run pf-widen-low-precision first)";
  return success();
}

/// pf.attention and pf.attention_grad: the checks and arguments they share,
/// then their kernel.
template <typename OpTy> struct AttentionLowering : RankPattern<OpTy> {
  using RankPattern<OpTy>::RankPattern;
  using Adaptor = RankAdaptor<OpTy>;
  LogicalResult lower(OpTy op, Adaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    const bool cudnn = keepsLowPrecision(op);
    if (!cudnn && failed(checkF32(op)))
      return failure();
    FailureOr<AttentionArgs> args =
        attentionArgs(this->state, op, adaptor.getMask(), b);
    if (failed(args))
      return failure();
    return this->emitIntoAll(op, b, [&](ArrayRef<Value> outs) {
      if (cudnn)
        callTyped(op, adaptor, *args, outs, b);
      else
        call(op, adaptor, *args, outs, b);
    });
  }

private:
  /// The op pf-select-cudnn-attention gave to cuDNN (bf16/f16 operands):
  /// pfrt_k_attention_typed(_grad), whose GPU twins are cuDNN's.
  void callTyped(OpTy op, Adaptor adaptor, const AttentionArgs &args,
                 ArrayRef<Value> outs, ConversionPatternRewriter &b) const {
    Location loc = op.getLoc();
    rt::RuntimeABI &rt = this->state.rt;
    double scale = op.getScale().convertToDouble();
    auto causal = static_cast<int32_t>(op.getCausal());
    int32_t dtype = dtypeCode(op.getQuery());
    if constexpr (std::is_same_v<OpTy, AttentionOp>)
      rt.pfrt_k_attention_typed(b, loc, adaptor.getQuery(), adaptor.getKey(),
                                adaptor.getValue(), args.maskPtr,
                                args.maskStrides, outs[0], outs[1], args.dims,
                                dtype, scale, causal);
    else
      rt.pfrt_k_attention_typed_grad(
          b, loc, adaptor.getQuery(), adaptor.getKey(), adaptor.getValue(),
          args.maskPtr, args.maskStrides, adaptor.getOutput(), adaptor.getLse(),
          adaptor.getResultGrad(), outs[0], outs[1], outs[2], args.dims, dtype,
          scale, causal);
  }

  void call(OpTy op, Adaptor adaptor, const AttentionArgs &args,
            ArrayRef<Value> outs, ConversionPatternRewriter &b) const {
    Location loc = op.getLoc();
    rt::RuntimeABI &rt = this->state.rt;
    double scale = op.getScale().convertToDouble();
    double dropout = op.getDropoutP().convertToDouble();
    auto causal = static_cast<int32_t>(op.getCausal());
    Value seed = this->state.seed(b, loc);
    if constexpr (std::is_same_v<OpTy, AttentionOp>)
      rt.pfrt_k_attention(b, loc, adaptor.getQuery(), adaptor.getKey(),
                          adaptor.getValue(), args.maskPtr, args.maskDtype,
                          args.maskStrides, outs[0], outs[1], args.dims, scale,
                          causal, dropout, seed, op.getStream(),
                          args.microbatch, args.logical);
    else
      rt.pfrt_k_attention_grad(
          b, loc, adaptor.getQuery(), adaptor.getKey(), adaptor.getValue(),
          args.maskPtr, args.maskDtype, args.maskStrides, adaptor.getOutput(),
          adaptor.getLse(), adaptor.getResultGrad(), outs[0], outs[1], outs[2],
          args.dims, scale, causal, dropout, seed, op.getStream(),
          args.microbatch, args.logical);
  }
};

} // namespace

void mlir::pf::populateRankAttentionPatterns(const TypeConverter &converter,
                                             RewritePatternSet &patterns,
                                             RankLoweringState &state) {
  patterns
      .add<AttentionLowering<AttentionOp>, AttentionLowering<AttentionGradOp>>(
          converter, state);
}
