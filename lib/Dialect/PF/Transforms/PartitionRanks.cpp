//===- PartitionRanks.cpp - one module per rank ---------------------------===//

#include "pf/Dialect/PF/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#define DEBUG_TYPE "pf-partition-ranks"

namespace mlir::pf {
#define GEN_PASS_DEF_PARTITIONRANKSPASS
#include "pf/Dialect/PF/Transforms/Passes.h.inc"
} // namespace mlir::pf

using namespace mlir;
using namespace mlir::pf;

namespace {

/// The placement an op computes on: that of its first global result, else
/// of its first global operand.
std::optional<PlacementAttr> placementOf(Operation *op) {
  for (Type t : op->getResultTypes())
    if (auto g = dyn_cast<GlobalType>(t))
      return g.getPlacement();
  for (Type t : op->getOperandTypes())
    if (auto g = dyn_cast<GlobalType>(t))
      return g.getPlacement();
  return std::nullopt;
}

class RankPartitioner {
public:
  RankPartitioner(ModuleOp module, int64_t rank) : module(module), rank(rank) {
    MLIRContext *ctx = module.getContext();
    home = PlacementAttr::get(ctx, "cpu", {1}, {rank});
    broadcast = SBPAttr::getBroadcast(ctx, 1);
  }

  /// Rewrites `module` (a clone of the global program) into rank's program.
  LogicalResult run();

private:
  bool isHome(PlacementAttr p) const {
    return p.getNumRanks() == 1 && p.getRanks()[0] == rank;
  }
  /// The local form of a type on this rank: the single-rank placement and B.
  Type localize(Type t) const {
    auto g = dyn_cast<GlobalType>(t);
    if (!g)
      return t;
    auto device = g.getPlacement().getDevice();
    auto placement =
        PlacementAttr::get(t.getContext(), device, {1}, {rank});
    return g.withPlacementAndSBP(placement, broadcast);
  }
  LogicalResult partitionFunction(func::FuncOp func);

  ModuleOp module;
  int64_t rank;
  PlacementAttr home;
  SBPAttr broadcast;
};

LogicalResult RankPartitioner::partitionFunction(func::FuncOp func) {
  Block &block = func.getBody().front();
  OpBuilder b(func.getContext());
  // Inputs keep their position in the global signature: the data stream of
  // input i is the same on whichever rank it lands.
  for (BlockArgument arg : block.getArguments())
    func.setArgAttr(arg.getArgNumber(), "pf.input",
                    b.getI64IntegerAttr(arg.getArgNumber()));
  SmallVector<Operation *> foreign;
  int64_t tag = 0;
  for (Operation &op : llvm::make_early_inc_range(block)) {
    if (auto move = dyn_cast<ToGlobalOp>(op)) {
      auto src = dyn_cast<GlobalType>(move.getInput().getType());
      if (!src)
        return move.emitOpError(
            "pf-partition-ranks: a local-to-global conversion inside the "
            "step has no per-rank meaning yet");
      PlacementAttr from = src.getPlacement(), to = move.getType().getPlacement();
      bool crosses = from != to;
      int64_t thisTag = crosses ? tag++ : -1;
      b.setInsertionPoint(move);
      if (isHome(from) && isHome(to)) {
        move.getResult().replaceAllUsesWith(move.getInput());
        move.erase();
      } else if (isHome(from)) {
        auto send = SendOp::create(b, move.getLoc(), move.getInput(),
                                   to.getRanks()[0], thisTag);
        send->setAttrs(move->getDiscardableAttrDictionary());
        foreign.push_back(move);
      } else if (isHome(to)) {
        auto recv = RecvOp::create(b, move.getLoc(),
                                   localize(move.getType()),
                                   from.getRanks()[0], thisTag);
        recv->setAttrs(move->getDiscardableAttrDictionary());
        move.getResult().replaceAllUsesWith(recv.getResult());
        move.erase();
      } else {
        foreign.push_back(move);
      }
      continue;
    }
    if (isa<func::ReturnOp>(op))
      continue;
    std::optional<PlacementAttr> placement = placementOf(&op);
    if (placement && !isHome(*placement))
      foreign.push_back(&op);
  }
  // Results that live on other ranks leave the signature.
  auto ret = cast<func::ReturnOp>(block.getTerminator());
  SmallVector<Value> results;
  for (Value v : ret.getOperands())
    if (auto g = dyn_cast<GlobalType>(v.getType());
        !g || isHome(g.getPlacement()))
      results.push_back(v);
  ret->setOperands(results);
  for (Operation *op : llvm::reverse(foreign)) {
    if (!op->use_empty())
      return op->emitOpError("pf-partition-ranks: a value on another rank's "
                             "placement is used here without a pf.to_global");
    op->erase();
  }

  // Arguments that live on other ranks leave the signature.
  llvm::BitVector dropArgs(block.getNumArguments());
  for (BlockArgument arg : block.getArguments())
    if (auto g = dyn_cast<GlobalType>(arg.getType());
        g && !isHome(g.getPlacement())) {
      if (!arg.use_empty())
        return func.emitOpError("pf-partition-ranks: argument ")
               << arg.getArgNumber() << " of another rank is still used";
      dropArgs.set(arg.getArgNumber());
    }
  if (failed(func.eraseArguments(dropArgs)))
    return failure();

  // Local types everywhere.
  for (BlockArgument arg : block.getArguments())
    arg.setType(localize(arg.getType()));
  block.walk([&](Operation *op) {
    for (OpResult r : op->getResults())
      r.setType(localize(r.getType()));
  });
  SmallVector<Type> resultTypes;
  for (Value v : results)
    resultTypes.push_back(v.getType());
  func.setFunctionType(FunctionType::get(
      func.getContext(), block.getArgumentTypes(), resultTypes));
  return success();
}

LogicalResult RankPartitioner::run() {
  for (auto param : llvm::make_early_inc_range(module.getOps<ParamOp>())) {
    if (!isHome(param.getGlobalType().getPlacement())) {
      param.erase();
      continue;
    }
    param.setTypeAttr(TypeAttr::get(localize(param.getType())));
  }
  for (auto func : module.getOps<func::FuncOp>())
    if (!func.isExternal() && failed(partitionFunction(func)))
      return failure();
  return success();
}

struct PartitionRanksPass
    : public pf::impl::PartitionRanksPassBase<PartitionRanksPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // World size, and the single-rank restriction of this version.
    int64_t world = 0;
    WalkResult walk = module.walk([&](Operation *op) -> WalkResult {
      SmallVector<Type> types(op->getResultTypes());
      llvm::append_range(types, op->getOperandTypes());
      if (auto param = dyn_cast<ParamOp>(op))
        types.push_back(param.getType());
      if (auto func = dyn_cast<func::FuncOp>(op))
        llvm::append_range(types, func.getArgumentTypes());
      for (Type t : types) {
        auto g = dyn_cast<GlobalType>(t);
        if (!g)
          continue;
        PlacementAttr p = g.getPlacement();
        if (p.getNumRanks() != 1) {
          op->emitOpError() << "pf-partition-ranks: placement " << p << " has "
                            << p.getNumRanks()
                            << " ranks; placements of several ranks need "
                               "SBP lowering, which this version does not "
                               "do yet";
          return WalkResult::interrupt();
        }
        world = std::max(world, p.getRanks()[0] + 1);
      }
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();

    OpBuilder b(module.getContext());
    b.setInsertionPointToEnd(module.getBody());
    SmallVector<Operation *> original;
    for (Operation &op : module.getBody()->getOperations())
      original.push_back(&op);
    for (int64_t r = 0; r < world; ++r) {
      auto rankModule = ModuleOp::create(module.getLoc(),
                                         ("rank" + Twine(r)).str());
      rankModule->setAttr(PFDialect::getRankAttrName(), b.getI64IntegerAttr(r));
      b.insert(rankModule);
      OpBuilder inner = OpBuilder::atBlockBegin(rankModule.getBody());
      IRMapping mapping;
      for (Operation *op : original)
        inner.clone(*op, mapping);
      if (failed(RankPartitioner(rankModule, r).run()))
        return signalPassFailure();
    }
    for (Operation *op : original)
      op->erase();
    module->setAttr(PFDialect::getWorldSizeAttrName(), b.getI64IntegerAttr(world));
  }
};
} // namespace
