//===- PFOps.cpp - PipeFlow ops -------------------------------------------===//

#include "pf/Dialect/PF/IR/PFOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/STLExtras.h"

#include "OpUtils.h"

using namespace mlir;
using namespace mlir::pf;
using namespace mlir::pf::detail;

#define GET_OP_CLASSES
#include "pf/Dialect/PF/IR/PFOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Helpers for result-type inference
//===----------------------------------------------------------------------===//

// Every op with inferred result types, forward and backward (PFGradOps.cpp;
// PFTensorOps.cpp has its own): any SBP (or none) on the results is
// compatible.
PF_COMPATIBLE_RETURN_TYPES(BiasAddOp)
PF_COMPATIBLE_RETURN_TYPES(AddOp)
PF_COMPATIBLE_RETURN_TYPES(MulScalarOp)
PF_COMPATIBLE_RETURN_TYPES(ReluOp)
PF_COMPATIBLE_RETURN_TYPES(ActivationOp)
PF_COMPATIBLE_RETURN_TYPES(SoftmaxOp)
PF_COMPATIBLE_RETURN_TYPES(LayerNormOp)
PF_COMPATIBLE_RETURN_TYPES(EmbeddingOp)
PF_COMPATIBLE_RETURN_TYPES(MulOp)
PF_COMPATIBLE_RETURN_TYPES(ClipScaleOp)
PF_COMPATIBLE_RETURN_TYPES(ScaleByOp)
PF_COMPATIBLE_RETURN_TYPES(DropoutOp)
PF_COMPATIBLE_RETURN_TYPES(FlattenOp)
PF_COMPATIBLE_RETURN_TYPES(TransposeOp)
PF_COMPATIBLE_RETURN_TYPES(SoftmaxCrossEntropyOp)
PF_COMPATIBLE_RETURN_TYPES(Conv2DOp)
PF_COMPATIBLE_RETURN_TYPES(MaxPool2DOp)
PF_COMPATIBLE_RETURN_TYPES(AvgPool2DOp)
PF_COMPATIBLE_RETURN_TYPES(GlobalAvgPoolOp)
PF_COMPATIBLE_RETURN_TYPES(BatchNormOp)
PF_COMPATIBLE_RETURN_TYPES(ReluGradOp)
PF_COMPATIBLE_RETURN_TYPES(ActivationGradOp)
PF_COMPATIBLE_RETURN_TYPES(SoftmaxGradOp)
PF_COMPATIBLE_RETURN_TYPES(LayerNormGradInputOp)
PF_COMPATIBLE_RETURN_TYPES(LayerNormGradParamsOp)
PF_COMPATIBLE_RETURN_TYPES(EmbeddingGradOp)
PF_COMPATIBLE_RETURN_TYPES(ReduceSumOp)
PF_COMPATIBLE_RETURN_TYPES(SoftmaxCrossEntropyGradOp)
PF_COMPATIBLE_RETURN_TYPES(BatchNormGradInputOp)
PF_COMPATIBLE_RETURN_TYPES(BatchNormGradParamsOp)

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

static FailureOr<ParamOp> lookupParam(Operation *user, FlatSymbolRefAttr name,
                                      SymbolTableCollection &symbols) {
  auto param = symbols.lookupNearestSymbolFrom<ParamOp>(user, name);
  if (!param)
    return user->emitOpError() << name << " does not name a pf.param";
  return param;
}

LogicalResult
ReadParamOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<ParamOp> param = lookupParam(*this, getParamAttr(), symbolTable);
  if (failed(param))
    return failure();
  if (param->getType() != getType())
    return emitOpError() << "result type " << getType()
                         << " does not match the type " << param->getType()
                         << " of parameter " << getParamAttr();
  return success();
}

LogicalResult
WriteParamOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<ParamOp> param = lookupParam(*this, getParamAttr(), symbolTable);
  if (failed(param))
    return failure();
  auto valueType = cast<GlobalType>(getValue().getType());
  if (!valueType.isLayoutCompatibleWith(param->getGlobalType()))
    return emitOpError() << "value type " << valueType
                         << " does not match the shape, element type and "
                            "placement of parameter "
                         << getParamAttr() << " of type " << param->getType();
  return success();
}

//===----------------------------------------------------------------------===//
// ConstantOp
//===----------------------------------------------------------------------===//

LogicalResult ConstantOp::verify() {
  auto valueType = dyn_cast<ShapedType>(getValue().getType());
  GlobalType type = getType();
  if (!valueType || !valueType.hasStaticShape() ||
      valueType.getShape() != type.getShape() ||
      valueType.getElementType() != type.getElementType())
    return emitOpError() << "value of type " << getValue().getType()
                         << " does not match the logical shape and element "
                            "type of "
                         << type;
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

//===----------------------------------------------------------------------===//
// ToGlobalOp / ToLocalOp
//===----------------------------------------------------------------------===//

LogicalResult ToGlobalOp::verify() {
  GlobalType result = getType();
  if (auto global = dyn_cast<GlobalType>(getInput().getType())) {
    // Without a target SBP this is a move to another placement whose layout
    // pf-infer-sbp decides (pf-autodiff emits such moves for gradients).
    if (global.getShape() != result.getShape() ||
        global.getElementType() != result.getElementType())
      return emitOpError() << "changes the logical tensor: " << global << " -> "
                           << result
                           << "; a layout change keeps shape and element "
                              "type";
    return success();
  }
  if (!result.hasSBP())
    return emitOpError() << "result type " << result
                         << " needs an SBP: the local data's layout must be "
                            "given";
  auto local = cast<RankedTensorType>(getInput().getType());
  SmallVector<int64_t> shard = result.getLocalShape();
  if (local.getElementType() != result.getElementType())
    return emitOpError() << "local element type " << local.getElementType()
                         << " differs from " << result.getElementType();
  if (local.getShape() != ArrayRef<int64_t>(shard))
    return emitOpError() << "local tensor shape "
                         << Inference::shapeStr(local.getShape())
                         << " is not the shard shape "
                         << Inference::shapeStr(shard) << " of " << result;
  return success();
}

OpFoldResult ToGlobalOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // to_global(to_local(g)) with g's own layout reassembles g exactly.
  if (auto local = getInput().getDefiningOp<ToLocalOp>())
    if (local.getInput().getType() == getType())
      return local.getInput();
  return {};
}

namespace {
/// A chain of layout changes keeps the logical value at every step, so only
/// the last target matters: to_global(to_global(g)) -> to_global(g).
struct FoldToGlobalChain : public OpRewritePattern<ToGlobalOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ToGlobalOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<ToGlobalOp>();
    if (!inner || !isa<GlobalType>(inner.getInput().getType()))
      return failure();
    rewriter.modifyOpInPlace(
        op, [&] { op.getInputMutable().assign(inner.getInput()); });
    return success();
  }
};
} // namespace

void ToGlobalOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                             MLIRContext *context) {
  results.add<FoldToGlobalChain>(context);
}

LogicalResult ToLocalOp::verify() {
  GlobalType input = getInput().getType();
  if (!input.hasSBP())
    return emitOpError() << "operand type " << input
                         << " has no SBP yet; its local part is undefined";
  SmallVector<int64_t> shard = input.getLocalShape();
  RankedTensorType result = getType();
  if (result.getShape() != ArrayRef<int64_t>(shard) ||
      result.getElementType() != input.getElementType())
    return emitOpError() << "result type " << result
                         << " is not the local part "
                         << input.getLocalTensorType() << " of " << input;
  return success();
}

OpFoldResult ToLocalOp::fold(FoldAdaptor) {
  if (auto global = getInput().getDefiningOp<ToGlobalOp>())
    if (global.getInput().getType() == getType())
      return global.getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// Dense algebra and element-wise ops
//===----------------------------------------------------------------------===//

/// As PF_COMPATIBLE_RETURN_TYPES, and a bf16/f16 product may have an f32
/// result: a typed GEMM's float32 output (pf-widen-low-precision
/// {keep-gemms} folds a cast to f32 into it).
bool MatmulOp::isCompatibleReturnTypes(TypeRange l, TypeRange r) {
  if (compatibleGlobals(l, r))
    return true;
  auto inferred = l.size() == 1 ? dyn_cast<GlobalType>(l[0]) : nullptr;
  auto actual = r.size() == 1 ? dyn_cast<GlobalType>(r[0]) : nullptr;
  if (!inferred || !actual || !actual.getElementType().isF32() ||
      !(inferred.getElementType().isBF16() ||
        inferred.getElementType().isF16()))
    return false;
  Type wide = GlobalType::get(inferred.getShape(), actual.getElementType(),
                              inferred.getPlacement(), inferred.getSbp());
  return compatibleGlobals(TypeRange{wide}, r);
}

LogicalResult
MatmulOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                           Adaptor adaptor,
                           SmallVectorImpl<Type> &inferredReturnTypes) {
  Inference inf(loc, getOperationName().drop_front(3));
  FailureOr<std::array<GlobalType, 2>> types =
      inf.floatGlobals({{adaptor.getA(), "lhs"}, {adaptor.getB(), "rhs"}});
  if (failed(types))
    return failure();
  auto [a, b] = *types;
  if (a.getRank() < 2 || b.getRank() < 2)
    return inf.error() << "operands need rank >= 2, got shapes "
                       << Inference::shapeStr(a.getShape()) << " and "
                       << Inference::shapeStr(b.getShape());
  ArrayRef<int64_t> as = a.getShape(), bs = b.getShape();
  int64_t ra = as.size(), rb = bs.size();
  bool ta = adaptor.getTransposeA(), tb = adaptor.getTransposeB();
  int64_t m = ta ? as[ra - 1] : as[ra - 2];
  int64_t ka = ta ? as[ra - 2] : as[ra - 1];
  int64_t kb = tb ? bs[rb - 1] : bs[rb - 2];
  int64_t n = tb ? bs[rb - 2] : bs[rb - 1];
  if (ka != kb)
    return inf.error() << "contraction sizes differ: " << ka << " (lhs "
                       << Inference::shapeStr(as) << ") vs " << kb << " (rhs "
                       << Inference::shapeStr(bs) << ")";
  ArrayRef<int64_t> batchA = as.drop_back(2), batchB = bs.drop_back(2);
  if (!batchB.empty() && batchA != batchB)
    return inf.error() << "batch dimensions differ: "
                       << Inference::shapeStr(batchA) << " vs "
                       << Inference::shapeStr(batchB);
  SmallVector<int64_t> shape(batchA);
  shape.push_back(m);
  shape.push_back(n);
  inferredReturnTypes.push_back(resultLike(a, shape));
  return success();
}

LogicalResult
BiasAddOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                            Adaptor adaptor,
                            SmallVectorImpl<Type> &inferredReturnTypes) {
  Inference inf(loc, getOperationName().drop_front(3));
  FailureOr<std::array<GlobalType, 2>> types = inf.floatGlobals(
      {{adaptor.getInput(), "input"}, {adaptor.getBias(), "bias"}});
  if (failed(types) || failed(inf.hasRank((*types)[1], 1, "bias")))
    return failure();
  auto [x, b] = *types;
  int64_t axis = adaptor.getAxis();
  if (axis < 0 || axis >= x.getRank())
    return inf.error() << "axis " << axis << " is out of range for shape "
                       << Inference::shapeStr(x.getShape());
  if (b.getShape()[0] != x.getShape()[axis])
    return inf.error() << "bias of size " << b.getShape()[0]
                       << " does not match axis " << axis << " of size "
                       << x.getShape()[axis];
  inferredReturnTypes.push_back(resultLike(x, x.getShape()));
  return success();
}

/// Two float operands of one shape and element type: the result's type
/// (integer arithmetic has no kernel; pf.compare takes integers).
static LogicalResult inferSameShapeBinary(std::optional<Location> loc,
                                          StringRef opName, Value lhs,
                                          Value rhs,
                                          SmallVectorImpl<Type> &results) {
  return inferSameShape(loc, opName, lhs, "lhs", rhs, "rhs", /*floatB=*/true,
                        results);
}

/// Element-wise unary float ops keep the operand's shape.
static LogicalResult inferUnaryFloat(std::optional<Location> loc,
                                     StringRef opName, Value input,
                                     SmallVectorImpl<Type> &results) {
  Inference inf(loc, opName);
  FailureOr<GlobalType> x = inf.floatGlobal(input, "input");
  if (failed(x))
    return failure();
  results.push_back(resultLike(*x, x->getShape()));
  return success();
}

PF_INFER_RETURN_TYPES(AddOp, inferSameShapeBinary, adaptor.getLhs(),
                      adaptor.getRhs())
PF_INFER_RETURN_TYPES(MulOp, inferSameShapeBinary, adaptor.getLhs(),
                      adaptor.getRhs())
PF_INFER_RETURN_TYPES(ReluOp, inferUnaryFloat, adaptor.getInput())
PF_INFER_RETURN_TYPES(ActivationOp, inferUnaryFloat, adaptor.getInput())
PF_INFER_RETURN_TYPES(SoftmaxOp, inferUnaryFloat, adaptor.getInput())
PF_INFER_RETURN_TYPES(DropoutOp, inferUnaryFloat, adaptor.getInput())
PF_INFER_RETURN_TYPES(MulScalarOp, inferUnaryFloat, adaptor.getInput())

/// A 0-d f32 operand (a run-time scalar on its placement).
static FailureOr<GlobalType> scalarOperand(Inference &inf, Value v,
                                           StringRef what) {
  FailureOr<GlobalType> t = inf.floatGlobal(v, what);
  if (failed(t) || failed(inf.hasRank(*t, 0, what)))
    return failure();
  return t;
}

LogicalResult
ClipScaleOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                              Adaptor adaptor,
                              SmallVectorImpl<Type> &inferredReturnTypes) {
  Inference inf(loc, getOperationName().drop_front(3));
  FailureOr<GlobalType> s = scalarOperand(inf, adaptor.getSumSq(), "sum_sq");
  if (failed(s))
    return failure();
  inferredReturnTypes.push_back(resultLike(*s, {}));
  return success();
}

LogicalResult ClipScaleOp::verify() {
  if (!(getMaxNorm().convertToDouble() > 0.0))
    return emitOpError("max_norm must be > 0, got ")
           << getMaxNorm().convertToDouble();
  return success();
}

LogicalResult
ScaleByOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                            Adaptor adaptor,
                            SmallVectorImpl<Type> &inferredReturnTypes) {
  Inference inf(loc, getOperationName().drop_front(3));
  FailureOr<GlobalType> s = scalarOperand(inf, adaptor.getScale(), "scale");
  if (failed(s) ||
      failed(inferUnaryFloat(loc, getOperationName().drop_front(3),
                             adaptor.getInput(), inferredReturnTypes)))
    return failure();
  return inf.samePlacement({cast<GlobalType>(inferredReturnTypes.front()), *s});
}

OpFoldResult MulScalarOp::fold(FoldAdaptor) {
  if (getScalar().convertToDouble() == 1.0 && getInput().getType() == getType())
    return getInput();
  return {};
}

void MulScalarOp::getCanonicalizationPatterns(RewritePatternSet &,
                                              MLIRContext *) {}

bool mlir::pf::isBiasGradientPair(ReduceSumOp reduce, MatmulOp mm) {
  auto is2DF32 = [](Value v) {
    auto t = cast<GlobalType>(v.getType());
    return t.getRank() == 2 && t.getElementType().isF32();
  };
  Value dz = reduce.getInput();
  return reduce.getAxes().size() == 1 && reduce.getAxes()[0] == 0 &&
         is2DF32(dz) && mm.getA() == dz && mm.getTransposeA() &&
         !mm.getTransposeB() && is2DF32(mm.getB()) && is2DF32(mm.getResult()) &&
         mm->getBlock() == reduce->getBlock();
}

int32_t mlir::pf::activationKindCode(StringRef kind) {
  for (auto [i, k] : llvm::enumerate(kActivationKinds))
    if (k == kind)
      return static_cast<int32_t>(i);
  return -1;
}

/// A located error unless `kind` is an activation's.
static LogicalResult verifyActivationKind(Operation *op, StringRef kind) {
  if (activationKindCode(kind) >= 0)
    return success();
  return op->emitOpError("kind must be one of gelu, gelu_tanh, tanh, "
                         "sigmoid, got '")
         << kind << "'";
}

LogicalResult ActivationOp::verify() {
  return verifyActivationKind(*this, getKind());
}

LogicalResult ActivationGradOp::verify() {
  return verifyActivationKind(*this, getKind());
}

/// A located error unless `axis` is an axis of `v`'s rank.
static LogicalResult verifyAxis(Operation *op, Value v, uint64_t axis) {
  int64_t rank = cast<GlobalType>(v.getType()).getRank();
  if (static_cast<int64_t>(axis) < rank)
    return success();
  return op->emitOpError("axis ")
         << axis << " is out of range for a rank-" << rank << " tensor";
}

LogicalResult SoftmaxOp::verify() {
  return verifyAxis(*this, getInput(), getAxis());
}

LogicalResult SoftmaxGradOp::verify() {
  return verifyAxis(*this, getOutput(), getAxis());
}

LogicalResult DropoutOp::verify() {
  double p = getP().convertToDouble();
  if (!(p >= 0.0 && p <= 1.0))
    return emitOpError() << "dropout probability must be in [0, 1], got " << p;
  return success();
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

LogicalResult
FlattenOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                            Adaptor adaptor,
                            SmallVectorImpl<Type> &inferredReturnTypes) {
  Inference inf(loc, getOperationName().drop_front(3));
  FailureOr<GlobalType> x = inf.global(adaptor.getInput(), "input");
  if (failed(x))
    return failure();
  int64_t rank = x->getRank();
  int64_t start = adaptor.getStartDim(), end = adaptor.getEndDim();
  int64_t s = start < 0 ? start + rank : start;
  int64_t e = end < 0 ? end + rank : end;
  if (rank == 0 || s < 0 || s >= rank || e < 0 || e >= rank || s > e)
    return inf.error() << "start_dim " << start << " and end_dim " << end
                       << " do not select axes of shape "
                       << Inference::shapeStr(x->getShape());
  ArrayRef<int64_t> shape = x->getShape();
  SmallVector<int64_t> out(shape.take_front(s));
  int64_t merged = 1;
  for (int64_t i = s; i <= e; ++i)
    merged *= shape[i];
  out.push_back(merged);
  llvm::append_range(out, shape.drop_front(e + 1));
  inferredReturnTypes.push_back(resultLike(*x, out));
  return success();
}

OpFoldResult FlattenOp::fold(FoldAdaptor) {
  // Flattening a 2-D tensor from axis 1 (or any no-op flatten) is identity.
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

LogicalResult ReshapeOp::verify() {
  GlobalType in = getInput().getType(), out = getType();
  if (in.getNumElements() != out.getNumElements())
    return emitOpError() << "changes the element count: "
                         << Inference::shapeStr(in.getShape()) << " has "
                         << in.getNumElements() << ", "
                         << Inference::shapeStr(out.getShape()) << " has "
                         << out.getNumElements();
  if (in.getElementType() != out.getElementType() ||
      in.getPlacement() != out.getPlacement())
    return emitOpError() << "must keep element type and placement: " << in
                         << " -> " << out;
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

namespace {
/// reshape(reshape(x)) and reshape(flatten(x)) -> reshape(x): the logical
/// value of a reshape depends only on its input's elements in row-major order.
struct ComposeReshapes : public OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    Operation *def = op.getInput().getDefiningOp();
    if (!isa_and_nonnull<ReshapeOp, FlattenOp>(def))
      return failure();
    Value source = def->getOperand(0);
    if (source.getType() == op.getType()) {
      rewriter.replaceOp(op, source);
      return success();
    }
    rewriter.modifyOpInPlace(op, [&] { op.getInputMutable().assign(source); });
    return success();
  }
};
} // namespace

void ReshapeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                            MLIRContext *context) {
  results.add<ComposeReshapes>(context);
}

LogicalResult
TransposeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                              Adaptor adaptor,
                              SmallVectorImpl<Type> &inferredReturnTypes) {
  Inference inf(loc, getOperationName().drop_front(3));
  FailureOr<GlobalType> x = inf.global(adaptor.getInput(), "input");
  if (failed(x))
    return failure();
  ArrayRef<int64_t> perm = adaptor.getPerm();
  int64_t rank = x->getRank();
  SmallVector<bool> seen(rank, false);
  bool valid = static_cast<int64_t>(perm.size()) == rank;
  for (int64_t p : perm) {
    if (!valid)
      break;
    valid = p >= 0 && p < rank && !seen[p];
    if (valid)
      seen[p] = true;
  }
  if (!valid)
    return inf.error() << "perm " << Inference::shapeStr(perm)
                       << " is not a permutation of the axes of shape "
                       << Inference::shapeStr(x->getShape());
  SmallVector<int64_t> out;
  for (int64_t p : perm)
    out.push_back(x->getShape()[p]);
  inferredReturnTypes.push_back(resultLike(*x, out));
  return success();
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType() &&
      llvm::all_of(llvm::enumerate(getPerm()),
                   [](auto it) { return it.value() == (int64_t)it.index(); }))
    return getInput();
  return {};
}

namespace {
/// transpose(transpose(x, p1), p2) -> transpose(x, p1 o p2).
struct ComposeTransposes : public OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<TransposeOp>();
    if (!inner)
      return failure();
    ArrayRef<int64_t> p1 = inner.getPerm(), p2 = op.getPerm();
    SmallVector<int64_t> composed;
    for (int64_t j : p2)
      composed.push_back(p1[j]);
    // The composed op takes the outer op's place and its stage, phase and
    // micro-batch (pf-microbatch and the schedule read them).
    auto fused = TransposeOp::create(rewriter, op.getLoc(), op.getType(),
                                     inner.getInput(), composed);
    fused->setDiscardableAttrs(op->getDiscardableAttrDictionary());
    rewriter.replaceOp(op, fused);
    return success();
  }
};
} // namespace

void TransposeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add<ComposeTransposes>(context);
}
