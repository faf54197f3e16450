//===- Microbatch.cpp - gradient accumulation over micro-batches ----------===//

#include "PassUtils.h"
#include "pf/Dialect/PF/Transforms/Passes.h"
#include "pf/Support/RankParallel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"

#define DEBUG_TYPE "pf-microbatch"

namespace mlir::pf {
#define GEN_PASS_DEF_MICROBATCHPASS
#define GEN_PASS_DEF_UNROLLMICROBATCHESPASS
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
  // A cast's result is its operand's shape in another element type.
  if (auto castOp = dyn_cast<CastOp>(copy)) {
    auto input = cast<GlobalType>(castOp.getInput().getType());
    auto result = cast<GlobalType>(castOp.getType());
    castOp.getResult().setType(result.withShape(input.getShape()));
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

/// The forward and backward ops (`ops`, in block order) that compute the
/// same value in every micro-batch, to run once per step: a pure op other
/// than a constant (one serves every copy anyway, see unrollFunction) whose
/// operands all are such values, and the read of a parameter that no
/// forward or backward op writes (not a gradient buffer) feeding one. A
/// weight's pf.cast to bf16/f16 is one: cast once a step, not once per
/// micro-batch (as torch's autocast cache within a step).
llvm::DenseSet<Operation *> stepInvariantOps(ArrayRef<Operation *> ops) {
  llvm::DenseSet<StringAttr> written;
  for (Operation *op : ops)
    if (auto write = dyn_cast<WriteParamOp>(op))
      written.insert(write.getParamAttr().getAttr());
  llvm::DenseSet<Operation *> invariant, hoisted;
  for (Operation *op : ops) {
    if (auto read = dyn_cast<ReadParamOp>(op)) {
      if (!written.contains(read.getParamAttr().getAttr()))
        invariant.insert(op);
      continue;
    }
    if (op->getNumOperands() == 0 || op->getNumRegions() != 0 ||
        op->hasTrait<OpTrait::ConstantLike>() || !isMemoryEffectFree(op) ||
        isa<SendOp, RecvOp, BroadcastOp, ReduceOp>(op))
      continue;
    bool fromInvariant = llvm::all_of(op->getOperands(), [&](Value v) {
      Operation *def = v.getDefiningOp();
      return def && invariant.contains(def);
    });
    if (!fromInvariant)
      continue;
    invariant.insert(op);
    hoisted.insert(op);
    for (Value v : op->getOperands())
      hoisted.insert(v.getDefiningOp());
  }
  return hoisted;
}

/// Replaces the forward and backward ops of `func` by one copy that runs on
/// one micro-batch (`pf.microbatch = 0`, inputs cut by `pf.microbatch`
/// index 0), moves the update after it, and returns each forward or
/// backward result packed over the m micro-batches (`pf.pack` of m uses of
/// the copy's value). `pf.microbatch_template = m` on the function says the
/// copy stands for m micro-batches: unrollMicrobatches makes the others.
LogicalResult makeTemplate(func::FuncOp func, int64_t m) {
  Block &block = func.getBody().front();
  auto ret = cast<func::ReturnOp>(block.getTerminator());
  OpBuilder b(ret);
  PFDialect::MicrobatchAttrHelper microbatchAttr(func.getContext());

  // The micro-batch slice of every input.
  IRMapping map;
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
    auto slice =
        MicrobatchOp::create(b, arg.getLoc(), type.withShape(shape), arg, 0, m);
    microbatchAttr.setAttr(slice, b.getI64IntegerAttr(0));
    map.map(arg, slice);
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

  // Forward, then backward, then the update. A step-invariant op runs once
  // for every micro-batch, unmarked, where its first use is: after the
  // unrolling, before every micro-batch's use (pf-apply-schedule keeps an
  // unmarked op outside the update in the step's prologue). A parameter
  // read other ops use too is read again there, in the micro-batch.
  SmallVector<Operation *> ordered(forward);
  llvm::append_range(ordered, backward);
  llvm::DenseSet<Operation *> once = stepInvariantOps(ordered);
  IRMapping onceMap;
  b.setInsertionPoint(ret);
  for (ArrayRef<Operation *> ops : {ArrayRef(forward), ArrayRef(backward)})
    for (Operation *op : ops) {
      if (once.contains(op)) {
        Operation *single = b.clone(*op, onceMap);
        bool perMicrobatchUse =
            isa<ReadParamOp>(op) &&
            llvm::any_of(op->getUsers(),
                         [&](Operation *user) { return !once.contains(user); });
        if (!perMicrobatchUse) {
          map.map(op->getResults(), single->getResults());
          continue;
        }
      }
      Operation *copy = b.clone(*op, map);
      microbatchAttr.setAttr(copy, b.getI64IntegerAttr(0));
      if (failed(retype(op, copy, m, batchSizes)))
        return failure();
    }
  for (Operation *op : update)
    op->moveBefore(ret);

  // The loss comes back packed over micro-batches, and so does every other
  // result of the forward or backward pass (stacked along a new axis 0);
  // per-step values (the update's) stay as they are.
  SmallVector<Value> results(ret.getOperands());
  PFDialect::StageAttrHelper stageAttr(b.getContext());
  for (Value &result : results) {
    Value part = map.lookupOrNull(result);
    if (!part)
      continue;
    auto type = cast<GlobalType>(part.getType());
    SmallVector<int64_t> shape = {m};
    llvm::append_range(shape, type.getShape());
    SmallVector<Value> parts(m, part);
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
  PFDialect::MicrobatchTemplateAttrHelper(func.getContext())
      .setAttr(func, b.getI64IntegerAttr(m));
  return success();
}

/// Gives a send or receive of micro-batch k the tag k * stride + its
/// template tag (k = m for the transfers outside the micro-batches), so that
/// every transfer of the step keeps a tag of its own on every rank.
void retag(Operation *op, int64_t k, int64_t stride) {
  if (auto send = dyn_cast<SendOp>(op))
    send.setTag(k * stride + send.getTag());
  else if (auto recv = dyn_cast<RecvOp>(op))
    recv.setTag(k * stride + recv.getTag());
}

/// Ops whose copy must pair with another rank's (a point-to-point transfer,
/// a rooted collective) or that change state: unmarked, a copy is unsafe
/// (the peer's unmarked half may have no copied operand to follow).
bool needsMark(Operation &op) {
  return isa<SendOp, RecvOp, BroadcastOp, ReduceOp>(op) ||
         !isMemoryEffectFree(&op);
}

/// Makes the m - 1 other copies of a template's micro-batch (see
/// makeTemplate): the copy is every op marked `pf.microbatch` and every op
/// using one's result, constants aside (one serves every copy). Copies of
/// forward ops follow the last marked forward op, copies of backward ops
/// the last marked backward op (GPipe order), each with its
/// `pf.microbatch` and `pf.microbatch` index; an unmarked op after those
/// points (a layout change feeding the gathering pack) has its copies right
/// after it. The gathering `pf.pack`s take micro-batch k's value as operand
/// k.
LogicalResult unrollFunction(func::FuncOp func, int64_t tagStride) {
  MLIRContext *ctx = func.getContext();
  PFDialect::MicrobatchTemplateAttrHelper templateAttr(ctx);
  IntegerAttr count = templateAttr.getAttr(func);
  if (!count)
    return success();
  int64_t m = count.getInt();
  templateAttr.removeAttr(func);
  PFDialect::MicrobatchAttrHelper microbatchAttr(ctx);
  Block &block = func.getBody().front();
  auto gathers = [&](Operation &op) {
    return isa<PackOp>(op) && !microbatchAttr.isAttrPresent(&op);
  };

  llvm::DenseSet<Operation *> copied, backwardSet;
  SmallVector<Operation *> forward, backward;
  Operation *lastForward = nullptr, *lastBackward = nullptr; // marked
  for (Operation &op : block.without_terminator()) {
    bool uses = false, usesBackward = false;
    for (Value v : op.getOperands())
      if (Operation *def = v.getDefiningOp()) {
        uses |= copied.contains(def);
        usesBackward |= backwardSet.contains(def);
      }
    bool marked = microbatchAttr.isAttrPresent(&op);
    // Constants serve every copy, as they would once CSE'd.
    if (gathers(op) || (!uses && !marked) ||
        op.hasTrait<OpTrait::ConstantLike>())
      continue;
    Part part = partOf(op);
    if (part == Part::Update)
      return op.emitOpError("pf-unroll-microbatches: the update uses a "
                            "micro-batch's value");
    if (!marked && needsMark(op))
      return op.emitOpError("pf-unroll-microbatches: uses a micro-batch's "
                            "value but has no pf.microbatch (a transfer or "
                            "an effect copied without its mark)");
    copied.insert(&op);
    if (part == Part::Backward || usesBackward) {
      backwardSet.insert(&op);
      backward.push_back(&op);
      if (marked)
        lastBackward = &op;
    } else {
      forward.push_back(&op);
      if (marked)
        lastForward = &op;
    }
  }
  // Only the gathering packs read a micro-batch's values.
  for (Operation &op : block) {
    if (copied.contains(&op))
      continue;
    bool reads = llvm::any_of(op.getOperands(), [&](Value v) {
      Operation *def = v.getDefiningOp();
      return def && copied.contains(def);
    });
    if (!reads)
      continue;
    if (!gathers(op))
      return op.emitOpError("pf-unroll-microbatches: uses a micro-batch's "
                            "value outside the micro-batch copies");
    if (static_cast<int64_t>(op.getNumOperands()) != m)
      return op.emitOpError("pf-unroll-microbatches: packs ")
             << op.getNumOperands() << " values of " << m << " micro-batches";
  }

  for (Operation &op : block)
    if (!copied.contains(&op))
      retag(&op, m, tagStride);
  SmallVector<IRMapping> maps(m);
  OpBuilder b(ctx);
  auto copyAfter = [&](ArrayRef<Operation *> ops, Operation *after) {
    b.setInsertionPointAfter(after);
    Operation *last = after;
    for (int64_t k = 1; k < m; ++k)
      for (Operation *op : ops) {
        last = b.clone(*op, maps[k]);
        if (microbatchAttr.isAttrPresent(op))
          microbatchAttr.setAttr(last, b.getI64IntegerAttr(k));
        if (auto slice = dyn_cast<MicrobatchOp>(last))
          slice.setIndex(k);
        retag(last, k, tagStride);
      }
    return last;
  };
  // Each group's ops up to its last marked op are copied there; the later
  // (unmarked) ones where they are.
  auto split = [](ArrayRef<Operation *> ops, Operation *lastMarked) {
    size_t n = 0;
    if (lastMarked)
      n = llvm::find(ops, lastMarked) - ops.begin() + 1;
    return std::make_pair(ops.take_front(n), ops.drop_front(n));
  };
  auto [forwardAtPoint, forwardTrailing] = split(forward, lastForward);
  auto [backwardAtPoint, backwardTrailing] = split(backward, lastBackward);
  Operation *forwardCopies = nullptr;
  if (lastForward)
    forwardCopies = copyAfter(forwardAtPoint, lastForward);
  if (lastBackward) {
    Operation *after = lastBackward;
    if (forwardCopies && after->isBeforeInBlock(forwardCopies))
      after = forwardCopies;
    copyAfter(backwardAtPoint, after);
  }
  for (ArrayRef<Operation *> trailing : {forwardTrailing, backwardTrailing})
    for (Operation *op : trailing)
      copyAfter(op, op);
  for (Operation &op : block)
    if (gathers(op) && op.getNumOperands() == static_cast<uint64_t>(m))
      for (int64_t k = 1; k < m; ++k)
        op.setOperand(k, maps[k].lookupOrDefault(op.getOperand(k)));
  return success();
}

/// Unrolls every micro-batch template under `module` (the per-rank modules'
/// steps included). The tag stride is one more than the largest tag of the
/// whole module, the same on every rank.
LogicalResult unrollMicrobatches(ModuleOp module) {
  int64_t stride = 1;
  module.walk([&](Operation *op) {
    if (auto send = dyn_cast<SendOp>(op))
      stride = std::max<int64_t>(stride, send.getTag() + 1);
    else if (auto recv = dyn_cast<RecvOp>(op))
      stride = std::max<int64_t>(stride, recv.getTag() + 1);
  });
  SmallVector<func::FuncOp> funcs;
  module.walk([&](func::FuncOp f) { funcs.push_back(f); });
  // Each function on its own (the per-rank steps on the context's threads).
  return forEachRankInOrder(module.getContext(), funcs.size(), [&](size_t i) {
    return unrollFunction(funcs[i], stride);
  });
}

struct MicrobatchPass : public pf::impl::MicrobatchPassBase<MicrobatchPass> {
  using MicrobatchPassBase::MicrobatchPassBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(passutil::checkAtLeastOne(module, "pf-microbatch",
                                         "num-microbatches", numMicrobatches)))
      return signalPassFailure();
    if (numMicrobatches == 1)
      return;
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal() && failed(makeTemplate(func, numMicrobatches)))
        return signalPassFailure();
    if (!keepTemplate && failed(unrollMicrobatches(module)))
      return signalPassFailure();
  }
};

struct UnrollMicrobatchesPass
    : public pf::impl::UnrollMicrobatchesPassBase<UnrollMicrobatchesPass> {
  void runOnOperation() override {
    if (failed(unrollMicrobatches(getOperation())))
      return signalPassFailure();
  }
};
} // namespace
