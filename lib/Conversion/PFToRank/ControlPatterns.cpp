//===- ControlPatterns.cpp - constants, views, micro-batches, return ------===//

#include "pf/Conversion/PFToRank/RankLowering.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace mlir::pf;

namespace {

struct ConstantLowering : UntracedPattern<ConstantOp> {
  using UntracedPattern::UntracedPattern;

  /// Any other value (f32, i64, i32 or bool): a private module constant
  /// copied into the buffer (this rank's box: pf-partition-ranks sliced the
  /// value).
  LogicalResult lowerDense(ConstantOp op, ConversionPatternRewriter &b) const {
    auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
    Type elem = op.getType().getElementType();
    if (!dense || !rankDType(elem))
      return op.emitOpError("convert-pf-to-cpu supports dense constants of "
                            "f32, i64, i32 and i1 (bool)");
    int64_t n = localCount(op.getResult()), words = localWords(op.getResult());
    Attribute init = dense.reshape(RankedTensorType::get({n}, elem));
    Type stored = elem;
    int64_t count = n;
    if (elem.isInteger(1)) {
      // One byte a bool, padded to whole words for the word copy below.
      SmallVector<int8_t> bytes(dense.getValues<bool>().begin(),
                                dense.getValues<bool>().end());
      bytes.resize(4 * words, 0);
      stored = b.getI8Type();
      count = 4 * words;
      init = DenseElementsAttr::get(RankedTensorType::get({count}, stored),
                                    ArrayRef<int8_t>(bytes));
    }
    LLVM::GlobalOp global;
    {
      OpBuilder top(op.getContext());
      top.setInsertionPointToStart(state.module.getBody());
      global = LLVM::GlobalOp::create(
          top, op.getLoc(), LLVM::LLVMArrayType::get(stored, count),
          /*isConstant=*/true, LLVM::Linkage::Private,
          ("__pf_const" + Twine(state.denseConstants++)).str(), init);
    }
    return emitInto(op, b, [&](Value out) {
      Value src = LLVM::AddressOfOp::create(b, op.getLoc(), global);
      // The module constant is host memory: a GPU rank copies it over.
      if (state.copiesHostDataToDevice())
        state.rt.pfrt_cuda_h2d(b, op.getLoc(), out, src,
                               n * dtypeBytes(op.getResult()));
      else
        state.rt.pfrt_k_copy(b, op.getLoc(), src, out, words);
    });
  }
  LogicalResult lower(ConstantOp op, OpAdaptor,
                      ConversionPatternRewriter &b) const override {
    auto dense = dyn_cast<SplatElementsAttr>(op.getValue());
    if (!dense || !op.getType().getElementType().isF32())
      return lowerDense(op, b);
    // Constants only stored by write_param are filled in place there.
    if (llvm::all_of(op->getUsers(),
                     [](Operation *u) { return isa<WriteParamOp>(u); })) {
      b.replaceOp(op, state.rt.nullPtr(b, op.getLoc()));
      return success();
    }
    return emitInto(op, b, [&](Value out) {
      state.rt.pfrt_k_fill(b, op.getLoc(), out, localCount(op.getResult()),
                           dense.getSplatValue<APFloat>().convertToDouble());
    });
  }
};

/// Micro-batch k is a contiguous block of rows: a view, no copy; or, of an
/// input loaded by parts, part k loaded into its own buffer.
struct MicrobatchLowering : UntracedPattern<MicrobatchOp> {
  using UntracedPattern::UntracedPattern;

  LogicalResult loadPart(MicrobatchOp op, const PartInput &part,
                         int64_t elementBytes,
                         ConversionPatternRewriter &b) const {
    return emitInto(op, b, [&](Value out) {
      Location loc = op.getLoc();
      rt::RuntimeABI &rt = state.rt;
      int64_t bytes = elementBytes * localCount(op.getResult());
      Value stream = rt.pfrt_stream_id(
          b, loc, rt.str(b, loc, ("input" + Twine(part.index)).str()));
      rt.pfrt_load_input_part(b, loc, part.index, out, bytes,
                              static_cast<int64_t>(op.getIndex()),
                              static_cast<int64_t>(op.getCount()), part.dtype,
                              part.classes, state.seed(b, loc), stream,
                              static_cast<int64_t>(part.logicalShape.size()),
                              rt.i64Array(b, loc, part.logicalShape),
                              part.numBoxes, rt.i64Array(b, loc, part.offsets),
                              rt.i64Array(b, loc, part.boxShape));
      if (part.zero)
        rt.pfrt_zero_partial_input(b, loc, out, bytes);
    });
  }

  LogicalResult lower(MicrobatchOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    FailureOr<int64_t> bytes = elementBytes(op, op.getType());
    if (failed(bytes))
      return failure();
    Location loc = op.getLoc();
    // An input loaded by parts: this micro-batch, loaded here.
    auto part = state.partInputs.find(op.getInput());
    if (part != state.partInputs.end())
      return loadPart(op, part->second, *bytes, b);
    Value offset = LLVM::ConstantOp::create(
        b, loc, b.getI64Type(),
        b.getI64IntegerAttr(op.getIndex() * localCount(op.getResult()) *
                            *bytes));
    b.replaceOpWithNewOp<LLVM::GEPOp>(op, state.ptrType(), b.getI8Type(),
                                      adaptor.getInput(), ValueRange{offset});
    return success();
  }
};

/// The per-micro-batch losses (or other results) side by side.
struct PackLowering : RankPattern<PackOp> {
  using RankPattern::RankPattern;
  LogicalResult lower(PackOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    Value first = op.getElements().front();
    if (failed(elementBytes(op, first.getType())))
      return failure();
    return emitInto(op, b, [&](Value out) {
      Location loc = op.getLoc();
      rt::RuntimeABI &rt = state.rt;
      // Each element's local part, one after the other: f32 ones by a
      // copy, others (whose parts need not start on a 4-byte word) as
      // boxes of their bytes.
      int64_t n = localCount(first);
      bool f32 = cast<GlobalType>(first.getType()).getElementType().isF32();
      for (auto [k, e] : llvm::enumerate(adaptor.getElements())) {
        int64_t at = static_cast<int64_t>(k) * n;
        if (f32) {
          Value dst = LLVM::GEPOp::create(
              b, loc, state.ptrType(), b.getF32Type(), out,
              ValueRange{LLVM::ConstantOp::create(b, loc, b.getI64Type(),
                                                  b.getI64IntegerAttr(at))});
          rt.pfrt_k_copy(b, loc, e, dst, n);
          continue;
        }
        int64_t packed = n * static_cast<int64_t>(op.getElements().size());
        rt.pfrt_copy_box(b, loc, e, rt.i64Array(b, loc, {n}),
                         rt.nullPtr(b, loc), out, rt.i64Array(b, loc, {packed}),
                         rt.i64Array(b, loc, {at}), rt.i64Array(b, loc, {n}), 1,
                         dtypeCode(first));
      }
    });
  }
};

/// Same local data, another view of it.
template <typename OpTy> struct ViewLowering : UntracedPattern<OpTy> {
  using Base = UntracedPattern<OpTy>;
  using Base::Base;
  LogicalResult lower(OpTy op, typename Base::OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    b.replaceOp(op, adaptor.getOperands()[0]);
    return success();
  }
};

/// The end of the step: pending sends complete, and the loss (one value
/// per micro-batch when packed) goes to the runtime unless another rank
/// holding it reports it.
struct ReturnLowering : UntracedPattern<func::ReturnOp> {
  using UntracedPattern::UntracedPattern;
  LogicalResult lower(func::ReturnOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    state.rt.pfrt_wait_sends(b, loc);
    // An inference step: every result, this rank's local part of it.
    if (state.reportOutputs) {
      for (auto [i, operand] : llvm::enumerate(op.getOperands())) {
        FailureOr<int64_t> bytes = elementBytes(op, operand.getType());
        if (failed(bytes))
          return failure();
        state.rt.pfrt_report_output(b, loc, state.outputIndices[i],
                                    adaptor.getOperands()[i],
                                    *bytes * localCount(operand));
      }
      b.replaceOpWithNewOp<LLVM::ReturnOp>(op, ValueRange{});
      return success();
    }
    // A training step: its outputs besides the loss, then the loss.
    for (auto [i, operand] : llvm::enumerate(op.getOperands())) {
      if (static_cast<int64_t>(i) == state.lossIndex)
        continue;
      FailureOr<int64_t> bytes = elementBytes(op, operand.getType());
      if (failed(bytes))
        return failure();
      state.rt.pfrt_report_output(b, loc, state.outputIndices[i],
                                  adaptor.getOperands()[i],
                                  *bytes * localCount(operand));
    }
    if (state.lossIndex >= 0 && !state.lossReplica) {
      Value loss = adaptor.getOperands()[state.lossIndex];
      for (int64_t k = 0, e = localCount(op.getOperand(state.lossIndex)); k < e;
           ++k) {
        Value index = LLVM::ConstantOp::create(b, loc, b.getI64Type(),
                                               b.getI64IntegerAttr(k));
        Value at = LLVM::GEPOp::create(b, loc, state.ptrType(), b.getF32Type(),
                                       loss, ValueRange{index});
        state.rt.pfrt_report_loss(b, loc, at, static_cast<int32_t>(k));
      }
    }
    b.replaceOpWithNewOp<LLVM::ReturnOp>(op, ValueRange{});
    return success();
  }
};

} // namespace

void mlir::pf::populatePFToCPUControlPatterns(const TypeConverter &converter,
                                              RewritePatternSet &patterns,
                                              RankLoweringState &state) {
  patterns.add<ConstantLowering, MicrobatchLowering, PackLowering,
               ViewLowering<ReshapeOp>, ViewLowering<FlattenOp>,
               ViewLowering<ToGlobalOp>, ReturnLowering>(converter, state);
}
