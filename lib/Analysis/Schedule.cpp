//===- Schedule.cpp - static pipeline schedules ---------------------------===//

#include "pf/Analysis/Schedule.h"

#include "pf/Dialect/PF/IR/PFOps.h"
#include "llvm/ADT/SmallPtrSet.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <map>
#include <tuple>

using namespace mlir::pf::schedule;

std::string Action::str(bool withChunk) const {
  std::string s(1, kind);
  s += std::to_string(mb);
  if (withChunk)
    s += ":" + std::to_string(chunk);
  return s;
}

std::optional<Action> Action::parse(llvm::StringRef text) {
  if (text.size() < 2 || !llvm::is_contained(llvm::StringRef("FBW"), text[0]))
    return std::nullopt;
  Action a;
  a.kind = text[0];
  auto [mb, chunk] = text.drop_front().split(':');
  if (mb.getAsInteger(10, a.mb) || a.mb < 0)
    return std::nullopt;
  if (!chunk.empty() && (chunk.getAsInteger(10, a.chunk) || a.chunk < 0))
    return std::nullopt;
  return a;
}

Plan mlir::pf::schedule::planOf(ScheduleOp op) {
  Plan plan;
  for (auto rank : op.getActions().getAsRange<ArrayAttr>()) {
    plan.emplace_back();
    for (auto a : rank.getAsRange<StringAttr>())
      plan.back().push_back(*Action::parse(a.getValue()));
  }
  return plan;
}

bool mlir::pf::schedule::splitsW(const Plan &plan) {
  for (auto &rank : plan)
    for (auto &a : rank)
      if (a.kind == 'W')
        return true;
  return false;
}

double Result::bubbleFraction() const {
  if (makespan <= 0.0 || busy.empty())
    return 0.0;
  double total = 0.0;
  for (double b : busy)
    total += b;
  return 1.0 - total / (makespan * busy.size());
}

std::optional<Plan> mlir::pf::schedule::build(ScheduleKind kind, int64_t p,
                                              int64_t m, int64_t v,
                                              std::string &error) {
  if (kind == ScheduleKind::None) {
    error = "schedule 'none' has no plan";
    return std::nullopt;
  }
  if (p < 1 || m < 1 || v < 1) {
    error = "stages, micro-batches and chunks must be positive";
    return std::nullopt;
  }
  if (kind != ScheduleKind::Interleaved1F1B && v != 1) {
    error = "only interleaved-1f1b uses virtual chunks (num-chunks = " +
            std::to_string(v) + ")";
    return std::nullopt;
  }
  Plan plan(p);
  for (int64_t r = 0; r < p; ++r) {
    std::vector<Action> &list = plan[r];
    auto F = [&](int64_t mb, int64_t c = 0) { list.push_back({'F', mb, c}); };
    auto B = [&](int64_t mb, int64_t c = 0) { list.push_back({'B', mb, c}); };
    switch (kind) {
    case ScheduleKind::None:
      llvm_unreachable("rejected above");
    case ScheduleKind::GPipe:
      for (int64_t i = 0; i < m; ++i)
        F(i);
      for (int64_t i = 0; i < m; ++i)
        B(i);
      break;
    case ScheduleKind::OneFOneB:
    case ScheduleKind::ZBH1: {
      // Megatron-LM: p - r - 1 warm-up forwards, then one forward and one
      // backward at a time, then the remaining backwards. ZB-H1 keeps that
      // order (and so 1F1B's activation memory); the simulator places each
      // weight-gradient W where the rank would otherwise wait.
      int64_t warmup = std::min(p - r - 1, m);
      for (int64_t i = 0; i < warmup; ++i)
        F(i);
      for (int64_t i = 0; i < m - warmup; ++i) {
        F(warmup + i);
        B(i);
      }
      for (int64_t i = m - warmup; i < m; ++i)
        B(i);
      break;
    }
    case ScheduleKind::Interleaved1F1B: {
      if (m % p != 0) {
        error = "interleaved-1f1b needs the number of micro-batches (" +
                std::to_string(m) +
                ") to be a multiple of the number of pipeline stages (" +
                std::to_string(p) + "), as Megatron-LM and Colossal-AI require";
        return std::nullopt;
      }
      // Megatron-LM's interleaved order: micro-step k works on chunk
      // (k / p) % v (backwards: the mirrored chunk) of micro-batch
      // (k / (p v)) p + k % p.
      int64_t total = m * v;
      auto fwd = [&](int64_t k) -> Action {
        int64_t chunk = (k / p) % v;
        return {'F', (k / (p * v)) * p + k % p, chunk};
      };
      auto bwd = [&](int64_t k) -> Action {
        int64_t chunk = v - 1 - (k / p) % v;
        return {'B', (k / (p * v)) * p + k % p, chunk};
      };
      int64_t warmup = std::min((p - r - 1) * 2 + (v - 1) * p, total);
      for (int64_t k = 0; k < warmup; ++k)
        list.push_back(fwd(k));
      for (int64_t k = 0; k < total - warmup; ++k) {
        list.push_back(fwd(warmup + k));
        list.push_back(bwd(k));
      }
      for (int64_t k = total - warmup; k < total; ++k)
        list.push_back(bwd(k));
      break;
    }
    }
  }
  if (kind == ScheduleKind::ZBH1) {
    // Place each weight gradient W(i) (ready once B(i) is done) wherever the
    // rank would otherwise idle waiting for its next F or B, and the rest at
    // the end: a unit-time list schedule over 1F1B's F/B order. A forward
    // that would make a rank hold more than p micro-batches (1F1B's peak,
    // on its first rank; a micro-batch is held until its W) runs a pending
    // W first: ZB-H1 keeps 1F1B's peak activation memory, as in the paper.
    int64_t stages = p;
    std::map<std::tuple<char, int64_t, int64_t>, int64_t> finish;
    std::vector<size_t> next(p, 0);
    std::vector<int64_t> freeAt(p, 0);
    std::vector<std::vector<int64_t>> pendingW(p);
    std::vector<int64_t> held(p, 0); // forwards whose W is still to come
    Plan zb(p);
    size_t remaining = 0;
    for (auto &l : plan)
      remaining += l.size();
    for (int64_t t = 0;
         remaining > 0 ||
         llvm::any_of(pendingW, [](auto &w) { return !w.empty(); });
         ++t) {
      for (int64_t r = 0; r < p; ++r) {
        if (freeAt[r] > t)
          continue;
        bool started = false;
        if (next[r] < plan[r].size()) {
          const Action &a = plan[r][next[r]];
          auto depDone = [&](char k, int64_t mb, int64_t st) {
            auto it = finish.find({k, mb, st});
            return it != finish.end() && it->second <= t;
          };
          bool ok = a.kind == 'F' ? (r == 0 || depDone('F', a.mb, r - 1))
                                  : (r + 1 < stages ? depDone('B', a.mb, r + 1)
                                                    : depDone('F', a.mb, r)) &&
                                        depDone('F', a.mb, r);
          if (ok && a.kind == 'F' && !pendingW[r].empty() &&
              held[r] >= std::min(p, m))
            ok = false; // a W first: it frees a held micro-batch
          if (ok) {
            zb[r].push_back(a);
            finish[{a.kind, a.mb, r}] = t + 1;
            freeAt[r] = t + 1;
            if (a.kind == 'F')
              ++held[r];
            if (a.kind == 'B')
              pendingW[r].push_back(a.mb);
            ++next[r];
            --remaining;
            started = true;
          }
        }
        if (!started && !pendingW[r].empty()) {
          int64_t mb = pendingW[r].front();
          pendingW[r].erase(pendingW[r].begin());
          zb[r].push_back({'W', mb, 0});
          freeAt[r] = t + 1;
          --held[r];
        }
      }
      if (t > 16 * (int64_t)(m + p) * 3) {
        error = "internal error: the ZB-H1 construction did not finish";
        return std::nullopt;
      }
    }
    return zb;
  }
  return plan;
}

Result mlir::pf::schedule::simulate(const Plan &plan, int64_t p, int64_t m,
                                    int64_t v, bool splitW, Costs costs) {
  Result result;
  int64_t stages = p * v;
  // Finish time of each (kind, mb, stage).
  std::map<std::tuple<char, int64_t, int64_t>, double> done;
  auto finished = [&](char k, int64_t mb, int64_t s) -> std::optional<double> {
    auto it = done.find({k, mb, s});
    if (it == done.end())
      return std::nullopt;
    return it->second;
  };
  // Every (kind, mb, chunk) appears exactly once per rank.
  for (int64_t r = 0; r < p; ++r) {
    std::map<std::tuple<char, int64_t, int64_t>, int> seen;
    for (const Action &a : plan[r]) {
      if (a.mb >= m || a.chunk >= v) {
        result.error = "rank " + std::to_string(r) + ": action " +
                       a.str(v > 1) + " is out of range";
        return result;
      }
      if (++seen[{a.kind, a.mb, a.chunk}] > 1) {
        result.error = "rank " + std::to_string(r) + ": action " +
                       a.str(v > 1) + " appears twice";
        return result;
      }
    }
    int64_t expected = m * v * (splitW ? 3 : 2);
    if ((int64_t)plan[r].size() != expected) {
      result.error = "rank " + std::to_string(r) + " has " +
                     std::to_string(plan[r].size()) + " actions, expected " +
                     std::to_string(expected);
      return result;
    }
  }

  std::vector<size_t> next(p, 0);
  std::vector<double> clock(p, 0.0);
  result.busy.assign(p, 0.0);
  result.peakInFlight.assign(p, 0);
  result.peakActBytes.assign(p, 0.0);
  result.times.assign(p, {});
  std::vector<int64_t> inFlight(p, 0);
  std::vector<double> actBytes(p, 0.0);
  std::vector<std::vector<Action>> ready = plan; // ZB-H1 reorders W below
  bool progress = true;
  while (progress) {
    progress = false;
    for (int64_t r = 0; r < p; ++r) {
      while (next[r] < ready[r].size()) {
        const Action a = ready[r][next[r]];
        int64_t s = a.chunk * p + r;
        // Dependencies: the receive this action starts with, and its own
        // stage's earlier work.
        std::optional<double> dep = 0.0;
        if (a.kind == 'F' && s > 0)
          dep = finished('F', a.mb, s - 1);
        else if (a.kind == 'B')
          dep = s + 1 < stages ? finished('B', a.mb, s + 1)
                               : finished('F', a.mb, s);
        else if (a.kind == 'W')
          dep = finished('B', a.mb, s);
        if (a.kind == 'B' && dep && !finished('F', a.mb, s))
          dep = std::nullopt;
        if (!dep)
          break; // Blocked: receives wait; try other ranks.
        double cost = a.kind == 'F'   ? costs.fOf(s)
                      : a.kind == 'W' ? costs.wOf(s)
                      : splitW        ? costs.bOf(s)
                                      : costs.bOf(s) + costs.wOf(s);
        double start = std::max(clock[r], *dep);
        clock[r] = start + cost;
        result.times[r].push_back({start, clock[r]});
        result.busy[r] += cost;
        done[{a.kind, a.mb, s}] = clock[r];
        if (a.kind == 'F') {
          result.peakInFlight[r] =
              std::max(result.peakInFlight[r], ++inFlight[r]);
          actBytes[r] += costs.actOf(s);
          result.peakActBytes[r] =
              std::max(result.peakActBytes[r], actBytes[r]);
        } else if ((a.kind == 'B' && !splitW) || a.kind == 'W') {
          // In flight until the last backward action that reads the
          // micro-batch's activations: W when it is apart (the weight
          // gradient needs the stage's saved inputs), else B.
          --inFlight[r];
        }
        // A weight gradient still needs the stage's saved inputs.
        if ((a.kind == 'B' && !splitW) || a.kind == 'W')
          actBytes[r] -= costs.actOf(s);
        ++next[r];
        progress = true;
      }
    }
  }
  std::string blocked;
  for (int64_t r = 0; r < p; ++r)
    if (next[r] < ready[r].size()) {
      const Action &a = ready[r][next[r]];
      int64_t s = a.chunk * p + r;
      std::string waits =
          a.kind == 'F'    ? "F" + std::to_string(a.mb) + " of stage " +
                                 std::to_string(s - 1)
          : a.kind == 'W'  ? "B" + std::to_string(a.mb) + " of its own stage"
          : s + 1 < stages ? "B" + std::to_string(a.mb) + " of stage " +
                                 std::to_string(s + 1)
                           : "F" + std::to_string(a.mb) + " of its own stage";
      blocked += (blocked.empty() ? "" : "; ") + std::string("rank ") +
                 std::to_string(r) + " blocks at " + a.str(v > 1) +
                 " (micro-batch " + std::to_string(a.mb) + ") waiting for " +
                 waits;
    }
  if (!blocked.empty()) {
    result.error = "the schedule deadlocks: " + blocked;
    return result;
  }
  result.makespan = *std::max_element(clock.begin(), clock.end());
  return result;
}

std::optional<int64_t> mlir::pf::schedule::stageOf(Operation *op) {
  if (auto s = getStageAttrValue(op))
    return s;
  // Communication, box copies and input slices have no stage of their own:
  // they belong to the stage that consumes (or else produces) their data,
  // looking through other stage-less ops (a send of an extract_box of a
  // stage's value, an assemble of received boxes).
  auto search = [&](bool down) -> std::optional<int64_t> {
    SmallVector<Operation *> work = {op};
    llvm::SmallPtrSet<Operation *, 8> seen = {op};
    while (!work.empty()) {
      Operation *cur = work.pop_back_val();
      SmallVector<Operation *> next;
      if (down) {
        for (Operation *user : cur->getUsers())
          next.push_back(user);
      } else {
        for (Value operand : cur->getOperands())
          if (Operation *def = operand.getDefiningOp())
            next.push_back(def);
      }
      for (Operation *n : next) {
        if (auto s = getStageAttrValue(n))
          return s;
        if (seen.insert(n).second && n->getNumRegions() == 0)
          work.push_back(n);
      }
    }
    return std::nullopt;
  };
  if (auto s = search(/*down=*/true))
    return s;
  return search(/*down=*/false);
}
