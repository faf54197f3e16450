//===- LowPrecisionGradients.cpp - gradient reductions in bf16/f16 --------===//
//
// Mixed precision keeps gradients float32 (master weights); with
// `gradient-dtype=bf16|f16` only their data-parallel sum moves 2 bytes an
// element: each rank rounds its f32 gradient to the low type, the ranks
// sum the low values (the runtime's sums: pfrt_all_reduce_sum_dtype, and
// under ZeRO-2/3 pfrt_box_reduce_scatter_dtype), and the sum (or this
// rank's shard of it) is widened back to f32 before the buffer or the
// update reads it.
//
//===----------------------------------------------------------------------===//

#include "pf/Dialect/PF/Transforms/LowPrecisionGradients.h"
#include "pf/Dialect/PF/IR/PFOps.h"
#include "pf/Dialect/PF/IR/SBPUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

using namespace mlir;
using namespace mlir::pf;

namespace {

/// Whether `move` is a gradient's data-parallel sum: a layout change of a
/// float32 global tensor on one placement, in the update or (ZeRO-2/3's
/// gradient shards) in the backward_weight phase, whose every boxing step
/// reduces partial sums: an all-reduce (P -> B, in the update only: the
/// backward's all-reduces are widened) or a reduce-scatter (P -> S).
bool isGradientSum(ToGlobalOp move) {
  StringAttr phase =
      PFDialect::PhaseAttrHelper(move.getContext()).getAttr(move);
  auto from = dyn_cast<GlobalType>(move.getInput().getType());
  auto to = cast<GlobalType>(move.getResult().getType());
  if (!phase || !from || !from.getElementType().isF32() || !from.hasSBP() ||
      !to.hasSBP() || from.getPlacement() != to.getPlacement() ||
      from.getShape() != to.getShape())
    return false;
  bool update = phase.getValue() == "update";
  if (!update && phase.getValue() != "backward_weight")
    return false;
  SmallVector<BoxingStep> steps = planBoxing(from, from.getSbp(), to.getSbp());
  return !steps.empty() && llvm::all_of(steps, [&](const BoxingStep &step) {
    if (step.dim == BoxingStep::kExchangeStep || !step.from.isPartial())
      return false;
    if (step.to.isSplit())
      return !step.to.isGrouped();
    return update && step.to.isBroadcast();
  });
}

GlobalType withElementType(GlobalType t, Type element) {
  return GlobalType::get(t.getContext(), t.getShape(), element,
                         t.getPlacement(), t.getSbp());
}

struct LowPrecisionGradientsPass
    : public PassWrapper<LowPrecisionGradientsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LowPrecisionGradientsPass)

  explicit LowPrecisionGradientsPass(GradientDtype dtype) : dtype(dtype) {}

  StringRef getArgument() const override {
    return "pf-low-precision-gradients";
  }
  StringRef getDescription() const override {
    return "gradient all-reduces and reduce-scatters in bf16 or f16 "
           "(gradient-dtype)";
  }

  void runOnOperation() override {
    if (dtype == GradientDtype::F32)
      return;
    Builder builder(&getContext());
    Type low = dtype == GradientDtype::BF16 ? Type(builder.getBF16Type())
                                            : Type(builder.getF16Type());
    SmallVector<ToGlobalOp> moves;
    getOperation().walk([&](ToGlobalOp move) {
      if (isGradientSum(move))
        moves.push_back(move);
    });
    for (ToGlobalOp move : moves) {
      auto from = cast<GlobalType>(move.getInput().getType());
      auto to = cast<GlobalType>(move.getResult().getType());
      OpBuilder b(move);
      Location loc = move.getLoc();
      auto down =
          CastOp::create(b, loc, withElementType(from, low), move.getInput());
      auto sum = ToGlobalOp::create(b, loc, withElementType(to, low),
                                    down.getResult());
      auto up = CastOp::create(b, loc, to, sum.getResult());
      for (Operation *op :
           {down.getOperation(), sum.getOperation(), up.getOperation()})
        op->setDiscardableAttrs(move->getDiscardableAttrDictionary());
      move.getResult().replaceAllUsesWith(up.getResult());
      move->erase();
    }
  }

  GradientDtype dtype;
};

} // namespace

std::unique_ptr<Pass>
mlir::pf::createLowPrecisionGradientsPass(GradientDtype dtype) {
  return std::make_unique<LowPrecisionGradientsPass>(dtype);
}
