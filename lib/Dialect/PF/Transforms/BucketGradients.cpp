//===- BucketGradients.cpp - one all-reduce per bucket of gradients -------===//
//
// Data parallelism ends each step with one all-reduce per gradient: dozens
// of small collectives, each paying the transport's latency (an MPI call, a
// host round trip of the staged GPU transport, an NCCL launch). The update's
// consecutive gradient all-reduces over the same groups are packed instead:
// flattened (a view), concatenated, reduced once and sliced apart. The
// buckets are cut at compile time in program order, so every member of a
// group, whose step holds the same update, cuts the same ones; a bucket
// never spans another communication op, so the order of each rank's
// collectives and messages is kept (pf-verify-comm runs after this pass).
//
//===----------------------------------------------------------------------===//

#include "pf/Dialect/PF/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::pf {
#define GEN_PASS_DEF_BUCKETGRADIENTSPASS
#include "pf/Dialect/PF/Transforms/Passes.h.inc"
} // namespace mlir::pf

using namespace mlir;
using namespace mlir::pf;

namespace {

/// An update-phase all-reduce of a statically shaped float tensor: a
/// gradient's reduction that may join a bucket.
bool isGradientReduction(AllReduceOp op) {
  PFDialect::PhaseAttrHelper phase(op.getContext());
  StringAttr p = phase.getAttr(op);
  auto type = cast<GlobalType>(op.getInput().getType());
  return p && p.getValue() == "update" &&
         isa<FloatType>(type.getElementType()) &&
         type == cast<GlobalType>(op.getResult().getType());
}

/// Ops that move data between ranks (a bucket never spans one).
bool communicates(Operation *op) {
  return isa<AllReduceOp, ReduceScatterOp, AllGatherOp, AllToAllOp, BroadcastOp,
             ReduceOp, TransferOp, SendOp, RecvOp>(op);
}

int64_t bytesOf(GlobalType type) {
  return type.getNumElements() *
         int64_t(llvm::divideCeil(type.getElementType().getIntOrFloatBitWidth(),
                                  8));
}

/// Replaces the bucket's all-reduces by one, at the first one's place.
void pack(ArrayRef<AllReduceOp> bucket) {
  if (bucket.size() < 2)
    return;
  AllReduceOp first = bucket.front();
  OpBuilder b(first);
  Location loc = first.getLoc();
  auto firstType = cast<GlobalType>(first.getInput().getType());
  SmallVector<Value> flat;
  int64_t total = 0;
  for (AllReduceOp op : bucket) {
    auto type = cast<GlobalType>(op.getInput().getType());
    int64_t n = type.getNumElements();
    flat.push_back(type.getRank() == 1
                       ? op.getInput()
                       : ReshapeOp::create(b, op.getLoc(), type.withShape({n}),
                                           op.getInput())
                             .getResult());
    total += n;
  }
  GlobalType packedType = firstType.withShape({total});
  auto concat =
      ConcatOp::create(b, loc, packedType, flat, b.getI64IntegerAttr(0));
  auto reduced =
      AllReduceOp::create(b, loc, packedType, concat, first.getGroupsAttr());
  // The update's attributes (phase, stage) go to the ops made here.
  for (Operation *op : {concat.getOperation(), reduced.getOperation()})
    for (NamedAttribute attr : first->getDiscardableAttrs())
      op->setAttr(attr.getName(), attr.getValue());
  int64_t at = 0;
  for (AllReduceOp op : bucket) {
    auto type = cast<GlobalType>(op.getInput().getType());
    int64_t n = type.getNumElements();
    OpBuilder ob(op);
    auto slice = SliceOp::create(ob, op.getLoc(), type.withShape({n}), reduced,
                                 ob.getDenseI64ArrayAttr({at}),
                                 ob.getDenseI64ArrayAttr({n}));
    Value back = slice;
    if (type.getRank() != 1)
      back = ReshapeOp::create(ob, op.getLoc(), type, slice);
    for (Operation *made : {slice.getOperation(), back.getDefiningOp()})
      for (NamedAttribute attr : op->getDiscardableAttrs())
        made->setAttr(attr.getName(), attr.getValue());
    op.getResult().replaceAllUsesWith(back);
    at += n;
  }
  for (Operation *op : bucket)
    op->erase();
}

void bucketBlock(Block &block, int64_t limit) {
  SmallVector<SmallVector<AllReduceOp>> buckets;
  SmallVector<AllReduceOp> current;
  int64_t bytes = 0;
  auto flush = [&] {
    if (current.size() > 1)
      buckets.push_back(current);
    current.clear();
    bytes = 0;
  };
  for (Operation &op : block) {
    auto reduce = dyn_cast<AllReduceOp>(op);
    if (!reduce || !isGradientReduction(reduce)) {
      if (communicates(&op))
        flush();
      continue;
    }
    auto type = cast<GlobalType>(reduce.getInput().getType());
    int64_t size = bytesOf(type);
    if (!current.empty()) {
      AllReduceOp head = current.front();
      auto headType = cast<GlobalType>(head.getInput().getType());
      // The packed all-reduce sits at the head's place: every input must
      // exist there.
      Operation *def = reduce.getInput().getDefiningOp();
      bool ready =
          !def || (def->getBlock() == &block && def->isBeforeInBlock(head));
      if (head.getGroupsAttr() != reduce.getGroupsAttr() ||
          headType.getElementType() != type.getElementType() ||
          headType.getPlacement() != type.getPlacement() ||
          headType.getSbp() != type.getSbp() || !ready || bytes + size > limit)
        flush();
    }
    current.push_back(reduce);
    bytes += size;
  }
  flush();
  for (ArrayRef<AllReduceOp> bucket : buckets)
    pack(bucket);
}

struct BucketGradientsPass
    : public pf::impl::BucketGradientsPassBase<BucketGradientsPass> {
  using BucketGradientsPassBase::BucketGradientsPassBase;

  void runOnOperation() override {
    if (bucketBytes < 0) {
      getOperation().emitError()
          << "pf-bucket-gradients: bucket-bytes = " << int64_t(bucketBytes)
          << " is negative";
      return signalPassFailure();
    }
    if (bucketBytes == 0)
      return;
    getOperation().walk([&](func::FuncOp func) {
      for (Block &block : func.getBody())
        bucketBlock(block, bucketBytes);
    });
  }
};

} // namespace
