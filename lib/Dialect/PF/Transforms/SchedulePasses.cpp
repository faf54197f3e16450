//===- SchedulePasses.cpp - pf-schedule and pf-verify-schedule ------------===//

#include "pf/Dialect/PF/Transforms/Passes.h"
#include "pf/Dialect/PF/Transforms/Schedule.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::pf {
#define GEN_PASS_DEF_SCHEDULEPASS
#define GEN_PASS_DEF_VERIFYSCHEDULEPASS
#include "pf/Dialect/PF/Transforms/Passes.h.inc"
} // namespace mlir::pf

using namespace mlir;
using namespace mlir::pf;

namespace {

schedule::Plan planOf(ScheduleOp op) {
  schedule::Plan plan;
  for (auto rank : op.getActions().getAsRange<ArrayAttr>()) {
    plan.emplace_back();
    for (auto a : rank.getAsRange<StringAttr>())
      plan.back().push_back(*schedule::Action::parse(a.getValue()));
  }
  return plan;
}

bool splitsW(const schedule::Plan &plan) {
  for (auto &rank : plan)
    for (auto &a : rank)
      if (a.kind == 'W')
        return true;
  return false;
}

/// Simulates `op`; reports a deadlock as a located error.
LogicalResult check(ScheduleOp op, bool report) {
  schedule::Plan plan = planOf(op);
  int64_t p = op.getNumStages(), m = op.getNumMicrobatches(),
          v = op.getNumChunks();
  bool split = splitsW(plan);
  schedule::Result result =
      schedule::simulate(plan, p, m, v, split, schedule::Costs());
  if (!result.error.empty())
    return op.emitOpError() << result.error;
  if (!report)
    return success();
  raw_ostream &os = llvm::outs();
  os << "schedule " << op.getKind() << ": " << p << " stages, " << m
     << " micro-batches, " << v << " chunk(s); unit costs F=1 B=1 W=1"
     << (split ? " (B and W apart)" : " (B includes W)") << "\n";
  for (int64_t r = 0; r < p; ++r) {
    os << "rank " << r << ":";
    for (auto &a : plan[r])
      os << " " << a.str(v > 1);
    os << "\n";
  }
  os << "makespan " << llvm::format("%.6g", result.makespan) << "\n";
  os << "bubble fraction " << llvm::format("%.6f", result.bubbleFraction())
     << "\n";
  os << "idle time per rank:";
  for (int64_t r = 0; r < p; ++r)
    os << " " << llvm::format("%.6g", result.makespan - result.busy[r]);
  os << "\npeak in-flight micro-batches per rank:";
  for (int64_t r = 0; r < p; ++r)
    os << " " << result.peakInFlight[r];
  os << "\n";
  return success();
}

struct SchedulePass : public pf::impl::SchedulePassBase<SchedulePass> {
  using SchedulePassBase::SchedulePassBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<schedule::Kind> k = schedule::parseKind(kind);
    if (!k) {
      module.emitError() << "pf-schedule: unknown kind '"
                         << static_cast<std::string>(kind)
                         << "': expected gpipe, 1f1b, interleaved-1f1b or "
                            "zb-h1";
      return signalPassFailure();
    }
    int64_t v = numChunks, p = numStages, m = numMicrobatches;
    if (p == 0 || m == 0) {
      int64_t maxStage = -1, maxMb = -1;
      module.walk([&](Operation *op) {
        if (auto s = op->getAttrOfType<IntegerAttr>(
                PFDialect::getStageAttrName()))
          maxStage = std::max(maxStage, s.getInt());
        if (auto mb = op->getAttrOfType<IntegerAttr>(
                PFDialect::getMicrobatchAttrName()))
          maxMb = std::max(maxMb, mb.getInt());
      });
      if (p == 0) {
        if (maxStage < 0 || (maxStage + 1) % v != 0) {
          module.emitError() << "pf-schedule: the program's " << maxStage + 1
                             << " stages do not form " << v
                             << " chunk(s) per rank";
          return signalPassFailure();
        }
        p = (maxStage + 1) / v;
      }
      if (m == 0)
        m = maxMb + 1 > 0 ? maxMb + 1 : 1;
    }
    std::string error;
    std::optional<schedule::Plan> plan = schedule::build(*k, p, m, v, error);
    if (!plan) {
      module.emitError() << "pf-schedule: " << error;
      return signalPassFailure();
    }
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    for (auto old : llvm::make_early_inc_range(module.getOps<ScheduleOp>()))
      old.erase();
    SmallVector<Attribute> ranks;
    for (auto &rank : *plan) {
      SmallVector<Attribute> actions;
      for (auto &a : rank)
        actions.push_back(b.getStringAttr(a.str(v > 1)));
      ranks.push_back(b.getArrayAttr(actions));
    }
    auto op = ScheduleOp::create(b, module.getLoc(),
                                 b.getStringAttr(schedule::kindName(*k)),
                                 b.getI64IntegerAttr(p), b.getI64IntegerAttr(m),
                                 b.getI64IntegerAttr(v), b.getArrayAttr(ranks));
    if (failed(check(op, report)))
      return signalPassFailure();
  }
};

struct VerifySchedulePass
    : public pf::impl::VerifySchedulePassBase<VerifySchedulePass> {
  using VerifySchedulePassBase::VerifySchedulePassBase;
  void runOnOperation() override {
    for (auto op : getOperation().getOps<ScheduleOp>())
      if (failed(check(op, report)))
        return signalPassFailure();
  }
};
} // namespace
