//===- SchedulePasses.cpp - pf-schedule and pf-verify-schedule ------------===//

#include "pf/Analysis/CostModel.h"
#include "pf/Analysis/Schedule.h"
#include "pf/Dialect/PF/Transforms/Passes.h"
#include "pf/Support/RankParallel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
#include <map>
#include <tuple>

namespace mlir::pf {
#define GEN_PASS_DEF_SCHEDULEPASS
#define GEN_PASS_DEF_VERIFYSCHEDULEPASS
#include "pf/Dialect/PF/Transforms/Passes.h.inc"
} // namespace mlir::pf

using namespace mlir;
using namespace mlir::pf;

namespace {

using schedule::planOf;
using schedule::splitsW;

/// Per virtual stage: the FLOPs of micro-batch 0's forward, input-gradient
/// and weight-gradient ops and the bytes of the values its forward keeps
/// for the backward. Ops are found in every rank module (or the global
/// program); a stage replicated over data-parallel ranks counts one rank's
/// share (the largest).
schedule::Costs flopCosts(ModuleOp top, int64_t stages) {
  // (module, stage) -> sums
  std::map<std::pair<Operation *, int64_t>, std::array<double, 4>> sums;
  constexpr StringLiteral stageName = PFDialect::StageAttrHelper::getNameStr();
  auto stageOfOp = [&](Operation *op) -> std::optional<int64_t> {
    if (auto s = getIntAttrValue(op, stageName))
      return s;
    for (Operation *u : op->getUsers())
      if (auto s = getIntAttrValue(u, stageName))
        return s;
    return std::nullopt;
  };
  PFDialect::PhaseAttrHelper phaseAttr(top.getContext());
  auto phaseOf = [&](Operation *op) -> StringRef {
    StringAttr p = phaseAttr.getAttr(op);
    return p ? p.getValue() : StringRef("forward");
  };
  top.walk([&](Operation *op) {
    auto func = op->getParentOfType<func::FuncOp>();
    if (!func || op->hasTrait<OpTrait::IsTerminator>())
      return;
    std::optional<int64_t> mb =
        getIntAttrValue(op, PFDialect::MicrobatchAttrHelper::getNameStr());
    std::optional<int64_t> s = stageOfOp(op);
    if ((mb && *mb != 0) || !s || *s < 0 || *s >= stages)
      return;
    StringRef phase = phaseOf(op);
    if (phase == "update")
      return;
    auto &acc = sums[{func->getParentOp(), *s}];
    double f = double(cost::flops(op));
    if (phase == "backward_input")
      acc[1] += f;
    else if (phase == "backward_weight")
      acc[2] += f;
    else {
      acc[0] += f;
      for (Value r : op->getResults())
        if (llvm::any_of(r.getUsers(), [&](Operation *u) {
              return phaseOf(u).starts_with("backward");
            }))
          acc[3] += double(cost::bytes(r.getType()));
    }
  });
  schedule::Costs c;
  c.stageF.assign(stages, 0.0);
  c.stageB.assign(stages, 0.0);
  c.stageW.assign(stages, 0.0);
  c.stageAct.assign(stages, 0.0);
  for (auto &[key, acc] : sums) {
    int64_t s = key.second;
    c.stageF[s] = std::max(c.stageF[s], acc[0]);
    c.stageB[s] = std::max(c.stageB[s], acc[1]);
    c.stageW[s] = std::max(c.stageW[s], acc[2]);
    c.stageAct[s] = std::max(c.stageAct[s], acc[3]);
  }
  return c;
}

/// Simulates `op`; reports a deadlock as a located error.
LogicalResult check(ScheduleOp op, bool report,
                    ScheduleCosts costKind = ScheduleCosts::Unit) {
  schedule::Plan plan = planOf(op);
  int64_t p = op.getNumStages(), m = op.getNumMicrobatches(),
          v = op.getNumChunks();
  bool split = splitsW(plan);
  bool flops = costKind == ScheduleCosts::Flops;
  schedule::Costs costs;
  if (flops)
    costs = flopCosts(op->getParentOfType<ModuleOp>(), p * v);
  schedule::Result result = schedule::simulate(plan, p, m, v, split, costs);
  if (!result.error.empty())
    return op.emitOpError() << result.error;
  if (!report)
    return success();
  raw_ostream &os = llvm::outs();
  os << "schedule " << op.getKind() << ": " << p << " stages, " << m
     << " micro-batches, " << v << " chunk(s); "
     << (flops ? "FLOP costs" : "unit costs F=1 B=1 W=1")
     << (split ? " (B and W apart)" : " (B includes W)") << "\n";
  if (flops) {
    for (int64_t s = 0; s < p * v; ++s)
      os << "stage " << s << " (rank " << s % p << "): F "
         << llvm::format("%.6g", costs.fOf(s)) << " B "
         << llvm::format("%.6g", costs.bOf(s)) << " W "
         << llvm::format("%.6g", costs.wOf(s))
         << " FLOPs, activations kept per micro-batch "
         << llvm::format("%.0f", costs.actOf(s)) << " bytes\n";
  }
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
  if (flops) {
    os << "peak activation bytes per rank:";
    for (int64_t r = 0; r < p; ++r)
      os << " " << llvm::format("%.0f", result.peakActBytes[r]);
    os << "\n";
  }
  return success();
}

struct SchedulePass : public pf::impl::SchedulePassBase<SchedulePass> {
  using SchedulePassBase::SchedulePassBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    int64_t v = numChunks, p = numStages, m = numMicrobatches;
    if (p == 0 || m == 0) {
      int64_t maxStage = -1, maxMb = -1;
      PFDialect::StageAttrHelper stageAttr(&getContext());
      PFDialect::MicrobatchAttrHelper microbatchAttr(&getContext());
      module.walk([&](Operation *op) {
        if (IntegerAttr s = stageAttr.getAttr(op))
          maxStage = std::max(maxStage, s.getInt());
        if (IntegerAttr mb = microbatchAttr.getAttr(op))
          maxMb = std::max(maxMb, mb.getInt());
      });
      if (p == 0) {
        if (maxStage < 0 || (maxStage + 1) % v != 0) {
          module.emitError()
              << "pf-schedule: the program's " << maxStage + 1
              << " stages do not form " << v << " chunk(s) per rank";
          return signalPassFailure();
        }
        p = (maxStage + 1) / v;
      }
      if (m == 0)
        m = maxMb + 1 > 0 ? maxMb + 1 : 1;
    }
    std::string error;
    std::optional<schedule::Plan> plan = schedule::build(kind, p, m, v, error);
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
                                 b.getStringAttr(stringifyScheduleKind(kind)),
                                 b.getI64IntegerAttr(p), b.getI64IntegerAttr(m),
                                 b.getI64IntegerAttr(v), b.getArrayAttr(ranks));
    if (failed(check(op, report, costs)))
      return signalPassFailure();
  }
};

struct VerifySchedulePass
    : public pf::impl::VerifySchedulePassBase<VerifySchedulePass> {
  using VerifySchedulePassBase::VerifySchedulePassBase;
  void runOnOperation() override {
    for (auto op : getOperation().getOps<ScheduleOp>())
      if (failed(check(op, report, costs)))
        return signalPassFailure();
  }
};
} // namespace

//===----------------------------------------------------------------------===//
// pf-apply-schedule
//===----------------------------------------------------------------------===//

namespace mlir::pf {
#define GEN_PASS_DEF_APPLYSCHEDULEPASS
#include "pf/Dialect/PF/Transforms/Passes.h.inc"
} // namespace mlir::pf

namespace {
using schedule::stageOf;

struct ApplySchedulePass
    : public pf::impl::ApplySchedulePassBase<ApplySchedulePass> {
  void runOnOperation() override {
    ModuleOp top = getOperation();
    auto schedules = top.getOps<ScheduleOp>();
    if (schedules.empty()) {
      top.emitError("pf-apply-schedule: no pf.schedule (run pf-schedule)");
      return signalPassFailure();
    }
    ScheduleOp sched = *schedules.begin();
    schedule::Plan plan = planOf(sched);
    int64_t p = sched.getNumStages();
    bool split = splitsW(plan);
    SmallVector<ModuleOp> ranks;
    for (auto rankModule : top.getOps<ModuleOp>())
      if (PFDialect::RankAttrHelper(&getContext()).isAttrPresent(rankModule))
        ranks.push_back(rankModule);
    // Each rank's steps on the context's threads; errors in rank order.
    if (failed(forEachRankInOrder(&getContext(), ranks.size(), [&](size_t i) {
          int64_t rank = PFDialect::RankAttrHelper(&getContext())
                             .getAttr(ranks[i])
                             .getInt();
          for (auto func : ranks[i].getOps<func::FuncOp>())
            if (!func.isExternal() && failed(apply(func, rank, plan, p, split)))
              return failure();
          return success();
        })))
      return signalPassFailure();
  }

  LogicalResult apply(func::FuncOp func, int64_t rank,
                      const schedule::Plan &plan, int64_t p, bool split) {
    Block &block = func.getBody().front();
    SmallVector<Operation *> prologue, epilogue;
    std::map<std::tuple<char, int64_t, int64_t>, SmallVector<Operation *>>
        actions;
    std::optional<int64_t> pipelineRank;
    PFDialect::MicrobatchAttrHelper microbatchAttr(func.getContext());
    PFDialect::PhaseAttrHelper phaseAttr(func.getContext());
    for (Operation &op : block) {
      IntegerAttr mb = microbatchAttr.getAttr(&op);
      StringAttr phase = phaseAttr.getAttr(&op);
      if (!mb) {
        // Ops on results of the micro-batches (the packed loss's layout
        // change, for one) run after them.
        bool afterMicrobatches = llvm::any_of(op.getOperands(), [&](Value v) {
          Operation *def = v.getDefiningOp();
          return def && (microbatchAttr.isAttrPresent(def) ||
                         llvm::is_contained(epilogue, def));
        });
        if (isa<func::ReturnOp, PackOp>(op) || afterMicrobatches ||
            (phase && phase.getValue() == "update"))
          epilogue.push_back(&op);
        else
          prologue.push_back(&op);
        continue;
      }
      std::optional<int64_t> stage = stageOf(&op);
      int64_t s = stage.value_or(0);
      if (stage) {
        if (pipelineRank && *pipelineRank != s % p)
          return op.emitOpError()
                 << "pf-apply-schedule: rank " << rank
                 << " holds stages of different pipeline ranks";
        pipelineRank = s % p;
      }
      char kind = 'F';
      if (phase && phase.getValue() != "forward")
        kind = phase.getValue() == "backward_weight" && split ? 'W' : 'B';
      actions[{kind, mb.getInt(), s / p}].push_back(&op);
    }
    if (!pipelineRank)
      return success(); // Nothing staged on this rank.
    const std::vector<schedule::Action> &order = plan[*pipelineRank];
    SmallVector<Operation *> sequence(prologue);
    for (const schedule::Action &a : order) {
      auto it = actions.find({a.kind, a.mb, a.chunk});
      if (it == actions.end())
        continue; // This rank has no work for the action (e.g. no W).
      llvm::append_range(sequence, it->second);
      actions.erase(it);
    }
    if (!actions.empty()) {
      auto &[key, ops] = *actions.begin();
      return ops.front()->emitOpError()
             << "pf-apply-schedule: the schedule of pipeline rank "
             << *pipelineRank << " has no action " << std::get<0>(key)
             << std::get<1>(key) << " (chunk " << std::get<2>(key)
             << ") for this op";
    }
    llvm::append_range(sequence, epilogue);
    // Check that the order computes every value before its use.
    llvm::DenseSet<Value> defined(block.getArguments().begin(),
                                  block.getArguments().end());
    for (Operation *op : sequence) {
      for (Value operand : op->getOperands())
        if (operand.getParentBlock() == &block && !defined.contains(operand))
          return op->emitOpError()
                 << "pf-apply-schedule: the schedule runs this op before "
                    "the op that computes its operand";
      for (Value r : op->getResults())
        defined.insert(r);
    }
    for (Operation *op : sequence)
      op->moveBefore(&block, block.end());
    return success();
  }
};
} // namespace
