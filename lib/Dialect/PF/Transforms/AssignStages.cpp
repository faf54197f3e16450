//===- AssignStages.cpp - complete and check stage attributes -------------===//

#include "pf/Dialect/PF/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallSet.h"

#include <map>

#define DEBUG_TYPE "pf-assign-stages"

namespace mlir::pf {
#define GEN_PASS_DEF_ASSIGNSTAGESPASS
#include "pf/Dialect/PF/Transforms/Passes.h.inc"
} // namespace mlir::pf

using namespace mlir;
using namespace mlir::pf;

namespace {

bool isBoundary(Operation *op) { return isa<ToGlobalOp, func::ReturnOp>(op); }

LogicalResult assign(func::FuncOp func) {
  Block &block = func.getBody().front();
  OpBuilder b(func.getContext());
  PFDialect::StageAttrHelper stageAttr(func.getContext());
  auto set = [&](Operation *op, int64_t s) {
    stageAttr.setAttr(op, b.getI64IntegerAttr(s));
  };
  // Forward: the latest stage among the values an op reads.
  for (Operation &op : block) {
    if (isBoundary(&op) || getStageAttrValue(&op))
      continue;
    std::optional<int64_t> latest;
    for (Value v : op.getOperands())
      if (auto s = getStageAttrValue(v.getDefiningOp()))
        latest = std::max(latest.value_or(*s), *s);
    if (latest)
      set(&op, *latest);
  }
  // Backward: ops that read nothing staged take their users' earliest stage.
  for (Operation &op : llvm::reverse(block)) {
    if (isBoundary(&op) || getStageAttrValue(&op))
      continue;
    std::optional<int64_t> earliest;
    for (Operation *user : op.getUsers())
      if (auto s = getStageAttrValue(user))
        earliest = std::min(earliest.value_or(*s), *s);
    if (earliest)
      set(&op, *earliest);
  }

  // Checks.
  std::map<int64_t, std::pair<PlacementAttr, Operation *>> placements;
  for (Operation &op : block) {
    std::optional<int64_t> s = getStageAttrValue(&op);
    if (!s)
      continue;
    for (Value v : op.getOperands()) {
      Operation *def = v.getDefiningOp();
      std::optional<int64_t> from = getStageAttrValue(def);
      if (from && *from > *s)
        return op.emitOpError()
               << "reads a value of stage " << *from << " in stage " << *s
               << ": a forward value must not flow from a later stage back "
                  "to an earlier one";
    }
    for (Type t : op.getResultTypes()) {
      auto g = dyn_cast<GlobalType>(t);
      if (!g)
        continue;
      auto [it, inserted] = placements.try_emplace(*s, g.getPlacement(), &op);
      if (!inserted && it->second.first != g.getPlacement()) {
        InFlightDiagnostic diag =
            op.emitOpError() << "is on " << g.getPlacement() << " but stage "
                             << *s << " is on " << it->second.first;
        diag.attachNote(it->second.second->getLoc())
            << "stage " << *s << "'s placement comes from here";
        return diag;
      }
    }
  }
  if (placements.empty())
    return success();
  int64_t last = placements.rbegin()->first;
  for (int64_t s = 0; s <= last; ++s)
    if (!placements.count(s))
      return func.emitOpError()
             << "stage " << s << " is empty: stage ids must be 0.." << last
             << " without gaps";
  return success();
}

struct AssignStagesPass
    : public pf::impl::AssignStagesPassBase<AssignStagesPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isExternal() && failed(assign(func)))
        return signalPassFailure();
  }
};
} // namespace
