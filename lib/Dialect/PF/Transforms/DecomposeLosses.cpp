//===- DecomposeLosses.cpp - mean losses as partial-sum-friendly parts ----===//
//
// A mean cross-entropy with ignore_index becomes sum / count, so that a
// split batch reduces two scalars instead of gathering the logits.
//
//===----------------------------------------------------------------------===//

#include "pf/Dialect/PF/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#define DEBUG_TYPE "pf-decompose-losses"

namespace mlir::pf {
#define GEN_PASS_DEF_DECOMPOSELOSSESPASS
#include "pf/Dialect/PF/Transforms/Passes.h.inc"
} // namespace mlir::pf

using namespace mlir;
using namespace mlir::pf;

namespace {

struct DecomposeLossesPass
    : public pf::impl::DecomposeLossesPassBase<DecomposeLossesPass> {
  void runOnOperation() override {
    SmallVector<SoftmaxCrossEntropyOp> means;
    getOperation().walk([&](SoftmaxCrossEntropyOp op) {
      if (op.getIgnoreIndex() && !op.getSum())
        means.push_back(op);
    });
    for (SoftmaxCrossEntropyOp op : means) {
      OpBuilder b(op);
      // The new ops keep the original's stage and other discardable facts.
      auto sum = cast<SoftmaxCrossEntropyOp>(b.clone(*op));
      sum.setSum(true);
      auto count = CountKeptOp::create(b, op.getLoc(), op.getLabels(),
                                       op.getIgnoreIndexAttr());
      auto mean = DivOp::create(b, op.getLoc(), sum.getLoss(), count);
      for (Operation *made : {count.getOperation(), mean.getOperation()})
        for (NamedAttribute a : op->getDiscardableAttrs())
          made->setAttr(a.getName(), a.getValue());
      op.getLoss().replaceAllUsesWith(mean.getResult());
      op.erase();
    }
  }
};

} // namespace
