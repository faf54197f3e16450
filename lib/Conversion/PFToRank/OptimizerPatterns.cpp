//===- OptimizerPatterns.cpp - parameters, run-time scalars, updates ------===//
//
// Parameters (and optimizer states) live in persistent buffers behind
// globals made by pf_init_params. Reads alias them unless BufferAnalysis
// says a later write would be seen; optimizer updates write in place when
// it allows, which makes their write_param a no-op.
//
//===----------------------------------------------------------------------===//

#include "pf/Conversion/PFToRank/RankLowering.h"

using namespace mlir;
using namespace mlir::pf;

namespace {

struct ReadParamLowering : UntracedPattern<ReadParamOp> {
  using UntracedPattern::UntracedPattern;
  LogicalResult lower(ReadParamOp op, OpAdaptor,
                      ConversionPatternRewriter &b) const override {
    if (!state.paramGlobals.count(op.getParam()))
      return op.emitOpError("reads a parameter this rank does not hold");
    Value ptr = state.paramPtr(b, op.getLoc(), op.getParam());
    if (state.buffers.isCopyingRead(op)) {
      FailureOr<Value> copy = state.result(b, op);
      if (failed(copy))
        return failure();
      state.rt.pfrt_k_copy(b, op.getLoc(), ptr, *copy,
                           localCount(op.getResult()));
      ptr = *copy;
    }
    b.replaceOp(op, ptr);
    return success();
  }
};

struct WriteParamLowering : RankPattern<WriteParamOp> {
  using RankPattern::RankPattern;
  LogicalResult lower(WriteParamOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    if (!state.paramGlobals.count(op.getParam()))
      return op.emitOpError("writes a parameter this rank does not hold");
    if (!state.buffers.inPlaceTarget(op.getValue()).empty()) {
      b.eraseOp(op); // computed in place
      return success();
    }
    Value dst = state.paramPtr(b, loc, op.getParam());
    int64_t n = localCount(op.getValue());
    // Clearing a gradient buffer: fill in place, no temporary.
    if (auto c = op.getValue().getDefiningOp<ConstantOp>())
      if (auto dense = dyn_cast<SplatElementsAttr>(c.getValue())) {
        state.rt.pfrt_k_fill(b, loc, dst, n,
                             dense.getSplatValue<APFloat>().convertToDouble());
        b.eraseOp(op);
        return success();
      }
    state.rt.pfrt_k_copy(b, loc, adaptor.getValue(), dst, n);
    b.eraseOp(op);
    return success();
  }
};

struct ScalarInputLowering : UntracedPattern<ScalarInputOp> {
  using UntracedPattern::UntracedPattern;
  LogicalResult lower(ScalarInputOp op, OpAdaptor,
                      ConversionPatternRewriter &b) const override {
    b.replaceOp(
        op, state.rt.pfrt_scalar(b, op.getLoc(),
                                 state.rt.str(b, op.getLoc(), op.getName())));
    return success();
  }
};

/// A table of pointers on the stack (llvm.alloca), for the multi-tensor
/// updates.
Value pointerTable(OpBuilder &b, Location loc, ArrayRef<Value> pointers) {
  auto ptrTy = LLVM::LLVMPointerType::get(b.getContext());
  auto tableTy = LLVM::LLVMArrayType::get(ptrTy, pointers.size());
  Value one =
      LLVM::ConstantOp::create(b, loc, b.getI64Type(), b.getI64IntegerAttr(1));
  Value table = LLVM::AllocaOp::create(b, loc, ptrTy, tableTy, one);
  for (auto [i, p] : llvm::enumerate(pointers)) {
    Value slot = LLVM::GEPOp::create(b, loc, ptrTy, ptrTy, table,
                                     ArrayRef<LLVM::GEPArg>{int32_t(i)});
    LLVM::StoreOp::create(b, loc, p, slot);
  }
  return table;
}

/// The buffers of an update's results (its parameters, computed in place).
FailureOr<SmallVector<Value, 3>>
resultBuffers(RankLoweringState &state, OpBuilder &b, Operation *update) {
  SmallVector<Value, 3> results;
  for (unsigned i = 0; i < update->getNumResults(); ++i) {
    FailureOr<Value> r = state.result(b, update, i);
    if (failed(r))
      return failure();
    results.push_back(*r);
  }
  return results;
}

/// The members of a multi-tensor update (BufferAnalysis) as one
/// pfrt_k_sgd_multi / pfrt_k_adam_multi call, emitted by the last member;
/// the others only take their (in-place) result buffers.
LogicalResult emitMultiUpdate(RankLoweringState &state,
                              ConversionPatternRewriter &b,
                              const UpdateGroup &group) {
  Operation *last = group.last();
  Location loc = last->getLoc();
  SmallVector<Value> pointers;
  SmallVector<int64_t> counts;
  Value null = state.rt.nullPtr(b, loc);
  for (Operation *update : group.updates) {
    auto operand = [&](Value v) { return v ? b.getRemappedValue(v) : null; };
    FailureOr<SmallVector<Value, 3>> found = resultBuffers(state, b, update);
    if (failed(found))
      return failure();
    SmallVector<Value, 3> &results = *found;
    if (auto sgd = dyn_cast<SGDUpdateOp>(update)) {
      bool momentum = static_cast<bool>(sgd.getMomentumBuffer());
      pointers.append({operand(sgd.getParam()), operand(sgd.getGrad()),
                       operand(sgd.getMomentumBuffer()), results[0],
                       momentum ? results[1] : null});
      counts.push_back(localCount(sgd.getParam()));
    } else {
      auto adam = cast<AdamUpdateOp>(update);
      pointers.append({operand(adam.getParam()), operand(adam.getGrad()),
                       operand(adam.getExpAvg()), operand(adam.getExpAvgSq()),
                       results[0], results[1], results[2]});
      counts.push_back(localCount(adam.getParam()));
    }
  }
  Value table = pointerTable(b, loc, pointers);
  Value n = state.rt.i64Array(b, loc, counts);
  // (no gradient to clear: the step's gradients are step buffers here)
  Value clear = null;
  int64_t count = static_cast<int64_t>(group.updates.size());
  if (auto sgd = dyn_cast<SGDUpdateOp>(last)) {
    state.rt.pfrt_k_sgd_multi(
        b, loc, table, n, clear, count, b.getRemappedValue(sgd.getLr()),
        sgd.getStep() ? b.getRemappedValue(sgd.getStep()) : null,
        sgd.getMomentum().convertToDouble(),
        sgd.getDampening().convertToDouble(),
        sgd.getWeightDecay().convertToDouble(), sgd.getNesterov());
    return success();
  }
  auto adam = cast<AdamUpdateOp>(last);
  state.rt.pfrt_k_adam_multi(
      b, loc, table, n, clear, count, b.getRemappedValue(adam.getLr()),
      b.getRemappedValue(adam.getStep()), adam.getBeta1().convertToDouble(),
      adam.getBeta2().convertToDouble(), adam.getEpsilon().convertToDouble(),
      adam.getWeightDecay().convertToDouble(), adam.getDecoupled(),
      adam.getBiasCorrection());
  return success();
}

/// An update of a multi-tensor group: its in-place result buffers, and at
/// the group's last update the call.
LogicalResult lowerGroupedUpdate(RankLoweringState &state,
                                 ConversionPatternRewriter &b, Operation *op,
                                 const UpdateGroup &group) {
  FailureOr<SmallVector<Value, 3>> results = resultBuffers(state, b, op);
  if (failed(results) ||
      (op == group.last() && failed(emitMultiUpdate(state, b, group))))
    return failure();
  b.replaceOp(op, *results);
  return success();
}

/// Base of the optimizer updates: one of a multi-tensor group lowers with
/// its group (lowerGroupedUpdate), any other by lowerOne.
template <typename OpTy> struct UpdatePattern : RankPattern<OpTy> {
  using RankPattern<OpTy>::RankPattern;
  using typename RankPattern<OpTy>::OpAdaptor;

protected:
  LogicalResult lower(OpTy op, OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const final {
    if (const UpdateGroup *group = this->state.buffers.updateGroupOf(op))
      return lowerGroupedUpdate(this->state, b, op, *group);
    return lowerOne(op, adaptor, b);
  }
  virtual LogicalResult lowerOne(OpTy op, OpAdaptor adaptor,
                                 ConversionPatternRewriter &b) const = 0;
};

struct SGDUpdateLowering : UpdatePattern<SGDUpdateOp> {
  using UpdatePattern::UpdatePattern;
  LogicalResult lowerOne(SGDUpdateOp op, OpAdaptor adaptor,
                         ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    FailureOr<Value> p = state.result(b, op, 0);
    if (failed(p))
      return failure();
    SmallVector<Value, 2> results = {*p};
    Value buf = state.rt.nullPtr(b, loc), step = state.rt.nullPtr(b, loc),
          newBuf = state.rt.nullPtr(b, loc);
    if (op.getMomentumBuffer()) {
      FailureOr<Value> nb = state.result(b, op, 1);
      if (failed(nb))
        return failure();
      buf = adaptor.getMomentumBuffer(), step = adaptor.getStep();
      newBuf = *nb;
      results.push_back(*nb);
    }
    state.rt.pfrt_k_sgd(
        b, loc, adaptor.getParam(), adaptor.getGrad(), adaptor.getLr(), buf,
        step, *p, newBuf, localCount(op.getParam()),
        op.getMomentum().convertToDouble(), op.getDampening().convertToDouble(),
        op.getWeightDecay().convertToDouble(), op.getNesterov());
    b.replaceOp(op, results);
    return success();
  }
};

struct AdamUpdateLowering : UpdatePattern<AdamUpdateOp> {
  using UpdatePattern::UpdatePattern;
  LogicalResult lowerOne(AdamUpdateOp op, OpAdaptor adaptor,
                         ConversionPatternRewriter &b) const override {
    return emitIntoAll(op, b, [&](ArrayRef<Value> outs) {
      state.rt.pfrt_k_adam(
          b, op.getLoc(), adaptor.getParam(), adaptor.getGrad(),
          adaptor.getExpAvg(), adaptor.getExpAvgSq(), adaptor.getLr(),
          adaptor.getStep(), outs[0], outs[1], outs[2],
          localCount(op.getParam()), op.getBeta1().convertToDouble(),
          op.getBeta2().convertToDouble(), op.getEpsilon().convertToDouble(),
          op.getWeightDecay().convertToDouble(), op.getDecoupled(),
          op.getBiasCorrection());
    });
  }
};

/// Gradient clipping reads the norm on the host: not for device buffers.
LogicalResult hostScalarOnDevice(Operation *op) {
  return op->emitOpError("has no GPU lowering yet: its lowering reads a "
                         "scalar buffer on the host");
}

/// The f32 a 0-d buffer holds, as an f64.
Value loadScalar(OpBuilder &b, Location loc, Value ptr) {
  Value f = LLVM::LoadOp::create(b, loc, b.getF32Type(), ptr);
  return LLVM::FPExtOp::create(b, loc, b.getF64Type(), f);
}

/// scale = min(1, max_norm / (sqrt(sum_sq) + 1e-6)), inline.
struct ClipScaleLowering : RankPattern<ClipScaleOp> {
  using RankPattern::RankPattern;
  LogicalResult lower(ClipScaleOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    if (!state.computesScalarsInline())
      return hostScalarOnDevice(op);
    Location loc = op.getLoc();
    auto cst = [&](double v) {
      return LLVM::ConstantOp::create(b, loc, b.getF64Type(),
                                      b.getF64FloatAttr(v));
    };
    Value norm =
        LLVM::SqrtOp::create(b, loc, loadScalar(b, loc, adaptor.getSumSq()));
    Value coef =
        LLVM::FDivOp::create(b, loc, cst(op.getMaxNorm().convertToDouble()),
                             LLVM::FAddOp::create(b, loc, norm, cst(1e-6)));
    Value clamped = LLVM::MinNumOp::create(b, loc, coef, cst(1.0));
    Value f = LLVM::FPTruncOp::create(b, loc, b.getF32Type(), clamped);
    return emitInto(op, b,
                    [&](Value out) { LLVM::StoreOp::create(b, loc, f, out); });
  }
};

struct ScaleByLowering : RankPattern<ScaleByOp> {
  using RankPattern::RankPattern;
  LogicalResult lower(ScaleByOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    if (!state.computesScalarsInline())
      return hostScalarOnDevice(op);
    Value scale = loadScalar(b, op.getLoc(), adaptor.getScale());
    return emitInto(op, b, [&](Value out) {
      state.rt.pfrt_k_scale(b, op.getLoc(), adaptor.getInput(), out,
                            localCount(op.getResult()), scale);
    });
  }
};

} // namespace

void mlir::pf::populatePFToCPUOptimizerPatterns(const TypeConverter &converter,
                                                RewritePatternSet &patterns,
                                                RankLoweringState &state) {
  patterns.add<ReadParamLowering, WriteParamLowering, ScalarInputLowering,
               SGDUpdateLowering, AdamUpdateLowering, ClipScaleLowering,
               ScaleByLowering>(converter, state);
}
