//===- LogicalPatterns.cpp - comparisons, boolean tensors, casts ----------===//
//
// pf.compare, pf.logical_{and,or,xor,not}, pf.where and pf.cast, each one
// call of its runtime kernel (pfrt_k_compare, pfrt_k_logical, pfrt_k_where,
// pfrt_k_cast; the device twins on a GPU rank) with the operands' dtype
// codes. A bool (i1) is one byte an element.
//
//===----------------------------------------------------------------------===//

#include "pf/Conversion/PFToRank/RankLowering.h"

using namespace mlir;
using namespace mlir::pf;

namespace {

struct CompareLowering : RankPattern<CompareOp> {
  using RankPattern::RankPattern;
  LogicalResult lower(CompareOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    return emitSizedInto(op, op.getLhs().getType(), b, [&](Value out) {
      // The verifier accepted the predicate's name.
      auto predicate =
          static_cast<int32_t>(*symbolizeComparePredicate(op.getPredicate()));
      state.rt.pfrt_k_compare(b, op.getLoc(), adaptor.getLhs(),
                              adaptor.getRhs(), out, localCount(op.getResult()),
                              dtypeCode(op.getLhs()), predicate);
    });
  }
};

/// pfrt_k_logical's kind of each op.
template <typename OpTy> constexpr int32_t kLogicalKind = 0;
template <> constexpr int32_t kLogicalKind<LogicalOrOp> = 1;
template <> constexpr int32_t kLogicalKind<LogicalXorOp> = 2;
template <> constexpr int32_t kLogicalKind<LogicalNotOp> = 3;

template <typename OpTy>
void logical(RankLoweringState &state, OpTy op, RankAdaptor<OpTy> adaptor,
             ConversionPatternRewriter &b, Value out) {
  Location loc = op.getLoc();
  ValueRange in = adaptor.getOperands();
  state.rt.pfrt_k_logical(b, loc, in[0],
                          in.size() > 1 ? in[1] : state.rt.nullPtr(b, loc), out,
                          localCount(op.getResult()), kLogicalKind<OpTy>);
}

void where(RankLoweringState &state, WhereOp op, RankAdaptor<WhereOp> adaptor,
           ConversionPatternRewriter &b, Value out) {
  state.rt.pfrt_k_where(b, op.getLoc(), adaptor.getCondition(),
                        adaptor.getTrueValue(), adaptor.getFalseValue(), out,
                        localCount(op.getResult()), dtypeCode(op.getResult()));
}

struct CastLowering : RankPattern<CastOp> {
  using RankPattern::RankPattern;
  LogicalResult lower(CastOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    GlobalType in = op.getInput().getType();
    if (in.getElementType() != op.getType().getElementType())
      return emitSizedInto(op, in, b, [&](Value out) {
        state.rt.pfrt_k_cast(
            b, op.getLoc(), adaptor.getInput(), dtypeCode(op.getInput()), out,
            dtypeCode(op.getResult()), localCount(op.getResult()));
      });
    if (failed(elementBytes(op, in)))
      return failure();
    b.replaceOp(op, adaptor.getInput()); // the same bytes
    return success();
  }
};

} // namespace

void mlir::pf::populateRankLogicalPatterns(const TypeConverter &converter,
                                           RewritePatternSet &patterns,
                                           RankLoweringState &state) {
  patterns.add<CompareLowering,
               EmitIntoPattern<LogicalAndOp, logical<LogicalAndOp>>,
               EmitIntoPattern<LogicalOrOp, logical<LogicalOrOp>>,
               EmitIntoPattern<LogicalXorOp, logical<LogicalXorOp>>,
               EmitIntoPattern<LogicalNotOp, logical<LogicalNotOp>>,
               EmitIntoPattern<WhereOp, where>, CastLowering>(converter, state);
}
