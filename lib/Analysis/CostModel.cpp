//===- CostModel.cpp - FLOP and byte estimates of pf ops ------------------===//

#include "pf/Analysis/CostModel.h"

#include "pf/Dialect/PF/IR/PFOps.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::pf;

namespace {

int64_t numel(Type t) {
  if (auto g = dyn_cast<GlobalType>(t))
    return g.getNumElements();
  if (auto s = dyn_cast<ShapedType>(t); s && s.hasStaticShape())
    return s.getNumElements();
  return 0;
}

ArrayRef<int64_t> shapeOf(Value v) {
  if (auto g = dyn_cast<GlobalType>(v.getType()))
    return g.getShape();
  return {};
}

int64_t resultElems(Operation *op) {
  return op->getNumResults() ? numel(op->getResult(0).getType()) : 0;
}

/// Elements of the filter window of a conv weight [O, C/G, kh, kw].
int64_t filterMacs(Value weight) {
  ArrayRef<int64_t> w = shapeOf(weight);
  return w.size() == 4 ? w[1] * w[2] * w[3] : 1;
}

bool readsParam(Value v) {
  return isa_and_nonnull<ReadParamOp>(v.getDefiningOp());
}

} // namespace

int64_t cost::bytes(Type t) {
  Type elem;
  if (auto g = dyn_cast<GlobalType>(t))
    elem = g.getElementType();
  else if (auto s = dyn_cast<ShapedType>(t))
    elem = s.getElementType();
  if (!elem)
    return 0;
  return numel(t) *
         std::max<int64_t>(1, (elem.getIntOrFloatBitWidth() + 7) / 8);
}

int64_t cost::flops(Operation *op) {
  return llvm::TypeSwitch<Operation *, int64_t>(op)
      .Case([](MatmulOp m) {
        ArrayRef<int64_t> a = shapeOf(m.getA());
        int64_t k =
            a.empty() ? 1 : (m.getTransposeA() ? a[a.size() - 2] : a.back());
        return 2 * resultElems(m) * k;
      })
      .Case([](Conv2DOp c) {
        return 2 * resultElems(c) * filterMacs(c.getWeight());
      })
      .Case([](Conv2DGradInputOp c) {
        return 2 * numel(c->getOperand(0).getType()) *
               filterMacs(c->getOperand(1));
      })
      .Case([](Conv2DGradWeightOp c) {
        return 2 * numel(c->getOperand(1).getType()) *
               filterMacs(c->getResult(0));
      })
      .Case<MaxPool2DOp, AvgPool2DOp>([](auto p) {
        ArrayRef<int64_t> k = p.getKernel();
        return resultElems(p) * k[0] * k[1];
      })
      .Case<MaxPool2DGradOp, AvgPool2DGradOp>([](Operation *p) {
        auto k = p->getAttrOfType<DenseI64ArrayAttr>("kernel");
        int64_t window = k && k.size() == 2 ? k[0] * k[1] : 1;
        return numel(p->getOperand(0).getType()) * window;
      })
      .Case<GlobalAvgPoolOp, ReduceSumOp>(
          [](Operation *p) { return numel(p->getOperand(0).getType()); })
      .Case<BatchNormOp, BatchNormGradInputOp, BatchNormGradParamsOp>(
          [](Operation *p) { return 10 * numel(p->getOperand(0).getType()); })
      .Case<SoftmaxCrossEntropyOp, SoftmaxCrossEntropyGradOp>(
          [](Operation *p) { return 5 * numel(p->getOperand(0).getType()); })
      .Case<SGDUpdateOp>([](Operation *p) { return 4 * resultElems(p); })
      .Case<AdamUpdateOp>([](Operation *p) { return 12 * resultElems(p); })
      .Case<ReadParamOp, WriteParamOp, ConstantOp, ToGlobalOp, FlattenOp,
            ReshapeOp, TransposeOp, ScalarInputOp>(
          [](Operation *) { return int64_t(0); })
      .Default([](Operation *o) -> int64_t {
        // Communication and micro-batch plumbing move data; anything else is
        // counted as one operation per result element.
        StringRef name = o->getName().getStringRef();
        if (o->getNumResults() == 0 || name.contains("send") ||
            name.contains("recv") || name.contains("all_") ||
            name.contains("microbatch") || name.contains("pack") ||
            name.contains("broadcast") || name.contains("transfer") ||
            name.contains("box"))
          return 0;
        return resultElems(o);
      });
}

cost::TrainFlops cost::trainFlops(Operation *op) {
  TrainFlops t;
  t.f = flops(op);
  llvm::TypeSwitch<Operation *>(op)
      .Case([&](MatmulOp m) {
        bool weightA = readsParam(m.getA()), weightB = readsParam(m.getB());
        t.b = (weightA && weightB) ? 0 : t.f * ((weightA || weightB) ? 1 : 2);
        t.w = t.f * ((weightA ? 1 : 0) + (weightB ? 1 : 0));
      })
      .Case([&](Conv2DOp c) {
        t.b = t.f;
        t.w = readsParam(c.getWeight()) ? t.f : 0;
        if (!readsParam(c.getWeight()))
          t.b += t.f;
      })
      .Case([&](BiasAddOp b) {
        t.b = resultElems(b);
        t.w = resultElems(b);
      })
      .Case([&](BatchNormOp b) {
        t.b = t.f;
        t.w = numel(b->getOperand(0).getType());
      })
      .Default([&](Operation *o) { t.b = t.f; });
  return t;
}
