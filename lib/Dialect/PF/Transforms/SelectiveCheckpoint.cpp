//===- SelectiveCheckpoint.cpp - recompute only core attention ------------===//
//
// Megatron-LM's selective activation checkpointing: of a module's ops, only
// core attention is recomputed in the backward. Its saved tensors are the
// [T, S] probabilities (and their dropout), whose bytes grow with the square
// of the sequence, while recomputing them costs one batched GEMM and a few
// element-wise passes. The region is found by its structure:
//
//   %s = pf.matmul %q, %kT          (batched: the scores)      marked
//   ... mul_scalar / masked_fill / where / add / cast ...      marked
//       (and a pf.broadcast_to expanding their mask)           marked
//   %p = pf.softmax %x {axis = last}                           marked
//   ... dropout / cast ...                                     marked
//   %y = pf.matmul %p, %v           (batched)                  not marked
//
// and a fused pf.attention is core attention as a whole.
//
//===----------------------------------------------------------------------===//

#include "pf/Dialect/PF/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"

#define DEBUG_TYPE "pf-selective-checkpoint"

namespace mlir::pf {
#define GEN_PASS_DEF_SELECTIVECHECKPOINTPASS
#include "pf/Dialect/PF/Transforms/Passes.h.inc"
} // namespace mlir::pf

using namespace mlir;
using namespace mlir::pf;

namespace {

int64_t rankOf(Value v) { return cast<GlobalType>(v.getType()).getRank(); }

/// A pf.matmul of two batched operands (q k^T or p v); a linear layer's
/// shared 2-D weight is not one.
bool isBatchedMatmul(Operation *op) {
  auto matmul = dyn_cast<MatmulOp>(op);
  return matmul && rankOf(matmul.getA()) >= 3 && rankOf(matmul.getB()) >= 3;
}

/// Whether `user` takes the scores `v` on to the softmax: scaling, masking
/// or adding a mask element-wise, `v` in a slot that carries the scores (not
/// a mask's or a condition's).
bool continuesScores(Operation *user, Value v) {
  if (user->getNumResults() != 1 ||
      cast<GlobalType>(user->getResult(0).getType()).getShape() !=
          cast<GlobalType>(v.getType()).getShape())
    return false;
  if (isa<MulScalarOp, AddOp, MulOp, CastOp>(user))
    return true;
  if (auto div = dyn_cast<DivOp>(user))
    return div.getLhs() == v && div.getRhs() != v;
  if (auto fill = dyn_cast<MaskedFillOp>(user))
    return fill.getInput() == v && fill.getMask() != v;
  if (auto where = dyn_cast<WhereOp>(user))
    return where.getCondition() != v;
  return false;
}

/// Whether `user` normalises the scores `v` over the keys (the last axis).
bool isKeySoftmax(Operation *user, Value v) {
  auto softmax = dyn_cast<SoftmaxOp>(user);
  return softmax && !softmax.getLog() &&
         static_cast<int64_t>(softmax.getAxis()) == rankOf(v) - 1;
}

/// Whether `user` (of the probabilities) takes them on to the product with
/// v: their dropout, or a cast.
bool continuesProbabilities(Operation *user) {
  return isa<DropoutOp, CastOp>(user);
}

/// Whether `user` is the product of the probabilities `v` with the values:
/// a batched matmul contracting `v`'s last axis (the keys).
bool isValueProduct(Operation *user, Value v) {
  auto matmul = dyn_cast<MatmulOp>(user);
  return matmul && isBatchedMatmul(matmul) && matmul.getA() == v &&
         matmul.getB() != v && !matmul.getTransposeA();
}

/// The expansions (pf.broadcast_to) of a mask, or of a pf.where's fill
/// value, to the scores' shape that the masking op `op` on the chain reads
/// besides the scores `v`, those that `marked` marks. They are recomputed
/// with `op`: expanding the small mask again costs less than keeping the
/// [B, H, T, S] elements in the backward for the recomputed `op`.
SmallVector<Operation *>
maskExpansions(Operation *op, Value v, function_ref<bool(Operation *)> marked) {
  SmallVector<Operation *> found;
  if (!isa<MaskedFillOp, WhereOp, AddOp>(op))
    return found;
  for (Value operand : op->getOperands())
    if (auto expand = operand.getDefiningOp<BroadcastToOp>())
      if (operand != v && marked(expand))
        found.push_back(expand);
  return found;
}

/// The ops of core attention that start at the scores matmul `qk`, in order
/// (`qk` first, the matmul with v left out; the expansions of masks after
/// the op that reads them), or an empty list if `qk` does not start one.
/// `marked` says which ops asked for selective checkpointing. The scores'
/// last two axes are queries x keys: the softmax normalises the last one and
/// the product with v contracts it.
///
/// The matmul with v is left out: recomputing it is not needed for the
/// gradients, since pf-autodiff hands every op's rule recomputed copies of
/// its checkpointed operands, so the product's rule sees the recomputed
/// probabilities and its forward output [B, H, T, Dv] is kept (as the
/// output projection's input is anyway); marking it would only repeat a
/// GEMM in the backward.
SmallVector<Operation *> coreAttention(MatmulOp qk,
                                       function_ref<bool(Operation *)> marked) {
  SmallVector<Operation *> region = {qk};
  Value v = qk.getResult();
  bool normalised = false;
  while (true) {
    // The one user that carries the chain on; other users only read it.
    Operation *next = nullptr;
    bool end = false;
    for (Operation *user : v.getUsers()) {
      bool step = false, last = false;
      if (!normalised) {
        step =
            marked(user) && (continuesScores(user, v) || isKeySoftmax(user, v));
      } else if (isValueProduct(user, v)) {
        last = true;
      } else {
        step = marked(user) && continuesProbabilities(user);
      }
      if (!step && !last)
        continue;
      if (next && next != user)
        return {};
      next = user;
      end = last;
    }
    if (!next)
      return {};
    if (end)
      return region;
    normalised = normalised || isa<SoftmaxOp>(next);
    region.push_back(next);
    for (Operation *expand : maskExpansions(next, v, marked))
      if (!llvm::is_contained(region, expand))
        region.push_back(expand);
    v = next->getResult(0);
  }
}

struct SelectiveCheckpointPass
    : public pf::impl::SelectiveCheckpointPassBase<SelectiveCheckpointPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    PFDialect::CheckpointAttrHelper checkpointAttr(ctx);
    PFDialect::CheckpointSelectiveAttrHelper selectiveAttr(ctx);
    auto marked = [&](Operation *op) {
      return selectiveAttr.isAttrPresent(op);
    };
    SmallVector<Operation *> selective;
    getOperation().walk([&](Operation *op) {
      if (marked(op))
        selective.push_back(op);
    });
    for (Operation *op : selective) {
      if (isa<AttentionOp>(op)) {
        checkpointAttr.setAttr(op, UnitAttr::get(ctx));
      } else if (isBatchedMatmul(op)) {
        for (Operation *inner : coreAttention(cast<MatmulOp>(op), marked))
          checkpointAttr.setAttr(inner, UnitAttr::get(ctx));
      }
    }
    for (Operation *op : selective)
      selectiveAttr.removeAttr(op);
  }
};

} // namespace
