//===- PFTensorOps.cpp - sub, div, broadcast_to, masked_fill, slices ------===//
//
// Result types, SBP signatures and gradient rules of the ops in
// PFTensorOps.td, and the gradient of pf.reduce_sum (Tensor.sum / mean).
//
//===----------------------------------------------------------------------===//

#include "pf/Dialect/PF/IR/PFOps.h"

#include "OpUtils.h"

#include <cmath>

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::pf;
using namespace mlir::pf::detail;

namespace {
const SBPDim B = SBPDim::broadcast();
const SBPDim P = SBPDim::partial();
SBPDim S(int64_t axis) { return SBPDim::split(axis); }

void add(SmallVectorImpl<SBPSignature> &sigs, ArrayRef<SBPDim> operands,
         ArrayRef<SBPDim> results) {
  sigs.push_back({SmallVector<SBPDim>(operands), SmallVector<SBPDim>(results)});
}

GlobalType typeOf(Value v) { return cast<GlobalType>(v.getType()); }

StringRef nameOf(StringRef full) { return full.drop_front(3); }

/// A box (offsets, sizes) inside `shape`: every axis in range.
LogicalResult checkBox(Inference &inf, ArrayRef<int64_t> shape,
                       ArrayRef<int64_t> offsets, ArrayRef<int64_t> sizes,
                       StringRef what) {
  if (offsets.size() != shape.size() || sizes.size() != shape.size())
    return inf.error() << "offsets " << Inference::shapeStr(offsets) << " and "
                       << what << " " << Inference::shapeStr(sizes)
                       << " need one entry per axis of "
                       << Inference::shapeStr(shape);
  for (auto [o, s, d] : llvm::zip(offsets, sizes, shape))
    if (o < 0 || s < 0 || o > d || s > d - o) // (no overflow)
      return inf.error() << "the box at " << Inference::shapeStr(offsets)
                         << " of " << what << " " << Inference::shapeStr(sizes)
                         << " does not fit in " << Inference::shapeStr(shape);
  return success();
}

/// Axes on which a box covers the whole tensor: a split there keeps the
/// box's local offsets (0) valid on every rank.
void splitWhereWhole(SmallVectorImpl<SBPSignature> &sigs,
                     ArrayRef<int64_t> offsets, ArrayRef<int64_t> inner,
                     ArrayRef<int64_t> outer) {
  for (auto [k, o] : llvm::enumerate(offsets))
    if (o == 0 && inner[k] == outer[k])
      add(sigs, {S(k)}, {S(k)});
  add(sigs, {P}, {P});
}
} // namespace

PF_COMPATIBLE_RETURN_TYPES(SubOp)
PF_COMPATIBLE_RETURN_TYPES(DivOp)
PF_COMPATIBLE_RETURN_TYPES(BroadcastToOp)
PF_COMPATIBLE_RETURN_TYPES(MaskedFillOp)
PF_COMPATIBLE_RETURN_TYPES(SliceOp)
PF_COMPATIBLE_RETURN_TYPES(PadOp)
PF_COMPATIBLE_RETURN_TYPES(ConcatOp)
PF_COMPATIBLE_RETURN_TYPES(CountKeptOp)

//===----------------------------------------------------------------------===//
// Result types
//===----------------------------------------------------------------------===//

static LogicalResult inferFloatBinary(std::optional<Location> loc,
                                      StringRef opName, Value lhs, Value rhs,
                                      SmallVectorImpl<Type> &results) {
  Inference inf(loc, opName);
  if (failed(inf.floatGlobal(lhs, "lhs")))
    return failure();
  return inferSameShape(loc, opName, lhs, "lhs", rhs, "rhs", /*floatB=*/true,
                        results);
}

PF_INFER_RETURN_TYPES(SubOp, inferFloatBinary, adaptor.getLhs(),
                      adaptor.getRhs())
PF_INFER_RETURN_TYPES(DivOp, inferFloatBinary, adaptor.getLhs(),
                      adaptor.getRhs())

LogicalResult
BroadcastToOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                Adaptor adaptor,
                                SmallVectorImpl<Type> &inferredReturnTypes) {
  Inference inf(loc, nameOf(getOperationName()));
  FailureOr<GlobalType> x = inf.global(adaptor.getInput(), "input");
  if (failed(x))
    return failure();
  ArrayRef<int64_t> in = x->getShape(), out = adaptor.getShape();
  bool ok = in.size() <= out.size();
  for (size_t j = 0; ok && j < in.size(); ++j) {
    int64_t o = out[out.size() - in.size() + j];
    ok = in[j] == o || in[j] == 1;
  }
  for (int64_t d : out)
    ok = ok && d >= 0;
  if (!ok)
    return inf.error() << "cannot broadcast shape " << Inference::shapeStr(in)
                       << " to " << Inference::shapeStr(out)
                       << " (trailing axes must be equal or 1)";
  inferredReturnTypes.push_back(resultLike(*x, out));
  return success();
}

LogicalResult
CountKeptOp::inferReturnTypes(MLIRContext *context, std::optional<Location> loc,
                              Adaptor adaptor,
                              SmallVectorImpl<Type> &inferredReturnTypes) {
  Inference inf(loc, nameOf(getOperationName()));
  FailureOr<GlobalType> labels = inf.global(adaptor.getLabels(), "labels");
  if (failed(labels) || failed(inf.hasRank(*labels, 1, "labels")))
    return failure();
  if (!labels->getElementType().isInteger())
    return inf.error() << "labels must be integers, got "
                       << labels->getElementType();
  inferredReturnTypes.push_back(
      GlobalType::get(context, {}, Float32Type::get(context),
                      labels->getPlacement(), SBPAttr()));
  return success();
}

LogicalResult
MaskedFillOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                               Adaptor adaptor,
                               SmallVectorImpl<Type> &inferredReturnTypes) {
  Inference inf(loc, nameOf(getOperationName()));
  FailureOr<std::array<GlobalType, 2>> types =
      inf.globals({{adaptor.getInput(), "input"}, {adaptor.getMask(), "mask"}},
                  /*floatAt=*/0);
  if (failed(types))
    return failure();
  auto [x, m] = *types;
  if (x.getShape() != m.getShape())
    return inf.error() << "mask shape " << Inference::shapeStr(m.getShape())
                       << " differs from input shape "
                       << Inference::shapeStr(x.getShape())
                       << "; broadcast it first (pf.broadcast_to)";
  inferredReturnTypes.push_back(resultLike(x, x.getShape()));
  return success();
}

LogicalResult
SliceOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                          Adaptor adaptor,
                          SmallVectorImpl<Type> &inferredReturnTypes) {
  Inference inf(loc, nameOf(getOperationName()));
  FailureOr<GlobalType> x = inf.global(adaptor.getInput(), "input");
  if (failed(x) || failed(checkBox(inf, x->getShape(), adaptor.getOffsets(),
                                   adaptor.getSizes(), "sizes")))
    return failure();
  inferredReturnTypes.push_back(resultLike(*x, adaptor.getSizes()));
  return success();
}

LogicalResult
PadOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                        Adaptor adaptor,
                        SmallVectorImpl<Type> &inferredReturnTypes) {
  Inference inf(loc, nameOf(getOperationName()));
  FailureOr<GlobalType> x = inf.global(adaptor.getInput(), "input");
  if (failed(x) ||
      failed(checkBox(inf, adaptor.getShape(), adaptor.getOffsets(),
                      x->getShape(), "input shape")))
    return failure();
  inferredReturnTypes.push_back(resultLike(*x, adaptor.getShape()));
  return success();
}

LogicalResult
ConcatOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                           Adaptor adaptor,
                           SmallVectorImpl<Type> &inferredReturnTypes) {
  Inference inf(loc, nameOf(getOperationName()));
  if (adaptor.getInputs().empty())
    return inf.error() << "needs at least one input";
  SmallVector<GlobalType> types;
  for (Value v : adaptor.getInputs()) {
    FailureOr<GlobalType> t = inf.global(v, "input");
    if (failed(t))
      return failure();
    types.push_back(*t);
  }
  if (failed(inf.samePlacement(types)))
    return failure();
  int64_t axis = adaptor.getAxis(), rank = types.front().getRank();
  if (axis < 0 || axis >= rank)
    return inf.error() << "axis " << axis << " is not an axis of shape "
                       << Inference::shapeStr(types.front().getShape());
  SmallVector<int64_t> shape(types.front().getShape());
  for (GlobalType t : ArrayRef(types).drop_front()) {
    if (failed(inf.sameElementType(types.front(), t, "input")))
      return failure();
    bool ok = t.getRank() == rank;
    for (int64_t k = 0; ok && k < rank; ++k)
      ok = k == axis || t.getShape()[k] == shape[k];
    if (!ok)
      return inf.error() << "cannot concatenate shapes "
                         << Inference::shapeStr(types.front().getShape())
                         << " and " << Inference::shapeStr(t.getShape())
                         << " along axis " << axis;
    if (llvm::AddOverflow(shape[axis], t.getShape()[axis], shape[axis]))
      return inf.error() << "the concatenated axis " << axis
                         << " overflows int64";
  }
  inferredReturnTypes.push_back(resultLike(types.front(), shape));
  return success();
}

//===----------------------------------------------------------------------===//
// SBP signatures
//===----------------------------------------------------------------------===//

void SubOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &signatures) {
  for (int64_t k = 0, r = typeOf(getLhs()).getRank(); k < r; ++k)
    add(signatures, {S(k), S(k)}, {S(k)});
  add(signatures, {P, P}, {P});
}

void DivOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &signatures) {
  for (int64_t k = 0, r = typeOf(getLhs()).getRank(); k < r; ++k)
    add(signatures, {S(k), S(k)}, {S(k)});
  add(signatures, {P, B}, {P}); // linear in the numerator
}

void BroadcastToOp::getSBPSignatures(
    SmallVectorImpl<SBPSignature> &signatures) {
  ArrayRef<int64_t> in = typeOf(getInput()).getShape(), out = getShape();
  int64_t lead = static_cast<int64_t>(out.size() - in.size());
  for (int64_t k = 0, r = static_cast<int64_t>(out.size()); k < r; ++k) {
    bool kept = k >= lead && in[k - lead] == out[k];
    // A kept axis splits with the input; a repeated one is cut from the
    // replicated input where it is made (no communication).
    if (kept)
      add(signatures, {S(k - lead)}, {S(k)});
    else
      add(signatures, {B}, {S(k)});
  }
  add(signatures, {P}, {P});
}

void MaskedFillOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &signatures) {
  for (int64_t k = 0, r = typeOf(getInput()).getRank(); k < r; ++k)
    add(signatures, {S(k), S(k)}, {S(k)});
  // Filling with zeros is linear in the input (the gradient's case).
  if (getValue().isZero())
    add(signatures, {P, B}, {P});
}

/// Where the inner box is one of g >= 2 equal blocks of axis k of the outer
/// one, a grouped split of the outer tensor, S(k, g), holds each rank's
/// part of that block as the block's own split S(k) would: slicing a block
/// out of a fused projection, or padding its gradient back, moves nothing.
void blockOfGroups(SmallVectorImpl<SBPSignature> &sigs,
                   ArrayRef<int64_t> offsets, ArrayRef<int64_t> inner,
                   ArrayRef<int64_t> outer, bool slice) {
  for (auto [k, o] : llvm::enumerate(offsets)) {
    int64_t n = inner[k], total = outer[k];
    if (n <= 0 || n == total || total % n != 0 || o % n != 0)
      continue;
    SBPDim grouped = SBPDim::split(k, total / n);
    if (slice)
      add(sigs, {grouped}, {S(k)});
    else
      add(sigs, {S(k)}, {grouped});
  }
}

void SliceOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &signatures) {
  splitWhereWhole(signatures, getOffsets(), getSizes(),
                  typeOf(getInput()).getShape());
  blockOfGroups(signatures, getOffsets(), getSizes(),
                typeOf(getInput()).getShape(),
                /*slice=*/true);
}

void PadOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &signatures) {
  splitWhereWhole(signatures, getOffsets(), typeOf(getInput()).getShape(),
                  getShape());
  blockOfGroups(signatures, getOffsets(), typeOf(getInput()).getShape(),
                getShape(),
                /*slice=*/false);
}

void CountKeptOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &signatures) {
  add(signatures, {S(0)}, {P}); // each rank counts its rows
}

void ConcatOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &signatures) {
  size_t n = getInputs().size();
  for (int64_t k = 0, r = typeOf(getResult()).getRank(); k < r; ++k)
    if (k != getAxis())
      add(signatures, SmallVector<SBPDim>(n, S(k)), {S(k)});
  add(signatures, SmallVector<SBPDim>(n, P), {P});
  // n equal blocks each split along the axis: each rank's blocks, in order,
  // are its part of the grouped split S(axis, n) (the gradient of q, k and
  // v cut from a fused projection; pf-autodiff concatenates them).
  int64_t axis = getAxis();
  if (n > 1 && llvm::all_of(getInputs(), [&](Value v) {
        return typeOf(v).getShape()[axis] ==
               typeOf(getInputs().front()).getShape()[axis];
      }))
    add(signatures, SmallVector<SBPDim>(n, S(axis)),
        {SBPDim::split(axis, int64_t(n))});
}

//===----------------------------------------------------------------------===//
// Gradients
//===----------------------------------------------------------------------===//

LogicalResult CountKeptOp::buildGradient(OpBuilder &, ArrayRef<Value>,
                                         SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back({}); // integer labels
  return success();
}

LogicalResult SubOp::buildGradient(OpBuilder &b, ArrayRef<Value> resultGrads,
                                   SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (noIncomingGradient(*this, dy, operandGrads))
    return success();
  operandGrads.push_back(dy);
  operandGrads.push_back(MulScalarOp::create(b, getLoc(), gradType(getRhs()),
                                             dy, b.getF64FloatAttr(-1.0)));
  return success();
}

LogicalResult DivOp::buildGradient(OpBuilder &b, ArrayRef<Value> resultGrads,
                                   SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (noIncomingGradient(*this, dy, operandGrads))
    return success();
  // y = a / b: da = dy / b, db = -dy a / b^2 = -da y.
  Location loc = getLoc();
  Value da = DivOp::create(b, loc, gradType(getLhs()), dy, getRhs());
  Value day = MulOp::create(b, loc, gradType(getRhs()), da, getResult());
  operandGrads.push_back(da);
  operandGrads.push_back(MulScalarOp::create(b, loc, gradType(getRhs()), day,
                                             b.getF64FloatAttr(-1.0)));
  return success();
}

/// Sums `dy` (of shape `out`) back to `input`'s shape: over the new leading
/// axes and the axes `input` repeats (size 1), then a reshape restores
/// those size-1 axes.
static Value sumToShape(OpBuilder &b, Location loc, Value dy, Value input) {
  GlobalType in = gradType(input);
  ArrayRef<int64_t> out = typeOf(dy).getShape(), shape = in.getShape();
  int64_t lead = static_cast<int64_t>(out.size() - shape.size());
  SmallVector<int64_t> axes;
  for (int64_t k = 0, r = static_cast<int64_t>(out.size()); k < r; ++k)
    if (k < lead || (shape[k - lead] == 1 && out[k] != 1))
      axes.push_back(k);
  if (axes.empty())
    return shape == out ? dy : ReshapeOp::create(b, loc, in, dy).getResult();
  SmallVector<int64_t> kept;
  for (int64_t k = 0, r = static_cast<int64_t>(out.size()); k < r; ++k)
    if (!llvm::is_contained(axes, k))
      kept.push_back(out[k]);
  Value sum =
      ReduceSumOp::create(b, loc, in.withShape(kept), dy, axes).getResult();
  if (ArrayRef<int64_t>(kept) == shape)
    return sum;
  return ReshapeOp::create(b, loc, in, sum);
}

LogicalResult
BroadcastToOp::buildGradient(OpBuilder &b, ArrayRef<Value> resultGrads,
                             SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (dy && !isa<FloatType>(typeOf(getInput()).getElementType()))
    return emitOpError("has no gradient for an integer input");
  operandGrads.push_back(dy ? sumToShape(b, getLoc(), dy, getInput())
                            : Value());
  return success();
}

LogicalResult
MaskedFillOp::buildGradient(OpBuilder &b, ArrayRef<Value> resultGrads,
                            SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  // The causal mask of attention: -inf into a softmax and nothing else.
  // The softmax is exactly 0 where the mask is set, so its input gradient
  // y (dy - sum(dy y)) already is 0 there (a row the mask fills entirely
  // has NaN losses either way): dy passes through, and the backward saves
  // a pass over the scores.
  Operation *only =
      getResult().hasOneUse() ? *getResult().user_begin() : nullptr;
  auto softmax = dyn_cast_or_null<SoftmaxOp>(only);
  if (dy && softmax && !softmax.getLog() &&
      std::isinf(getValue().convertToDouble()) &&
      getValue().convertToDouble() < 0) {
    operandGrads.push_back(dy);
    operandGrads.push_back(Value());
    return success();
  }
  // Filled elements do not depend on the input; the mask is a constant.
  operandGrads.push_back(
      dy ? MaskedFillOp::create(b, getLoc(), gradType(getInput()), dy,
                                getMask(), b.getF64FloatAttr(0.0))
               .getResult()
         : Value());
  operandGrads.push_back(Value());
  return success();
}

/// The gradient of a slice is a pad at the same offsets and the reverse:
/// `Inverse` placed back into the input's shape.
template <typename Inverse, typename Op>
static LogicalResult boxGradient(Op op, OpBuilder &b,
                                 ArrayRef<Value> resultGrads,
                                 SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  GlobalType in = gradType(op.getInput());
  operandGrads.push_back(
      dy ? Inverse::create(b, op.getLoc(), in, dy, op.getOffsetsAttr(),
                           b.getDenseI64ArrayAttr(in.getShape()))
               .getResult()
         : Value());
  return success();
}

LogicalResult SliceOp::buildGradient(OpBuilder &b, ArrayRef<Value> resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  return boxGradient<PadOp>(*this, b, resultGrads, operandGrads);
}

LogicalResult PadOp::buildGradient(OpBuilder &b, ArrayRef<Value> resultGrads,
                                   SmallVectorImpl<Value> &operandGrads) {
  return boxGradient<SliceOp>(*this, b, resultGrads, operandGrads);
}

LogicalResult ConcatOp::buildGradient(OpBuilder &b, ArrayRef<Value> resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  int64_t at = 0, axis = getAxis();
  for (Value input : getInputs()) {
    GlobalType in = gradType(input);
    if (!dy) {
      operandGrads.push_back(Value());
      continue;
    }
    SmallVector<int64_t> offsets(in.getRank(), 0);
    offsets[axis] = at;
    at += in.getShape()[axis];
    operandGrads.push_back(
        SliceOp::create(b, getLoc(), in, dy, b.getDenseI64ArrayAttr(offsets),
                        b.getDenseI64ArrayAttr(in.getShape())));
  }
  return success();
}

LogicalResult ReduceSumOp::buildGradient(OpBuilder &b,
                                         ArrayRef<Value> resultGrads,
                                         SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (noIncomingGradient(*this, dy, operandGrads))
    return success();
  // Every summed element gets the sum's gradient: keep the summed axes as
  // size 1, then broadcast.
  GlobalType in = gradType(getInput());
  SmallVector<int64_t> kept(in.getShape());
  for (int64_t axis : getAxes())
    kept[axis] = 1;
  Location loc = getLoc();
  Value shaped = ReshapeOp::create(b, loc, in.withShape(kept), dy);
  operandGrads.push_back(BroadcastToOp::create(
      b, loc, in, shaped, b.getDenseI64ArrayAttr(in.getShape())));
  return success();
}
