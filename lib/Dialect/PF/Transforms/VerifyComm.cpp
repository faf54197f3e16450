//===- VerifyComm.cpp - every rank's communication matches, no deadlock ---===//
//
// The per-rank programs are compiled separately but run together: a send
// whose receive has another tag, two members entering a group's collectives
// in another order, or a cycle of receives hangs or corrupts the job at run
// time, far from its cause. The whole job's communication is known here, so
// it is checked once, before the conversion:
//
//  1. each event on its own and each send/receive pair (CommEvents matches
//     them by (source, destination, tag) in order): sizes and element types
//     agree, nothing is left unmatched;
//  2. a simulation of the job, sends buffered, receives blocking until
//     their send ran, collectives blocking until every member entered; on
//     entering, a member is compared with the first to enter (kind, root,
//     size, group list). If no rank can move while some are not done, the
//     first blocked rank's op is the error, with a note on the op of the
//     rank it waits for.
//
// Every event is visited a bounded number of times (a rank resumes only
// when the send it waits for ran or its collective completed), so the check
// is linear in the job's communication.
//
//===----------------------------------------------------------------------===//

#include "pf/Analysis/CommEvents.h"
#include "pf/Dialect/PF/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Debug.h"

#include <deque>

#define DEBUG_TYPE "pf-verify-comm"

namespace mlir::pf {
#define GEN_PASS_DEF_VERIFYCOMMPASS
#include "pf/Dialect/PF/Transforms/Passes.h.inc"
} // namespace mlir::pf

using namespace mlir;
using namespace mlir::pf;

namespace {

std::string groupString(DenseI64ArrayAttr group) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleaveComma(group.asArrayRef(), os);
  os << "]";
  return s;
}

/// "4 x f32".
std::string payload(const CommEvent &e) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << e.elements << " x " << e.elementType;
  return s;
}

/// "'pf.all_reduce' of 4 x f32 (root 0)".
std::string describe(const CommEvent &e) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "'" << e.op->getName() << "' of " << payload(e);
  if (e.root >= 0)
    os << " (root " << e.root << ")";
  return s;
}

/// Each member's share of the collective agrees with its group's size.
bool sizesFitGroup(const CommEvent &e) {
  int64_t n = e.group.size(), in = e.elements, out = e.resultElements;
  if (isa<AllReduceOp>(e.op))
    return in == out;
  if (isa<AllGatherOp>(e.op))
    return out == in * n;
  if (isa<ReduceScatterOp>(e.op))
    return in == out * n;
  if (isa<AllToAllOp>(e.op))
    return in == out && in % n == 0;
  return true;
}

class Verifier {
public:
  explicit Verifier(const CommEvents &comm) : comm(comm) {}

  LogicalResult run() {
    if (failed(checkEvents()))
      return failure();
    return simulate();
  }

private:
  /// Unmatched point-to-point events and their sizes, and each collective
  /// on its own.
  LogicalResult checkEvents() {
    for (unsigned ri = 0; ri < comm.getRanks().size(); ++ri)
      for (const CommEvent &e : comm.getEvents(ri)) {
        if (e.isCollective()) {
          if (!e.group)
            return e.op->emitOpError("on rank ")
                   << e.rank << " is in none of its groups " << e.groupList;
          if (!sizesFitGroup(e))
            return e.op->emitOpError("on rank ")
                   << e.rank << " has " << e.elements << " input and "
                   << e.resultElements << " result elements, which a group of "
                   << e.group.size() << " ranks does not allow";
          continue;
        }
        if (!e.match) {
          // The likely culprit: an unmatched event between the same two
          // ranks in the other direction of the channel (another tag).
          const CommEvent *other = unmatchedCounterpart(e);
          auto report = [&]() -> InFlightDiagnostic {
            if (e.isSend())
              return e.op->emitOpError("on rank ")
                     << e.rank << " sends to rank " << e.peer << " with tag "
                     << e.tag << " but rank " << e.peer
                     << " has no matching pf.recv";
            return e.op->emitOpError("on rank ")
                   << e.rank << " receives from rank " << e.peer << " with tag "
                   << e.tag << " but rank " << e.peer
                   << " sends no matching pf.send";
          };
          InFlightDiagnostic diag = report();
          if (other)
            diag.attachNote(other->op->getLoc())
                << "rank " << other->rank
                << (other->isSend() ? " sends to rank "
                                    : " receives from rank ")
                << other->peer << " with tag " << other->tag << " here";
          return diag;
        }
        if (e.isRecv() && (e.bytes() != e.match->bytes() ||
                           e.elementType != e.match->elementType)) {
          const CommEvent &s = *e.match;
          InFlightDiagnostic diag =
              e.op->emitOpError("on rank ")
              << e.rank << " receives " << e.bytes() << " bytes (" << payload(e)
              << ") from rank " << e.peer << " tag " << e.tag << ", but rank "
              << s.rank << " sends " << s.bytes() << " bytes (" << payload(s)
              << ")";
          diag.attachNote(s.op->getLoc())
              << "rank " << s.rank << "'s matching send";
          return diag;
        }
      }
    return success();
  }

  const CommEvent *unmatchedCounterpart(const CommEvent &e) const {
    int peer = comm.getRankIndex(e.peer);
    if (peer < 0)
      return nullptr;
    for (const CommEvent &o : comm.getEvents(peer))
      if (!o.match && o.peer == e.rank && o.isSend() == e.isRecv() &&
          !o.isCollective())
        return &o;
    return nullptr;
  }

  /// The job run under blocking receives and synchronising collectives.
  LogicalResult simulate() {
    unsigned n = comm.getRanks().size();
    pc.assign(n, 0);
    entered.assign(n, false);
    arrived.assign(comm.getInstances().size(), 0);
    first.assign(comm.getInstances().size(), nullptr);
    std::deque<unsigned> ready;
    for (unsigned r = 0; r < n; ++r)
      ready.push_back(r);
    while (!ready.empty()) {
      unsigned r = ready.front();
      ready.pop_front();
      if (failed(advance(r, ready)))
        return failure();
    }
    for (unsigned r = 0; r < n; ++r)
      if (pc[r] < comm.getEvents(r).size())
        return reportDeadlock(comm.getEvents(r)[pc[r]]);
    LLVM_DEBUG(llvm::dbgs()
               << "pf-verify-comm: " << n << " ranks, "
               << comm.getInstances().size() << " collectives, no deadlock\n");
    return success();
  }

  /// Runs rank `r` until it blocks or finishes; queues the ranks it frees.
  LogicalResult advance(unsigned r, std::deque<unsigned> &ready) {
    ArrayRef<CommEvent> list = comm.getEvents(r);
    while (pc[r] < list.size()) {
      const CommEvent &e = list[pc[r]];
      if (e.isSend()) {
        ++pc[r];
        const CommEvent *recv = e.match;
        if (pc[recv->rankIndex] == recv->index)
          ready.push_back(recv->rankIndex);
        continue;
      }
      if (e.isRecv()) {
        if (pc[e.match->rankIndex] <= e.match->index)
          return success(); // blocked until the send runs
        ++pc[r];
        continue;
      }
      if (!entered[r]) {
        entered[r] = true;
        const CommEvent *&head = first[e.instance];
        if (!head)
          head = &e;
        else if (failed(compare(e, *head)))
          return failure();
        if (++arrived[e.instance] == e.group.size())
          for (const CommEvent *m : comm.getInstances()[e.instance].members)
            if (m != &e)
              ready.push_back(m->rankIndex);
      }
      if (arrived[e.instance] < e.group.size())
        return success(); // blocked until every member entered
      entered[r] = false;
      ++pc[r];
    }
    return success();
  }

  /// A member entering collective `e` agrees with the first member.
  LogicalResult compare(const CommEvent &e, const CommEvent &head) {
    if (e.groupList != head.groupList) {
      InFlightDiagnostic diag = e.op->emitOpError("on rank ")
                                << e.rank << " has groups " << e.groupList
                                << " but rank " << head.rank
                                << " enters the same collective with groups "
                                << head.groupList;
      diag.attachNote(head.op->getLoc())
          << "rank " << head.rank << "'s collective";
      return diag;
    }
    if (e.op->getName() != head.op->getName() || e.root != head.root ||
        e.elements != head.elements || e.elementType != head.elementType) {
      InFlightDiagnostic diag =
          e.op->emitOpError("on rank ")
          << e.rank << " enters " << describe(e) << " as collective #"
          << e.ordinal << " on group " << groupString(e.group)
          << ", where rank " << head.rank << " enters " << describe(head);
      diag.attachNote(head.op->getLoc())
          << "rank " << head.rank << "'s collective #" << head.ordinal
          << " on group " << groupString(head.group);
      return diag;
    }
    return success();
  }

  /// Where rank `q` stands: its current event, or null when done.
  const CommEvent *current(int q) const {
    if (q < 0 || pc[q] >= comm.getEvents(q).size())
      return nullptr;
    return &comm.getEvents(q)[pc[q]];
  }

  LogicalResult reportDeadlock(const CommEvent &e) {
    int64_t waitsFor = e.rank;
    const CommEvent *there = nullptr;
    if (e.isRecv()) {
      waitsFor = e.peer;
      there = current(e.match->rankIndex);
    } else {
      for (int64_t q : e.group.asArrayRef()) {
        int qi = comm.getRankIndex(q);
        const CommEvent *at = current(qi);
        if (at && at->instance == e.instance)
          continue; // entered
        if (!at) {
          InFlightDiagnostic diag =
              e.op->emitOpError("on rank ")
              << e.rank << " waits for rank " << q << " of group "
              << groupString(e.group)
              << ", which finishes its step without entering it";
          if (qi >= 0)
            diag.attachNote(comm.getBlock(qi)->back().getLoc())
                << "rank " << q << " finishes here";
          return diag;
        }
        if (at->isCollective() && at->group != e.group && at->group &&
            llvm::is_contained(at->group.asArrayRef(), e.rank)) {
          InFlightDiagnostic diag = e.op->emitOpError("on rank ")
                                    << e.rank << " runs over group "
                                    << groupString(e.group) << " but rank " << q
                                    << " enters a collective over group "
                                    << groupString(at->group) << " instead";
          diag.attachNote(at->op->getLoc()) << "rank " << q << "'s collective";
          return diag;
        }
        waitsFor = q;
        there = at;
        break;
      }
    }
    InFlightDiagnostic diag =
        e.op->emitOpError("deadlock: rank ")
        << e.rank << " waits here for rank " << waitsFor
        << ", which is blocked at "
        << (there ? there : &e)->op->getName().getStringRef();
    if (there)
      diag.attachNote(there->op->getLoc())
          << "rank " << waitsFor << " is blocked here";
    return diag;
  }

  const CommEvents &comm;
  /// Per rank: the index of its next event, and whether it entered the
  /// collective there. Per collective instance: members entered, the first.
  SmallVector<unsigned> pc;
  SmallVector<bool> entered;
  SmallVector<unsigned> arrived;
  SmallVector<const CommEvent *> first;
};

struct VerifyCommPass : public pf::impl::VerifyCommPassBase<VerifyCommPass> {
  void runOnOperation() override {
    ModuleOp top = getOperation();
    StringRef rankAttr = PFDialect::RankAttrHelper::getNameStr();
    SmallVector<ModuleOp> modules;
    if (top->hasAttr(rankAttr))
      modules.push_back(top);
    for (auto m : top.getOps<ModuleOp>())
      if (m->hasAttr(rankAttr))
        modules.push_back(m);
    // Nothing is partitioned yet: there is no communication to check.
    if (modules.empty())
      return markAllAnalysesPreserved();

    RankSteps steps;
    for (ModuleOp m : modules) {
      int64_t rank = m->getAttrOfType<IntegerAttr>(rankAttr).getInt();
      SmallVector<func::FuncOp> funcs;
      for (auto f : m.getOps<func::FuncOp>())
        if (!f.isExternal())
          funcs.push_back(f);
      if (funcs.size() != 1 || !funcs.front().getBody().hasOneBlock()) {
        m.emitOpError("pf-verify-comm expects one step function of one "
                      "block on rank ")
            << rank << ", found " << funcs.size() << " functions";
        return signalPassFailure();
      }
      steps[rank] = &funcs.front().getBody().front();
    }
    CommEvents comm(steps);
    if (failed(Verifier(comm).run()))
      return signalPassFailure();
    markAllAnalysesPreserved();
  }
};

} // namespace
