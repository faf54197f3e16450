//===- CommEvents.h - each rank's communication, matched --------*- C++ -*-===//
//
// The communication of a whole job, read from its per-rank step blocks: for
// every rank the ordered list of its sends, receives and collectives, with
// what each moves (element count and type). Sends and receives match by
// (source, destination, tag) in program order, as MPI matches them;
// collectives match by the group they run over (the member's own group:
// its communicator) and their ordinal among the rank's collectives on that
// group. Whether the matched program is sound (sizes agree, nobody waits
// forever) is pf-verify-comm's question; the send-completion analysis of
// the conversion reads the matching.
//
//===----------------------------------------------------------------------===//

#ifndef PF_ANALYSIS_COMMEVENTS_H
#define PF_ANALYSIS_COMMEVENTS_H

#include "mlir/IR/Block.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseMap.h"

#include <vector>

namespace mlir::pf {

/// Per-rank step blocks (rank id -> the body of its step function), in
/// program order.
using RankSteps = llvm::DenseMap<int64_t, Block *>;

/// One communication op of a rank's step.
struct CommEvent {
  enum class Kind { Send, Recv, Collective };

  Operation *op;
  Kind kind;
  int64_t rank;
  /// Index of the rank among CommEvents::getRanks(), and of this event in
  /// the rank's list.
  unsigned rankIndex;
  unsigned index;
  /// 1-based position of the op in its block.
  unsigned position;

  /// What one member moves: sends and receives their value; all_reduce,
  /// all_gather, reduce_scatter, all_to_all and reduce their input;
  /// broadcast its result.
  int64_t elements = 0;
  Type elementType;

  /// Sends and receives: the other rank and the tag; the matching event on
  /// the peer (null when there is none).
  int64_t peer = -1;
  int64_t tag = -1;
  const CommEvent *match = nullptr;

  /// Collectives: the op's whole group list (`groups`, or `ranks` for
  /// broadcast and reduce), this rank's group in it (null when the rank is
  /// in none), the root (broadcast, reduce; else -1), the result's element
  /// count (-1 without a result), the ordinal among the rank's collectives
  /// on its group, and the instance it belongs to (-1 without a group).
  Attribute groupList;
  DenseI64ArrayAttr group;
  int64_t root = -1;
  int64_t resultElements = -1;
  unsigned ordinal = 0;
  int instance = -1;
  /// all_reduce, all_gather, reduce_scatter, all_to_all: no member's
  /// result exists before every member entered.
  bool synchronizes = false;

  bool isSend() const { return kind == Kind::Send; }
  bool isRecv() const { return kind == Kind::Recv; }
  bool isCollective() const { return kind == Kind::Collective; }
  /// Bytes moved: elements times the element's width (0 if not int/float).
  int64_t bytes() const;
};

/// One collective as the job runs it: the members' events on one group.
struct CollectiveInstance {
  DenseI64ArrayAttr group;
  unsigned ordinal;
  /// In the order of getRanks().
  SmallVector<const CommEvent *> members;
};

/// Every rank's communication events, matched. Linear in the number of ops.
class CommEvents {
public:
  explicit CommEvents(const RankSteps &steps);
  CommEvents(const CommEvents &) = delete;
  CommEvents &operator=(const CommEvents &) = delete;

  /// The ranks, ascending.
  ArrayRef<int64_t> getRanks() const { return ranks; }
  /// The rank's index among getRanks(), or -1.
  int getRankIndex(int64_t rank) const;
  /// The events of the rank with index `rankIndex`, in program order.
  ArrayRef<CommEvent> getEvents(unsigned rankIndex) const {
    return events[rankIndex];
  }
  /// The block of the rank with index `rankIndex`.
  Block *getBlock(unsigned rankIndex) const { return blocks[rankIndex]; }

  ArrayRef<CollectiveInstance> getInstances() const { return instances; }
  /// The event of `rank` in the instance of collective `e`, or null.
  const CommEvent *getMember(const CommEvent &e, int64_t rank) const;

private:
  SmallVector<int64_t> ranks;
  SmallVector<Block *> blocks;
  llvm::DenseMap<int64_t, unsigned> rankIndices;
  std::vector<std::vector<CommEvent>> events;
  std::vector<CollectiveInstance> instances;
  llvm::DenseMap<std::pair<unsigned, int64_t>, const CommEvent *> members;
};

} // namespace mlir::pf

#endif // PF_ANALYSIS_COMMEVENTS_H
