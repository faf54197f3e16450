//===- PFGradOps.cpp - backward and optimizer ops -------------------------===//

#include "pf/Dialect/PF/IR/PFOps.h"

#include "OpUtils.h"

#include <array>

using namespace mlir;
using namespace mlir::pf;
using namespace mlir::pf::detail;

static StringRef shortName(StringRef opName) { return opName.drop_front(3); }

// Element-wise gradients: (forward input or output, result_grad) of one
// shape, the result like them.
PF_INFER_RETURN_TYPES(ReluGradOp, inferSameShape, adaptor.getOutput(), "output",
                      adaptor.getResultGrad(), "result_grad",
                      /*floatB=*/true)
PF_INFER_RETURN_TYPES(ActivationGradOp, inferSameShape, adaptor.getInput(),
                      "input", adaptor.getResultGrad(), "result_grad",
                      /*floatB=*/true)
PF_INFER_RETURN_TYPES(SoftmaxGradOp, inferSameShape, adaptor.getOutput(),
                      "output", adaptor.getResultGrad(), "result_grad",
                      /*floatB=*/true)

LogicalResult
ReduceSumOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                              Adaptor adaptor,
                              SmallVectorImpl<Type> &inferredReturnTypes) {
  Inference inf(loc, shortName(getOperationName()));
  FailureOr<GlobalType> x = inf.floatGlobal(adaptor.getInput(), "input");
  if (failed(x))
    return failure();
  SmallVector<bool> reduced(x->getRank(), false);
  for (int64_t axis : adaptor.getAxes()) {
    if (axis < 0 || axis >= x->getRank() || reduced[axis])
      return inf.error() << "axes " << Inference::shapeStr(adaptor.getAxes())
                         << " must be distinct axes of shape "
                         << Inference::shapeStr(x->getShape());
    reduced[axis] = true;
  }
  SmallVector<int64_t> shape;
  for (auto [i, d] : llvm::enumerate(x->getShape()))
    if (!reduced[i])
      shape.push_back(d);
  inferredReturnTypes.push_back(resultLike(*x, shape));
  return success();
}

LogicalResult SoftmaxCrossEntropyGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferredReturnTypes) {
  Inference inf(loc, shortName(getOperationName()));
  FailureOr<std::array<GlobalType, 3>> types =
      inf.globals({{adaptor.getLogits(), "logits"},
                   {adaptor.getLabels(), "labels"},
                   {adaptor.getLossGrad(), "loss_grad"}},
                  /*floatAt=*/0);
  if (failed(types))
    return failure();
  auto [logits, labels, dloss] = *types;
  if (failed(inf.hasRank(logits, 2, "logits")) ||
      failed(inf.hasRank(labels, 1, "labels")) ||
      failed(inf.hasRank(dloss, 0, "loss_grad")) ||
      failed(inf.sameElementType(logits, dloss, "logits and loss_grad")))
    return failure();
  if (failed(inf.labelsFor(logits, labels)))
    return failure();
  inferredReturnTypes.push_back(resultLike(logits, logits.getShape()));
  return success();
}

//===----------------------------------------------------------------------===//
// Convolution and pooling gradients
//===----------------------------------------------------------------------===//

/// Common checks of the backward ops whose result type is given: every
/// operand and the result are 4-D float tensors on one placement.
static LogicalResult verifyNCHWGrad(Operation *op) {
  Inference inf(op->getLoc(), shortName(op->getName().getStringRef()));
  SmallVector<GlobalType> types;
  for (Type t : llvm::concat<Type>(op->getOperandTypes(), op->getResultTypes()))
    types.push_back(cast<GlobalType>(t));
  if (failed(inf.samePlacement(types)))
    return failure();
  for (GlobalType t : types)
    if (failed(inf.isFloat(t, "every operand")) ||
        failed(inf.hasRank(t, 4, "every operand and result (NCHW)")) ||
        failed(inf.sameElementType(types.front(), t, "operand")))
      return failure();
  return success();
}

/// The spatial output of a window op applied to `in` must be `out`'s.
static LogicalResult
checkWindow(Operation *op, ArrayRef<int64_t> in, ArrayRef<int64_t> kernel,
            ArrayRef<int64_t> stride, ArrayRef<int64_t> pad,
            ArrayRef<int64_t> dilation, ArrayRef<int64_t> out) {
  for (int i = 0; i < 2; ++i) {
    if (stride[i] < 1 || dilation[i] < 1 || pad[i] < 0 || kernel[i] < 1)
      return op->emitOpError() << "window sizes, strides and dilations must "
                                  "be positive and padding non-negative";
    int64_t o =
        windowOutput(in[2 + i], kernel[i], stride[i], pad[i], dilation[i]);
    if (o != out[2 + i])
      return op->emitOpError()
             << "forward input " << Inference::shapeStr(in)
             << " gives a forward output of spatial size " << o << " on axis "
             << 2 + i << ", not " << out[2 + i];
  }
  return success();
}

/// x (or dx), w (or dw) and dy must be those of one grouped convolution.
/// `named` gives the three shapes, under their names, in the message's order.
template <typename ConvGrad>
static LogicalResult
verifyConvGrad(ConvGrad op, ArrayRef<int64_t> x, ArrayRef<int64_t> w,
               ArrayRef<int64_t> dy,
               std::array<std::pair<StringRef, ArrayRef<int64_t>>, 3> named) {
  if (failed(verifyNCHWGrad(op)))
    return failure();
  int64_t g = op.getGroups();
  if (g < 1 || dy[1] != w[0] || x[1] != w[1] * g || x[0] != dy[0] ||
      w[0] % g != 0) {
    InFlightDiagnostic diag = op.emitOpError() << "channels do not match: ";
    for (auto [i, n] : llvm::enumerate(named))
      diag << (i ? ", " : "") << n.first << " "
           << Inference::shapeStr(n.second);
    return diag << ", groups " << g;
  }
  return checkWindow(op, x, w.drop_front(2), op.getStride(), op.getPadding(),
                     op.getDilation(), dy);
}

LogicalResult Conv2DGradInputOp::verify() {
  ArrayRef<int64_t> dy = getResultGrad().getType().getShape(),
                    w = getWeight().getType().getShape(),
                    dx = getType().getShape();
  return verifyConvGrad(*this, dx, w, dy,
                        {{{"dy", dy}, {"weight", w}, {"dx", dx}}});
}

LogicalResult Conv2DGradWeightOp::verify() {
  ArrayRef<int64_t> x = getInput().getType().getShape(),
                    dy = getResultGrad().getType().getShape(),
                    dw = getType().getShape();
  return verifyConvGrad(*this, x, dw, dy, {{{"x", x}, {"dy", dy}, {"dw", dw}}});
}

template <typename PoolGrad>
static LogicalResult verifyPoolGrad(PoolGrad op, ArrayRef<int64_t> in) {
  ArrayRef<int64_t> dy = op.getResultGrad().getType().getShape();
  ArrayRef<int64_t> dx = op.getType().getShape();
  if (dx != in || dx[0] != dy[0] || dx[1] != dy[1])
    return op.emitOpError()
           << "shapes do not match: input " << Inference::shapeStr(in)
           << ", dy " << Inference::shapeStr(dy) << ", dx "
           << Inference::shapeStr(dx);
  SmallVector<int64_t, 2> stride(op.getKernel());
  if (auto s = op.getStride())
    stride.assign(s->begin(), s->end());
  return checkWindow(op, dx, op.getKernel(), stride, op.getPadding(), {1, 1},
                     dy);
}

LogicalResult MaxPool2DGradOp::verify() {
  if (failed(verifyNCHWGrad(*this)))
    return failure();
  return verifyPoolGrad(*this, getInput().getType().getShape());
}

LogicalResult AvgPool2DGradOp::verify() {
  if (failed(verifyNCHWGrad(*this)))
    return failure();
  return verifyPoolGrad(*this, getType().getShape());
}

LogicalResult GlobalAvgPoolGradOp::verify() {
  if (failed(verifyNCHWGrad(*this)))
    return failure();
  ArrayRef<int64_t> dy = getResultGrad().getType().getShape(),
                    dx = getType().getShape();
  if (dy[0] != dx[0] || dy[1] != dx[1] || dy[2] != 1 || dy[3] != 1)
    return emitOpError() << "dy " << Inference::shapeStr(dy)
                         << " must be [N, C, 1, 1] of dx "
                         << Inference::shapeStr(dx);
  return success();
}

//===----------------------------------------------------------------------===//
// Batch-norm gradients
//===----------------------------------------------------------------------===//

static FailureOr<GlobalType> checkBatchNormInput(Inference &inf, Value x,
                                                 Value dy) {
  FailureOr<std::array<GlobalType, 2>> types =
      inf.floatGlobals({{x, "input"}, {dy, "result_grad"}});
  if (failed(types))
    return failure();
  auto [xt, dyt] = *types;
  if (xt.getRank() != 2 && xt.getRank() != 4)
    return inf.error() << "input must be [N, C] or [N, C, H, W], got shape "
                       << Inference::shapeStr(xt.getShape());
  if (xt.getShape() != dyt.getShape())
    return inf.error() << "input and result_grad shapes differ";
  return xt;
}

LogicalResult BatchNormGradInputOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferredReturnTypes) {
  Inference inf(loc, shortName(getOperationName()));
  FailureOr<GlobalType> x =
      checkBatchNormInput(inf, adaptor.getInput(), adaptor.getResultGrad());
  if (failed(x))
    return failure();
  FailureOr<GlobalType> gamma = inf.global(adaptor.getGamma(), "gamma");
  if (failed(gamma) || failed(inf.samePlacement({*x, *gamma})))
    return failure();
  if (gamma->getShape() != ArrayRef<int64_t>{x->getShape()[1]})
    return inf.error() << "gamma must have shape [" << x->getShape()[1]
                       << "], got " << Inference::shapeStr(gamma->getShape());
  inferredReturnTypes.push_back(resultLike(*x, x->getShape()));
  return success();
}

LogicalResult BatchNormGradParamsOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferredReturnTypes) {
  Inference inf(loc, shortName(getOperationName()));
  FailureOr<GlobalType> x =
      checkBatchNormInput(inf, adaptor.getInput(), adaptor.getResultGrad());
  if (failed(x))
    return failure();
  inferredReturnTypes.push_back(resultLike(*x, {x->getShape()[1]}));
  inferredReturnTypes.push_back(resultLike(*x, {x->getShape()[1]}));
  return success();
}

//===----------------------------------------------------------------------===//
// Optimizer ops
//===----------------------------------------------------------------------===//

static bool isFloatScalar(Type t) {
  auto g = dyn_cast<GlobalType>(t);
  return g && g.getRank() == 0 && isa<FloatType>(g.getElementType());
}

LogicalResult ScalarInputOp::verify() {
  if (!isFloatScalar(getType()))
    return emitOpError() << "result must be a float scalar, got " << getType();
  if (getName().empty())
    return emitOpError() << "needs a non-empty name";
  return success();
}

/// Parameter, gradient and state tensors share shape, element type and
/// placement; hyper-parameter operands are float scalars on that placement.
static LogicalResult verifyUpdateOperands(Operation *op, ValueRange tensors,
                                          ValueRange scalars,
                                          TypeRange results) {
  auto param = cast<GlobalType>(tensors.front().getType());
  for (Type t : llvm::concat<Type>(tensors.getTypes(), results)) {
    auto g = cast<GlobalType>(t);
    if (!g.isLayoutCompatibleWith(param))
      return op->emitOpError()
             << "parameter, gradient, state and results must share shape, "
                "element type and placement: "
             << param << " vs " << g;
  }
  for (Value s : scalars) {
    if (!isFloatScalar(s.getType()))
      return op->emitOpError()
             << "hyper-parameter operands must be float scalars, got "
             << s.getType();
    if (cast<GlobalType>(s.getType()).getPlacement() != param.getPlacement())
      return op->emitOpError()
             << "hyper-parameter on "
             << cast<GlobalType>(s.getType()).getPlacement()
             << " but the parameter is on " << param.getPlacement();
  }
  return success();
}

LogicalResult SGDUpdateOp::verify() {
  double momentum = getMomentum().convertToDouble(),
         dampening = getDampening().convertToDouble(),
         decay = getWeightDecay().convertToDouble();
  if (!(momentum >= 0.0))
    return emitOpError() << "momentum must be >= 0, got " << momentum;
  if (!(dampening >= 0.0 && dampening <= 1.0))
    return emitOpError() << "dampening must be in [0, 1], got " << dampening;
  if (!(decay >= 0.0))
    return emitOpError() << "weight_decay must be >= 0, got " << decay;
  if (getNesterov() && (momentum <= 0.0 || dampening != 0.0))
    return emitOpError() << "nesterov needs momentum > 0 and zero dampening";
  bool hasState = static_cast<bool>(getMomentumBuffer());
  if (hasState != (momentum != 0.0) || hasState != bool(getStep()) ||
      hasState != bool(getNewMomentumBuffer()))
    return emitOpError() << "momentum " << momentum
                         << (momentum != 0.0 ? " needs" : " takes no")
                         << " momentum buffer, step operand and new-buffer "
                            "result";
  SmallVector<Value> tensors = {getParam(), getGrad()};
  SmallVector<Value> scalars = {getLr()};
  if (hasState) {
    tensors.push_back(getMomentumBuffer());
    scalars.push_back(getStep());
  }
  return verifyUpdateOperands(*this, tensors, scalars, getResultTypes());
}

LogicalResult AdamUpdateOp::verify() {
  double b1 = getBeta1().convertToDouble(), b2 = getBeta2().convertToDouble(),
         eps = getEpsilon().convertToDouble(),
         decay = getWeightDecay().convertToDouble();
  if (!(b1 >= 0.0 && b1 < 1.0) || !(b2 >= 0.0 && b2 < 1.0))
    return emitOpError() << "betas must be in [0, 1), got (" << b1 << ", " << b2
                         << ")";
  if (!(eps >= 0.0))
    return emitOpError() << "epsilon must be >= 0, got " << eps;
  if (!(decay >= 0.0))
    return emitOpError() << "weight_decay must be >= 0, got " << decay;
  return verifyUpdateOperands(
      *this, {getParam(), getGrad(), getExpAvg(), getExpAvgSq()},
      {getLr(), getStep()}, getResultTypes());
}

//===----------------------------------------------------------------------===//
// Point-to-point
//===----------------------------------------------------------------------===//

template <typename P2POp>
static LogicalResult verifyP2P(P2POp op, GlobalType type) {
  if (op.getPeer() < 0 || op.getTag() < 0)
    return op.emitOpError() << "peer and tag must be non-negative";
  if (type.getPlacement().contains(op.getPeer()))
    return op.emitOpError()
           << "peer " << op.getPeer()
           << " is a rank of the value's own placement " << type.getPlacement();
  return success();
}

LogicalResult SendOp::verify() {
  return verifyP2P(*this, getValue().getType());
}

LogicalResult RecvOp::verify() { return verifyP2P(*this, getType()); }

//===----------------------------------------------------------------------===//
// Micro-batching
//===----------------------------------------------------------------------===//

LogicalResult MicrobatchOp::verify() {
  GlobalType in = getInput().getType(), out = getType();
  int64_t count = getCount(), index = getIndex();
  if (count < 1 || index < 0 || index >= count)
    return emitOpError() << "index " << index << " is not a micro-batch of "
                         << count;
  if (in.getRank() == 0 || in.getShape()[0] % count != 0)
    return emitOpError() << "the batch (axis 0) of "
                         << Inference::shapeStr(in.getShape())
                         << " does not divide into " << count
                         << " micro-batches";
  SmallVector<int64_t> shape(in.getShape());
  shape[0] /= count;
  if (out.getShape() != ArrayRef<int64_t>(shape) ||
      out.getElementType() != in.getElementType() ||
      out.getPlacement() != in.getPlacement())
    return emitOpError() << "result must be " << Inference::shapeStr(shape)
                         << " of the input's element type and placement";
  return success();
}

LogicalResult PackOp::verify() {
  if (getElements().empty())
    return emitOpError() << "needs at least one element";
  auto first = cast<GlobalType>(getElements().front().getType());
  for (Value e : getElements()) {
    auto t = cast<GlobalType>(e.getType());
    if (t.getShape() != first.getShape() || !t.isLayoutCompatibleWith(first))
      return emitOpError() << "elements must share one shape, element type "
                              "and placement";
  }
  GlobalType out = getType();
  SmallVector<int64_t> shape = {(int64_t)getElements().size()};
  llvm::append_range(shape, first.getShape());
  if (out.getShape() != ArrayRef<int64_t>(shape) ||
      out.getElementType() != first.getElementType() ||
      out.getPlacement() != first.getPlacement())
    return emitOpError() << "result must be [" << getElements().size()
                         << ", element shape...] of the elements' type and "
                            "placement";
  return success();
}

LogicalResult ScheduleOp::verify() {
  if (getNumStages() < 1 || getNumMicrobatches() < 1 || getNumChunks() < 1)
    return emitOpError() << "stage, micro-batch and chunk counts must be "
                            "positive";
  if ((int64_t)getActions().size() != getNumStages())
    return emitOpError() << "has " << getActions().size()
                         << " action lists for " << getNumStages()
                         << " pipeline ranks";
  for (auto [r, list] : llvm::enumerate(getActions().getAsRange<ArrayAttr>()))
    for (auto a : list.getAsRange<StringAttr>()) {
      StringRef text = a.getValue();
      auto [mb, chunk] = text.size() > 1
                             ? text.drop_front().split(':')
                             : std::make_pair(StringRef(), StringRef());
      int64_t value;
      if (text.empty() || !StringRef("FBW").contains(text[0]) ||
          mb.getAsInteger(10, value) ||
          (!chunk.empty() && chunk.getAsInteger(10, value)))
        return emitOpError() << "rank " << r << ": '" << text
                             << "' is not an action (F<mb>, B<mb> or W<mb>, "
                                "optionally :<chunk>)";
    }
  return success();
}

LogicalResult LayerNormGradInputOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferredReturnTypes) {
  Inference inf(loc, shortName(getOperationName()));
  FailureOr<std::array<GlobalType, 3>> types =
      inf.globals({{adaptor.getInput(), "input"},
                   {adaptor.getGamma(), "gamma"},
                   {adaptor.getResultGrad(), "result_grad"}},
                  /*floatAt=*/0);
  if (failed(types))
    return failure();
  auto [x, g, dy] = *types;
  if (x.getRank() < 1 || dy.getShape() != x.getShape() ||
      g.getShape() != ArrayRef<int64_t>{x.getShape().back()})
    return inf.error() << "expects input and result_grad of one shape [..., C] "
                          "and gamma [C], got "
                       << Inference::shapeStr(x.getShape()) << ", "
                       << Inference::shapeStr(dy.getShape()) << ", "
                       << Inference::shapeStr(g.getShape());
  inferredReturnTypes.push_back(resultLike(x, x.getShape()));
  return success();
}

LogicalResult LayerNormGradParamsOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferredReturnTypes) {
  Inference inf(loc, shortName(getOperationName()));
  FailureOr<std::array<GlobalType, 2>> types = inf.globals(
      {{adaptor.getInput(), "input"}, {adaptor.getResultGrad(), "result_grad"}},
      /*floatAt=*/0);
  if (failed(types))
    return failure();
  auto [x, dy] = *types;
  if (x.getRank() < 1 || dy.getShape() != x.getShape())
    return inf.error() << "expects input and result_grad of one shape, got "
                       << Inference::shapeStr(x.getShape()) << " and "
                       << Inference::shapeStr(dy.getShape());
  int64_t channels = x.getShape().back();
  inferredReturnTypes.push_back(resultLike(x, {channels}));
  inferredReturnTypes.push_back(resultLike(x, {channels}));
  return success();
}

LogicalResult
EmbeddingGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                  Adaptor adaptor,
                                  SmallVectorImpl<Type> &inferredReturnTypes) {
  Inference inf(loc, shortName(getOperationName()));
  FailureOr<std::array<GlobalType, 2>> types = inf.globals(
      {{adaptor.getIds(), "ids"}, {adaptor.getResultGrad(), "result_grad"}},
      /*floatAt=*/1);
  if (failed(types))
    return failure();
  auto [ids, dy] = *types;
  if (dy.getRank() != ids.getRank() + 1 ||
      dy.getShape().drop_back() != ids.getShape())
    return inf.error() << "result_grad must be ids' shape + [D], got "
                       << Inference::shapeStr(dy.getShape()) << " for ids "
                       << Inference::shapeStr(ids.getShape());
  int64_t rows = static_cast<int64_t>(adaptor.getNumRows());
  if (rows < 1)
    return inf.error() << "num_rows must be positive, got " << rows;
  inferredReturnTypes.push_back(resultLike(dy, {rows, dy.getShape().back()}));
  return success();
}
