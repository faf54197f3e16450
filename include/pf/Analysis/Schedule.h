//===- Schedule.h - static pipeline schedules -------------------*- C++ -*-===//
//
// Builds each rank's ordered actions for GPipe, 1F1B, interleaved 1F1B and
// ZB-H1, and simulates a plan to prove it deadlock-free and to predict its
// bubble and in-flight micro-batches. Sends are modelled as buffered (the
// batched non-blocking pairs a schedule lowers to): a rank blocks only
// where it receives.
//
//===----------------------------------------------------------------------===//

#ifndef PF_ANALYSIS_SCHEDULE_H
#define PF_ANALYSIS_SCHEDULE_H

#include "pf/Dialect/PF/IR/PFAttrs.h"

#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::pf {
class ScheduleOp;
} // namespace mlir::pf

namespace mlir::pf::schedule {

struct Action {
  char kind = 'F'; // 'F' forward, 'B' input gradient (+W if not split), 'W'
  int64_t mb = 0;
  int64_t chunk = 0;
  std::string str(bool withChunk) const;
  static std::optional<Action> parse(llvm::StringRef text);
  bool operator==(const Action &o) const {
    return kind == o.kind && mb == o.mb && chunk == o.chunk;
  }
};

/// One ordered action list per rank.
using Plan = std::vector<std::vector<Action>>;

/// The plan a pf.schedule holds (its verifier checks that the actions parse).
Plan planOf(ScheduleOp op);

/// Whether the plan runs weight gradients as actions of their own (W).
bool splitsW(const Plan &plan);

/// Builds the plan, or returns an error message (e.g. interleaving needs a
/// micro-batch count that is a multiple of the stage count; `None` has no
/// plan).
std::optional<Plan> build(ScheduleKind kind, int64_t p, int64_t m, int64_t v,
                          std::string &error);

struct Costs {
  double f = 1.0, b = 1.0, w = 1.0;
  /// Per virtual stage (chunk * p + rank): overrides of f, b and w when not
  /// empty, and the activation bytes one micro-batch keeps on the stage
  /// from its forward until its backward (its W when B and W are apart).
  std::vector<double> stageF, stageB, stageW, stageAct;
  double fOf(int64_t s) const { return stageF.empty() ? f : stageF[s]; }
  double bOf(int64_t s) const { return stageB.empty() ? b : stageB[s]; }
  double wOf(int64_t s) const { return stageW.empty() ? w : stageW[s]; }
  double actOf(int64_t s) const { return stageAct.empty() ? 0.0 : stageAct[s]; }
};

struct Result {
  std::string error; // non-empty on deadlock or a bad plan
  double makespan = 0.0;
  std::vector<double> busy;          // per rank
  std::vector<int64_t> peakInFlight; // per rank: forwards whose last
                                     // backward (W when apart) is to come
  std::vector<double> peakActBytes;  // per rank, from Costs::stageAct
  /// Per rank, per action in plan order: predicted start and end times.
  std::vector<std::vector<std::pair<double, double>>> times;
  /// Idle time of the busiest... of rank r: makespan - busy[r].
  double bubbleFraction() const;
};

/// Simulates the plan; `splitW` says whether B and W are separate actions
/// (otherwise a B costs b + w).
Result simulate(const Plan &plan, int64_t p, int64_t m, int64_t v, bool splitW,
                Costs costs);

/// The pipeline stage an op works for: its pf.stage, else (communication,
/// box copies, micro-batch slices) the first stage found among its users
/// and theirs, else among its producers, looking through stage-less ops.
std::optional<int64_t> stageOf(Operation *op);

} // namespace mlir::pf::schedule

#endif // PF_ANALYSIS_SCHEDULE_H
