//===- SendCompletion.cpp - where a non-blocking send is known done -------===//

#include "pf/Conversion/Common/SendCompletion.h"
#include "pf/Analysis/CommEvents.h"

using namespace mlir;
using namespace mlir::pf;

llvm::DenseMap<Operation *, Operation *>
mlir::pf::analyzeSendCompletion(const RankSteps &steps) {
  CommEvents comm(steps);
  llvm::DenseMap<Operation *, Operation *> done;
  for (unsigned ri = 0; ri < comm.getRanks().size(); ++ri) {
    ArrayRef<CommEvent> list = comm.getEvents(ri);
    for (auto [i, send] : llvm::enumerate(list)) {
      if (!send.isSend() || !send.match)
        continue;
      int64_t q = send.peer;
      unsigned received = send.match->position; // R's position on q
      for (const CommEvent &e : llvm::drop_begin(list, i + 1)) {
        bool proof = false;
        if (e.isRecv() && e.peer == q && e.match)
          proof = e.match->position > received;
        else if (e.isCollective() && e.synchronizes && e.group &&
                 llvm::is_contained(e.group.asArrayRef(), q))
          if (const CommEvent *there = comm.getMember(e, q))
            proof = there->position > received;
        if (proof) {
          done[send.op] = e.op;
          break;
        }
      }
    }
  }
  return done;
}
