//===- Autocast.cpp - mixed precision as torch's autocast -----------------===//
//
// GEMMs and attention in bf16 or f16, softmax, norms, reductions and the loss
// in f32, element-wise ops in the type of their operands (see Passes.td). The
// program is rewritten in place, op by op in program order: an op's
// operands are final when it is reached, its results are inferred again,
// and every value remembers the type it had so that an op the rules do not
// cover (and the function's return) gets it back.
//
//===----------------------------------------------------------------------===//

#include "pf/Dialect/PF/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/DenseMap.h"

#define DEBUG_TYPE "pf-autocast"

namespace mlir::pf {
#define GEN_PASS_DEF_AUTOCASTPASS
#include "pf/Dialect/PF/Transforms/Passes.h.inc"
} // namespace mlir::pf

using namespace mlir;
using namespace mlir::pf;

namespace {

/// What autocast does with an op.
enum class Rule {
  Low,    // a GEMM: float operands in the low type
  F32,    // computed in float32: low operands cast back
  Follow, // element-wise or layout: the type of its float operands
  Bias,   // a GEMM's bias: in the GEMM result's low type (torch's addmm)
  Keep,   // anything else: operands in the type they had
};

Rule ruleOf(Operation *op) {
  if (isa<MatmulOp, Conv2DOp, AttentionOp>(op))
    return Rule::Low;
  if (isa<SoftmaxOp, SoftmaxCrossEntropyOp, LayerNormOp, BatchNormOp,
          ReduceSumOp, GlobalAvgPoolOp>(op))
    return Rule::F32;
  if (isa<BiasAddOp>(op))
    return Rule::Bias;
  if (isa<AddOp, SubOp, MulOp, DivOp, ReluOp, ActivationOp, MulScalarOp,
          DropoutOp, FlattenOp, ReshapeOp, TransposeOp, BroadcastToOp,
          MaskedFillOp, SliceOp, PadOp, ConcatOp, WhereOp, ToGlobalOp,
          MaxPool2DOp, AvgPool2DOp>(op))
    return Rule::Follow;
  return Rule::Keep;
}

bool isLow(Type t) { return t.isBF16() || t.isF16(); }

GlobalType withElementType(GlobalType t, Type element) {
  return GlobalType::get(t.getContext(), t.getShape(), element,
                         t.getPlacement(), t.getSbp());
}

/// The float element type of a global value, or null.
FloatType floatOf(Value v) {
  auto t = dyn_cast<GlobalType>(v.getType());
  return t ? dyn_cast<FloatType>(t.getElementType()) : FloatType();
}

/// The low type `spelling` names ("bf16", "f16"), or null ("f32", "none").
Type lowType(MLIRContext *ctx, StringRef spelling) {
  if (spelling == "bf16")
    return BFloat16Type::get(ctx);
  if (spelling == "f16")
    return Float16Type::get(ctx);
  return {};
}

class FunctionAutocast {
public:
  FunctionAutocast(func::FuncOp func, Type global)
      : func(func), global(global), f32(Float32Type::get(func.getContext())) {}

  LogicalResult run() {
    SmallVector<Operation *> ops;
    func.getBody().walk([&](Operation *op) { ops.push_back(op); });
    for (Operation *op : ops)
      if (failed(convert(op)))
        return failure();
    return success();
  }

private:
  /// The low type `op` is converted to, or null.
  Type target(Operation *op) {
    if (StringAttr attr = autocastAttr.getAttr(op)) {
      autocastAttr.removeAttr(op);
      return lowType(op->getContext(), attr.getValue());
    }
    return global;
  }

  LogicalResult convert(Operation *op) {
    Rule rule = ruleOf(op);
    Type low = target(op);
    if (!low && (rule == Rule::Low || rule == Rule::F32))
      rule = Rule::Follow;
    if (rule == Rule::Bias) {
      // A linear layer is low as a whole, as torch's autocast runs addmm:
      // the bias of a low product is cast to the product's type (one cast
      // a step for a parameter), so the layer's output is stored low.
      FloatType in = floatOf(op->getOperand(0));
      if (in && isLow(in) && floatOf(op->getOperand(1))) {
        OpOperand &bias = op->getOpOperand(1);
        bias.set(castTo(bias.get(), in, op));
        return retype(op);
      }
      rule = Rule::Follow;
    }
    switch (rule) {
    case Rule::Low:
      return castFloatOperands(op, low);
    case Rule::F32:
      return castFloatOperands(op, f32, /*onlyLow=*/true);
    case Rule::Follow: {
      Type common;
      bool mixed = false;
      for (Value v : op->getOperands())
        if (FloatType t = floatOf(v)) {
          mixed |= common && common != t;
          common = t;
        }
      if (!mixed)
        return retype(op);
      return castFloatOperands(op, f32, /*onlyLow=*/true);
    }
    case Rule::Bias:
      llvm_unreachable("a bias is low or follows");
    case Rule::Keep:
      for (OpOperand &use : op->getOpOperands())
        if (auto it = original.find(use.get()); it != original.end())
          use.set(castTo(use.get(), it->second, op));
      return success();
    }
    llvm_unreachable("every rule is handled");
  }

  /// Casts the float operands of `op` (only the low ones with `onlyLow`) to
  /// `element` and infers its results again.
  LogicalResult castFloatOperands(Operation *op, Type element,
                                  bool onlyLow = false) {
    for (OpOperand &use : op->getOpOperands())
      if (FloatType t = floatOf(use.get()); t && (!onlyLow || isLow(t)))
        use.set(castTo(use.get(), element, op));
    return retype(op);
  }

  /// Gives the results of `op` the element types its operands now imply
  /// (inferred; reshape and to_global: their input's), keeping their SBP.
  LogicalResult retype(Operation *op) {
    SmallVector<Type> inferred;
    if (auto infer = dyn_cast<InferTypeOpInterface>(op)) {
      if (failed(infer.inferReturnTypes(
              op->getContext(), op->getLoc(), op->getOperands(),
              op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
              op->getRegions(), inferred)))
        return failure();
    } else {
      FloatType element = floatOf(op->getOperand(0));
      if (!element)
        return success(); // a local tensor made global
      for (Type t : op->getResultTypes())
        inferred.push_back(withElementType(cast<GlobalType>(t), element));
    }
    for (auto [result, type] : llvm::zip(op->getResults(), inferred)) {
      auto old = cast<GlobalType>(result.getType());
      Type element = cast<GlobalType>(type).getElementType();
      if (old.getElementType() == element)
        continue;
      original.try_emplace(result, old.getElementType());
      result.setType(withElementType(old, element));
    }
    return success();
  }

  /// `v` as `element`: one pf.cast per value and type, right after the
  /// value's definition (with its stage), for every use.
  Value castTo(Value v, Type element, Operation *user) {
    auto type = cast<GlobalType>(v.getType());
    if (type.getElementType() == element)
      return v;
    Value &cached = casts[{v, element}];
    if (cached)
      return cached;
    OpBuilder b(func.getContext());
    Operation *anchor = v.getDefiningOp();
    if (anchor)
      b.setInsertionPointAfter(anchor);
    else
      b.setInsertionPointToStart(cast<BlockArgument>(v).getOwner());
    auto c = CastOp::create(b, v.getLoc(), withElementType(type, element), v);
    Operation *from = anchor ? anchor : user;
    if (IntegerAttr stage = stageAttr.getAttr(from))
      stageAttr.setAttr(c, stage);
    if (checkpointAttr.isAttrPresent(from))
      checkpointAttr.setAttr(c, checkpointAttr.getAttr(from));
    cached = c.getResult();
    return cached;
  }

  func::FuncOp func;
  Type global;
  Type f32;
  /// The element type a value had before it was converted.
  DenseMap<Value, Type> original;
  DenseMap<std::pair<Value, Type>, Value> casts;
  PFDialect::AutocastAttrHelper autocastAttr{func.getContext()};
  PFDialect::StageAttrHelper stageAttr{func.getContext()};
  PFDialect::CheckpointAttrHelper checkpointAttr{func.getContext()};
};

struct AutocastPass : public pf::impl::AutocastPassBase<AutocastPass> {
  using AutocastPassBase::AutocastPassBase;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    Type global = lowType(ctx, stringifyEnum(dtype.getValue()));
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (failed(FunctionAutocast(func, global).run()))
        return signalPassFailure();
  }
};

} // namespace
