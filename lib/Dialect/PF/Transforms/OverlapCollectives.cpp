//===- OverlapCollectives.cpp - collectives split around independent work ===//
//
// On each rank's step (after pf-bucket-gradients, before the fold passes):
// a blocking all-reduce, all-gather or reduce-scatter whose result is not
// needed at once is split into its start (`pf.async_slot = k`) and a
// `pf.all_reduce_wait` (slot k), so that the compute between the two runs
// while the collective travels (on GPU ranks NCCL runs it on a stream of
// its own).
//
//  - The start moves up to right after the op defining its input (a
//    pf.read_param defining it moves up with it, past no op with side
//    effects but other reads: ZeRO-3's parameter gathers), but never
//    above another communicating op (a collective, a started one's wait, a
//    send or receive, an op with collectives inside such as the
//    vocabulary-parallel cross-entropy, a call): every member of a group
//    issues its collectives in the order it did, and pf-verify-comm
//    checks the job afterwards.
//  - The wait goes right before the first user of the result, or before
//    the next communicating op if that comes first: no other collective
//    is issued while a split one is in flight, so at most one collective
//    split here is in flight at a time (the gradient buckets' may be too).
//    The memory this costs is one collective's result (and input) live
//    from the start instead of from its old place, at most one at a time;
//    the lowering's memory plan is made on the final order, so it counts
//    it (a ZeRO-3 parameter gather is prefetched one collective ahead, no
//    further).
//  - Where nothing but views would lie between the two, side-effect-free
//    ops after the wait that do not depend on the result (transitively)
//    move up before it, in order, up to the first op with side effects,
//    communicating op or op with regions, and at most one GEMM-like op
//    (a matmul, attention or convolution) or 32 ops.
//  - A collective with nothing to overlap stays blocking, and so does one
//    for which no slot in [0, slots) is free over its span (the buckets'
//    slots included).
//
//===----------------------------------------------------------------------===//

#include "pf/Dialect/PF/Transforms/Passes.h"
#include "pf/Support/RankParallel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::pf {
#define GEN_PASS_DEF_OVERLAPCOLLECTIVESPASS
#include "pf/Dialect/PF/Transforms/Passes.h.inc"
} // namespace mlir::pf

using namespace mlir;
using namespace mlir::pf;

namespace {

/// Ops that communicate with other ranks (or may): nothing crosses them.
bool communicates(Operation *op) {
  if (isa<AllReduceOp, ReduceScatterOp, AllGatherOp, AllToAllOp, BroadcastOp,
          ReduceOp, TransferOp, SendOp, RecvOp, AllReduceWaitOp,
          CallOpInterface>(op))
    return true;
  if (PFDialect::VocabGroupAttrHelper(op->getContext()).isAttrPresent(op))
    return true;
  bool inside = false;
  for (Region &region : op->getRegions())
    region.walk([&](Operation *nested) {
      if (nested != op && communicates(nested))
        inside = true;
    });
  return inside;
}

/// Views and constants: no work to overlap.
bool isFree(Operation *op) {
  return isa<ReshapeOp, FlattenOp, ToGlobalOp, ReadParamOp>(op) ||
         op->hasTrait<OpTrait::ConstantLike>();
}

bool isHeavy(Operation *op) {
  return isa<MatmulOp, AttentionOp, AttentionGradOp>(op) ||
         op->getName().getStringRef().contains("conv");
}

/// The op of `block` holding `op` (itself or an ancestor), or null.
Operation *inBlock(Operation *op, Block &block) {
  return block.findAncestorOpInBlock(*op);
}

/// A split collective (or a gradient bucket's): its start, wait and slot.
struct Span {
  Operation *start, *wait;
  int64_t slot;
};

struct Overlapper {
  Block &block;
  int64_t slots;
  SmallVector<Span> spans;

  Overlapper(Block &block, int64_t slots) : block(block), slots(slots) {
    for (Operation &op : block)
      if (auto wait = dyn_cast<AllReduceWaitOp>(op))
        if (Operation *start = wait.getStarted().getDefiningOp())
          spans.push_back({start, wait, int64_t(wait.getSlot())});
  }

  /// The op after which `op` may start (null: the block's beginning). A
  /// parameter read feeding it (ZeRO-3's gathers) moves up with it, but
  /// never above an op with side effects other than another read.
  Operation *startAfter(Operation *op) {
    Operation *input = carriedRead(op);
    if (!input)
      if (Operation *def = op->getOperand(0).getDefiningOp())
        input = inBlock(def, block);
    Operation *prev = op->getPrevNode();
    while (prev && !communicates(prev)) {
      if (prev == input && !isa<ReadParamOp>(prev))
        break;
      if (isa_and_nonnull<ReadParamOp>(input) && !isa<ReadParamOp>(prev) &&
          !isMemoryEffectFree(prev))
        break;
      prev = prev->getPrevNode();
    }
    return prev;
  }

  /// The pf.read_param of this block `op` reads directly, or null.
  Operation *carriedRead(Operation *op) {
    auto read = op->getOperand(0).getDefiningOp<ReadParamOp>();
    return read && read->getBlock() == &block ? read.getOperation() : nullptr;
  }

  /// The op before which `op`'s result must be waited for.
  Operation *waitBefore(Operation *op) {
    Operation *first = block.getTerminator();
    for (Operation *user : op->getResult(0).getUsers())
      if (Operation *at = inBlock(user, block))
        if (at->isBeforeInBlock(first))
          first = at;
    for (Operation *next = op->getNextNode(); next && next != first;
         next = next->getNextNode())
      if (communicates(next))
        return next;
    return first;
  }

  /// Whether any op but views lies strictly between a and b (a null: the
  /// block's beginning), `skip` aside.
  bool workBetween(Operation *a, Operation *b, Operation *skip) {
    for (Operation *op = a ? a->getNextNode() : &block.front(); op && op != b;
         op = op->getNextNode())
      if (op != skip && !isFree(op))
        return true;
    return false;
  }

  /// The side-effect-free ops after `waitAt` not depending on `result`, in
  /// order, that may run before the wait.
  SmallVector<Operation *> hoistable(Value result, Operation *waitAt) {
    SmallVector<Operation *> moved;
    llvm::SmallPtrSet<Value, 16> tainted = {result};
    int heavy = 0;
    for (Operation *op = waitAt; op && op != block.getTerminator();
         op = op->getNextNode()) {
      if (communicates(op) || !isMemoryEffectFree(op) ||
          op->getNumRegions() > 0 || moved.size() >= 32)
        break;
      bool depends = llvm::any_of(op->getOperands(),
                                  [&](Value v) { return tainted.contains(v); });
      if (depends) {
        tainted.insert(op->result_begin(), op->result_end());
        continue;
      }
      moved.push_back(op);
      if (isHeavy(op) && ++heavy == 1)
        break;
    }
    if (!llvm::any_of(moved, [](Operation *op) { return !isFree(op); }))
      moved.clear();
    return moved;
  }

  /// The lowest slot free over [start, wait] (start null: the block's
  /// beginning), or -1.
  int64_t freeSlot(Operation *start, Operation *wait) {
    llvm::SmallBitVector busy(static_cast<unsigned>(slots));
    for (const Span &s : spans) {
      if (s.slot >= slots)
        continue;
      bool startsBeforeWait = s.start->isBeforeInBlock(wait);
      bool endsAfterStart = !start || start->isBeforeInBlock(s.wait);
      if (startsBeforeWait && endsAfterStart)
        busy.set(size_t(s.slot));
    }
    for (int64_t k = 0; k < slots; ++k)
      if (!busy.test(size_t(k)))
        return k;
    return -1;
  }

  void split(Operation *op);
};

void Overlapper::split(Operation *op) {
  Operation *after = startAfter(op);
  Operation *waitAt = waitBefore(op);
  SmallVector<Operation *> moved;
  if (!workBetween(after, waitAt, op)) {
    moved = hoistable(op->getResult(0), waitAt);
    if (moved.empty())
      return;
  }
  int64_t slot = freeSlot(after, waitAt);
  if (slot < 0)
    return;
  Operation *read = carriedRead(op);
  bool carry = read && (!after || after->isBeforeInBlock(read));
  if (after)
    op->moveAfter(after);
  else
    op->moveBefore(&block.front());
  if (carry)
    read->moveBefore(op);
  MLIRContext *ctx = op->getContext();
  PFDialect::AsyncSlotAttrHelper(ctx).setAttr(
      op, IntegerAttr::get(IntegerType::get(ctx, 64), slot));
  OpBuilder b(waitAt);
  Value result = op->getResult(0);
  auto wait = AllReduceWaitOp::create(b, op->getLoc(), result.getType(), result,
                                      op->getOperand(0), slot);
  // The wait belongs to the action the collective was in.
  for (StringRef name : {PFDialect::StageAttrHelper::getNameStr(),
                         PFDialect::PhaseAttrHelper::getNameStr(),
                         PFDialect::MicrobatchAttrHelper::getNameStr()})
    if (Attribute value = op->getAttr(name))
      wait->setAttr(name, value);
  result.replaceAllUsesExcept(wait.getResult(), wait);
  for (Operation *m : moved)
    m->moveBefore(wait);
  spans.push_back({op, wait, slot});
}

void overlapBlock(Block &block, int64_t slots) {
  Overlapper o(block, slots);
  SmallVector<Operation *> collectives;
  PFDialect::AsyncSlotAttrHelper slotAttr(block.getParentOp()->getContext());
  for (Operation &op : block)
    if (isa<AllReduceOp, AllGatherOp, ReduceScatterOp>(op) &&
        !slotAttr.isAttrPresent(&op))
      collectives.push_back(&op);
  for (Operation *op : collectives)
    o.split(op);
}

struct OverlapCollectivesPass
    : public pf::impl::OverlapCollectivesPassBase<OverlapCollectivesPass> {
  using OverlapCollectivesPassBase::OverlapCollectivesPassBase;

  void runOnOperation() override {
    if (slots < 0 || slots > kMaxAsyncSlots) {
      getOperation().emitError()
          << "pf-overlap-collectives: slots = " << int64_t(slots)
          << " is outside [0, " << kMaxAsyncSlots << "]";
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> funcs;
    getOperation().walk([&](func::FuncOp func) { funcs.push_back(func); });
    (void)forEachRankInOrder(&getContext(), funcs.size(), [&](size_t i) {
      for (Block &block : funcs[i].getBody())
        overlapBlock(block, slots);
      return success();
    });
  }
};

} // namespace
