//===- TensorPatterns.cpp - sub, div, broadcast, masks, slices ------------===//

#include "pf/Conversion/PFToRank/RankLowering.h"

using namespace mlir;
using namespace mlir::pf;

namespace {

template <typename OpTy> struct BinaryLowering : RankPattern<OpTy> {
  using RankPattern<OpTy>::RankPattern;
  using typename RankPattern<OpTy>::OpAdaptor;
  LogicalResult lower(OpTy op, OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    return this->emitInto(op, b, [&](Value out) {
      rt::RuntimeABI &rt = this->state.rt;
      int64_t n = localCount(op.getResult());
      if (std::is_same_v<OpTy, SubOp>)
        rt.pfrt_k_sub(b, op.getLoc(), adaptor.getLhs(), adaptor.getRhs(), out,
                      n);
      else
        rt.pfrt_k_div(b, op.getLoc(), adaptor.getLhs(), adaptor.getRhs(), out,
                      n);
    });
  }
};

struct BroadcastToLowering : RankPattern<BroadcastToOp> {
  using RankPattern::RankPattern;
  LogicalResult lower(BroadcastToOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    if (state.buffers.isInSoftmaxPrologue(op)) { // a mask the softmax reads
      b.replaceOp(op, adaptor.getInput());
      return success();
    }
    return emitInto(op, b, [&](Value out) {
      Location loc = op.getLoc();
      ArrayRef<int64_t> outShape = localShape(op.getResult());
      ArrayRef<int64_t> inShape = localShape(op.getInput());
      // The input's axes padded with leading 1s to the output's rank.
      SmallVector<int64_t> padded(outShape.size() - inShape.size(), 1);
      llvm::append_range(padded, inShape);
      state.rt.pfrt_k_broadcast(b, loc, adaptor.getInput(), out,
                                static_cast<int64_t>(outShape.size()),
                                state.rt.i64Array(b, loc, padded),
                                state.rt.i64Array(b, loc, outShape),
                                dtypeBytes(op.getInput()));
    });
  }
};

struct MaskedFillLowering : RankPattern<MaskedFillOp> {
  using RankPattern::RankPattern;
  LogicalResult lower(MaskedFillOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    if (state.buffers.isInSoftmaxPrologue(op)) { // computed by the softmax
      b.replaceOp(op, adaptor.getInput());
      return success();
    }
    return emitInto(op, b, [&](Value out) {
      state.rt.pfrt_k_masked_fill(
          b, op.getLoc(), adaptor.getInput(), adaptor.getMask(), out,
          localCount(op.getResult()), dtypeCode(op.getMask()),
          op.getValue().convertToDouble());
    });
  }
};

/// Copies the box `sizes` of `in` at `inOffsets` to `out` at `outOffsets`
/// (local shapes; offsets on split axes are 0 by the ops' SBP rules).
void copyBox(RankLoweringState &state, OpBuilder &b, Location loc, Value in,
             Value inValue, ArrayRef<int64_t> inOffsets, Value out,
             Value outValue, ArrayRef<int64_t> outOffsets,
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
  patterns.add<BinaryLowering<SubOp>, BinaryLowering<DivOp>,
               BroadcastToLowering, MaskedFillLowering, BoxLowering<SliceOp>,
               BoxLowering<PadOp>, ConcatLowering>(converter, state);
}
