//===- InsertBoxing.cpp - explicit layout changes where layouts differ ----===//

#include "pf/Dialect/PF/IR/SBPUtils.h"
#include "pf/Dialect/PF/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <tuple>

#define DEBUG_TYPE "pf-insert-boxing"

namespace mlir::pf {
#define GEN_PASS_DEF_INSERTBOXINGPASS
#include "pf/Dialect/PF/Transforms/Passes.h.inc"
} // namespace mlir::pf

using namespace mlir;
using namespace mlir::pf;

namespace {

/// Layout changes made so far, by value, layout, stage and whether the
/// consumer works on a micro-batch: a later consumer in the same block and
/// stage reuses one (pf-infer-sbp priced it once), as the backward reuses a
/// forward activation. A micro-batch's change is not the update's: in a
/// micro-batch template (pf-microbatch{template}) it is copied per
/// micro-batch, and the update must not read a copy.
using Made =
    llvm::DenseMap<std::tuple<Value, SBPAttr, Attribute, int>, ToGlobalOp>;

/// Makes operand `i` of `op` have layout `want`.
void box(OpBuilder &b, Operation *op, unsigned i, SBPAttr want, Made &made) {
  Value v = op->getOperand(i);
  auto t = dyn_cast<GlobalType>(v.getType());
  if (!t || !want || t.getSbp() == want)
    return;
  // A splat constant is the same value in any layout without partial sums
  // (and a zero one in any): a copy in the wanted layout moves nothing.
  if (auto c = v.getDefiningOp<ConstantOp>()) {
    auto splat = dyn_cast<SplatElementsAttr>(c.getValue());
    bool zero = splat && isa<FloatType>(splat.getElementType()) &&
                splat.getSplatValue<APFloat>().isZero();
    if (splat && (zero || !llvm::any_of(want.getDims(), [](SBPDim d) {
                    return d.isPartial();
                  }))) {
      b.setInsertionPoint(op);
      Operation *copy = b.clone(*c);
      copy->getResult(0).setType(t.withSBP(want));
      op->setOperand(i, copy->getResult(0));
      return;
    }
  }
  auto key = std::make_tuple(
      v, want, op->getAttr(PFDialect::StageAttrHelper::getNameStr()),
      static_cast<int>(
          op->hasAttr(PFDialect::MicrobatchAttrHelper::getNameStr())));
  if (ToGlobalOp prior = made.lookup(key);
      prior && prior->getBlock() == op->getBlock() &&
      prior->isBeforeInBlock(op)) {
    op->setOperand(i, prior.getResult());
    return;
  }
  b.setInsertionPoint(op);
  auto move = ToGlobalOp::create(b, op->getLoc(), t.withSBP(want), v);
  // The layout change runs in the consumer's stage, micro-batch and phase.
  for (StringRef name : {PFDialect::StageAttrHelper::getNameStr(),
                         PFDialect::MicrobatchAttrHelper::getNameStr(),
                         PFDialect::PhaseAttrHelper::getNameStr()})
    if (Attribute a = op->getAttr(name))
      move->setAttr(name, a);
  op->setOperand(i, move.getResult());
  made[key] = move;
}

std::string layouts(TypeRange types) {
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::interleaveComma(types, os, [&](Type t) {
    auto g = dyn_cast<GlobalType>(t);
    if (g && g.getSbp())
      os << g.getSbp();
    else
      os << "?";
  });
  return s;
}

/// After boxing, the op's layouts must be one of its signatures.
LogicalResult checkSignature(Operation *op) {
  GlobalType first;
  for (Type t :
       llvm::concat<const Type>(op->getResultTypes(), op->getOperandTypes()))
    if ((first = dyn_cast<GlobalType>(t)))
      break;
  if (!first)
    return success();
  for (const NDSBPSignature &sig :
       getNDSBPSignatures(op, first.getPlacement())) {
    bool ok = true;
    for (auto [v, want] : llvm::zip(op->getOperands(), sig.operands))
      ok &= cast<GlobalType>(v.getType()).getSbp() == want;
    for (auto [v, want] : llvm::zip(op->getResults(), sig.results))
      ok &= cast<GlobalType>(v.getType()).getSbp() == want;
    if (ok)
      return success();
  }
  return op->emitOpError("operand layouts (")
         << layouts(op->getOperandTypes()) << ") and result layouts ("
         << layouts(op->getResultTypes())
         << ") are not an SBP signature of this op";
}

struct InsertBoxingPass
    : public pf::impl::InsertBoxingPassBase<InsertBoxingPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::StringMap<ParamOp> params;
    for (auto p : module.getOps<ParamOp>())
      params[p.getSymName()] = p;
    OpBuilder b(module.getContext());
    Made made;
    PFDialect::SbpOperandsAttrHelper sbpOperandsAttr(module.getContext());
    WalkResult walk = module.walk([&](Operation *op) -> WalkResult {
      if (ArrayAttr wants = sbpOperandsAttr.getAttr(op)) {
        for (auto [i, want] : llvm::enumerate(wants))
          box(b, op, i, cast<SBPAttr>(want), made);
        sbpOperandsAttr.removeAttr(op);
      } else if (auto write = dyn_cast<WriteParamOp>(op)) {
        if (ParamOp p = params.lookup(write.getParam()))
          box(b, op, 0, p.getGlobalType().getSbp(), made);
      } else if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        auto func = ret->getParentOfType<func::FuncOp>();
        for (unsigned i = 0; i < ret.getNumOperands(); ++i)
          if (auto g = dyn_cast<GlobalType>(func.getResultTypes()[i]))
            box(b, op, i, g.getSbp(), made);
      }
      if (isa<SBPOpInterface>(op) && failed(checkSignature(op)))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
