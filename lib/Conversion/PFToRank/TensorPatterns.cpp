//===- TensorPatterns.cpp - sub, div, broadcast, masks, slices ------------===//

#include "pf/Conversion/PFToRank/RankLowering.h"

using namespace mlir;
using namespace mlir::pf;

void mlir::pf::copyBox(RankLoweringState &state, OpBuilder &b, Location loc,
                       Value in, Value inValue, ArrayRef<int64_t> inOffsets,
                       Value out, Value outValue, ArrayRef<int64_t> outOffsets,
                       ArrayRef<int64_t> sizes) {
  rt::RuntimeABI &rt = state.rt;
  rt.pfrt_copy_box(
      b, loc, in, rt.i64Array(b, loc, localShape(inValue)),
      inOffsets.empty() ? rt.nullPtr(b, loc) : rt.i64Array(b, loc, inOffsets),
      out, rt.i64Array(b, loc, localShape(outValue)),
      outOffsets.empty() ? rt.nullPtr(b, loc) : rt.i64Array(b, loc, outOffsets),
      rt.i64Array(b, loc, sizes), static_cast<int64_t>(sizes.size()),
      dtypeCode(inValue));
}

namespace {

/// pf.sub and pf.div: their kernel over the local elements.
template <typename OpTy>
void binary(RankLoweringState &state, OpTy op, RankAdaptor<OpTy> adaptor,
            ConversionPatternRewriter &b, Value out) {
  int64_t n = localCount(op.getResult());
  if constexpr (std::is_same_v<OpTy, SubOp>)
    state.rt.pfrt_k_sub(b, op.getLoc(), adaptor.getLhs(), adaptor.getRhs(), out,
                        n);
  else
    state.rt.pfrt_k_div(b, op.getLoc(), adaptor.getLhs(), adaptor.getRhs(), out,
                        n);
}

void broadcastTo(RankLoweringState &state, BroadcastToOp op,
                 RankAdaptor<BroadcastToOp> adaptor,
                 ConversionPatternRewriter &b, Value out) {
  Location loc = op.getLoc();
  ArrayRef<int64_t> outShape = localShape(op.getResult());
  ArrayRef<int64_t> inShape = localShape(op.getInput());
  // The input's axes padded with leading 1s to the output's rank.
  SmallVector<int64_t> padded(outShape.size() - inShape.size(), 1);
  llvm::append_range(padded, inShape);
  state.rt.pfrt_k_broadcast(
      b, loc, adaptor.getInput(), out, static_cast<int64_t>(outShape.size()),
      state.rt.i64Array(b, loc, padded), state.rt.i64Array(b, loc, outShape),
      dtypeBytes(op.getInput()));
}

void maskedFill(RankLoweringState &state, MaskedFillOp op,
                RankAdaptor<MaskedFillOp> adaptor, ConversionPatternRewriter &b,
                Value out) {
  state.rt.pfrt_k_masked_fill(
      b, op.getLoc(), adaptor.getInput(), adaptor.getMask(), out,
      localCount(op.getResult()), dtypeCode(op.getMask()),
      op.getValue().convertToDouble());
}

/// The pattern of a mask op (pf.broadcast_to, pf.masked_fill): in the
/// prologue of the softmax that reads it, the softmax computes the mask and
/// the op forwards its input; elsewhere `Emit` writes its buffer.
template <typename OpTy, EmitIntoFn<OpTy> *Emit>
class MaskLowering : public EmitIntoPattern<OpTy, Emit> {
public:
  using EmitIntoPattern<OpTy, Emit>::EmitIntoPattern;

protected:
  LogicalResult lower(OpTy op, RankAdaptor<OpTy> adaptor,
                      ConversionPatternRewriter &b) const override {
    if (this->state.buffers.isInSoftmaxPrologue(op)) {
      b.replaceOp(op, adaptor.getInput());
      return success();
    }
    return EmitIntoPattern<OpTy, Emit>::lower(op, adaptor, b);
  }
};

/// Zeros (0.0f is four zero bytes, whatever the element type).
void zero(RankLoweringState &state, OpBuilder &b, Location loc, Value out,
          Value v) {
  state.rt.pfrt_k_fill(b, loc, out, localWords(v), 0.0);
}

/// pf.slice copies the box at its offsets out of the input; pf.pad zeroes
/// its result and copies the input in at its offsets.
template <typename OpTy> struct BoxLowering : RankPattern<OpTy> {
  using RankPattern<OpTy>::RankPattern;
  using typename RankPattern<OpTy>::OpAdaptor;
  LogicalResult lower(OpTy op, OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    constexpr bool isPad = std::is_same_v<OpTy, PadOp>;
    // A slice GEMMs read through strides is not copied.
    if (!isPad && this->state.buffers.isFoldedView(op)) {
      b.replaceOp(op, adaptor.getInput());
      return success();
    }
    return this->emitInto(op, b, [&](Value out) {
      RankLoweringState &state = this->state;
      if (isPad)
        zero(state, b, op.getLoc(), out, op.getResult());
      ArrayRef<int64_t> none;
      copyBox(state, b, op.getLoc(), adaptor.getInput(), op.getInput(),
              isPad ? none : op.getOffsets(), out, op.getResult(),
              isPad ? op.getOffsets() : none,
              localShape(isPad ? op.getInput() : op.getResult()));
    });
  }
};

struct ConcatLowering : RankPattern<ConcatOp> {
  using RankPattern::RankPattern;
  LogicalResult lower(ConcatOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    if (state.buffers.isFoldedConcat(op)) { // its GEMMs wrote every piece
      FailureOr<Value> out = state.result(b, op);
      if (failed(out))
        return failure();
      b.replaceOp(op, *out);
      return success();
    }
    return emitInto(op, b, [&](Value out) {
      int64_t axis = op.getAxis(), at = 0;
      for (auto [piece, buffer] :
           llvm::zip(op.getInputs(), adaptor.getInputs())) {
        ArrayRef<int64_t> ps = localShape(piece);
        SmallVector<int64_t> offsets(ps.size(), 0);
        offsets[axis] = at;
        at += ps[axis];
        copyBox(state, b, op.getLoc(), buffer, piece, {}, out, op.getResult(),
                offsets, ps);
      }
    });
  }
};

} // namespace

void mlir::pf::populatePFToCPUTensorPatterns(const TypeConverter &converter,
                                             RewritePatternSet &patterns,
                                             RankLoweringState &state) {
  patterns.add<EmitIntoPattern<SubOp, binary<SubOp>>,
               EmitIntoPattern<DivOp, binary<DivOp>>,
               MaskLowering<BroadcastToOp, broadcastTo>,
               MaskLowering<MaskedFillOp, maskedFill>, BoxLowering<SliceOp>,
               BoxLowering<PadOp>, ConcatLowering>(converter, state);
}
