//===- InferSBP.cpp - choose every value's SBP layout by boxing cost ------===//

#include "pf/Dialect/PF/IR/SBPUtils.h"
#include "pf/Dialect/PF/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <limits>

#define DEBUG_TYPE "pf-infer-sbp"

namespace mlir::pf {
#define GEN_PASS_DEF_INFERSBPPASS
#include "pf/Dialect/PF/Transforms/Passes.h.inc"
} // namespace mlir::pf

using namespace mlir;
using namespace mlir::pf;

namespace {

constexpr double kInfinite = std::numeric_limits<double>::infinity();
constexpr double kChangeEpsilon = 1e-3;

/// A value whose layout is still open, and where it comes from.
struct Open {
  enum Kind { Leaf, Move } kind;
  Value source; // Move: the moved value
};

class Inferrer {
public:
  Inferrer(ModuleOp module) : module(module) {
    for (auto p : module.getOps<ParamOp>())
      params[p.getSymName()] = p;
  }

  LogicalResult run(func::FuncOp func);
  void finishParams();

private:
  static GlobalType global(Value v) {
    return dyn_cast<GlobalType>(v.getType());
  }
  bool isOpen(Value v) const { return open.count(v); }

  /// Fixes an open value's layout (and, for a parameter read, the
  /// parameter's and its other open reads').
  void resolve(Value v, SBPAttr sbp);
  /// The layout an open value takes when nobody asks for one.
  SBPAttr defaultLayout(Value v);
  /// Resolves `v` if open, with its default.
  void settle(Value v) {
    if (isOpen(v))
      resolve(v, defaultLayout(v));
  }
  /// What giving `v` the layout `want` costs, in bytes per rank.
  double cost(Value v, SBPAttr want);
  bool allowedForConstant(Value v, SBPAttr sbp);

  LogicalResult visitSignatureOp(Operation *op);
  LogicalResult visitReturn(func::ReturnOp ret, func::FuncOp func);

  ModuleOp module;
  llvm::DenseMap<Value, Open> open;
  llvm::StringMap<ParamOp> params;
  /// Open reads of each parameter whose layout is open.
  llvm::StringMap<SmallVector<Value>> openReads;
};

void Inferrer::resolve(Value v, SBPAttr sbp) {
  auto it = open.find(v);
  if (it == open.end())
    return;
  open.erase(it);
  v.setType(global(v).withSBP(sbp));
  if (auto read = v.getDefiningOp<ReadParamOp>()) {
    ParamOp param = params.lookup(read.getParam());
    if (param && !param.getGlobalType().hasSBP()) {
      param.setTypeAttr(TypeAttr::get(param.getGlobalType().withSBP(sbp)));
      for (Value other : openReads[read.getParam()])
        resolve(other, sbp);
      openReads.erase(read.getParam());
    }
  }
}

SBPAttr Inferrer::defaultLayout(Value v) {
  GlobalType t = global(v);
  MLIRContext *ctx = v.getContext();
  SBPAttr allB =
      SBPAttr::getBroadcast(ctx, t.getPlacement().getNumHierarchyDims());
  Open o = open.find(v)->second;
  if (o.kind == Open::Leaf)
    return allB;
  // A move keeps its source's layout where it is valid and not partial.
  settle(o.source);
  SBPAttr src = global(o.source).getSbp();
  if (src && src.size() == allB.size() &&
      llvm::none_of(src.getDims(), [](SBPDim d) { return d.isPartial(); }) &&
      isValidLayout(t.getShape(), t.getPlacement(), src))
    return src;
  return allB;
}

bool Inferrer::allowedForConstant(Value v, SBPAttr sbp) {
  auto c = v.getDefiningOp<ConstantOp>();
  if (!c ||
      llvm::none_of(sbp.getDims(), [](SBPDim d) { return d.isPartial(); }))
    return true;
  // A partial constant is only the logical value if every addend is zero.
  auto splat = dyn_cast<SplatElementsAttr>(c.getValue());
  return splat && isa<FloatType>(splat.getElementType()) &&
         splat.getSplatValue<APFloat>().isZero();
}

double Inferrer::cost(Value v, SBPAttr want) {
  GlobalType t = global(v);
  auto it = open.find(v);
  if (it == open.end()) {
    if (t.getSbp() == want)
      return 0;
    // Any change costs a little more than none, so that a free local slice
    // (B -> S) does not win a tie against keeping the layout: slicing now
    // usually means gathering later.
    return boxingBytes(t, t.getSbp(), want) + kChangeEpsilon;
  }
  if (it->second.kind == Open::Leaf)
    return allowedForConstant(v, want) ? 0 : kInfinite;
  Value source = it->second.source;
  settle(source);
  return transferBytes(global(source), t.withSBP(want));
}

static std::string layoutList(ArrayRef<SBPAttr> sbps) {
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::interleaveComma(sbps, os);
  return s;
}

LogicalResult Inferrer::visitSignatureOp(Operation *op) {
  GlobalType first;
  for (Type t : op->getResultTypes())
    if ((first = dyn_cast<GlobalType>(t)))
      break;
  if (!first)
    for (Type t : op->getOperandTypes())
      if ((first = dyn_cast<GlobalType>(t)))
        break;
  if (!first)
    return success();
  PlacementAttr placement = first.getPlacement();
  SmallVector<NDSBPSignature> candidates = getNDSBPSignatures(op, placement);
  // Result layouts already given are constraints.
  SmallVector<SBPAttr> fixedResults;
  for (Value r : op->getResults())
    fixedResults.push_back(global(r) ? global(r).getSbp() : SBPAttr());
  const NDSBPSignature *best = nullptr;
  double bestCost = kInfinite;
  for (const NDSBPSignature &sig : candidates) {
    bool matches = true;
    for (auto [want, fixed] : llvm::zip(sig.results, fixedResults))
      matches &= !fixed || fixed == want;
    if (!matches)
      continue;
    double c = 0;
    for (auto [v, want] : llvm::zip(op->getOperands(), sig.operands))
      c += cost(v, want);
    // Look one step ahead where a result must end in a fixed layout: a
    // parameter it is written back to.
    for (auto [r, got] : llvm::zip(op->getResults(), sig.results))
      for (Operation *user : r.getUsers())
        if (auto write = dyn_cast<WriteParamOp>(user))
          if (ParamOp p = params.lookup(write.getParam());
              p && p.getGlobalType().hasSBP())
            c += boxingBytes(global(r), got, p.getGlobalType().getSbp());
    if (c < bestCost || (!best && c == kInfinite)) {
      best = &sig;
      bestCost = c;
    }
  }
  if (!best) {
    SmallVector<SBPAttr> given;
    for (Value v : op->getOperands()) {
      settle(v);
      given.push_back(global(v).getSbp());
    }
    return op->emitOpError("pf-infer-sbp: no SBP signature produces the "
                           "result layout(s) ")
           << layoutList(fixedResults) << " on " << placement
           << " (operand layouts " << layoutList(given) << ")";
  }
  for (auto [v, want] : llvm::zip(op->getOperands(), best->operands))
    if (isOpen(v))
      resolve(v, want);
  for (auto [r, sbp] : llvm::zip(op->getResults(), best->results))
    if (GlobalType t = global(r))
      r.setType(t.withSBP(sbp));
  SmallVector<Attribute> wants(best->operands.begin(), best->operands.end());
  PFDialect::SbpOperandsAttrHelper(op->getContext())
      .setAttr(op, ArrayAttr::get(op->getContext(), wants));
  return success();
}

LogicalResult Inferrer::visitReturn(func::ReturnOp ret, func::FuncOp func) {
  SmallVector<Type> results;
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    GlobalType declared = dyn_cast<GlobalType>(func.getResultTypes()[i]);
    GlobalType t = global(v);
    if (!t) {
      results.push_back(v.getType());
      continue;
    }
    if (declared && declared.hasSBP()) {
      if (isOpen(v) && cost(v, declared.getSbp()) == 0)
        resolve(v, declared.getSbp());
      settle(v);
      results.push_back(declared);
      continue;
    }
    settle(v);
    // A partial sum is returned as its value.
    SmallVector<SBPDim> dims;
    for (SBPDim d : global(v).getSbp().getDims())
      dims.push_back(d.isPartial() ? SBPDim::broadcast() : d);
    results.push_back(global(v).withSBP(SBPAttr::get(v.getContext(), dims)));
  }
  // The function's result layouts are a contract: change layouts here.
  OpBuilder b(ret);
  for (auto [i, t] : llvm::enumerate(results)) {
    Value v = ret.getOperand(i);
    if (v.getType() == t)
      continue;
    ret.setOperand(i, ToGlobalOp::create(b, ret.getLoc(), t, v).getResult());
  }
  func.setFunctionType(
      FunctionType::get(func.getContext(), func.getArgumentTypes(), results));
  return success();
}

LogicalResult Inferrer::run(func::FuncOp func) {
  Block &block = func.getBody().front();
  for (BlockArgument arg : block.getArguments())
    if (GlobalType t = global(arg); t && !t.hasSBP())
      open[arg] = {Open::Leaf, Value()};
  for (Operation &op : llvm::make_early_inc_range(block)) {
    if (auto read = dyn_cast<ReadParamOp>(op)) {
      ParamOp param = params.lookup(read.getParam());
      if (param && param.getGlobalType().hasSBP()) {
        read.getResult().setType(param.getGlobalType());
      } else if (!read.getType().hasSBP()) {
        open[read.getResult()] = {Open::Leaf, Value()};
        openReads[read.getParam()].push_back(read.getResult());
      }
      continue;
    }
    if (auto write = dyn_cast<WriteParamOp>(op)) {
      ParamOp param = params.lookup(write.getParam());
      if (param && !param.getGlobalType().hasSBP()) {
        settle(write.getValue());
        SBPAttr sbp = global(write.getValue()).getSbp();
        param.setTypeAttr(TypeAttr::get(param.getGlobalType().withSBP(sbp)));
        for (Value r : openReads[write.getParam()])
          resolve(r, sbp);
        openReads.erase(write.getParam());
      } else if (param && isOpen(write.getValue())) {
        SBPAttr want = param.getGlobalType().getSbp();
        if (cost(write.getValue(), want) == 0)
          resolve(write.getValue(), want);
        settle(write.getValue());
      }
      continue;
    }
    if (auto c = dyn_cast<ConstantOp>(op)) {
      if (!c.getType().hasSBP())
        open[c.getResult()] = {Open::Leaf, Value()};
      continue;
    }
    if (auto move = dyn_cast<ToGlobalOp>(op)) {
      if (!global(move.getInput()))
        continue;
      GlobalType target = move.getType();
      if (target.hasSBP()) {
        // The source takes the target's layout if it is free to.
        Value in = move.getInput();
        if (isOpen(in) && global(in).getPlacement() == target.getPlacement() &&
            cost(in, target.getSbp()) == 0)
          resolve(in, target.getSbp());
        settle(in);
      } else {
        open[move.getResult()] = {Open::Move, move.getInput()};
      }
      continue;
    }
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      if (failed(visitReturn(ret, func)))
        return failure();
      continue;
    }
    if (isa<SBPOpInterface>(op)) {
      if (failed(visitSignatureOp(&op)))
        return failure();
      continue;
    }
    if (auto scalar = dyn_cast<ScalarInputOp>(op)) {
      GlobalType t = scalar.getType();
      if (!t.hasSBP())
        scalar.getResult().setType(t.withSBP(SBPAttr::getBroadcast(
            t.getContext(), t.getPlacement().getNumHierarchyDims())));
      continue;
    }
    // Other ops must already be laid out.
    for (Value v : op.getResults())
      if (GlobalType t = global(v); t && !t.hasSBP())
        return op.emitOpError("pf-infer-sbp: no SBP rule for this op");
    for (Value v : op.getOperands())
      settle(v);
  }
  // Whatever is still open takes its default.
  SmallVector<Value> rest;
  for (auto &[v, o] : open)
    rest.push_back(v);
  for (Value v : rest)
    settle(v);
  func.setFunctionType(FunctionType::get(
      func.getContext(), block.getArgumentTypes(), func.getResultTypes()));
  return success();
}

void Inferrer::finishParams() {
  for (auto &[name, param] : params)
    if (!param.getGlobalType().hasSBP()) {
      GlobalType t = param.getGlobalType();
      param.setTypeAttr(TypeAttr::get(t.withSBP(SBPAttr::getBroadcast(
          t.getContext(), t.getPlacement().getNumHierarchyDims()))));
    }
}

struct InferSBPPass : public pf::impl::InferSBPPassBase<InferSBPPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    Inferrer inferrer(module);
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal() && failed(inferrer.run(func)))
        return signalPassFailure();
    inferrer.finishParams();
  }
};
} // namespace
