//===- PFLogicalOps.cpp - comparisons, boolean tensors, casts -------------===//
//
// Result types, verifiers, SBP signatures and gradient rules of the ops in
// PFLogicalOps.td. They are element-wise: a split of any axis passes
// through; a partial sum does not (a comparison, a logical op or a cast of
// a sum is not the sum of the ranks' results, so pf-infer-sbp boxes a
// partial operand to B or a split first), except pf.where, which is linear
// in its two values for a fixed condition.
//
//===----------------------------------------------------------------------===//

#include "pf/Dialect/PF/IR/PFOps.h"

#include "OpUtils.h"

using namespace mlir;
using namespace mlir::pf;
using namespace mlir::pf::detail;

namespace {
GlobalType typeOf(Value v) { return cast<GlobalType>(v.getType()); }

/// S(k) for each operand and the result, every axis k of `rank`.
void splitAnyAxis(SmallVectorImpl<SBPSignature> &sigs, int64_t rank,
                  unsigned operands) {
  for (int64_t k = 0; k < rank; ++k)
    sigs.push_back(
        {SmallVector<SBPDim>(operands, SBPDim::split(k)), {SBPDim::split(k)}});
}

bool isBool(GlobalType t) { return t.getElementType().isInteger(1); }

LogicalResult requireBool(Inference &inf, GlobalType t, StringRef what) {
  if (!isBool(t))
    return inf.error() << what << " must be a boolean (i1) tensor, got "
                       << t.getElementType();
  return success();
}

/// The i1 tensor of `t`'s shape and placement (no SBP yet).
GlobalType boolLike(GlobalType t) {
  return GlobalType::get(t.getContext(), t.getShape(),
                         IntegerType::get(t.getContext(), 1), t.getPlacement(),
                         SBPAttr());
}
} // namespace

PF_COMPATIBLE_RETURN_TYPES(CompareOp)
PF_COMPATIBLE_RETURN_TYPES(LogicalAndOp)
PF_COMPATIBLE_RETURN_TYPES(LogicalOrOp)
PF_COMPATIBLE_RETURN_TYPES(LogicalXorOp)
PF_COMPATIBLE_RETURN_TYPES(LogicalNotOp)
PF_COMPATIBLE_RETURN_TYPES(WhereOp)

//===----------------------------------------------------------------------===//
// Result types and verifiers
//===----------------------------------------------------------------------===//

LogicalResult
CompareOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                            Adaptor adaptor,
                            SmallVectorImpl<Type> &inferredReturnTypes) {
  SmallVector<Type, 1> same;
  if (failed(inferSameShape(loc, getOperationName().drop_front(3),
                            adaptor.getLhs(), "lhs", adaptor.getRhs(), "rhs",
                            /*floatB=*/false, same)))
    return failure();
  inferredReturnTypes.push_back(boolLike(cast<GlobalType>(same.front())));
  return success();
}

LogicalResult CompareOp::verify() {
  if (!symbolizeComparePredicate(getPredicate()))
    return emitOpError("predicate must be one of eq, ne, lt, le, gt, ge, got '")
           << getPredicate() << "'";
  return success();
}

/// Two i1 operands of one shape: an i1 result like them.
static LogicalResult inferLogicalBinary(std::optional<Location> loc,
                                        StringRef opName, Value lhs, Value rhs,
                                        SmallVectorImpl<Type> &results) {
  Inference inf(loc, opName);
  FailureOr<GlobalType> a = inf.global(lhs, "lhs");
  if (failed(a) || failed(requireBool(inf, *a, "lhs")))
    return failure();
  return inferSameShape(loc, opName, lhs, "lhs", rhs, "rhs", /*floatB=*/false,
                        results);
}

#define PF_LOGICAL_BINARY(OP)                                                  \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> loc, Adaptor adaptor,             \
      SmallVectorImpl<Type> &inferredReturnTypes) {                            \
    return inferLogicalBinary(loc, getOperationName().drop_front(3),           \
                              adaptor.getLhs(), adaptor.getRhs(),              \
                              inferredReturnTypes);                            \
  }
PF_LOGICAL_BINARY(LogicalAndOp)
PF_LOGICAL_BINARY(LogicalOrOp)
PF_LOGICAL_BINARY(LogicalXorOp)
#undef PF_LOGICAL_BINARY

LogicalResult
LogicalNotOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                               Adaptor adaptor,
                               SmallVectorImpl<Type> &inferredReturnTypes) {
  Inference inf(loc, getOperationName().drop_front(3));
  FailureOr<GlobalType> x = inf.global(adaptor.getInput(), "input");
  if (failed(x) || failed(requireBool(inf, *x, "input")))
    return failure();
  inferredReturnTypes.push_back(resultLike(*x, x->getShape()));
  return success();
}

LogicalResult
WhereOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                          Adaptor adaptor,
                          SmallVectorImpl<Type> &inferredReturnTypes) {
  StringRef opName = getOperationName().drop_front(3);
  Inference inf(loc, opName);
  FailureOr<GlobalType> c = inf.global(adaptor.getCondition(), "condition");
  FailureOr<GlobalType> t = inf.global(adaptor.getTrueValue(), "true_value");
  if (failed(c) || failed(t) || failed(requireBool(inf, *c, "condition")) ||
      failed(inf.samePlacement({*c, *t})))
    return failure();
  if (c->getShape() != t->getShape())
    return inf.error() << "condition shape "
                       << Inference::shapeStr(c->getShape())
                       << " differs from the values' shape "
                       << Inference::shapeStr(t->getShape())
                       << "; broadcast it first (pf.broadcast_to)";
  return inferSameShape(loc, opName, adaptor.getTrueValue(), "true_value",
                        adaptor.getFalseValue(), "false_value",
                        /*floatB=*/false, inferredReturnTypes);
}

LogicalResult CastOp::verify() {
  GlobalType in = getInput().getType(), out = getType();
  if (in.getShape() != out.getShape() ||
      in.getPlacement() != out.getPlacement())
    return emitOpError() << "must keep shape and placement: " << in << " -> "
                         << out;
  return success();
}

//===----------------------------------------------------------------------===//
// SBP signatures
//===----------------------------------------------------------------------===//

void CompareOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &signatures) {
  splitAnyAxis(signatures, typeOf(getLhs()).getRank(), 2);
}

void LogicalAndOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &signatures) {
  splitAnyAxis(signatures, typeOf(getLhs()).getRank(), 2);
}

void LogicalOrOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &signatures) {
  splitAnyAxis(signatures, typeOf(getLhs()).getRank(), 2);
}

void LogicalXorOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &signatures) {
  splitAnyAxis(signatures, typeOf(getLhs()).getRank(), 2);
}

void LogicalNotOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &signatures) {
  splitAnyAxis(signatures, typeOf(getInput()).getRank(), 1);
}

void WhereOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &signatures) {
  splitAnyAxis(signatures, typeOf(getCondition()).getRank(), 3);
  // Linear in the two values together for a fixed condition (the partial
  // gradients of a selection, for one).
  SBPDim p = SBPDim::partial();
  signatures.push_back({{SBPDim::broadcast(), p, p}, {p}});
}

void CastOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &signatures) {
  splitAnyAxis(signatures, getType().getRank(), 1);
  // A widening float cast (bf16/f16 -> f32, f32 -> f64) is exact, so a
  // partial sum passes through it: the wide partials' sum is the narrow
  // one's without its rounding. Under mixed precision a bf16 weight
  // gradient is cast to its f32 accumulation buffer; with the partial sum
  // passing, the data-parallel reduction waits for the accumulation (one
  // f32 all-reduce or reduce-scatter a step) instead of running on every
  // micro-batch's gradient and keeping each micro-batch's whole gradient.
  auto from = dyn_cast<FloatType>(getInput().getType().getElementType());
  auto to = dyn_cast<FloatType>(getType().getElementType());
  if (from && to && to.getWidth() > from.getWidth() &&
      to.getFPMantissaWidth() >= from.getFPMantissaWidth()) {
    SBPDim p = SBPDim::partial();
    signatures.push_back({{p}, {p}});
  }
}

//===----------------------------------------------------------------------===//
// Gradients
//===----------------------------------------------------------------------===//

/// No gradient reaches the operands of `op`.
static LogicalResult noGradient(Operation *op,
                                SmallVectorImpl<Value> &operandGrads) {
  operandGrads.append(op->getNumOperands(), Value());
  return success();
}

#define PF_NO_GRADIENT(OP)                                                     \
  LogicalResult OP::buildGradient(OpBuilder &, ArrayRef<Value>,                \
                                  SmallVectorImpl<Value> &operandGrads) {      \
    return noGradient(*this, operandGrads);                                    \
  }
PF_NO_GRADIENT(CompareOp)
PF_NO_GRADIENT(LogicalAndOp)
PF_NO_GRADIENT(LogicalOrOp)
PF_NO_GRADIENT(LogicalXorOp)
PF_NO_GRADIENT(LogicalNotOp)
#undef PF_NO_GRADIENT

LogicalResult WhereOp::buildGradient(OpBuilder &b, ArrayRef<Value> resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy || !isa<FloatType>(typeOf(getTrueValue()).getElementType()))
    return noGradient(*this, operandGrads);
  operandGrads.push_back(Value()); // none for the condition
  // d true_value = dy where the condition holds, else 0; d false_value the
  // rest: masked fills of dy with zeros (linear in dy, so a partial dy
  // stays partial).
  Location loc = getLoc();
  GlobalType gradType = typeOf(dy).withSBP({});
  Value cond = getCondition();
  Value notCond = LogicalNotOp::create(b, loc, cond);
  auto zero = b.getF64FloatAttr(0.0);
  operandGrads.push_back(
      MaskedFillOp::create(b, loc, gradType, dy, notCond, zero));
  operandGrads.push_back(
      MaskedFillOp::create(b, loc, gradType, dy, cond, zero));
  return success();
}

LogicalResult CastOp::buildGradient(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  GlobalType in = getInput().getType();
  // Only a float-to-float cast has a gradient: the result's, cast back.
  if (!dy || !isa<FloatType>(in.getElementType()) ||
      !isa<FloatType>(getType().getElementType()))
    return noGradient(*this, operandGrads);
  if (typeOf(dy).getElementType() == in.getElementType())
    operandGrads.push_back(dy);
  else
    operandGrads.push_back(CastOp::create(b, getLoc(), in.withSBP({}), dy));
  return success();
}
