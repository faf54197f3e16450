//===- SendCompletion.cpp - where a non-blocking send is known done -------===//

#include "pf/Conversion/Common/SendCompletion.h"
#include "pf/Dialect/PF/IR/PFOps.h"

#include <map>
#include <tuple>

using namespace mlir;
using namespace mlir::pf;

namespace {

/// One communication op of a rank's step.
struct Event {
  Operation *op;
  unsigned position;
  enum Kind { Send, Recv, Collective } kind;
  int64_t peer = -1;
  /// The position of the matching event on the peer (sends and receives),
  /// set by matching.
  unsigned peerPosition = 0;
  bool matched = false;
  /// Collectives: the group, and this instance's ordinal among the rank's
  /// collectives of the same kind and group.
  SmallVector<int64_t> group;
  unsigned ordinal = 0;
};

/// This rank's group of a collective that synchronises its members.
std::optional<SmallVector<int64_t>> syncGroup(Operation *op, int64_t rank) {
  if (!isa<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp>(op))
    return std::nullopt;
  for (Attribute g : op->getAttrOfType<ArrayAttr>("groups")) {
    ArrayRef<int64_t> ranks = cast<DenseI64ArrayAttr>(g).asArrayRef();
    if (llvm::is_contained(ranks, rank))
      return SmallVector<int64_t>(ranks);
  }
  return std::nullopt;
}

} // namespace

llvm::DenseMap<Operation *, Operation *>
mlir::pf::analyzeSendCompletion(const RankSteps &steps) {
  llvm::DenseMap<int64_t, SmallVector<Event>> events;
  // (src, dst, tag) -> the sends / receives in program order.
  std::map<std::tuple<int64_t, int64_t, int64_t>, SmallVector<Event *>> sends,
      recvs;
  // (kind, group, ordinal) on a rank -> the collective's position there.
  std::map<std::tuple<StringRef, SmallVector<int64_t>, unsigned, int64_t>,
           unsigned>
      collectives;
  for (auto &[rank, block] : steps) {
    SmallVector<Event> &list = events[rank];
    std::map<std::pair<StringRef, SmallVector<int64_t>>, unsigned> counts;
    unsigned position = 0;
    for (Operation &op : *block) {
      ++position;
      if (auto s = dyn_cast<SendOp>(op)) {
        list.push_back(
            {&op, position, Event::Send, static_cast<int64_t>(s.getPeer())});
      } else if (auto r = dyn_cast<RecvOp>(op)) {
        list.push_back(
            {&op, position, Event::Recv, static_cast<int64_t>(r.getPeer())});
      } else if (auto group = syncGroup(&op, rank)) {
        Event e{&op, position, Event::Collective};
        e.group = *group;
        StringRef kind = op.getName().getStringRef();
        e.ordinal = counts[{kind, e.group}]++;
        collectives[{kind, e.group, e.ordinal, rank}] = position;
        list.push_back(std::move(e));
      }
    }
  }
  for (auto &[rank, list] : events)
    for (Event &e : list) {
      if (e.kind == Event::Send)
        sends[{rank, e.peer,
               static_cast<int64_t>(cast<SendOp>(e.op).getTag())}].push_back(&e);
      else if (e.kind == Event::Recv)
        recvs[{e.peer, rank,
               static_cast<int64_t>(cast<RecvOp>(e.op).getTag())}].push_back(&e);
    }
  for (auto &[key, list] : sends) {
    auto it = recvs.find(key);
    if (it == recvs.end())
      continue;
    for (auto [s, r] : llvm::zip(list, it->second)) {
      s->peerPosition = r->position;
      r->peerPosition = s->position;
      s->matched = r->matched = true;
    }
  }

  llvm::DenseMap<Operation *, Operation *> done;
  for (auto &[rank, list] : events)
    for (auto [i, send] : llvm::enumerate(list)) {
      if (send.kind != Event::Send || !send.matched)
        continue;
      int64_t q = send.peer;
      unsigned received = send.peerPosition; // R's position on q
      for (const Event &e : llvm::drop_begin(list, i + 1)) {
        bool proof = false;
        if (e.kind == Event::Recv && e.peer == q && e.matched)
          proof = e.peerPosition > received;
        else if (e.kind == Event::Collective &&
                 llvm::is_contained(e.group, q)) {
          auto it = collectives.find({e.op->getName().getStringRef(), e.group,
                                      e.ordinal, q});
          proof = it != collectives.end() && it->second > received;
        }
        if (proof) {
          done[send.op] = e.op;
          break;
        }
      }
    }
  return done;
}
