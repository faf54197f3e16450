//===- PFAutodiff.cpp - gradient rules of the pf ops ----------------------===//
//
// Each rule emits the backward ops of one forward op. Gradients carry no SBP
// (pf-infer-sbp decides their layouts) except through layout changes, whose
// gradient runs the reverse change with OneFlow's grad-SBP rule.
//
//===----------------------------------------------------------------------===//

#include "pf/Dialect/PF/IR/PFOps.h"

#include "OpUtils.h"

using namespace mlir;
using namespace mlir::pf;
using namespace mlir::pf::detail;

LogicalResult MatmulOp::buildGradient(OpBuilder &b, ArrayRef<Value> resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  Value dc = resultGrads[0];
  Location loc = getLoc();
  Value a = getA(), bv = getB();
  bool ta = getTransposeA(), tb = getTransposeB();
  auto aType = cast<GlobalType>(a.getType());
  auto bType = cast<GlobalType>(bv.getType());
  if (noIncomingGradient(*this, dc, operandGrads))
    return success();
  // A batched lhs with a shared 2-D rhs (x @ W over [batch, seq, features]).
  bool shared = aType.getRank() > 2 && bType.getRank() == 2;
  if (shared && ta)
    return emitOpError("has no gradient rule for a transposed batched lhs "
                       "with a shared 2-D rhs");

  // dA: C = op(A) op(B). If !ta: dA = dC op(B)^T; else dA = op(B) dC^T.
  Value da;
  if (!ta)
    da = MatmulOp::create(b, loc, gradType(a), dc, bv, /*transpose_a=*/false,
                          /*transpose_b=*/!tb);
  else
    da = MatmulOp::create(b, loc, gradType(a), bv, dc, /*transpose_a=*/tb,
                          /*transpose_b=*/true);

  // dB: if !tb: dB = op(A)^T dC; else dB = dC^T op(A). With a shared rhs the
  // batch axes are folded into the rows first, which sums over the batch.
  Value lhs = a, grad = dc;
  if (shared) {
    auto dcType = cast<GlobalType>(dc.getType());
    int64_t rows = aType.getNumElements() / aType.getShape().back();
    lhs = ReshapeOp::create(
        b, loc, aType.withSBP({}).withShape({rows, aType.getShape().back()}),
        a);
    grad = ReshapeOp::create(
        b, loc, dcType.withSBP({}).withShape({rows, dcType.getShape().back()}),
        dc);
  }
  Value db;
  if (!tb)
    db = MatmulOp::create(b, loc, gradType(bv), lhs, grad,
                          /*transpose_a=*/!ta, /*transpose_b=*/false);
  else
    db = MatmulOp::create(b, loc, gradType(bv), grad, lhs,
                          /*transpose_a=*/true, /*transpose_b=*/ta);
  operandGrads.append({da, db});
  return success();
}

LogicalResult BiasAddOp::buildGradient(OpBuilder &b,
                                       ArrayRef<Value> resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (noIncomingGradient(*this, dy, operandGrads))
    return success();
  SmallVector<int64_t> axes;
  for (int64_t i = 0, e = getType().getRank(); i < e; ++i)
    if (i != getAxis())
      axes.push_back(i);
  Value db = ReduceSumOp::create(b, getLoc(), gradType(getBias()), dy, axes);
  operandGrads.append({dy, db});
  return success();
}

LogicalResult AddOp::buildGradient(OpBuilder &, ArrayRef<Value> resultGrads,
                                   SmallVectorImpl<Value> &operandGrads) {
  operandGrads.append({resultGrads[0], resultGrads[0]});
  return success();
}

LogicalResult MulOp::buildGradient(OpBuilder &b, ArrayRef<Value> resultGrads,
                                   SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (noIncomingGradient(*this, dy, operandGrads))
    return success();
  operandGrads.push_back(
      MulOp::create(b, getLoc(), gradType(getLhs()), dy, getRhs()));
  operandGrads.push_back(
      MulOp::create(b, getLoc(), gradType(getRhs()), dy, getLhs()));
  return success();
}

LogicalResult MulScalarOp::buildGradient(OpBuilder &b,
                                         ArrayRef<Value> resultGrads,
                                         SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  operandGrads.push_back(dy ? MulScalarOp::create(b, getLoc(),
                                                  gradType(getInput()), dy,
                                                  getScalarAttr())
                                  .getResult()
                            : Value());
  return success();
}

LogicalResult DropoutOp::buildGradient(OpBuilder &b,
                                       ArrayRef<Value> resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  // dx = dy * mask / (1 - p): the same dropout (same stream, hence the same
  // mask) applied to dy.
  Value dy = resultGrads[0];
  operandGrads.push_back(dy ? DropoutOp::create(b, getLoc(),
                                                gradType(getInput()), dy,
                                                getPAttr(), getStreamAttr())
                                  .getResult()
                            : Value());
  return success();
}

LogicalResult ReluOp::buildGradient(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  operandGrads.push_back(dy ? ReluGradOp::create(b, getLoc(),
                                                 gradType(getInput()),
                                                 getResult(), dy)
                                  .getResult()
                            : Value());
  return success();
}

LogicalResult
ActivationOp::buildGradient(OpBuilder &b, ArrayRef<Value> resultGrads,
                            SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  operandGrads.push_back(
      dy ? ActivationGradOp::create(b, getLoc(), gradType(getInput()),
                                    getInput(), dy, getKindAttr())
               .getResult()
         : Value());
  return success();
}

LogicalResult SoftmaxOp::buildGradient(OpBuilder &b,
                                       ArrayRef<Value> resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  operandGrads.push_back(
      dy ? SoftmaxGradOp::create(b, getLoc(), gradType(getInput()), getResult(),
                                 dy, getAxisAttr(), getLogAttr())
               .getResult()
         : Value());
  return success();
}

LogicalResult LayerNormOp::buildGradient(OpBuilder &b,
                                         ArrayRef<Value> resultGrads,
                                         SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (noIncomingGradient(*this, dy, operandGrads))
    return success();
  Value dx = LayerNormGradInputOp::create(b, getLoc(), gradType(getInput()),
                                          getInput(), getGamma(), dy,
                                          getEpsilonAttr());
  auto params = LayerNormGradParamsOp::create(b, getLoc(), gradType(getGamma()),
                                              gradType(getBeta()), getInput(),
                                              dy, getEpsilonAttr());
  operandGrads.append({dx, params.getGammaGrad(), params.getBetaGrad()});
  return success();
}

LogicalResult EmbeddingOp::buildGradient(OpBuilder &b,
                                         ArrayRef<Value> resultGrads,
                                         SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  auto table = cast<GlobalType>(getTable().getType());
  operandGrads.push_back(
      dy ? EmbeddingGradOp::create(b, getLoc(), gradType(getTable()), getIds(),
                                   dy, b.getI64IntegerAttr(table.getShape()[0]))
               .getResult()
         : Value());
  operandGrads.push_back(Value()); // ids are integers
  return success();
}

/// Shape ops: the gradient is the upstream gradient reshaped back.
static Value reshapeBack(OpBuilder &b, Location loc, Value input, Value dy) {
  if (!dy)
    return {};
  return ReshapeOp::create(b, loc, gradType(input), dy);
}

LogicalResult FlattenOp::buildGradient(OpBuilder &b,
                                       ArrayRef<Value> resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(reshapeBack(b, getLoc(), getInput(), resultGrads[0]));
  return success();
}

LogicalResult ReshapeOp::buildGradient(OpBuilder &b,
                                       ArrayRef<Value> resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(reshapeBack(b, getLoc(), getInput(), resultGrads[0]));
  return success();
}

LogicalResult TransposeOp::buildGradient(OpBuilder &b,
                                         ArrayRef<Value> resultGrads,
                                         SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (noIncomingGradient(*this, dy, operandGrads))
    return success();
  ArrayRef<int64_t> perm = getPerm();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  operandGrads.push_back(
      TransposeOp::create(b, getLoc(), gradType(getInput()), dy, inverse));
  return success();
}

LogicalResult
SoftmaxCrossEntropyOp::buildGradient(OpBuilder &b, ArrayRef<Value> resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  Value dl = resultGrads[0];
  operandGrads.push_back(
      dl ? SoftmaxCrossEntropyGradOp::create(b, getLoc(), gradType(getLogits()),
                                             getLogits(), getLabels(), dl,
                                             getIgnoreIndexAttr(), getSumAttr())
               .getResult()
         : Value());
  operandGrads.push_back({}); // Integer labels take no gradient.
  return success();
}

LogicalResult Conv2DOp::buildGradient(OpBuilder &b, ArrayRef<Value> resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (noIncomingGradient(*this, dy, operandGrads))
    return success();
  Value dx = Conv2DGradInputOp::create(
      b, getLoc(), gradType(getInput()), dy, getWeight(), getStrideAttr(),
      getPaddingAttr(), getDilationAttr(), getGroupsAttr());
  Value dw = Conv2DGradWeightOp::create(
      b, getLoc(), gradType(getWeight()), getInput(), dy, getStrideAttr(),
      getPaddingAttr(), getDilationAttr(), getGroupsAttr());
  operandGrads.append({dx, dw});
  return success();
}

LogicalResult MaxPool2DOp::buildGradient(OpBuilder &b,
                                         ArrayRef<Value> resultGrads,
                                         SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  operandGrads.push_back(
      dy ? MaxPool2DGradOp::create(b, getLoc(), gradType(getInput()),
                                   getInput(), dy, getKernelAttr(),
                                   getStrideAttr(), getPaddingAttr())
               .getResult()
         : Value());
  return success();
}

LogicalResult AvgPool2DOp::buildGradient(OpBuilder &b,
                                         ArrayRef<Value> resultGrads,
                                         SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  operandGrads.push_back(
      dy ? AvgPool2DGradOp::create(b, getLoc(), gradType(getInput()), dy,
                                   getKernelAttr(), getStrideAttr(),
                                   getPaddingAttr())
               .getResult()
         : Value());
  return success();
}

LogicalResult
GlobalAvgPoolOp::buildGradient(OpBuilder &b, ArrayRef<Value> resultGrads,
                               SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  operandGrads.push_back(
      dy ? GlobalAvgPoolGradOp::create(b, getLoc(), gradType(getInput()), dy)
               .getResult()
         : Value());
  return success();
}

LogicalResult BatchNormOp::buildGradient(OpBuilder &b,
                                         ArrayRef<Value> resultGrads,
                                         SmallVectorImpl<Value> &operandGrads) {
  // The updated running statistics are state, not differentiable outputs.
  Value dy = resultGrads[0];
  if (noIncomingGradient(*this, dy, operandGrads))
    return success();
  if (getInference())
    return emitOpError("eval-mode batch norm (inference) has no gradient "
                       "rule: train with the module in train mode");
  Value dx = BatchNormGradInputOp::create(b, getLoc(), gradType(getInput()),
                                          getInput(), getGamma(), dy,
                                          getEpsilonAttr());
  auto params = BatchNormGradParamsOp::create(b, getLoc(), gradType(getGamma()),
                                              gradType(getBeta()), getInput(),
                                              dy, getEpsilonAttr());
  operandGrads.append(
      {dx, params.getGammaGrad(), params.getBetaGrad(), Value(), Value()});
  return success();
}

/// OneFlow's grad-SBP rule: a value that was broadcast in the forward pass
/// receives a partial-sum gradient (each consumer contributes an addend).
static SBPAttr gradSBP(SBPAttr forward) {
  if (!forward)
    return {};
  SmallVector<SBPDim> dims;
  for (SBPDim d : forward.getDims())
    dims.push_back(d.isBroadcast() ? SBPDim::partial() : d);
  return SBPAttr::get(forward.getContext(), dims);
}

LogicalResult ToGlobalOp::buildGradient(OpBuilder &b,
                                        ArrayRef<Value> resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  auto input = dyn_cast<GlobalType>(getInput().getType());
  if (!input)
    return emitOpError("has no gradient rule for a local input: the "
                       "gradient of a local tensor is not defined");
  if (noIncomingGradient(*this, dy, operandGrads))
    return success();
  GlobalType target = input.withSBP(gradSBP(input.getSbp()));
  operandGrads.push_back(ToGlobalOp::create(b, getLoc(), target, dy));
  return success();
}
