//===- PFLayerOps.cpp - PipeFlow layer ops --------------------------------===//
//
// Result-type inference of the layer ops of PFOps.td: the loss,
// convolution and pooling, normalization and embedding.
//
//===----------------------------------------------------------------------===//

#include "pf/Dialect/PF/IR/PFOps.h"

#include "OpUtils.h"

using namespace mlir;
using namespace mlir::pf;
using namespace mlir::pf::detail;

//===----------------------------------------------------------------------===//
// Loss
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxCrossEntropyOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferredReturnTypes) {
  Inference inf(loc, getOperationName().drop_front(3));
  FailureOr<std::array<GlobalType, 2>> types = inf.globals(
      {{adaptor.getLogits(), "logits"}, {adaptor.getLabels(), "labels"}},
      /*floatAt=*/0);
  if (failed(types))
    return failure();
  auto [logits, labels] = *types;
  if (failed(inf.hasRank(logits, 2, "logits")) ||
      failed(inf.hasRank(labels, 1, "labels")) ||
      failed(inf.labelsFor(logits, labels)))
    return failure();
  inferredReturnTypes.push_back(resultLike(logits, {}));
  return success();
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

LogicalResult
Conv2DOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                           Adaptor adaptor,
                           SmallVectorImpl<Type> &inferredReturnTypes) {
  Inference inf(loc, getOperationName().drop_front(3));
  FailureOr<std::array<GlobalType, 2>> types = inf.floatGlobals(
      {{adaptor.getInput(), "input"}, {adaptor.getWeight(), "weight"}});
  if (failed(types))
    return failure();
  auto [x, w] = *types;
  if (failed(inf.hasRank(x, 4, "input (NCHW)")) ||
      failed(inf.hasRank(w, 4, "weight (OIHW)")))
    return failure();
  ArrayRef<int64_t> xs = x.getShape(), ws = w.getShape();
  ArrayRef<int64_t> stride = adaptor.getStride(), pad = adaptor.getPadding(),
                    dil = adaptor.getDilation();
  int64_t groups = adaptor.getGroups();
  if (groups < 1 || xs[1] % groups != 0 || ws[0] % groups != 0)
    return inf.error() << "groups " << groups
                       << " must divide the input channels " << xs[1]
                       << " and the output channels " << ws[0];
  if (ws[1] != xs[1] / groups)
    return inf.error() << "weight expects " << ws[1]
                       << " input channels per group, the input has "
                       << xs[1] / groups;
  for (int i = 0; i < 2; ++i)
    if (stride[i] < 1 || dil[i] < 1 || pad[i] < 0)
      return inf.error() << "stride and dilation must be positive and padding "
                            "non-negative";
  SmallVector<int64_t> out = {xs[0], ws[0]};
  for (int i = 0; i < 2; ++i) {
    int64_t o = windowOutput(xs[2 + i], ws[2 + i], stride[i], pad[i], dil[i]);
    if (o <= 0)
      return inf.error() << "kernel " << Inference::shapeStr(ws.drop_front(2))
                         << " does not fit the padded input "
                         << Inference::shapeStr(xs.drop_front(2));
    out.push_back(o);
  }
  inferredReturnTypes.push_back(resultLike(x, out));
  return success();
}

/// A 4-D float input (NCHW).
static FailureOr<GlobalType> nchwInput(Inference &inf, Value input) {
  FailureOr<GlobalType> x = inf.floatGlobal(input, "input");
  if (failed(x) || failed(inf.hasRank(*x, 4, "input (NCHW)")))
    return failure();
  return x;
}

template <typename PoolAdaptor>
static LogicalResult inferPool(std::optional<Location> loc, StringRef opName,
                               PoolAdaptor adaptor,
                               SmallVectorImpl<Type> &results) {
  Inference inf(loc, opName);
  FailureOr<GlobalType> x = nchwInput(inf, adaptor.getInput());
  if (failed(x))
    return failure();
  ArrayRef<int64_t> kernel = adaptor.getKernel(), pad = adaptor.getPadding();
  SmallVector<int64_t, 2> stride(kernel);
  if (auto s = adaptor.getStride())
    stride.assign(s->begin(), s->end());
  ArrayRef<int64_t> xs = x->getShape();
  SmallVector<int64_t> out = {xs[0], xs[1]};
  for (int i = 0; i < 2; ++i) {
    if (kernel[i] < 1 || stride[i] < 1)
      return inf.error() << "kernel and stride must be positive";
    if (pad[i] < 0 || 2 * pad[i] > kernel[i])
      return inf.error() << "padding " << pad[i]
                         << " must be between 0 and half the kernel size "
                         << kernel[i];
    int64_t o = windowOutput(xs[2 + i], kernel[i], stride[i], pad[i], 1);
    if (o <= 0)
      return inf.error() << "kernel " << Inference::shapeStr(kernel)
                         << " does not fit the padded input "
                         << Inference::shapeStr(xs.drop_front(2));
    out.push_back(o);
  }
  results.push_back(resultLike(*x, out));
  return success();
}

PF_INFER_RETURN_TYPES(MaxPool2DOp, inferPool, adaptor)
PF_INFER_RETURN_TYPES(AvgPool2DOp, inferPool, adaptor)

LogicalResult
GlobalAvgPoolOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                  Adaptor adaptor,
                                  SmallVectorImpl<Type> &inferredReturnTypes) {
  Inference inf(loc, getOperationName().drop_front(3));
  FailureOr<GlobalType> x = nchwInput(inf, adaptor.getInput());
  if (failed(x))
    return failure();
  inferredReturnTypes.push_back(
      resultLike(*x, {x->getShape()[0], x->getShape()[1], 1, 1}));
  return success();
}

//===----------------------------------------------------------------------===//
// Normalization and embedding
//===----------------------------------------------------------------------===//

/// The per-channel operands of a normalization (gamma, beta, running
/// statistics), appended to `all` (which holds the input first): each of the
/// input's element type and shape [channels], all on the input's placement.
static LogicalResult perChannel(Inference &inf, int64_t channels,
                                ArrayRef<std::pair<Value, StringRef>> params,
                                SmallVectorImpl<GlobalType> &all) {
  for (auto [value, name] : params) {
    FailureOr<GlobalType> t = inf.global(value, name);
    if (failed(t) || failed(inf.sameElementType(all.front(), *t, name)))
      return failure();
    if (t->getShape() != ArrayRef<int64_t>{channels})
      return inf.error() << name << " must have shape [" << channels
                         << "], got " << Inference::shapeStr(t->getShape());
    all.push_back(*t);
  }
  return inf.samePlacement(all);
}

LogicalResult
LayerNormOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                              Adaptor adaptor,
                              SmallVectorImpl<Type> &inferredReturnTypes) {
  Inference inf(loc, getOperationName().drop_front(3));
  FailureOr<GlobalType> x = inf.floatGlobal(adaptor.getInput(), "input");
  if (failed(x))
    return failure();
  if (x->getRank() < 1)
    return inf.error() << "input must have at least one axis";
  SmallVector<GlobalType> all = {*x};
  if (failed(perChannel(
          inf, x->getShape().back(),
          {{adaptor.getGamma(), "gamma"}, {adaptor.getBeta(), "beta"}}, all)))
    return failure();
  inferredReturnTypes.push_back(resultLike(*x, x->getShape()));
  return success();
}

LogicalResult
EmbeddingOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                              Adaptor adaptor,
                              SmallVectorImpl<Type> &inferredReturnTypes) {
  Inference inf(loc, getOperationName().drop_front(3));
  FailureOr<std::array<GlobalType, 2>> types =
      inf.globals({{adaptor.getTable(), "table"}, {adaptor.getIds(), "ids"}},
                  /*floatAt=*/0);
  if (failed(types))
    return failure();
  auto [table, ids] = *types;
  if (table.getRank() != 2)
    return inf.error() << "table must be [V, D], got shape "
                       << Inference::shapeStr(table.getShape());
  if (!ids.getElementType().isInteger(64))
    return inf.error() << "ids must be i64, got " << ids.getElementType();
  SmallVector<int64_t> shape(ids.getShape());
  shape.push_back(table.getShape()[1]);
  inferredReturnTypes.push_back(resultLike(table, shape));
  return success();
}

LogicalResult
BatchNormOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                              Adaptor adaptor,
                              SmallVectorImpl<Type> &inferredReturnTypes) {
  Inference inf(loc, getOperationName().drop_front(3));
  FailureOr<GlobalType> x = inf.floatGlobal(adaptor.getInput(), "input");
  if (failed(x))
    return failure();
  if (x->getRank() != 2 && x->getRank() != 4)
    return inf.error() << "input must be [N, C] or [N, C, H, W], got shape "
                       << Inference::shapeStr(x->getShape());
  int64_t channels = x->getShape()[1];
  SmallVector<GlobalType> all = {*x};
  if (failed(perChannel(inf, channels,
                        {{adaptor.getGamma(), "gamma"},
                         {adaptor.getBeta(), "beta"},
                         {adaptor.getRunningMean(), "running_mean"},
                         {adaptor.getRunningVar(), "running_var"}},
                        all)))
    return failure();
  inferredReturnTypes.push_back(resultLike(*x, x->getShape()));
  inferredReturnTypes.push_back(resultLike(all[3], {channels}));
  inferredReturnTypes.push_back(resultLike(all[4], {channels}));
  return success();
}
