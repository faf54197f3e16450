//===- BucketGradients.cpp - one all-reduce per bucket of gradients -------===//
//
// Data parallelism ends each step with one all-reduce per gradient: dozens
// of small collectives, each paying the transport's latency (an MPI call, a
// host round trip of the staged GPU transport, an NCCL launch). The update's
// consecutive gradient all-reduces over the same groups are packed instead:
// flattened (a view), concatenated, reduced once and sliced apart. The
// buckets are cut at compile time from the rank's own step, so the members
// of a group, whose steps hold the same update, cut the same ones; a bucket
// never spans another communication op. Without overlap the order of each
// rank's collectives and messages is kept; with it a bucket's all-reduce
// moves back to its last gradient, across whatever communication lies
// between. pf-verify-comm runs after this pass and rejects a job whose
// members disagree or whose moved collectives could deadlock.
//
//===----------------------------------------------------------------------===//

#include "pf/Dialect/PF/Transforms/Passes.h"
#include "pf/Support/RankParallel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <optional>

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

/// Gives `to` the action `from` belongs to: its stage, phase and
/// micro-batch (each removed from `to` where `from` has none). Nothing
/// else: the other per-rank attributes belong to their ops.
void copyAttrs(Operation *from, Operation *to) {
  for (StringRef name : {PFDialect::StageAttrHelper::getNameStr(),
                         PFDialect::PhaseAttrHelper::getNameStr(),
                         PFDialect::MicrobatchAttrHelper::getNameStr()}) {
    if (Attribute value = from->getAttr(name))
      to->setAttr(name, value);
    else
      to->removeAttr(name);
  }
}

/// The op after which gradient `v` (reduced by `use`) counts as made: the
/// op defining it, except for a bias gradient, an axis-0 reduce_sum of a
/// 2-D float32 dz whose weight gradient dz^T x a later GEMM of the same
/// block computes before `use` (isBiasGradientPair): the lowering computes the
/// two in that one GEMM (BufferAnalysis::pairBiasGradients, cuBLASLt's BGRADB),
/// which it can only do if nothing reads the bias gradient before the GEMM, so
/// the gradient is ready with the GEMM. (Starting its all-reduce at the
/// reduce_sum instead costs a separate pass over dz: on the GPU a column
/// reduction of the whole activation gradient.)
Operation *readyOp(Value v, Operation *use) {
  Operation *def = v.getDefiningOp();
  auto reduce = dyn_cast_or_null<ReduceSumOp>(def);
  if (!reduce)
    return def;
  Operation *partner = nullptr;
  for (Operation *user : reduce.getInput().getUsers()) {
    auto mm = dyn_cast<MatmulOp>(user);
    if (!mm || !isBiasGradientPair(reduce, mm) || !def->isBeforeInBlock(mm) ||
        use->getBlock() != mm->getBlock() || !mm->isBeforeInBlock(use))
      continue;
    if (!partner || mm->isBeforeInBlock(partner))
      partner = mm;
  }
  return partner ? partner : def;
}

/// gradient-dtype=bf16|f16 (pf-lower-boxing's all-reduces of f32 gradients
/// cast down, their sums cast back up): each member's f32 gradient and the
/// cast of its sum to f32, so that a bucket packs the f32 gradients, casts
/// the bucket down once and its sum up once (the same roundings element by
/// element). Empty unless every member has that form.
struct LowBucket {
  SmallVector<Value> gradients;
  SmallVector<CastOp> sums;
};
LowBucket lowBucket(ArrayRef<AllReduceOp> bucket) {
  LowBucket low;
  for (AllReduceOp op : bucket) {
    auto type = cast<GlobalType>(op.getInput().getType());
    auto down = op.getInput().getDefiningOp<CastOp>();
    if (type.getElementType().isF32() || !down ||
        !cast<GlobalType>(down.getInput().getType()).getElementType().isF32() ||
        !op.getResult().hasOneUse())
      return {};
    auto up = dyn_cast<CastOp>(*op.getResult().getUsers().begin());
    if (!up || !cast<GlobalType>(up.getType()).getElementType().isF32())
      return {};
    low.gradients.push_back(down.getInput());
    low.sums.push_back(up);
  }
  return low;
}

/// Slices the bucket's sum `sum` apart for its members (`first` the one
/// first in the program); with `low`, the sum cast to f32 once and sliced
/// for the members' casts to f32.
void unpack(ArrayRef<AllReduceOp> bucket, AllReduceOp first, Value sum,
            LowBucket &low) {
  if (!low.sums.empty()) {
    OpBuilder ub(first);
    auto lowType = cast<GlobalType>(sum.getType());
    auto up = CastOp::create(ub, first.getLoc(),
                             cast<GlobalType>(low.sums.front().getType())
                                 .withShape(lowType.getShape()),
                             sum);
    copyAttrs(first, up);
    sum = up.getResult();
  }
  int64_t at = 0;
  for (auto [i, member] : llvm::enumerate(bucket)) {
    AllReduceOp op = member;
    Value result = low.sums.empty() ? op.getResult() : low.sums[i].getResult();
    auto type = cast<GlobalType>(result.getType());
    int64_t n = type.getNumElements();
    OpBuilder ob(op);
    auto slice = SliceOp::create(ob, op.getLoc(), type.withShape({n}), sum,
                                 ob.getDenseI64ArrayAttr({at}),
                                 ob.getDenseI64ArrayAttr({n}));
    Value back = slice;
    if (type.getRank() != 1)
      back = ReshapeOp::create(ob, op.getLoc(), type, slice);
    for (Operation *made : {slice.getOperation(), back.getDefiningOp()})
      copyAttrs(op, made);
    result.replaceAllUsesWith(back);
    at += n;
  }
  for (CastOp up : low.sums)
    up->erase();
  SmallVector<Operation *> downs;
  for (AllReduceOp op : bucket) {
    if (!low.sums.empty())
      downs.push_back(op.getInput().getDefiningOp());
    op->erase();
  }
  for (Operation *down : downs)
    down->erase();
}

/// Replaces the bucket's all-reduces by one, at the first one's place; or,
/// when `slot` is given (overlap), starts it right after the last of the
/// bucket's gradients is computed and waits for it at the first one's
/// place (a bucket of one gradient is split the same way).
/// `ready` maps each all-reduce to the op after which its gradient is made
/// (readyOp against its run's first all-reduce; none for an argument).
/// `startedAfter` maps each op after which buckets were started to the last
/// op started there, so that buckets ready at one op start in slot order.
void pack(ArrayRef<AllReduceOp> bucket, std::optional<int64_t> slot,
          const llvm::DenseMap<Operation *, Operation *> &ready,
          llvm::DenseMap<Operation *, Operation *> &startedAfter) {
  if (bucket.size() < 2 && !slot)
    return;
  // The bucket's all-reduce that comes first in the program (with overlap
  // the members are in the order their gradients are computed).
  AllReduceOp first = bucket.front();
  for (AllReduceOp op : bucket)
    if (op->isBeforeInBlock(first))
      first = op;
  Location loc = first.getLoc();
  // The last gradient of the bucket to be computed.
  Operation *after = nullptr;
  if (slot)
    for (AllReduceOp op : bucket)
      if (Operation *def = ready.lookup(op))
        if (!after || after->isBeforeInBlock(def))
          after = def;
  Operation *anchor = after;
  if (after)
    if (Operation *last = startedAfter.lookup(after))
      after = last;
  Operation *waitAt = first;
  // The wait belongs to the update, the first all-reduce's action: made
  // before the all-reduce moves (a lone one takes the backward's action).
  NamedAttrList waitAttrs;
  waitAttrs.append(first->getDiscardableAttrs().begin(),
                   first->getDiscardableAttrs().end());
  AllReduceOp reduced;
  LowBucket low = bucket.size() > 1 ? lowBucket(bucket) : LowBucket();
  if (bucket.size() == 1) {
    reduced = first;
    waitAt = first->getNextNode();
    if (after) {
      first->moveAfter(after);
      copyAttrs(anchor, first);
      startedAfter[anchor] = first;
    }
  } else {
    OpBuilder b(first);
    if (after)
      b.setInsertionPointAfter(after);
    auto firstType = cast<GlobalType>(first.getInput().getType());
    SmallVector<Value> flat;
    int64_t total = 0;
    for (auto [i, member] : llvm::enumerate(bucket)) {
      AllReduceOp op = member;
      Value input = low.sums.empty() ? op.getInput() : low.gradients[i];
      auto type = cast<GlobalType>(input.getType());
      int64_t n = type.getNumElements();
      flat.push_back(
          type.getRank() == 1
              ? input
              : ReshapeOp::create(b, op.getLoc(), type.withShape({n}), input)
                    .getResult());
      total += n;
    }
    GlobalType packedType = firstType.withShape({total});
    Value packed = ConcatOp::create(
        b, loc, cast<GlobalType>(flat.front().getType()).withShape({total}),
        flat, b.getI64IntegerAttr(0));
    SmallVector<Operation *> made = {packed.getDefiningOp()};
    if (!low.sums.empty()) {
      packed = CastOp::create(b, loc, packedType, packed);
      made.push_back(packed.getDefiningOp());
    }
    reduced =
        AllReduceOp::create(b, loc, packedType, packed, first.getGroupsAttr());
    made.push_back(reduced);
    // The attributes of where they run: the update's, or (started early)
    // those of the op computing the last gradient.
    for (Operation *op : made)
      copyAttrs(anchor ? anchor : first.getOperation(), op);
    if (anchor)
      startedAfter[anchor] = reduced;
  }
  Value sum = reduced.getResult();
  if (slot) {
    MLIRContext *ctx = reduced.getContext();
    PFDialect::AsyncSlotAttrHelper(ctx).setAttr(
        reduced, IntegerAttr::get(IntegerType::get(ctx, 64), *slot));
    OpBuilder wb(waitAt);
    auto wait = AllReduceWaitOp::create(wb, loc, sum.getType(), sum,
                                        reduced.getInput(), *slot);
    for (StringRef name : {PFDialect::StageAttrHelper::getNameStr(),
                           PFDialect::PhaseAttrHelper::getNameStr(),
                           PFDialect::MicrobatchAttrHelper::getNameStr()})
      if (Attribute value = waitAttrs.get(name))
        wait->setAttr(name, value);
    sum.replaceAllUsesExcept(wait.getResult(), wait);
    sum = wait.getResult();
  }
  if (bucket.size() == 1)
    return;
  unpack(bucket, first, sum, low);
}

/// Position in its block of the op after which `reduce`'s gradient is made
/// (`ready`; 0 for an argument).
int64_t readyAt(AllReduceOp reduce,
                const llvm::DenseMap<Operation *, Operation *> &ready,
                const llvm::DenseMap<Operation *, int64_t> &pos) {
  Operation *def = ready.lookup(reduce);
  return def ? pos.lookup(def) : 0;
}

/// Each gradient's cast to bf16/f16 (gradient-dtype; made at the update)
/// moves up to where its gradient is made (readyOp), so that its
/// all-reduce may join a bucket and, with overlap, start there.
void hoistGradientCasts(Block &block) {
  for (Operation &op : llvm::make_early_inc_range(block)) {
    auto reduce = dyn_cast<AllReduceOp>(op);
    if (!reduce || !isGradientReduction(reduce))
      continue;
    auto down = reduce.getInput().getDefiningOp<CastOp>();
    if (!down || down->getBlock() != &block || !down->hasOneUse())
      continue;
    Operation *at = readyOp(down.getInput(), reduce);
    if (at && at->getBlock() == &block && at->isBeforeInBlock(down)) {
      down->moveAfter(at);
      copyAttrs(at, down);
    }
  }
}

void bucketBlock(Block &block, int64_t limit, bool overlap) {
  hoistGradientCasts(block);
  llvm::DenseMap<Operation *, int64_t> pos;
  for (Operation &op : block)
    pos[&op] = int64_t(pos.size()) + 1;
  // Runs of gradient all-reduces that may share buckets: same groups, type
  // and layout, nothing communicating between them, every input computed
  // before the run's first all-reduce.
  SmallVector<SmallVector<AllReduceOp>> runs;
  SmallVector<AllReduceOp> current;
  auto flush = [&] {
    if (!current.empty())
      runs.push_back(current);
    current.clear();
  };
  for (Operation &op : block) {
    auto reduce = dyn_cast<AllReduceOp>(op);
    if (!reduce || !isGradientReduction(reduce)) {
      if (communicates(&op))
        flush();
      continue;
    }
    auto type = cast<GlobalType>(reduce.getInput().getType());
    if (!current.empty()) {
      AllReduceOp head = current.front();
      auto headType = cast<GlobalType>(head.getInput().getType());
      Operation *def = reduce.getInput().getDefiningOp();
      bool ready =
          !def || (def->getBlock() == &block && def->isBeforeInBlock(head));
      if (head.getGroupsAttr() != reduce.getGroupsAttr() ||
          headType.getElementType() != type.getElementType() ||
          headType.getPlacement() != type.getPlacement() ||
          headType.getSbp() != type.getSbp() || !ready)
        flush();
    }
    current.push_back(reduce);
  }
  flush();
  // Each run cut into buckets of at most `limit` bytes: in program order,
  // or (overlap) in the order the gradients are computed, so that the
  // first bucket can start while the backward still runs.
  SmallVector<SmallVector<AllReduceOp>> buckets;
  // Where each gradient is made, judged against its run's first all-reduce
  // (every bucket's waits stay at or after it).
  llvm::DenseMap<Operation *, Operation *> ready;
  for (ArrayRef<AllReduceOp> run : runs)
    for (AllReduceOp op : run)
      ready[op] = readyOp(op.getInput(), run.front());
  for (SmallVector<AllReduceOp> &run : runs) {
    if (overlap)
      llvm::stable_sort(run, [&](AllReduceOp a, AllReduceOp b) {
        return readyAt(a, ready, pos) < readyAt(b, ready, pos);
      });
    SmallVector<AllReduceOp> bucket;
    int64_t bytes = 0;
    for (AllReduceOp op : run) {
      int64_t size = bytesOf(cast<GlobalType>(op.getInput().getType()));
      if (!bucket.empty() && bytes + size > limit) {
        buckets.push_back(bucket);
        bucket.clear();
        bytes = 0;
      }
      bucket.push_back(op);
      bytes += size;
    }
    if (!bucket.empty())
      buckets.push_back(bucket);
  }
  // Slots past the runtime's last leave their buckets blocking.
  int64_t slot = 0;
  llvm::DenseMap<Operation *, Operation *> startedAfter;
  for (ArrayRef<AllReduceOp> bucket : buckets) {
    std::optional<int64_t> async;
    if (overlap && slot < kMaxAsyncSlots)
      async = slot++;
    pack(bucket, async, ready, startedAfter);
  }
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
    // Each function on its own (the per-rank steps on the context's
    // threads).
    SmallVector<func::FuncOp> funcs;
    getOperation().walk([&](func::FuncOp func) { funcs.push_back(func); });
    (void)forEachRankInOrder(&getContext(), funcs.size(), [&](size_t i) {
      for (Block &block : funcs[i].getBody())
        bucketBlock(block, bucketBytes, overlap);
      return success();
    });
  }
};

} // namespace
