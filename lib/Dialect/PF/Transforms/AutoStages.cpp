//===- AutoStages.cpp - cut an unstaged program into pipeline stages ------===//
//
// For users who give only a number of stages. The forward program lives on
// one placement P and has no pf.stage. Its compute ops, in program order,
// are cut into S = num-stages x num-chunks contiguous groups minimising the
// largest group's cost (Partition.h; ties go to the cuts that carry the
// fewest activation bytes). Group g becomes virtual stage g on pipeline rank
// g mod num-stages, whose placement is P's layout shifted to ranks
// r*W .. r*W + W - 1 (W = P's largest rank + 1), so a data-parallel P
// becomes pipeline x data parallelism. Parameter reads and constants join
// their first consumer's stage; function inputs go to the stage of their
// first use; values that cross stages get a pf.to_global onto the consumer's
// placement, keeping their SBP.
//
//===----------------------------------------------------------------------===//

#include "pf/Analysis/CostModel.h"
#include "pf/Analysis/Partition.h"
#include "pf/Dialect/PF/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/Format.h"

#include <map>

#define DEBUG_TYPE "pf-auto-stages"

namespace mlir::pf {
#define GEN_PASS_DEF_AUTOSTAGESPASS
#include "pf/Dialect/PF/Transforms/Passes.h.inc"
} // namespace mlir::pf

using namespace mlir;
using namespace mlir::pf;

namespace {

/// Ops that are not cut points of their own: they follow their users.
bool followsUsers(Operation *op) {
  return isa<ReadParamOp, ConstantOp, ToGlobalOp, func::ReturnOp>(op);
}

PlacementAttr shifted(PlacementAttr p, int64_t by) {
  SmallVector<int64_t> ranks;
  for (int64_t r : p.getRanks())
    ranks.push_back(r + by);
  return PlacementAttr::get(p.getContext(), p.getDevice(), p.getHierarchy(),
                            ranks);
}

/// One run of pf-auto-stages over the step function: each step below is one
/// part of the cut, in order.
class StageCutter {
public:
  StageCutter(ModuleOp module, func::FuncOp func, int64_t numStages,
              int64_t numChunks, StageBalance balance)
      : module(module), func(func), block(func.getBody().front()),
        stageAttr(module.getContext()), b(module.getContext()),
        numStages(numStages), numChunks(numChunks),
        stages(numStages * numChunks), balance(balance) {}

  LogicalResult run(bool report) {
    if (failed(checkOnePlacement()) || failed(collectItems()))
      return failure();
    weighItems();
    measureCutBytes();
    if (failed(chooseCut()) || failed(stageOps()) || failed(placeParams()))
      return failure();
    stageMovesAndInputs();
    insertCrossings();
    if (report)
      printReport(llvm::outs());
    return success();
  }

private:
  /// The program is on one placement (`base`) and has no stages yet.
  LogicalResult checkOnePlacement();
  LogicalResult checkPlacement(Type t, Operation *at);
  /// The items to cut: compute ops in program order.
  LogicalResult collectItems();
  /// Each item's cost under the balance.
  void weighItems();
  /// Bytes live across the cut before each item.
  void measureCutBytes();
  LogicalResult chooseCut();
  /// Stages of items, then of the parameter reads and constants that follow
  /// their users.
  LogicalResult stageOps();
  /// A parameter takes the stage of its reads (one stage per parameter).
  LogicalResult placeParams();
  /// Layout changes land on their first user's stage; inputs likewise.
  void stageMovesAndInputs();
  /// Values read on another stage's placement cross with a pf.to_global.
  void insertCrossings();
  void printReport(raw_ostream &os);

  /// The earliest stage that uses `v` (through layout changes).
  std::optional<int64_t> firstUse(Value v);
  PlacementAttr placementOf(int64_t stage);
  void retype(Value v, int64_t stage);
  int64_t paramBytes(Operation *op);

  ModuleOp module;
  func::FuncOp func;
  Block &block;
  PFDialect::StageAttrHelper stageAttr;
  OpBuilder b;
  int64_t numStages, numChunks, stages;
  StageBalance balance;

  PlacementAttr base;
  Operation *baseFrom = nullptr;
  SmallVector<Operation *> items;
  llvm::DenseMap<Operation *, size_t> itemIndex;
  SmallVector<int64_t> costs, cutBytes;
  std::optional<partition::Result> cut;
  llvm::DenseMap<Operation *, int64_t> stageOf;
  std::map<StringRef, std::pair<int64_t, Operation *>> paramStage;
};

LogicalResult StageCutter::checkPlacement(Type t, Operation *at) {
  auto g = dyn_cast<GlobalType>(t);
  if (!g)
    return success();
  if (!base) {
    base = g.getPlacement();
    baseFrom = at;
    return success();
  }
  if (g.getPlacement() == base)
    return success();
  InFlightDiagnostic d = at->emitOpError()
                         << "is on " << g.getPlacement()
                         << ", but pf-auto-stages needs the whole program on "
                            "one placement (it chooses each stage's); here "
                         << base << " was seen first";
  d.attachNote(baseFrom->getLoc()) << "the first placement comes from here";
  return failure();
}

LogicalResult StageCutter::checkOnePlacement() {
  for (Type t : func.getArgumentTypes())
    if (failed(checkPlacement(t, func)))
      return failure();
  for (Operation &op : block) {
    if (stageAttr.isAttrPresent(&op))
      return op.emitOpError()
             << "already has a pipeline stage: pf-auto-stages partitions an "
                "unstaged program (drop pf.stage, or drop pf-auto-stages)";
    for (Type t : op.getResultTypes())
      if (failed(checkPlacement(t, &op)))
        return failure();
  }
  if (!base)
    return func.emitOpError()
           << "pf-auto-stages: the program has no global values";
  return success();
}

LogicalResult StageCutter::collectItems() {
  for (Operation &op : block)
    if (!followsUsers(&op)) {
      itemIndex[&op] = items.size();
      items.push_back(&op);
    }
  if (int64_t(items.size()) < stages)
    return func.emitOpError() << "pf-auto-stages: cannot cut " << items.size()
                              << " compute ops into " << stages << " stages ("
                              << numStages << " x " << numChunks
                              << " chunks): every stage needs at least one op";
  return success();
}

int64_t StageCutter::paramBytes(Operation *op) {
  int64_t sum = 0;
  for (Value v : op->getOperands())
    if (auto read = v.getDefiningOp<ReadParamOp>())
      sum += cost::bytes(read.getType());
  return sum;
}

void StageCutter::weighItems() {
  for (Operation *op : items) {
    int64_t c = 0;
    switch (balance) {
    case StageBalance::Flops:
      c = cost::trainFlops(op).total();
      break;
    case StageBalance::Params:
      c = paramBytes(op);
      break;
    case StageBalance::Memory:
      // Parameters and their gradients, plus saved activations.
      c = 2 * paramBytes(op);
      for (Type t : op->getResultTypes())
        c += cost::bytes(t);
      break;
    }
    costs.push_back(c);
  }
}

void StageCutter::measureCutBytes() {
  cutBytes.assign(items.size() + 1, 0);
  for (auto [i, op] : llvm::enumerate(items))
    for (Value v : op->getResults()) {
      size_t last = i;
      SmallVector<Operation *> users(v.getUsers());
      while (!users.empty()) {
        Operation *u = users.pop_back_val();
        if (auto it = itemIndex.find(u); it != itemIndex.end())
          last = std::max(last, it->second);
        else if (isa<ToGlobalOp>(u))
          llvm::append_range(users, u->getUsers());
      }
      for (size_t j = i + 1; j <= last; ++j)
        cutBytes[j] += cost::bytes(v.getType());
    }
  cutBytes.pop_back();
}

LogicalResult StageCutter::chooseCut() {
  // Among optimal cuts: fewest bytes, then cuts at layer starts (before a
  // matmul or convolution) rather than inside a layer.
  SmallVector<int64_t> cutWeights;
  for (auto [j, op] : llvm::enumerate(items))
    cutWeights.push_back(2 * cutBytes[j] +
                         (isa<MatmulOp, Conv2DOp>(op) ? 0 : 1));
  cut = partition::minMaxContiguous(costs, stages, cutWeights);
  if (!cut)
    return func.emitOpError() << "pf-auto-stages: internal error: no partition";
  for (size_t g = 0; g < cut->starts.size(); ++g) {
    size_t end = g + 1 < cut->starts.size() ? cut->starts[g + 1] : items.size();
    for (size_t i = cut->starts[g]; i < end; ++i)
      stageOf[items[i]] = g;
  }
  return success();
}

std::optional<int64_t> StageCutter::firstUse(Value v) {
  std::optional<int64_t> best;
  for (Operation *u : v.getUsers()) {
    std::optional<int64_t> s;
    if (auto it = stageOf.find(u); it != stageOf.end())
      s = it->second;
    else if (isa<ToGlobalOp>(u))
      s = firstUse(u->getResult(0));
    else if (isa<func::ReturnOp>(u))
      s = stages - 1;
    if (s)
      best = std::min(best.value_or(*s), *s);
  }
  return best;
}

PlacementAttr StageCutter::placementOf(int64_t stage) {
  int64_t width = 0;
  for (int64_t r : base.getRanks())
    width = std::max(width, r + 1);
  return shifted(base, (stage % numStages) * width);
}

void StageCutter::retype(Value v, int64_t stage) {
  if (auto g = dyn_cast<GlobalType>(v.getType()))
    v.setType(g.withPlacementAndSBP(placementOf(stage), g.getSbp()));
}

LogicalResult StageCutter::stageOps() {
  for (Operation &op : block) {
    if (auto it = stageOf.find(&op); it != stageOf.end()) {
      for (Value r : op.getResults())
        retype(r, it->second);
      stageAttr.setAttr(&op, b.getI64IntegerAttr(it->second));
      continue;
    }
    if (!isa<ReadParamOp, ConstantOp>(op))
      continue;
    std::optional<int64_t> s = firstUse(op.getResult(0));
    int64_t stage = s.value_or(0);
    stageOf[&op] = stage;
    stageAttr.setAttr(&op, b.getI64IntegerAttr(stage));
    retype(op.getResult(0), stage);
    auto read = dyn_cast<ReadParamOp>(op);
    if (!read)
      continue;
    auto [it, inserted] = paramStage.try_emplace(read.getParam(), stage, &op);
    if (!inserted && placementOf(it->second.first) != placementOf(stage)) {
      InFlightDiagnostic d = op.emitOpError()
                             << "reads @" << read.getParam() << " in stage "
                             << stage << ", which pf-auto-stages put on "
                             << placementOf(stage)
                             << ": a parameter shared by stages on different "
                                "ranks is not supported";
      d.attachNote(it->second.second->getLoc())
          << "it is also read in stage " << it->second.first << " here";
      return d;
    }
  }
  return success();
}

LogicalResult StageCutter::placeParams() {
  SymbolTable symbols(module);
  for (auto &[name, where] : paramStage) {
    auto param = symbols.lookup<ParamOp>(name);
    if (!param)
      return where.second->emitOpError()
             << "reads an unknown parameter @" << name;
    auto g = cast<GlobalType>(param.getType());
    param.setTypeAttr(TypeAttr::get(
        g.withPlacementAndSBP(placementOf(where.first), g.getSbp())));
  }
  return success();
}

void StageCutter::stageMovesAndInputs() {
  for (Operation &op : block)
    if (auto move = dyn_cast<ToGlobalOp>(op))
      retype(move.getResult(), firstUse(move.getResult()).value_or(0));
  for (BlockArgument arg : block.getArguments())
    retype(arg, firstUse(arg).value_or(0));
}

void StageCutter::insertCrossings() {
  llvm::DenseMap<std::pair<Value, Attribute>, Value> moved;
  for (Operation &op : llvm::make_early_inc_range(block)) {
    auto it = stageOf.find(&op);
    if (it == stageOf.end())
      continue;
    PlacementAttr here = placementOf(it->second);
    for (OpOperand &use : op.getOpOperands()) {
      Value v = use.get();
      auto g = dyn_cast<GlobalType>(v.getType());
      if (!g || g.getPlacement() == here)
        continue;
      Value &m = moved[{v, here}];
      if (!m) {
        b.setInsertionPoint(&op);
        m = ToGlobalOp::create(b, op.getLoc(),
                               g.withPlacementAndSBP(here, g.getSbp()), v)
                .getResult();
      }
      use.set(m);
    }
  }
  auto ret = cast<func::ReturnOp>(block.getTerminator());
  func.setType(FunctionType::get(module.getContext(), block.getArgumentTypes(),
                                 ret.getOperandTypes()));
}

void StageCutter::printReport(raw_ostream &os) {
  int64_t total = 0;
  for (int64_t c : costs)
    total += c;
  StringRef unit = balance == StageBalance::Flops ? "FLOPs" : "bytes";
  os << "pf-auto-stages: " << items.size() << " ops into " << numStages
     << " stage(s) x " << numChunks
     << " chunk(s), balance=" << stringifyStageBalance(balance) << " (" << unit
     << (balance == StageBalance::Flops ? " of forward + backward"
         : balance == StageBalance::Params
             ? " of parameters"
             : " of parameters, gradients and activations")
     << ")\n";
  std::vector<int64_t> perRank(numStages, 0);
  for (int64_t g = 0; g < stages; ++g) {
    size_t begin = cut->starts[g];
    size_t end = g + 1 < stages ? cut->starts[g + 1] : items.size();
    int64_t c = 0;
    for (size_t i = begin; i < end; ++i)
      c += costs[i];
    perRank[g % numStages] += c;
    os << "stage " << g << " on " << placementOf(g) << ": ops " << begin << ".."
       << end - 1 << " (" << items[begin]->getName() << " .. "
       << items[end - 1]->getName() << "), cost " << c << " ("
       << llvm::format("%.1f", total ? 100.0 * c / total : 0.0) << "%)";
    if (g > 0)
      os << ", input crossing " << cutBytes[begin] << " bytes";
    os << "\n";
  }
  if (numChunks > 1) {
    os << "per rank:";
    for (int64_t c : perRank)
      os << " " << c;
    os << "\n";
  }
  double ideal = double(total) / double(stages);
  int64_t crossing = 0;
  for (int64_t g = 1; g < stages; ++g)
    crossing += cutBytes[cut->starts[g]];
  os << "max stage cost " << cut->maxCost << ", ideal "
     << llvm::format("%.6g", ideal) << ", imbalance "
     << llvm::format("%.4f", ideal > 0 ? cut->maxCost / ideal : 1.0)
     << ", bytes crossing cuts " << crossing << "\n";
}

struct AutoStagesPass : public pf::impl::AutoStagesPassBase<AutoStagesPass> {
  using AutoStagesPassBase::AutoStagesPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (numStages < 1 || numChunks < 1) {
      module.emitError() << "pf-auto-stages: num-stages (" << int64_t(numStages)
                         << ") and num-chunks (" << int64_t(numChunks)
                         << ") must be at least 1";
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> funcs;
    for (auto f : module.getOps<func::FuncOp>())
      if (!f.isExternal())
        funcs.push_back(f);
    if (funcs.size() != 1) {
      module.emitError() << "pf-auto-stages: expected one step function, found "
                         << funcs.size();
      return signalPassFailure();
    }
    StageCutter cutter(module, funcs.front(), numStages, numChunks, balance);
    if (failed(cutter.run(report)))
      signalPassFailure();
  }
};

} // namespace
