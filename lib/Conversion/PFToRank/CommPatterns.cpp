//===- CommPatterns.cpp - collectives, boxes, point-to-point --------------===//
//
// Collectives run over this rank's group of the op's `groups` (MPI
// communicators cached by the runtime); boxes are local copies between
// sub-boxes; sends are non-blocking (only receives block, as the schedule
// simulator assumes) and complete at the end of the step.
//
//===----------------------------------------------------------------------===//

#include "pf/Conversion/PFToRank/RankLowering.h"

using namespace mlir;
using namespace mlir::pf;

namespace {

/// This rank's group among `groups` and its position there (-1: none).
std::pair<ArrayRef<int64_t>, int64_t> groupOf(ArrayAttr groups, int64_t rank) {
  for (Attribute g : groups) {
    ArrayRef<int64_t> ranks = cast<DenseI64ArrayAttr>(g).asArrayRef();
    for (auto [i, r] : llvm::enumerate(ranks))
      if (r == rank)
        return {ranks, static_cast<int64_t>(i)};
  }
  return {ArrayRef<int64_t>(), -1};
}

/// Base of the patterns of communication ops: traced as "comm".
template <typename OpTy> struct CommPattern : RankPattern<OpTy> {
  CommPattern(const TypeConverter &converter, RankLoweringState &state)
      : RankPattern<OpTy>(converter, state, RankPattern<OpTy>::Trace::Comm) {}
};

/// all_reduce, all_gather, reduce_scatter, all_to_all and shard (a local
/// slice by group position): the runtime's boxing helpers over one group.
template <typename OpTy> struct GroupOpLowering : RankPattern<OpTy> {
  using Base = RankPattern<OpTy>;
  using Base::state;
  using typename Base::OpAdaptor;
  GroupOpLowering(const TypeConverter &converter, RankLoweringState &state)
      : Base(converter, state,
             std::is_same_v<OpTy, ShardOp> || std::is_same_v<OpTy, UnshardOp>
                 ? Base::Trace::Compute
                 : Base::Trace::Comm) {}

  LogicalResult lower(OpTy op, OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    auto [groupRanks, groupPos] = groupOf(op.getGroups(), state.rankId);
    ArrayRef<int64_t> ranks = groupRanks;
    int64_t pos = groupPos;
    if (pos < 0)
      return op.emitOpError("rank ")
             << state.rankId << " is in none of the op's groups";
    Value source = op.getInput();
    Type element = cast<GlobalType>(source.getType()).getElementType();
    if constexpr (std::is_same_v<OpTy, AllReduceOp> ||
                  std::is_same_v<OpTy, ReduceScatterOp>) {
      if (!element.isF32() && !element.isBF16() && !element.isF16())
        return op.emitOpError("sums f32, bf16 or f16 tensors only");
    }
    return this->emitInto(op, b, [&](Value out) {
      Location loc = op.getLoc();
      rt::RuntimeABI &rt = state.rt;
      Value in = adaptor.getInput();
      Value ranksPtr = rt.i64Array(b, loc, ranks);
      auto n = static_cast<int64_t>(ranks.size());
      ArrayRef<int64_t> shape = localShape(source);
      auto ndim = static_cast<int64_t>(shape.size());
      Value shapePtr = rt.i64Array(b, loc, shape);
      int32_t dtype = dtypeCode(source);
      if constexpr (std::is_same_v<OpTy, AllReduceOp>) {
        // Started only (pf-bucket-gradients{overlap}): pf.all_reduce_wait
        // ends it.
        // bf16/f16 (gradient-dtype): the runtime's sum in that type.
        bool f32 = element.isF32();
        IntegerAttr slot =
            PFDialect::AsyncSlotAttrHelper(op.getContext()).getAttr(op);
        if (slot && f32)
          rt.pfrt_all_reduce_start(b, loc, in, out, localCount(source),
                                   ranksPtr, n, slot.getInt());
        else if (slot)
          rt.pfrt_all_reduce_start_dtype(b, loc, in, out, localCount(source),
                                         dtype, ranksPtr, n, slot.getInt());
        else if (f32)
          rt.pfrt_all_reduce_sum(b, loc, in, out, localCount(source), ranksPtr,
                                 n);
        else
          rt.pfrt_all_reduce_sum_dtype(b, loc, in, out, localCount(source),
                                       dtype, ranksPtr, n);
      } else if constexpr (std::is_same_v<OpTy, AllGatherOp>) {
        // Started only (pf-overlap-collectives): pf.all_reduce_wait ends it.
        if (IntegerAttr slot =
                PFDialect::AsyncSlotAttrHelper(op.getContext()).getAttr(op))
          rt.pfrt_box_all_gather_start(b, loc, in, out, dtype, ndim, shapePtr,
                                       op.getAxis(), ranksPtr, n,
                                       slot.getInt());
        else
          rt.pfrt_box_all_gather(b, loc, in, out, dtype, ndim, shapePtr,
                                 op.getAxis(), ranksPtr, n);
      } else if constexpr (std::is_same_v<OpTy, ReduceScatterOp>) {
        // bf16/f16 (gradient-dtype under ZeRO-2/3): summed in that type.
        if (IntegerAttr slot =
                PFDialect::AsyncSlotAttrHelper(op.getContext()).getAttr(op))
          rt.pfrt_box_reduce_scatter_start(b, loc, in, out, dtype, ndim,
                                           shapePtr, op.getAxis(), ranksPtr, n,
                                           slot.getInt());
        else if (element.isF32())
          rt.pfrt_box_reduce_scatter(b, loc, in, out, ndim, shapePtr,
                                     op.getAxis(), ranksPtr, n);
        else
          rt.pfrt_box_reduce_scatter_dtype(b, loc, in, out, dtype, ndim,
                                           shapePtr, op.getAxis(), ranksPtr, n);
      } else if constexpr (std::is_same_v<OpTy, AllToAllOp>)
        rt.pfrt_box_all_to_all(b, loc, in, out, dtype, ndim, shapePtr,
                               op.getSplitAxis(), op.getConcatAxis(), ranksPtr,
                               n);
      else if constexpr (std::is_same_v<OpTy, UnshardOp>)
        rt.pfrt_box_unslice(b, loc, in, out, dtype, ndim, shapePtr,
                            op.getAxis(), pos, n);
      else
        rt.pfrt_box_slice(b, loc, in, out, dtype, ndim, shapePtr, op.getAxis(),
                          pos, n);
    });
  }
};

/// The end of a split collective: its result is the started buffer.
struct AllReduceWaitLowering : CommPattern<AllReduceWaitOp> {
  using CommPattern::CommPattern;
  LogicalResult lower(AllReduceWaitOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    // The verifier saw a started all-reduce, all-gather or reduce-scatter.
    if (isa_and_nonnull<AllGatherOp, ReduceScatterOp>(
            op.getStarted().getDefiningOp()))
      state.rt.pfrt_box_collective_wait(b, op.getLoc(), int64_t(op.getSlot()));
    else
      state.rt.pfrt_all_reduce_wait(b, op.getLoc(), int64_t(op.getSlot()));
    b.replaceOp(op, adaptor.getStarted());
    return success();
  }
};

struct BroadcastLowering : CommPattern<BroadcastOp> {
  using CommPattern::CommPattern;
  LogicalResult lower(BroadcastOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    return emitInto(op, b, [&](Value out) {
      Location loc = op.getLoc();
      rt::RuntimeABI &rt = state.rt;
      bool isI64 = op.getType().getElementType().isInteger(64);
      int64_t words = localWords(op.getResult());
      // The root copies its value in; the data moves as 4-byte words, an
      // i64 tensor as int64s.
      if (op.getInput())
        rt.pfrt_k_copy(b, loc, adaptor.getInput(), out, words);
      Value ranks = rt.i64Array(b, loc, op.getRanks());
      auto size = static_cast<int64_t>(op.getRanks().size());
      if (isI64)
        rt.pfrt_broadcast_i64(b, loc, out, localCount(op.getResult()),
                              op.getRoot(), ranks, size);
      else
        rt.pfrt_broadcast(b, loc, out, words, op.getRoot(), ranks, size);
    });
  }
};

struct ReduceLowering : CommPattern<ReduceOp> {
  using CommPattern::CommPattern;
  LogicalResult lower(ReduceOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    // Ranks other than the root have no result.
    Value out = state.rt.nullPtr(b, loc);
    if (op.getResult()) {
      FailureOr<Value> buf = state.result(b, op);
      if (failed(buf))
        return failure();
      out = *buf;
    }
    state.rt.pfrt_reduce_sum(b, loc, adaptor.getInput(), out,
                             localCount(op.getInput()), op.getRoot(),
                             state.rt.i64Array(b, loc, op.getRanks()),
                             static_cast<int64_t>(op.getRanks().size()));
    if (op.getResult())
      b.replaceOp(op, out);
    else
      b.eraseOp(op);
    return success();
  }
};

void extractBox(RankLoweringState &state, ExtractBoxOp op,
                RankAdaptor<ExtractBoxOp> adaptor, ConversionPatternRewriter &b,
                Value out) {
  copyBox(state, b, op.getLoc(), adaptor.getInput(), op.getInput(),
          op.getOffsets(), out, op.getResult(), {}, localShape(op.getResult()));
}

void assemble(RankLoweringState &state, AssembleOp op,
              RankAdaptor<AssembleOp> adaptor, ConversionPatternRewriter &b,
              Value out) {
  for (auto [piece, buffer, off] :
       llvm::zip(op.getPieces(), adaptor.getPieces(), op.getOffsets()))
    copyBox(state, b, op.getLoc(), buffer, piece, {}, out, op.getResult(),
            cast<DenseI64ArrayAttr>(off).asArrayRef(), localShape(piece));
}

struct SendLowering : CommPattern<SendOp> {
  using CommPattern::CommPattern;
  LogicalResult lower(SendOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    if (failed(elementBytes(op, op.getValue().getType())))
      return failure();
    Location loc = op.getLoc();
    // A send completes where SendCompletion proves it received (or at the
    // end of the step), so its buffer must not change before then. A
    // parameter's own buffer could (the update writes it), so that is sent from
    // a copy.
    Value data = adaptor.getValue();
    int64_t floats = localWords(op.getValue());
    Operation *def = op.getValue().getDefiningOp();
    while (isa_and_nonnull<ReshapeOp, FlattenOp, ToGlobalOp>(def))
      def = def->getOperand(0).getDefiningOp();
    if (isa_and_nonnull<ReadParamOp>(def)) {
      Value copy = state.sendCopy(b, op, 4 * floats);
      state.rt.pfrt_k_copy(b, loc, data, copy, floats);
      data = copy;
    }
    // Counts are in 4-byte words (localWords).
    auto peer = static_cast<int32_t>(op.getPeer());
    auto tag = static_cast<int32_t>(op.getTag());
    if (Operation *done = state.sendDone.lookup(op)) {
      state.rt.pfrt_isend_tracked(b, loc, data, floats, peer, tag);
      state.waitsAfter[done].push_back(state.trackedSends++);
    } else
      state.rt.pfrt_isend(b, loc, data, floats, peer, tag);
    b.eraseOp(op);
    return success();
  }
};

struct RecvLowering : CommPattern<RecvOp> {
  using CommPattern::CommPattern;
  LogicalResult lower(RecvOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    return emitSizedInto(op, op.getType(), b, [&](Value out) {
      state.rt.pfrt_recv(b, op.getLoc(), out, localWords(op.getResult()),
                         static_cast<int32_t>(op.getPeer()),
                         static_cast<int32_t>(op.getTag()));
    });
  }
};

} // namespace

void mlir::pf::populatePFToCPUCommPatterns(const TypeConverter &converter,
                                           RewritePatternSet &patterns,
                                           RankLoweringState &state) {
  patterns.add<GroupOpLowering<AllReduceOp>, GroupOpLowering<AllGatherOp>,
               GroupOpLowering<ReduceScatterOp>, GroupOpLowering<AllToAllOp>,
               GroupOpLowering<ShardOp>, GroupOpLowering<UnshardOp>,
               BroadcastLowering, ReduceLowering,
               EmitIntoPattern<ExtractBoxOp, extractBox>,
               EmitIntoPattern<AssembleOp, assemble>, SendLowering,
               RecvLowering, AllReduceWaitLowering>(converter, state);
}
