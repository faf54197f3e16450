//===- FuseAttention.cpp - the unfused attention spelling as pf.attention -===//
//
// nanoGPT without flash (and PipeFlow's own composed F.sdpa) writes
//
//   att = (q @ k^T) * scale                        pf.matmul, pf.mul_scalar
//   att = att.masked_fill(mask, -inf) | att + m    pf.masked_fill | pf.add
//   att = softmax(att, dim=-1)                     pf.softmax
//   att = dropout(att)                             pf.dropout
//   y   = att @ v                                  pf.matmul
//
// This pass rewrites the chain as one pf.attention (see Passes.td for what it
// matches and what it leaves alone).
//
//===----------------------------------------------------------------------===//

#include "pf/Dialect/PF/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <cmath>

#define DEBUG_TYPE "pf-fuse-attention"

namespace mlir::pf {
#define GEN_PASS_DEF_FUSEATTENTIONPASS
#include "pf/Dialect/PF/Transforms/Passes.h.inc"
} // namespace mlir::pf

using namespace mlir;
using namespace mlir::pf;

namespace {

int64_t rankOf(Value v) { return cast<GlobalType>(v.getType()).getRank(); }

/// `v`'s defining op if it is an OpTy whose result has no other use.
template <typename OpTy> OpTy soleUse(Value v) {
  auto op = v.getDefiningOp<OpTy>();
  return op && v.hasOneUse() ? op : OpTy();
}

/// The mask operand as pf.attention takes it: the input of a broadcast_to
/// when that is already a rank-4 broadcastable mask (no [B, H, T, S] copy).
Value peelBroadcast(Value mask) {
  if (auto bc = mask.getDefiningOp<BroadcastToOp>())
    if (rankOf(bc.getInput()) == 4)
      return bc.getInput();
  return mask;
}

/// Whether the dense i1 `keep` [1, .., 1, T, S] is the causal lower triangle
/// (key s kept for query t iff s <= t).
bool isCausal(DenseElementsAttr keep) {
  auto type = cast<ShapedType>(keep.getType());
  ArrayRef<int64_t> shape = type.getShape();
  if (shape.size() != 4 || shape[0] != 1 || shape[1] != 1)
    return false;
  int64_t cols = shape[3];
  int64_t i = 0;
  for (bool kept : keep.getValues<bool>()) {
    if (kept != (i % cols <= i / cols))
      return false;
    ++i;
  }
  return true;
}

/// The matched chain.
struct Chain {
  MatmulOp qk, pv;
  MulScalarOp scale;
  MaskedFillOp fill;
  AddOp add;
  SoftmaxOp softmax;
  DropoutOp dropout;
  Value q, k, v, mask;
};

/// Matches the chain that ends in `pv`, or fails (leaving the IR alone).
FailureOr<Chain> match(MatmulOp pv) {
  Chain c;
  c.pv = pv;
  if (pv.getTransposeA() || pv.getTransposeB() || rankOf(pv.getA()) != 4 ||
      rankOf(pv.getB()) != 4)
    return failure();
  c.v = pv.getB();
  Value probs = pv.getA();
  if ((c.dropout = soleUse<DropoutOp>(probs)))
    probs = c.dropout.getInput();
  c.softmax = soleUse<SoftmaxOp>(probs);
  if (!c.softmax || c.softmax.getLog() || c.softmax.getAxis() != 3)
    return failure();
  Value scores = c.softmax.getInput();
  if ((c.fill = soleUse<MaskedFillOp>(scores))) {
    double fill = c.fill.getValue().convertToDouble();
    auto maskType = cast<GlobalType>(c.fill.getMask().getType());
    if (!std::isinf(fill) || fill > 0 ||
        !maskType.getElementType().isInteger(1))
      return failure();
    scores = c.fill.getInput();
  } else if ((c.add = soleUse<AddOp>(scores))) {
    // Either operand may be the scores: the one a scaled q k^T makes.
    Value lhs = c.add.getLhs(), rhs = c.add.getRhs();
    auto isScores = [](Value s) {
      return s.hasOneUse() &&
             (s.getDefiningOp<MulScalarOp>() || s.getDefiningOp<MatmulOp>());
    };
    if (!isScores(lhs))
      std::swap(lhs, rhs);
    if (!isScores(lhs) || rankOf(rhs) != 4)
      return failure();
    scores = lhs;
    c.mask = peelBroadcast(rhs);
  }
  if ((c.scale = soleUse<MulScalarOp>(scores)))
    scores = c.scale.getInput();
  c.qk = soleUse<MatmulOp>(scores);
  if (!c.qk || c.qk.getTransposeA() || rankOf(c.qk.getA()) != 4 ||
      rankOf(c.qk.getB()) != 4)
    return failure();
  c.q = c.qk.getA();
  if (c.qk.getTransposeB()) {
    c.k = c.qk.getB();
  } else {
    auto t = c.qk.getB().getDefiningOp<TransposeOp>();
    if (!t || t.getPerm() != ArrayRef<int64_t>{0, 1, 3, 2})
      return failure();
    c.k = t.getInput();
  }
  // The softmax normalises over the keys: the result must be [B, H, T, Dv].
  auto qt = cast<GlobalType>(c.q.getType());
  auto kt = cast<GlobalType>(c.k.getType());
  auto vt = cast<GlobalType>(c.v.getType());
  if (qt.getElementType() != kt.getElementType() ||
      qt.getElementType() != vt.getElementType())
    return failure();
  return c;
}

/// pf.attention in place of the chain.
void rewrite(Chain &c) {
  OpBuilder b(c.pv);
  Location loc = b.getFusedLoc({c.qk.getLoc(), c.pv.getLoc()});
  bool causal = false;
  Value mask = c.mask;
  if (c.fill) {
    // masked_fill fills where the mask holds; attention keeps keys there.
    Value fill = peelBroadcast(c.fill.getMask());
    auto constant = fill.getDefiningOp<ConstantOp>();
    auto dense = constant ? dyn_cast<DenseElementsAttr>(constant.getValue())
                          : DenseElementsAttr();
    if (dense && dense.getElementType().isInteger(1)) {
      SmallVector<bool> keep;
      for (bool f : dense.getValues<bool>())
        keep.push_back(!f);
      auto keepAttr = DenseElementsAttr::get(dense.getType(), keep);
      ArrayRef<int64_t> scores = cast<GlobalType>(fill.getType()).getShape();
      if (isCausal(keepAttr) &&
          scores[2] == cast<GlobalType>(c.q.getType()).getShape()[2] &&
          scores[3] == cast<GlobalType>(c.k.getType()).getShape()[2])
        causal = true;
      else
        mask =
            ConstantOp::create(b, constant.getLoc(), fill.getType(), keepAttr);
    } else {
      mask = LogicalNotOp::create(b, c.fill.getLoc(), fill.getType(), fill);
    }
  }
  auto lseType = cast<GlobalType>(c.pv.getType());
  ArrayRef<int64_t> outShape = lseType.getShape();
  lseType = GlobalType::get(b.getContext(), outShape.take_front(3),
                            b.getF32Type(), lseType.getPlacement(), SBPAttr());
  double scale = c.scale ? c.scale.getScalar().convertToDouble() : 1.0;
  auto att = AttentionOp::create(
      b, loc, TypeRange{c.pv.getType(), lseType}, c.q, c.k, c.v, mask,
      b.getF64FloatAttr(scale), causal ? b.getUnitAttr() : UnitAttr(),
      b.getF64FloatAttr(c.dropout ? c.dropout.getP().convertToDouble() : 0.0),
      b.getI64IntegerAttr(c.dropout ? c.dropout.getStream() : 0));
  // Stage, checkpoint and autocast marks go with the op.
  for (NamedAttribute a : c.pv->getDiscardableAttrs())
    att->setAttr(a.getName(), a.getValue());
  c.pv.getResult().replaceAllUsesWith(att.getResult());
  Operation *dead[] = {c.pv,  c.dropout, c.softmax, c.fill,
                       c.add, c.scale,   c.qk};
  for (Operation *op : dead)
    if (op && op->use_empty())
      op->erase();
}

struct FuseAttentionPass
    : public pf::impl::FuseAttentionPassBase<FuseAttentionPass> {
  void runOnOperation() override {
    SmallVector<MatmulOp> candidates;
    getOperation().walk([&](MatmulOp op) { candidates.push_back(op); });
    for (MatmulOp pv : candidates) {
      FailureOr<Chain> chain = match(pv);
      if (succeeded(chain))
        rewrite(*chain);
    }
  }
};

} // namespace
