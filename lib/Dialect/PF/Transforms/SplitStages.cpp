//===- SplitStages.cpp - per-stage functions and back ---------------------===//
//
// pf-split-stages: on each rank's step in its final order (after
// pf-apply-schedule), every scheduled action becomes a private function of
// its own: @stage<s>_forward_mb<k>, @stage<s>_backward_input_mb<k>,
// @stage<s>_backward_weight_mb<k> (apart only when the schedule splits W),
// @stage<s>_update; the step calls them in the schedule's order. Values
// crossing actions become arguments and results; values crossing stages
// are already static-shape send/recv pairs carrying their layout
// (pf-partition-ranks). Each function records its stage, phase and
// micro-batch.
//
// pf-inline-stages puts the bodies back at their calls (in order), for the
// CPU lowering, whose buffer analyses work on one straight-line step.
//
//===----------------------------------------------------------------------===//

#include "pf/Analysis/Schedule.h"
#include "pf/Dialect/PF/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

#include <map>

namespace mlir::pf {
#define GEN_PASS_DEF_SPLITSTAGESPASS
#define GEN_PASS_DEF_INLINESTAGESPASS
#include "pf/Dialect/PF/Transforms/Passes.h.inc"
} // namespace mlir::pf

using namespace mlir;
using namespace mlir::pf;

namespace {

using schedule::stageOf;

struct Key {
  int64_t stage = -1;
  std::string phase; // forward, backward_input, backward_weight, update
  int64_t mb = -1;   // -1: the update
  bool operator==(const Key &o) const {
    return stage == o.stage && phase == o.phase && mb == o.mb;
  }
};

/// The action an op belongs to, or none (prologue, epilogue, return).
std::optional<Key> keyOf(Operation *op, bool splitW) {
  if (op->hasTrait<OpTrait::IsTerminator>())
    return std::nullopt;
  StringAttr phase = PFDialect::PhaseAttrHelper(op->getContext()).getAttr(op);
  std::optional<int64_t> mb =
      getIntAttrValue(op, PFDialect::MicrobatchAttrHelper::getNameStr());
  std::optional<int64_t> stage = stageOf(op);
  if (!stage)
    return std::nullopt;
  if (phase && phase.getValue() == "update")
    return Key{*stage, "update", -1};
  if (!mb)
    return std::nullopt;
  std::string p = phase ? phase.getValue().str() : "forward";
  if (p == "backward_weight" && !splitW)
    p = "backward_input"; // one B action holds both gradients
  return Key{*stage, p, *mb};
}

LogicalResult outline(func::FuncOp func, ArrayRef<Operation *> run,
                      const Key &key, SymbolTable &symbols, OpBuilder &b) {
  llvm::SmallPtrSet<Operation *, 32> inRun(run.begin(), run.end());
  llvm::SetVector<Value> inputs, outputs;
  for (Operation *op : run) {
    for (Value v : op->getOperands()) {
      Operation *def = v.getDefiningOp();
      if (!def || !inRun.contains(def))
        inputs.insert(v);
    }
    for (Value r : op->getResults())
      if (llvm::any_of(r.getUsers(),
                       [&](Operation *u) { return !inRun.contains(u); }))
        outputs.insert(r);
  }
  std::string name = "stage" + std::to_string(key.stage) + "_" + key.phase;
  if (key.mb >= 0)
    name += "_mb" + std::to_string(key.mb);
  SmallVector<Type> inTypes, outTypes;
  for (Value v : inputs)
    inTypes.push_back(v.getType());
  for (Value v : outputs)
    outTypes.push_back(v.getType());
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(func);
  auto callee = func::FuncOp::create(b, run.front()->getLoc(), name,
                                     b.getFunctionType(inTypes, outTypes));
  callee.setPrivate();
  MLIRContext *ctx = b.getContext();
  PFDialect::StageFunctionAttrHelper(ctx).setAttr(callee, b.getUnitAttr());
  PFDialect::StageAttrHelper(ctx).setAttr(callee,
                                          b.getI64IntegerAttr(key.stage));
  PFDialect::PhaseAttrHelper(ctx).setAttr(callee, b.getStringAttr(key.phase));
  if (key.mb >= 0)
    PFDialect::MicrobatchAttrHelper(ctx).setAttr(callee,
                                                 b.getI64IntegerAttr(key.mb));
  symbols.insert(callee); // renames on a clash
  Block *body = callee.addEntryBlock();
  IRMapping map;
  for (auto [v, arg] : llvm::zip(inputs, body->getArguments()))
    map.map(v, arg);
  b.setInsertionPointToStart(body);
  for (Operation *op : run)
    b.clone(*op, map);
  SmallVector<Value> results;
  for (Value v : outputs)
    results.push_back(map.lookup(v));
  func::ReturnOp::create(b, run.back()->getLoc(), results);

  b.setInsertionPoint(run.front());
  auto call = func::CallOp::create(b, run.front()->getLoc(), callee,
                                   inputs.getArrayRef());
  for (auto [v, r] : llvm::zip(outputs, call.getResults()))
    Value(v).replaceAllUsesWith(r);
  for (Operation *op : llvm::reverse(run))
    op->erase();
  return success();
}

bool splitsW(ModuleOp top) {
  bool split = false;
  top.walk([&](ScheduleOp s) {
    for (auto rank : s.getActions().getAsRange<ArrayAttr>())
      for (auto a : rank.getAsRange<StringAttr>())
        split |= a.getValue().starts_with("W");
  });
  return split;
}

struct SplitStagesPass : public pf::impl::SplitStagesPassBase<SplitStagesPass> {
  void runOnOperation() override {
    ModuleOp top = getOperation();
    bool splitW = splitsW(top);
    // The rank modules, or the module itself before partitioning.
    SmallVector<ModuleOp> modules(top.getOps<ModuleOp>());
    if (modules.empty())
      modules.push_back(top);
    OpBuilder b(top.getContext());
    PFDialect::StageFunctionAttrHelper stageFunctionAttr(top.getContext());
    for (ModuleOp module : modules) {
      SymbolTable symbols(module);
      SmallVector<func::FuncOp> funcs;
      for (auto f : module.getOps<func::FuncOp>())
        if (!f.isExternal() && !stageFunctionAttr.isAttrPresent(f))
          funcs.push_back(f);
      for (func::FuncOp func : funcs) {
        if (!func.getBody().hasOneBlock()) {
          func.emitOpError("pf-split-stages expects one block");
          return signalPassFailure();
        }
        // Maximal runs of consecutive ops of one action.
        SmallVector<std::pair<Key, SmallVector<Operation *>>> runs;
        for (Operation &op : func.getBody().front()) {
          std::optional<Key> key = keyOf(&op, splitW);
          if (!key)
            continue;
          if (!runs.empty() && runs.back().first == *key &&
              runs.back().second.back()->getNextNode() == &op)
            runs.back().second.push_back(&op);
          else
            runs.push_back({*key, {&op}});
        }
        for (auto &[key, ops] : runs)
          if (failed(outline(func, ops, key, symbols, b)))
            return signalPassFailure();
      }
    }
  }
};

struct InlineStagesPass
    : public pf::impl::InlineStagesPassBase<InlineStagesPass> {
  void runOnOperation() override {
    ModuleOp top = getOperation();
    SmallVector<func::CallOp> calls;
    top.walk([&](func::CallOp call) { calls.push_back(call); });
    OpBuilder b(top.getContext());
    PFDialect::StageFunctionAttrHelper stageFunctionAttr(top.getContext());
    llvm::SetVector<func::FuncOp> inlined;
    for (func::CallOp call : calls) {
      auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
          call, call.getCalleeAttr());
      if (!callee || !stageFunctionAttr.isAttrPresent(callee))
        continue;
      IRMapping map;
      Block &body = callee.getBody().front();
      for (auto [arg, v] : llvm::zip(body.getArguments(), call.getOperands()))
        map.map(arg, v);
      b.setInsertionPoint(call);
      for (Operation &op : body.without_terminator())
        b.clone(op, map);
      auto ret = cast<func::ReturnOp>(body.getTerminator());
      for (auto [r, v] : llvm::zip(call.getResults(), ret.getOperands()))
        r.replaceAllUsesWith(map.lookup(v));
      call.erase();
      inlined.insert(callee);
    }
    for (func::FuncOp f : inlined)
      if (SymbolTable::symbolKnownUseEmpty(f, f->getParentOp()))
        f.erase();
  }
};

} // namespace
