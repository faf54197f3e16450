//===- PFAttentionOps.cpp - pf.attention and its gradient -----------------===//
//
// Result types, verifiers, SBP signatures and the gradient rule of the fused
// attention ops (PFAttentionOps.td).
//
//===----------------------------------------------------------------------===//

#include "pf/Dialect/PF/IR/PFOps.h"

#include "OpUtils.h"

#include <cmath>
#include <type_traits>

using namespace mlir;
using namespace mlir::pf;
using namespace mlir::pf::detail;

PF_COMPATIBLE_RETURN_TYPES(AttentionOp)
PF_COMPATIBLE_RETURN_TYPES(AttentionGradOp)

namespace {
/// The checked operand types of an attention op: q [B, H, T, D],
/// k [B, H, S, D], v [B, H, S, Dv] of one float type, and the optional mask
/// (rank 4, each axis 1 or the scores' size; the queries' float type or i1).
FailureOr<std::array<GlobalType, 3>>
checkAttention(Inference &inf, Value q, Value k, Value v, Value mask) {
  FailureOr<std::array<GlobalType, 3>> types =
      inf.floatGlobals({{q, "query"}, {k, "key"}, {v, "value"}});
  if (failed(types))
    return failure();
  auto [tq, tk, tv] = *types;
  for (auto [t, what] : {std::pair{tq, "query"}, {tk, "key"}, {tv, "value"}})
    if (failed(inf.hasRank(t, 4, what)))
      return failure();
  ArrayRef<int64_t> sq = tq.getShape(), sk = tk.getShape(), sv = tv.getShape();
  if (sk[0] != sq[0] || sk[1] != sq[1] || sk[3] != sq[3] || sv[0] != sq[0] ||
      sv[1] != sq[1] || sv[2] != sk[2])
    return inf.error() << "expects query [B, H, T, D], key [B, H, S, D] and "
                          "value [B, H, S, Dv], got "
                       << Inference::shapeStr(sq) << ", "
                       << Inference::shapeStr(sk) << " and "
                       << Inference::shapeStr(sv);
  if (!mask)
    return types;
  FailureOr<GlobalType> tm = inf.global(mask, "mask");
  if (failed(tm) || failed(inf.samePlacement({tq, *tm})))
    return failure();
  Type elem = tm->getElementType();
  if (!isa<FloatType>(elem) && !elem.isInteger(1))
    return inf.error() << "mask must be i1 or a float type, got " << elem;
  SmallVector<int64_t> scores = {sq[0], sq[1], sq[2], sk[2]};
  bool fits = tm->getRank() == 4;
  for (int64_t i = 0; fits && i < 4; ++i)
    fits = tm->getShape()[i] == 1 || tm->getShape()[i] == scores[i];
  if (!fits)
    return inf.error() << "mask of shape "
                       << Inference::shapeStr(tm->getShape())
                       << " does not broadcast to the scores "
                       << Inference::shapeStr(scores)
                       << " (rank 4, each axis 1 or the scores' size)";
  return types;
}

LogicalResult verifyAttentionAttrs(Operation *op, double scale,
                                   double dropoutP) {
  if (!std::isfinite(scale))
    return op->emitOpError() << "scale must be finite, got " << scale;
  if (std::isnan(dropoutP) || dropoutP < 0.0 || dropoutP >= 1.0)
    return op->emitOpError() << "dropout_p must be in [0, 1), got " << dropoutP;
  return success();
}

SBPDim split(int64_t axis) { return SBPDim::split(axis); }

/// The mask's SBP when the scores are split along `axis`: split alike where
/// it has that axis, broadcast where it is broadcast along it.
SBPDim maskSBP(Value mask, int64_t axis) {
  return cast<GlobalType>(mask.getType()).getShape()[axis] == 1
             ? SBPDim::broadcast()
             : split(axis);
}
} // namespace

/// The checked operand types of `op` (either attention op), or failure.
/// The result types of either attention op: the forward's output and
/// log-sum-exp, or the gradient's dq, dk and dv (after checking its
/// output, lse and result_grad against the forward's shapes).
template <typename OpTy>
static LogicalResult
inferAttention(std::optional<Location> loc, StringRef opName,
               typename OpTy::Adaptor adaptor, SmallVectorImpl<Type> &results) {
  Inference inf(loc, opName);
  FailureOr<std::array<GlobalType, 3>> types =
      checkAttention(inf, adaptor.getQuery(), adaptor.getKey(),
                     adaptor.getValue(), adaptor.getMask());
  if (failed(types))
    return failure();
  auto [q, k, v] = *types;
  ArrayRef<int64_t> sq = q.getShape();
  SmallVector<int64_t> outShape = {sq[0], sq[1], sq[2], v.getShape()[3]};
  if constexpr (std::is_same_v<OpTy, AttentionOp>) {
    MLIRContext *ctx = q.getContext();
    results.push_back(resultLike(q, outShape));
    results.push_back(GlobalType::get(ctx, sq.take_front(3),
                                      Float32Type::get(ctx), q.getPlacement(),
                                      SBPAttr()));
    return success();
  } else {
    FailureOr<std::array<GlobalType, 3>> rest =
        inf.globals({{adaptor.getOutput(), "output"},
                     {adaptor.getLse(), "lse"},
                     {adaptor.getResultGrad(), "result_grad"}});
    if (failed(rest))
      return failure();
    auto [o, lse, dout] = *rest;
    if (o.getShape() != ArrayRef(outShape) ||
        dout.getShape() != ArrayRef(outShape) ||
        lse.getShape() != sq.take_front(3))
      return inf.error() << "expects output and result_grad of shape "
                         << Inference::shapeStr(outShape) << " and lse of "
                         << Inference::shapeStr(sq.take_front(3)) << ", got "
                         << Inference::shapeStr(o.getShape()) << ", "
                         << Inference::shapeStr(dout.getShape()) << " and "
                         << Inference::shapeStr(lse.getShape());
    results.push_back(resultLike(q, q.getShape()));
    results.push_back(resultLike(q, k.getShape()));
    results.push_back(resultLike(q, v.getShape()));
    return success();
  }
}

PF_INFER_RETURN_TYPES(AttentionOp, inferAttention<AttentionOp>, adaptor)
PF_INFER_RETURN_TYPES(AttentionGradOp, inferAttention<AttentionGradOp>, adaptor)

LogicalResult AttentionOp::verify() {
  return verifyAttentionAttrs(*this, getScale().convertToDouble(),
                              getDropoutP().convertToDouble());
}

LogicalResult AttentionGradOp::verify() {
  return verifyAttentionAttrs(*this, getScale().convertToDouble(),
                              getDropoutP().convertToDouble());
}

void AttentionOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &signatures) {
  // Batch or heads split (Megatron's head-split tensor parallelism: no
  // communication inside attention), or the queries split with every key.
  Value mask = getMask();
  for (int64_t axis = 0; axis < 3; ++axis) {
    SmallVector<SBPDim> operands = {
        split(axis), axis < 2 ? split(axis) : SBPDim::broadcast(),
        axis < 2 ? split(axis) : SBPDim::broadcast()};
    if (mask)
      operands.push_back(maskSBP(mask, axis));
    signatures.push_back({operands, {split(axis), split(axis)}});
  }
}

void AttentionGradOp::getSBPSignatures(
    SmallVectorImpl<SBPSignature> &signatures) {
  Value mask = getMask();
  for (int64_t axis = 0; axis < 3; ++axis) {
    SBPDim kv = axis < 2 ? split(axis) : SBPDim::broadcast();
    SmallVector<SBPDim> operands = {split(axis), kv,          kv,
                                    split(axis), split(axis), split(axis)};
    if (mask)
      operands.push_back(maskSBP(mask, axis));
    // Split queries: each rank's rows give an addend of dk and dv.
    SBPDim dkv = axis < 2 ? split(axis) : SBPDim::partial();
    signatures.push_back({operands, {split(axis), dkv, dkv}});
  }
  // Linear in dout (delta = rowsum(dout * out) is too, out and lse fixed).
  SBPDim b = SBPDim::broadcast(), p = SBPDim::partial();
  SmallVector<SBPDim> operands = {b, b, b, b, b, p};
  if (mask)
    operands.push_back(b);
  signatures.push_back({operands, {p, p, p}});
}

LogicalResult AttentionOp::buildGradient(OpBuilder &b,
                                         ArrayRef<Value> resultGrads,
                                         SmallVectorImpl<Value> &operandGrads) {
  if (resultGrads.size() > 1 && resultGrads[1])
    return emitOpError("has no gradient rule for its lse result (only the "
                       "attention output is differentiable)");
  Value dout = resultGrads[0];
  if (noIncomingGradient(*this, dout, operandGrads))
    return success();
  auto grads = AttentionGradOp::create(
      b, getLoc(),
      TypeRange{gradType(getQuery()), gradType(getKey()), gradType(getValue())},
      getQuery(), getKey(), getValue(), getResult(), getLse(), dout, getMask(),
      getScaleAttr(), getCausalAttr(), getDropoutPAttr(), getStreamAttr());
  operandGrads.append(
      {grads.getQueryGrad(), grads.getKeyGrad(), grads.getValueGrad()});
  // The mask takes no gradient (the front end keeps a mask that needs one
  // on the unfused ops).
  if (getMask())
    operandGrads.push_back(Value());
  return success();
}
