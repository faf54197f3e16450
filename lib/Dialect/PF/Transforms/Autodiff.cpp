//===- Autodiff.cpp - reverse-mode autodiff of a training step ------------===//

#include "PassUtils.h"
#include "pf/Dialect/PF/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

#define DEBUG_TYPE "pf-autodiff"

namespace mlir::pf {
#define GEN_PASS_DEF_AUTODIFFPASS
#include "pf/Dialect/PF/Transforms/Passes.h.inc"
} // namespace mlir::pf

using namespace mlir;
using namespace mlir::pf;

namespace {

constexpr StringLiteral kBackwardInput = "backward_input";
constexpr StringLiteral kBackwardWeight = "backward_weight";
constexpr StringLiteral kRecompute = "recompute";

/// A parameter read, possibly moved to another layout or reshaped: gradients
/// flowing into it are weight-gradient ("W") work.
bool isParamDerived(Value v) {
  Operation *def = v.getDefiningOp();
  while (def) {
    if (isa<ReadParamOp>(def))
      return true;
    if (!isa<ToGlobalOp, ReshapeOp, FlattenOp, TransposeOp>(def) ||
        !isa<GlobalType>(def->getOperand(0).getType()))
      return false;
    def = def->getOperand(0).getDefiningOp();
  }
  return false;
}

void setPhase(Operation *op, StringRef phase) {
  MLIRContext *ctx = op->getContext();
  PFDialect::PhaseAttrHelper(ctx).setAttr(op, StringAttr::get(ctx, phase));
}

void copyStage(Operation *from, Operation *to) {
  PFDialect::StageAttrHelper stageAttr(from->getContext());
  if (IntegerAttr stage = stageAttr.getAttr(from))
    stageAttr.setAttr(to, stage);
}

class FunctionDifferentiator {
public:
  FunctionDifferentiator(func::FuncOp func, int64_t steps, bool wrtInputs,
                         StringRef lossScale)
      : func(func), steps(steps), wrtInputs(wrtInputs), lossScale(lossScale),
        phaseAttr(func.getContext()), checkpointAttr(func.getContext()),
        gradOfAttr(func.getContext()) {}

  LogicalResult run();

private:
  LogicalResult differentiate(Operation *op, OpBuilder &b);
  /// The value to use in the backward pass for forward value `v`: a
  /// recomputed clone if `v` comes from a checkpointed op.
  Value recompute(Value v, OpBuilder &b);
  void accumulate(Value forward, Value grad, OpBuilder &b, Operation *from);
  LogicalResult finishParams(OpBuilder &b);
  LogicalResult finishInputs(OpBuilder &b, func::ReturnOp ret);

  func::FuncOp func;
  int64_t steps;
  bool wrtInputs;
  /// The run-time scalar that multiplies the seed (loss scaling); empty: none.
  StringRef lossScale;
  PFDialect::PhaseAttrHelper phaseAttr;
  PFDialect::CheckpointAttrHelper checkpointAttr;
  PFDialect::GradOfAttrHelper gradOfAttr;
  DenseMap<Value, Value> grads;
  DenseMap<Value, Value> recomputed;
  /// Per parameter: its gradient so far and the read that defines its stage.
  llvm::MapVector<StringAttr, std::pair<Value, ReadParamOp>> paramGrads;
};

LogicalResult FunctionDifferentiator::run() {
  if (!func.getBody().hasOneBlock())
    return func.emitOpError("pf-autodiff expects a single-block function");
  Block &block = func.getBody().front();
  auto ret = dyn_cast<func::ReturnOp>(block.getTerminator());
  if (!ret || ret.getNumOperands() == 0)
    return func.emitOpError("pf-autodiff expects the loss as the first result");
  Value loss = ret.getOperand(0);
  auto lossType = dyn_cast<GlobalType>(loss.getType());
  if (!lossType || lossType.getRank() != 0 ||
      !isa<FloatType>(lossType.getElementType()))
    return ret.emitOpError("the loss (first result) must be a scalar float "
                           "global tensor, got ")
           << loss.getType();

  // The ops that the loss depends on: only they get gradients.
  llvm::SetVector<Operation *> needed;
  SmallVector<Value> worklist = {loss};
  while (!worklist.empty()) {
    Operation *def = worklist.pop_back_val().getDefiningOp();
    if (!def || !needed.insert(def))
      continue;
    llvm::append_range(worklist, def->getOperands());
  }

  // Trainable parameters that do not reach the loss.
  llvm::SmallDenseSet<StringAttr> reaching, warned;
  for (Operation *op : needed)
    if (auto read = dyn_cast<ReadParamOp>(op))
      reaching.insert(read.getParamAttr().getAttr());
  SymbolTableCollection symbols;
  for (auto read : block.getOps<ReadParamOp>()) {
    StringAttr name = read.getParamAttr().getAttr();
    auto param =
        symbols.lookupNearestSymbolFrom<ParamOp>(read, read.getParamAttr());
    if (param && !param.getBuffer() && !reaching.contains(name) &&
        warned.insert(name).second)
      read.emitWarning() << "parameter " << read.getParamAttr()
                         << " does not reach the loss; it gets no gradient";
  }

  OpBuilder b(ret);
  // Seed: d(loss / m) / d(loss) = 1 / m, so that summing the micro-batches'
  // gradients gives the gradient of the mean loss.
  auto seedType = RankedTensorType::get({}, lossType.getElementType());
  auto seedValue = DenseElementsAttr::get(
      seedType, FloatAttr::get(lossType.getElementType(), 1.0 / steps));
  Value seed =
      ConstantOp::create(b, loss.getLoc(), lossType.withSBP({}), seedValue);
  if (!lossScale.empty()) {
    // Loss scaling (a grad scaler): the seed times the run-time scale.
    if (!lossType.getElementType().isF32())
      return ret.emitOpError("loss scaling needs an f32 loss, got ")
             << lossType;
    PlacementAttr placement = lossType.getPlacement();
    auto scalarType = GlobalType::get(
        b.getContext(), {}, b.getF32Type(), placement,
        SBPAttr::getBroadcast(b.getContext(), placement.getNumHierarchyDims()));
    Value scale =
        ScalarInputOp::create(b, loss.getLoc(), scalarType, lossScale);
    Value constant = seed;
    seed = ScaleByOp::create(b, loss.getLoc(), constant, scale);
    for (Value v : {constant, scale}) {
      if (Operation *def = loss.getDefiningOp())
        copyStage(def, v.getDefiningOp());
      setPhase(v.getDefiningOp(), kBackwardInput);
    }
  }
  if (Operation *def = loss.getDefiningOp())
    copyStage(def, seed.getDefiningOp());
  setPhase(seed.getDefiningOp(), kBackwardInput);
  grads[loss] = seed;

  SmallVector<Operation *> forward;
  for (Operation &op : block.without_terminator())
    if (needed.contains(&op))
      forward.push_back(&op);
  for (Operation *op : llvm::reverse(forward))
    if (failed(differentiate(op, b)))
      return failure();
  if (failed(finishParams(b)))
    return failure();
  if (wrtInputs && failed(finishInputs(b, ret)))
    return failure();
  // Gradients that reach neither a parameter nor a requested input (e.g. of
  // the data input) are dead: drop them.
  SmallVector<Operation *> backward;
  for (Operation &op : block.without_terminator())
    if (phaseAttr.isAttrPresent(&op))
      backward.push_back(&op);
  for (Operation *op : llvm::reverse(backward))
    if (isOpTriviallyDead(op))
      op->erase();
  return success();
}

/// Whether `def` widens a bf16/f16 value to float32 (pf-autocast's cast
/// before a float32 op). The backward recomputes it rather than keeping the
/// 4-byte copy alive from the forward: the 2-byte value is saved instead.
static bool widensLowPrecision(Operation *def) {
  auto castOp = dyn_cast<CastOp>(def);
  if (!castOp)
    return false;
  Type from = cast<GlobalType>(castOp.getInput().getType()).getElementType();
  Type to = cast<GlobalType>(castOp.getType()).getElementType();
  return (from.isBF16() || from.isF16()) && to.isF32();
}

Value FunctionDifferentiator::recompute(Value v, OpBuilder &b) {
  Operation *def = v.getDefiningOp();
  if (!def || (!checkpointAttr.isAttrPresent(def) && !widensLowPrecision(def)))
    return v;
  if (Value done = recomputed.lookup(v))
    return done;
  IRMapping mapping;
  for (Value operand : def->getOperands())
    mapping.map(operand, recompute(operand, b));
  Operation *clone = b.clone(*def, mapping);
  checkpointAttr.removeAttr(clone);
  setPhase(clone, kRecompute);
  for (auto [from, to] : llvm::zip(def->getResults(), clone->getResults()))
    recomputed[from] = to;
  return recomputed.lookup(v);
}

/// The gradients of slices that cut one tensor along one axis (q, k and v
/// of a fused projection) arrive as pads of disjoint boxes: their sum is the
/// concatenation of the slices' gradients, padded where they do not cover
/// the tensor. Returns that value for `a + b` when `a` and `b` are pads of
/// adjacent boxes along one axis (`a` possibly already such a merge), or a
/// null value. The sum adds zeros to every element, so the bits are the
/// same (but for the sign of a zero); the pads' and adds' passes over the
/// whole tensor become one concatenation.
Value mergeDisjointPads(Value a, Value b, OpBuilder &builder, Location loc) {
  auto padA = a.getDefiningOp<PadOp>(), padB = b.getDefiningOp<PadOp>();
  if (!padA || !padB || !a.use_empty() || !b.use_empty() ||
      a.getType() != b.getType())
    return {};
  auto inA = cast<GlobalType>(padA.getInput().getType());
  auto inB = cast<GlobalType>(padB.getInput().getType());
  ArrayRef<int64_t> offA = padA.getOffsets(), offB = padB.getOffsets();
  int64_t axis = -1;
  for (int64_t d = 0, e = inA.getRank(); d < e; ++d) {
    if (offA[d] == offB[d] && inA.getShape()[d] == inB.getShape()[d])
      continue;
    if (axis >= 0)
      return {};
    axis = d;
  }
  if (axis < 0)
    return {};
  // First and second along the axis; they must touch.
  PadOp first = padA, second = padB;
  if (offB[axis] < offA[axis])
    std::swap(first, second);
  auto firstIn = cast<GlobalType>(first.getInput().getType());
  if (first.getOffsets()[axis] + firstIn.getShape()[axis] !=
      second.getOffsets()[axis])
    return {};
  // An earlier merge's concatenation along the axis is flattened into this
  // one.
  SmallVector<Value> inputs;
  for (PadOp pad : {first, second}) {
    auto concat = pad.getInput().getDefiningOp<ConcatOp>();
    if (concat && int64_t(concat.getAxis()) == axis && concat->hasOneUse()) {
      llvm::append_range(inputs, concat.getInputs());
    } else {
      inputs.push_back(pad.getInput());
    }
  }
  auto axisAttr = builder.getI64IntegerAttr(axis);
  SmallVector<Type> inferred;
  ConcatOp::Properties props;
  props.axis = axisAttr;
  ConcatOp::Adaptor adaptor(inputs, DictionaryAttr(), props);
  if (failed(ConcatOp::inferReturnTypes(builder.getContext(), std::nullopt,
                                        adaptor, inferred)))
    return {};
  auto concatType = cast<GlobalType>(inferred[0]);
  auto resultType = cast<GlobalType>(a.getType());
  ArrayRef<int64_t> offsets = first.getOffsets();
  bool whole = concatType.getShape() == resultType.getShape() &&
               llvm::all_of(offsets, [](int64_t o) { return o == 0; });
  if (whole && concatType != resultType)
    return {};
  Value merged = ConcatOp::create(builder, loc, concatType, inputs, axisAttr);
  if (!whole) {
    merged = PadOp::create(builder, loc, resultType, merged,
                           first.getOffsetsAttr(), padA.getShapeAttr());
    if (merged.getType() != resultType) {
      // Not expected (the pad's type is given); keep the IR as it was.
      Operation *concat = merged.getDefiningOp()->getOperand(0).getDefiningOp();
      merged.getDefiningOp()->erase();
      concat->erase();
      return {};
    }
  }
  // The pads and an absorbed concatenation stay until the sweep of dead
  // gradients: another operand's gradient may be the same value (an add
  // hands dy to both of its operands).
  return merged;
}

void FunctionDifferentiator::accumulate(Value forward, Value grad, OpBuilder &b,
                                        Operation *from) {
  Value &slot = grads[forward];
  if (!slot) {
    slot = grad;
    return;
  }
  if (Value merged = mergeDisjointPads(slot, grad, b, from->getLoc())) {
    // The concatenation, and the pad around it where there is one.
    SmallVector<Operation *> made = {merged.getDefiningOp()};
    if (isa<PadOp>(made[0]))
      made.push_back(made[0]->getOperand(0).getDefiningOp());
    for (Operation *op : made) {
      copyStage(from, op);
      setPhase(op, isParamDerived(forward) ? kBackwardWeight : kBackwardInput);
    }
    slot = merged;
    return;
  }
  auto sum = AddOp::create(b, from->getLoc(), slot, grad);
  copyStage(from, sum);
  setPhase(sum, isParamDerived(forward) ? kBackwardWeight : kBackwardInput);
  slot = sum;
}

LogicalResult FunctionDifferentiator::differentiate(Operation *op,
                                                    OpBuilder &b) {
  SmallVector<Value> resultGrads;
  for (Value r : op->getResults())
    resultGrads.push_back(grads.lookup(r));
  if (llvm::all_of(resultGrads, [](Value g) { return !g; }))
    return success();

  if (auto read = dyn_cast<ReadParamOp>(op)) {
    auto &entry = paramGrads[read.getParamAttr().getAttr()];
    if (!entry.first) {
      entry = {resultGrads[0], read};
    } else {
      auto sum = AddOp::create(b, op->getLoc(), entry.first, resultGrads[0]);
      copyStage(op, sum);
      setPhase(sum, kBackwardWeight);
      entry.first = sum;
    }
    return success();
  }

  // A constant (a causal mask, positions, a Python number) has no inputs to
  // pass its gradient on to.
  if (isa<ConstantOp>(op))
    return success();

  if (!isa<AutodiffOpInterface>(op))
    return op->emitOpError()
           << "has no gradient rule; pf-autodiff cannot differentiate "
              "through it";

  // With checkpointing, the rule sees a copy of the op whose operands (and,
  // if the op itself is checkpointed, results) are recomputed.
  Operation *target = op;
  bool temporary = false;
  if (checkpointAttr.isAttrPresent(op)) {
    target = recompute(op->getResult(0), b).getDefiningOp();
  } else if (llvm::any_of(op->getOperands(),
                          [&](Value v) { return recompute(v, b) != v; })) {
    IRMapping mapping;
    for (Value operand : op->getOperands())
      mapping.map(operand, recompute(operand, b));
    target = b.clone(*op, mapping);
    temporary = true;
  }

  Operation *marker = b.getInsertionPoint() == b.getBlock()->begin()
                          ? nullptr
                          : &*std::prev(b.getInsertionPoint());
  SmallVector<Value> operandGrads;
  if (failed(cast<AutodiffOpInterface>(target).buildGradient(b, resultGrads,
                                                             operandGrads)))
    return failure();
  if (temporary) {
    // The op's own forward results serve the backward; drop the copy.
    target->replaceAllUsesWith(op->getResults());
    if (marker == target)
      marker = target->getPrevNode();
    target->erase();
  }
  assert(operandGrads.size() == op->getNumOperands() &&
         "gradient rule must return one gradient per operand");

  // Tag the new ops: stage from the forward op; input-gradient work ("B")
  // is whatever feeds the gradient of a non-parameter operand.
  SmallVector<Operation *> created;
  for (Operation *it = marker ? marker->getNextNode() : &b.getBlock()->front();
       it && it != &*b.getInsertionPoint(); it = it->getNextNode())
    created.push_back(it);
  llvm::SmallPtrSet<Operation *, 8> createdSet(created.begin(), created.end());
  llvm::SmallPtrSet<Operation *, 8> inputWork;
  for (auto [operand, grad] : llvm::zip(op->getOperands(), operandGrads))
    if (grad && !isParamDerived(operand))
      if (Operation *def = grad.getDefiningOp();
          def && createdSet.contains(def))
        inputWork.insert(def);
  for (Operation *c : llvm::reverse(created)) {
    if (!inputWork.contains(c))
      continue;
    for (Value operand : c->getOperands())
      if (Operation *def = operand.getDefiningOp();
          def && createdSet.contains(def))
        inputWork.insert(def);
  }
  for (Operation *c : created) {
    copyStage(op, c);
    setPhase(c, inputWork.contains(c) ? kBackwardInput : kBackwardWeight);
  }

  for (auto [operand, grad] : llvm::zip(op->getOperands(), operandGrads))
    if (grad)
      accumulate(operand, grad, b, op);
  return success();
}

LogicalResult FunctionDifferentiator::finishParams(OpBuilder &b) {
  auto module = func->getParentOfType<ModuleOp>();
  SymbolTable table(module);
  for (auto &[name, entry] : paramGrads) {
    auto [grad, read] = entry;
    auto param = table.lookup<ParamOp>(name);
    if (!param || param.getBuffer())
      continue; // Buffers (running statistics) are not trained.
    std::string bufferName = (name.getValue() + ".grad").str();
    auto bufferType = param.getGlobalType();
    // A parameter broadcast over some dimension leaves its buffer's layout
    // to pf-infer-sbp: under data parallelism the gradient is a partial sum
    // and the buffer accumulates it as one (the all-reduce then happens
    // once, when the update reads it); under tensor parallelism a
    // replicated parameter's gradient is computed whole on every rank, and
    // a partial buffer would all-reduce what every rank already has.
    if (SBPAttr sbp = bufferType.getSbp();
        sbp &&
        llvm::any_of(sbp.getDims(), [](SBPDim d) { return d.isBroadcast(); }))
      bufferType = bufferType.withSBP(SBPAttr());
    auto gradParam = table.lookup<ParamOp>(bufferName);
    if (!gradParam) {
      OpBuilder mb(param);
      mb.setInsertionPointAfter(param);
      gradParam =
          ParamOp::create(mb, param.getLoc(), mb.getStringAttr(bufferName),
                          TypeAttr::get(bufferType),
                          InitAttr::get(param.getContext(), InitKind::Zeros,
                                        APFloat(0.0), APFloat(0.0)),
                          /*buffer=*/mb.getUnitAttr());
      gradOfAttr.setAttr(gradParam, FlatSymbolRefAttr::get(name));
      table.insert(gradParam);
    } else if (gradParam.getType() != TypeAttr::get(bufferType).getValue()) {
      return gradParam.emitOpError()
             << "is in the way of the gradient buffer of " << name;
    }
    auto old = ReadParamOp::create(b, read.getLoc(), bufferType,
                                   FlatSymbolRefAttr::get(gradParam));
    auto sum = AddOp::create(b, read.getLoc(), old, grad);
    auto write = WriteParamOp::create(b, read.getLoc(), sum,
                                      FlatSymbolRefAttr::get(gradParam));
    for (Operation *op :
         {old.getOperation(), sum.getOperation(), write.getOperation()}) {
      copyStage(read, op);
      setPhase(op, kBackwardWeight);
    }
  }
  return success();
}

LogicalResult FunctionDifferentiator::finishInputs(OpBuilder &b,
                                                   func::ReturnOp ret) {
  SmallVector<Value> results(ret.getOperands());
  for (BlockArgument arg : func.getArguments()) {
    auto type = dyn_cast<GlobalType>(arg.getType());
    if (!type || !isa<FloatType>(type.getElementType()))
      continue; // Integer inputs (labels) have no gradient.
    Value grad = grads.lookup(arg);
    if (!grad) {
      auto zeroType =
          RankedTensorType::get(type.getShape(), type.getElementType());
      auto zero = ConstantOp::create(
          b, arg.getLoc(), type.withSBP({}),
          DenseElementsAttr::get(zeroType,
                                 FloatAttr::get(type.getElementType(), 0.0)));
      setPhase(zero, kBackwardInput);
      grad = zero;
    }
    results.push_back(grad);
  }
  ret->setOperands(results);
  passutil::setResultTypes(func, results);
  return success();
}

struct AutodiffPass : public pf::impl::AutodiffPassBase<AutodiffPass> {
  using AutodiffPassBase::AutodiffPassBase;

  void runOnOperation() override {
    if (failed(passutil::checkAtLeastOne(getOperation(), "pf-autodiff",
                                         "accumulation-steps",
                                         accumulationSteps)))
      return signalPassFailure();
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal() || func.getNumResults() == 0)
        continue;
      FunctionDifferentiator diff(func, accumulationSteps, wrtInputs,
                                  lossScale);
      if (failed(diff.run()))
        return signalPassFailure();
    }
  }
};
} // namespace
