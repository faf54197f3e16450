//===- Microbatch.cpp - gradient accumulation over micro-batches ----------===//

#include "PassUtils.h"
#include "pf/Dialect/PF/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"

#define DEBUG_TYPE "pf-microbatch"

namespace mlir::pf {
#define GEN_PASS_DEF_MICROBATCHPASS
#include "pf/Dialect/PF/Transforms/Passes.h.inc"
} // namespace mlir::pf

using namespace mlir;
using namespace mlir::pf;

namespace {

enum class Part { Forward, Backward, Update };

Part partOf(Operation &op) {
  StringAttr phase = PFDialect::PhaseAttrHelper(op.getContext()).getAttr(&op);
  if (!phase || phase.getValue() == "forward")
    return Part::Forward;
  if (phase.getValue() == "update")
    return Part::Update;
  return Part::Backward;
}

/// A copy of `orig` that runs on one micro-batch: its results shrink where
/// they carry the batch. Ops with inferred types infer them again from the
/// micro-batch operands; the others carry the batch in the result exactly
/// when their (first) operand did, on axis 0 (the batch is outermost, also
/// through reshapes).
/// The shape attributes of pf.slice, pf.pad and pf.broadcast_to name the
/// logical batch: on a micro-batch copy, axis 0 shrinks with the operand's
/// axis 0. A broadcast whose axis 0 the input does not give (a new or
/// repeated axis) carries the batch when it is the step's batch size (a
/// [T, C] position embedding added to [B, T, C] tokens).
LogicalResult rescaleShapeAttrs(Operation *orig, Operation *copy, int64_t m,
                                ArrayRef<int64_t> batchSizes) {
  auto dim0 = [](Value v) {
    auto t = cast<GlobalType>(v.getType());
    return t.getRank() ? t.getShape()[0] : int64_t(-1);
  };
  if (copy->getNumOperands() == 0)
    return success();
  int64_t before = dim0(orig->getOperand(0)), after = dim0(copy->getOperand(0));
  bool shrank = before != after;
  auto withDim0 = [](ArrayRef<int64_t> a, int64_t d) {
    SmallVector<int64_t> r(a);
    r[0] = d;
    return r;
  };
  if (auto slice = dyn_cast<SliceOp>(copy); slice && shrank) {
    if (slice.getOffsets()[0] != 0 || slice.getSizes()[0] != before)
      return copy->emitOpError("pf-microbatch: slices the batch axis");
    slice.setSizes(withDim0(slice.getSizes(), after));
  } else if (auto pad = dyn_cast<PadOp>(copy); pad && shrank) {
    if (pad.getOffsets()[0] != 0 || pad.getShape()[0] != before)
      return copy->emitOpError("pf-microbatch: pads the batch axis");
    pad.setShape(withDim0(pad.getShape(), after));
  } else if (auto bc = dyn_cast<BroadcastToOp>(copy)) {
    ArrayRef<int64_t> out = bc.getShape();
    int64_t inRank = cast<GlobalType>(bc.getInput().getType()).getRank();
    bool given = static_cast<int64_t>(out.size()) == inRank &&
                 (before == out[0] || out[0] == 1);
    if (given && shrank)
      bc.setShape(withDim0(out, after));
    else if (!given && !out.empty() && llvm::is_contained(batchSizes, out[0]))
      bc.setShape(withDim0(out, out[0] / m));
  }
  return success();
}

LogicalResult retype(Operation *orig, Operation *copy, int64_t m,
                     ArrayRef<int64_t> batchSizes) {
  if (failed(rescaleShapeAttrs(orig, copy, m, batchSizes)))
    return failure();
  if (auto infer = dyn_cast<InferTypeOpInterface>(copy)) {
    SmallVector<Type> types;
    if (failed(infer.inferReturnTypes(
            copy->getContext(), copy->getLoc(), copy->getOperands(),
            copy->getRawDictionaryAttrs(), copy->getPropertiesStorage(),
            copy->getRegions(), types)))
      return failure();
    for (auto [result, type] : llvm::zip(copy->getResults(), types)) {
      auto old = cast<GlobalType>(result.getType());
      result.setType(cast<GlobalType>(type).withSBP(old.getSbp()));
    }
    return success();
  }
  bool batched =
      isa<ReshapeOp, FlattenOp, ToGlobalOp, Conv2DGradInputOp, MaxPool2DGradOp,
          AvgPool2DGradOp, GlobalAvgPoolGradOp>(copy);
  if (!batched || copy->getNumOperands() == 0 ||
      copy->getOperand(0).getType() == orig->getOperand(0).getType())
    return success();
  for (OpResult result : copy->getResults()) {
    auto type = cast<GlobalType>(result.getType());
    SmallVector<int64_t> shape(type.getShape());
    if (shape.empty() || shape[0] % m != 0)
      return copy->emitOpError("pf-microbatch: cannot split the result's "
                               "axis 0 into ")
             << m << " micro-batches";
    shape[0] /= m;
    result.setType(type.withShape(shape));
  }
  return success();
}

LogicalResult splitFunction(func::FuncOp func, int64_t m) {
  Block &block = func.getBody().front();
  auto ret = cast<func::ReturnOp>(block.getTerminator());
  OpBuilder b(ret);
  PFDialect::MicrobatchAttrHelper microbatchAttr(func.getContext());

  // Micro-batch slices of every input.
  SmallVector<IRMapping> maps(m);
  SmallVector<int64_t> batchSizes;
  b.setInsertionPointToStart(&block);
  for (BlockArgument arg : block.getArguments()) {
    auto type = cast<GlobalType>(arg.getType());
    if (type.getRank() == 0 || type.getShape()[0] % m != 0)
      return func.emitOpError("pf-microbatch: input ")
             << arg.getArgNumber() << " has batch size "
             << (type.getRank() ? type.getShape()[0] : 0)
             << ", which does not divide into " << m << " micro-batches";
    // A batch split over n ranks: each micro-batch is split the same way
    // (pf-partition-ranks gives every rank its rows of each micro-batch).
    if (SBPAttr sbp = type.getSbp()) {
      int64_t n = sbp.getSplitFactor(0, type.getPlacement());
      if ((type.getShape()[0] / m) % n != 0)
        return func.emitOpError("pf-microbatch: input ")
               << arg.getArgNumber() << " is split over " << n
               << " ranks along its batch axis, but its micro-batches of "
               << type.getShape()[0] / m << " rows do not divide by " << n;
    }
    SmallVector<int64_t> shape(type.getShape());
    batchSizes.push_back(shape[0]);
    shape[0] /= m;
    for (int64_t k = 0; k < m; ++k) {
      auto slice = MicrobatchOp::create(b, arg.getLoc(), type.withShape(shape),
                                        arg, k, m);
      microbatchAttr.setAttr(slice, b.getI64IntegerAttr(k));
      maps[k].map(arg, slice);
    }
  }

  SmallVector<Operation *> forward, backward, update;
  for (Operation &op : block.without_terminator()) {
    if (isa<MicrobatchOp>(op))
      continue;
    switch (partOf(op)) {
    case Part::Forward:
      forward.push_back(&op);
      break;
    case Part::Backward:
      backward.push_back(&op);
      break;
    case Part::Update:
      update.push_back(&op);
      break;
    }
  }

  // GPipe order: every micro-batch's forward, then every backward.
  b.setInsertionPoint(ret);
  auto cloneAll = [&](ArrayRef<Operation *> ops) -> LogicalResult {
    for (int64_t k = 0; k < m; ++k)
      for (Operation *op : ops) {
        Operation *copy = b.clone(*op, maps[k]);
        microbatchAttr.setAttr(copy, b.getI64IntegerAttr(k));
        if (failed(retype(op, copy, m, batchSizes)))
          return failure();
      }
    return success();
  };
  if (failed(cloneAll(forward)) || failed(cloneAll(backward)))
    return failure();
  for (Operation *op : update)
    op->moveBefore(ret);

  // The loss comes back packed over micro-batches, and so does every other
  // result of the forward or backward pass (stacked along a new axis 0);
  // per-step values (the update's) stay as they are.
  SmallVector<Value> results(ret.getOperands());
  PFDialect::StageAttrHelper stageAttr(b.getContext());
  for (Value &result : results) {
    if (!maps[0].contains(result))
      continue;
    SmallVector<Value> parts;
    for (int64_t k = 0; k < m; ++k)
      parts.push_back(maps[k].lookup(result));
    auto type = cast<GlobalType>(parts.front().getType());
    SmallVector<int64_t> shape = {m};
    llvm::append_range(shape, type.getShape());
    auto packed = PackOp::create(b, ret.getLoc(),
                                 type.withSBP({}).withShape(shape), parts);
    if (Operation *def = result.getDefiningOp())
      if (IntegerAttr stage = stageAttr.getAttr(def))
        stageAttr.setAttr(packed, stage);
    result = packed;
  }
  ret->setOperands(results);

  // The originals are now dead: drop them, users first.
  SmallVector<Operation *> originals(forward);
  llvm::append_range(originals, backward);
  for (Operation *op : llvm::reverse(originals)) {
    op->dropAllUses();
    op->erase();
  }
  passutil::setResultTypes(func, results);
  return success();
}

struct MicrobatchPass : public pf::impl::MicrobatchPassBase<MicrobatchPass> {
  using MicrobatchPassBase::MicrobatchPassBase;
  void runOnOperation() override {
    if (failed(passutil::checkAtLeastOne(getOperation(), "pf-microbatch",
                                         "num-microbatches", numMicrobatches)))
      return signalPassFailure();
    if (numMicrobatches == 1)
      return;
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isExternal() && failed(splitFunction(func, numMicrobatches)))
        return signalPassFailure();
  }
};
} // namespace
