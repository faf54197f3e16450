//===- RegatherParams.cpp - ZeRO-3: gather a parameter again for the backward
//===//
//
// After pf-lower-boxing a parameter sharded by ZeRO-3 reaches its forward
// use through a chain of layout ops (pf.all_gather, with reshapes around a
// grouped split's gather) from its pf.read_param, and the backward's use
// (a GEMM's input gradient reads the weight) takes the same gathered value:
// the whole weight lives from the forward to the backward, which is what
// ZeRO-3 is meant to avoid. Here the chain is copied before the first
// backward (or recompute) use, tagged as that use, and the backward's uses
// read the copy: the forward's gathered weight dies after its last forward
// use and the memory plan frees it, as DeepSpeed and FSDP gather twice.
//
//===----------------------------------------------------------------------===//

#include "pf/Dialect/PF/IR/LowPrecision.h"
#include "pf/Dialect/PF/IR/PFOps.h"
#include "pf/Dialect/PF/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::pf {
#define GEN_PASS_DEF_REGATHERPARAMSPASS
#define GEN_PASS_DEF_EARLYGRADIENTSHARDSPASS
#include "pf/Dialect/PF/Transforms/Passes.h.inc"
} // namespace mlir::pf

using namespace mlir;
using namespace mlir::pf;

namespace {

/// Whether `op` reads a value in the backward: a phase of the backward or
/// a checkpointed op's recomputation.
bool inBackward(Operation *op) {
  StringAttr phase = PFDialect::PhaseAttrHelper(op->getContext()).getAttr(op);
  return phase && (phase.getValue().starts_with("backward") ||
                   phase.getValue() == "recompute");
}

/// Ops a parameter's layout chain may hold: its gathers and the reshapes
/// around a grouped split's gather.
bool isChainOp(Operation *op) {
  return isa<AllGatherOp, ReshapeOp>(op) ||
         (isa<CastOp>(op) && isLowPrecision(op->getResult(0).getType()));
}

/// `t` with element type `element`.
GlobalType withElement(Type t, Type element) {
  auto g = cast<GlobalType>(t);
  return GlobalType::get(g.getShape(), element, g.getPlacement(), g.getSbp());
}

/// A chain read -> gathers -> cast to bf16/f16 (mixed precision's weight
/// copy) becomes read -> cast -> gathers in the low type: the same values
/// (a cast commutes with moving bytes), half the bytes gathered and held.
/// Returns the new chain.
SmallVector<Operation *> castFirst(ReadParamOp read,
                                   ArrayRef<Operation *> chain) {
  if (chain.size() < 2 || !isa<CastOp>(chain.back()) ||
      !llvm::all_of(chain.drop_back(),
                    [](Operation *op) { return isa<AllGatherOp>(op); }))
    return SmallVector<Operation *>(chain);
  auto last = cast<CastOp>(chain.back());
  Type low = cast<GlobalType>(last.getType()).getElementType();
  OpBuilder b(read->getContext());
  b.setInsertionPointAfter(read);
  auto first =
      CastOp::create(b, last.getLoc(), withElement(read.getType(), low), read);
  first->setDiscardableAttrs(last->getDiscardableAttrDictionary());
  SmallVector<Operation *> result{first};
  Value cur = first.getResult();
  for (Operation *op : chain.drop_back()) {
    Operation *moved = b.clone(*op);
    moved->setOperand(0, cur);
    moved->getResult(0).setType(withElement(op->getResult(0).getType(), low));
    result.push_back(moved);
    cur = moved->getResult(0);
  }
  last.getResult().replaceAllUsesWith(cur);
  for (Operation *op : llvm::reverse(chain))
    op->erase();
  return result;
}

struct RegatherParamsPass
    : public pf::impl::RegatherParamsPassBase<RegatherParamsPass> {
  void runOnOperation() override {
    SmallVector<ReadParamOp> reads;
    getOperation().walk([&](ReadParamOp read) { reads.push_back(read); });
    for (ReadParamOp read : reads)
      regather(read);
  }

  /// The chain from `read` while each value has one user that is a chain
  /// op; regathers its end if the chain gathers and the end has backward
  /// uses besides forward ones.
  void regather(ReadParamOp read) {
    SmallVector<Operation *> chain;
    Value end = read.getResult();
    while (end.hasOneUse() && isChainOp(*end.getUsers().begin())) {
      Operation *next = *end.getUsers().begin();
      if (next->getBlock() != read->getBlock())
        return;
      chain.push_back(next);
      end = next->getResult(0);
    }
    if (!llvm::any_of(chain,
                      [](Operation *op) { return isa<AllGatherOp>(op); }))
      return;
    chain = castFirst(read, chain);
    end = chain.back()->getResult(0);
    SmallVector<OpOperand *> backward;
    bool forward = false;
    for (OpOperand &use : end.getUses()) {
      if (inBackward(use.getOwner()))
        backward.push_back(&use);
      else
        forward = true;
    }
    if (backward.empty() || !forward)
      return;
    // Before the first backward user in the block, tagged as it is.
    Operation *first = backward.front()->getOwner();
    for (OpOperand *use : backward) {
      Operation *owner = use->getOwner();
      while (owner->getBlock() != read->getBlock())
        owner = owner->getParentOp();
      if (owner->isBeforeInBlock(first))
        first = owner;
    }
    OpBuilder b(first);
    IRMapping map;
    for (Operation *op : chain) {
      Operation *copy = b.clone(*op, map);
      for (NamedAttribute a : first->getDiscardableAttrs())
        copy->setAttr(a.getName(), a.getValue());
    }
    Value again = map.lookup(end);
    for (OpOperand *use : backward)
      use->set(again);
  }
};

/// Whether `op` reads or writes parameter `name`.
bool touches(Operation *op, StringRef name) {
  if (auto read = dyn_cast<ReadParamOp>(op))
    return read.getParam() == name;
  if (auto write = dyn_cast<WriteParamOp>(op))
    return write.getParam() == name;
  return false;
}

struct EarlyGradientShardsPass
    : public pf::impl::EarlyGradientShardsPassBase<EarlyGradientShardsPass> {
  using EarlyGradientShardsPassBase::EarlyGradientShardsPassBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::StringSet<> buffers;
    PFDialect::GradOfAttrHelper gradOf(module.getContext());
    module.walk([&](ParamOp p) {
      if (gradOf.isAttrPresent(p))
        buffers.insert(p.getSymName());
    });
    SmallVector<WriteParamOp> writes;
    module.walk([&](WriteParamOp w) {
      if (buffers.contains(w.getParam()) && inBackward(w))
        writes.push_back(w);
    });
    for (WriteParamOp w : writes)
      hoist(w, lowPrecisionOnly);
  }

  /// Moves the ops only `write` needs (its gradient's collective, the
  /// buffer's read and the add) with it to just after the last value they
  /// take from elsewhere, unless another op between touches the buffer.
  static void hoist(WriteParamOp write, bool lowPrecisionOnly) {
    Block *block = write->getBlock();
    llvm::SetVector<Operation *> chain;
    chain.insert(write);
    for (size_t i = 0; i < chain.size(); ++i)
      for (Value operand : chain[i]->getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (!def || def->getBlock() != block || chain.contains(def) ||
            def->getNumRegions() != 0 ||
            !llvm::all_of(def->getUsers(),
                          [&](Operation *u) { return chain.contains(u); }))
          continue;
        chain.insert(def);
      }
    if (lowPrecisionOnly && !llvm::any_of(chain, [](Operation *op) {
          auto cast = dyn_cast<CastOp>(op);
          return cast && isa<BFloat16Type, Float16Type>(
                             cast.getInput().getType().getElementType());
        }))
      return;
    Operation *after = nullptr; // the last outside definition in the block
    for (Operation *op : chain)
      for (Value operand : op->getOperands()) {
        Operation *def = operand.getDefiningOp();
        while (def && def->getBlock() != block)
          def = def->getParentOp();
        if (def && !chain.contains(def) &&
            (!after || after->isBeforeInBlock(def)))
          after = def;
      }
    if (!after)
      return;
    SmallVector<Operation *> ordered(chain.begin(), chain.end());
    llvm::sort(ordered, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    if (!after->isBeforeInBlock(ordered.front()))
      return;
    for (Operation *op = after->getNextNode(); op != write;
         op = op->getNextNode())
      if (!chain.contains(op) && touches(op, write.getParam()))
        return;
    Operation *at = after;
    for (Operation *op : ordered) {
      op->moveAfter(at);
      at = op;
    }
  }
};

} // namespace
