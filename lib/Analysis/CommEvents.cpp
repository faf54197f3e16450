//===- CommEvents.cpp - each rank's communication, matched ----------------===//

#include "pf/Analysis/CommEvents.h"
#include "pf/Dialect/PF/IR/PFOps.h"

#include <tuple>

using namespace mlir;
using namespace mlir::pf;

namespace {

int64_t countOf(Type t) {
  if (auto g = dyn_cast<GlobalType>(t))
    return g.getNumElements();
  if (auto s = dyn_cast<ShapedType>(t))
    return s.hasStaticShape() ? s.getNumElements() : -1;
  return 1;
}

Type elementOf(Type t) {
  if (auto g = dyn_cast<GlobalType>(t))
    return g.getElementType();
  if (auto s = dyn_cast<ShapedType>(t))
    return s.getElementType();
  return t;
}

/// For each group list seen, each member's group: one pass over the list.
class GroupIndex {
public:
  DenseI64ArrayAttr lookup(ArrayAttr groups, int64_t rank) {
    auto [it, fresh] = index.try_emplace(groups);
    if (fresh)
      for (Attribute a : groups)
        if (auto g = dyn_cast<DenseI64ArrayAttr>(a))
          for (int64_t r : g.asArrayRef())
            it->second.try_emplace(r, g);
    return it->second.lookup(rank);
  }

private:
  llvm::DenseMap<Attribute, llvm::DenseMap<int64_t, DenseI64ArrayAttr>> index;
};

void fillCollective(CommEvent &e, Operation *op, GroupIndex &groups) {
  e.kind = CommEvent::Kind::Collective;
  Value payload;
  if (auto b = dyn_cast<BroadcastOp>(op)) {
    e.groupList = b.getRanksAttr();
    e.group = b.getRanksAttr();
    e.root = b.getRoot();
    payload = b.getResult();
  } else if (auto r = dyn_cast<ReduceOp>(op)) {
    e.groupList = r.getRanksAttr();
    e.group = r.getRanksAttr();
    e.root = r.getRoot();
    payload = r.getInput();
  } else {
    auto list = op->getAttrOfType<ArrayAttr>("groups");
    e.groupList = list;
    e.group = groups.lookup(list, e.rank);
    // A started all-reduce (pf.async_slot) returns before its members
    // meet: it proves nothing about them at that point.
    e.synchronizes =
        !PFDialect::AsyncSlotAttrHelper(op->getContext()).isAttrPresent(op);
    payload = op->getOperand(0);
  }
  e.elements = countOf(payload.getType());
  e.elementType = elementOf(payload.getType());
  if (op->getNumResults() == 1)
    e.resultElements = countOf(op->getResult(0).getType());
}

} // namespace

int64_t CommEvent::bytes() const {
  if (!elementType || !elementType.isIntOrFloat())
    return 0;
  return elements *
         std::max<int64_t>(1, elementType.getIntOrFloatBitWidth() / 8);
}

CommEvents::CommEvents(const RankSteps &steps) {
  for (auto &entry : steps)
    ranks.push_back(entry.first);
  llvm::sort(ranks);
  for (auto [i, r] : llvm::enumerate(ranks)) {
    rankIndices[r] = i;
    blocks.push_back(steps.lookup(r));
  }
  events.resize(ranks.size());

  GroupIndex groups;
  for (auto [ri, rank] : llvm::enumerate(ranks)) {
    std::vector<CommEvent> &list = events[ri];
    unsigned position = 0;
    for (Operation &op : *blocks[ri]) {
      ++position;
      if (!isa<SendOp, RecvOp, AllReduceOp, AllGatherOp, ReduceScatterOp,
               AllToAllOp, BroadcastOp, ReduceOp>(op))
        continue;
      CommEvent e{&op,
                  CommEvent::Kind::Send,
                  rank,
                  static_cast<unsigned>(ri),
                  static_cast<unsigned>(list.size()),
                  position};
      if (auto s = dyn_cast<SendOp>(op)) {
        e.peer = s.getPeer();
        e.tag = s.getTag();
        e.elements = countOf(s.getValue().getType());
        e.elementType = elementOf(s.getValue().getType());
      } else if (auto r = dyn_cast<RecvOp>(op)) {
        e.kind = CommEvent::Kind::Recv;
        e.peer = r.getPeer();
        e.tag = r.getTag();
        e.elements = countOf(r.getType());
        e.elementType = elementOf(r.getType());
      } else {
        fillCollective(e, &op, groups);
      }
      list.push_back(e);
    }
  }

  // Point to point: (source, destination, tag) -> the sends and receives,
  // each in program order (ranks ascending, so every list is in order).
  using Channel = std::tuple<int64_t, int64_t, int64_t>;
  llvm::DenseMap<Channel, std::pair<SmallVector<CommEvent *, 2>,
                                    SmallVector<CommEvent *, 2>>>
      channels;
  // Collectives: (group, ordinal) -> instance; ordinals count per rank.
  llvm::DenseMap<std::pair<Attribute, unsigned>, unsigned> instanceOf;
  for (auto [ri, list] : llvm::enumerate(events)) {
    llvm::DenseMap<Attribute, unsigned> ordinals;
    for (CommEvent &e : list) {
      if (e.isSend()) {
        channels[{e.rank, e.peer, e.tag}].first.push_back(&e);
      } else if (e.isRecv()) {
        channels[{e.peer, e.rank, e.tag}].second.push_back(&e);
      } else if (e.group) {
        e.ordinal = ordinals[e.group]++;
        auto [it, fresh] =
            instanceOf.try_emplace({e.group, e.ordinal}, instances.size());
        if (fresh)
          instances.push_back({e.group, e.ordinal, {}});
        e.instance = it->second;
        instances[e.instance].members.push_back(&e);
        members[{static_cast<unsigned>(e.instance), e.rank}] = &e;
      }
    }
  }
  for (auto &entry : channels)
    for (auto [s, r] : llvm::zip(entry.second.first, entry.second.second)) {
      s->match = r;
      r->match = s;
    }
}

int CommEvents::getRankIndex(int64_t rank) const {
  auto it = rankIndices.find(rank);
  return it == rankIndices.end() ? -1 : static_cast<int>(it->second);
}

const CommEvent *CommEvents::getMember(const CommEvent &e, int64_t rank) const {
  if (e.instance < 0)
    return nullptr;
  return members.lookup({static_cast<unsigned>(e.instance), rank});
}
