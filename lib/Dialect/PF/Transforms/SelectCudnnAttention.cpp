//===- SelectCudnnAttention.cpp - which attention goes to cuDNN -----------===//
//
// On GPU ranks (pf-compile-gpu-pipeline runs it before
// pf-widen-low-precision), each pf.attention and pf.attention_grad is
// marked with the decision, `pf.cudnn_attention`: "bf16" or "f16" where
// cuDNN 9's fused flash attention takes it (the op then keeps its
// low-precision operands, LowPrecision.h, and lowers to
// pfrt_k_attention_typed(_grad), whose GPU twins are cuDNN's), else
// "kernel: <why>" (the op is widened and runs the float32 flash kernel as
// before). What cuDNN's graphs take (runtime/src/cuda/CudnnGraph.h): Q, K,
// V (and O, dO, the gradients) all bf16 or all f16, float32 stats, head
// dims multiples of 8 up to 128, no dropout (its draw is not our
// layout-independent Philox mask), no mask or an additive one whole over
// [T, S] (broadcast over B and H only; a bf16/f16 one is cast exactly to
// the float32 bias cuDNN's graph reads), causal only on whole queries
// (cuDNN's mask has no query offset). Boolean masks keep the kernel
// (decided: a select on a bias would need a [T, S] float32 tensor the
// flash kernel does not).
//
//===----------------------------------------------------------------------===//

#include "pf/Dialect/PF/IR/LowPrecision.h"
#include "pf/Dialect/PF/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace mlir::pf {
#define GEN_PASS_DEF_SELECTCUDNNATTENTIONPASS
#include "pf/Dialect/PF/Transforms/Passes.h.inc"
} // namespace mlir::pf

using namespace mlir;
using namespace mlir::pf;

namespace {

Type elementOf(Value v) {
  return cast<GlobalType>(v.getType()).getElementType();
}

/// Why cuDNN cannot take `op` ("" where it can). `lowTyped`: the values
/// that must all be of Q's low-precision type.
template <typename OpTy>
std::string refusal(OpTy op, ArrayRef<Value> lowTyped) {
  Type q = elementOf(op.getQuery());
  if (op.getDropoutP().convertToDouble() > 0.0)
    return "dropout (cuDNN's draw is not the layout-independent Philox mask)";
  if (!isLowPrecision(q))
    return "float32 (cuDNN's fused attention takes bf16 or f16)";
  for (Value v : lowTyped)
    if (elementOf(v) != q)
      return "mixed dtypes";
  auto shape = [](Value v) { return cast<GlobalType>(v.getType()).getShape(); };
  ArrayRef<int64_t> qs = shape(op.getQuery()), ks = shape(op.getKey()),
                    vs = shape(op.getValue());
  for (int64_t d : {qs[3], vs[3]})
    if (d % 8 != 0 || d > 128)
      return "head dim " + std::to_string(d) +
             " (cuDNN takes a multiple of 8 up to 128)";
  if (Value m = op.getMask()) {
    Type e = elementOf(m);
    if (e.isInteger(1))
      return "boolean mask";
    ArrayRef<int64_t> ms = shape(m);
    if (ms[2] != qs[2] || ms[3] != ks[2])
      return "mask broadcast over queries or keys";
  }
  if (op.getCausal()) {
    auto logical = op->template getAttrOfType<DenseI64ArrayAttr>(
        PFDialect::LogicalShapeAttrHelper::getNameStr());
    auto offset = op->template getAttrOfType<DenseI64ArrayAttr>(
        PFDialect::ShardOffsetAttrHelper::getNameStr());
    if (logical && offset && (offset[2] != 0 || logical[2] != qs[2]))
      return "causal on a shard of the queries";
  }
  return "";
}

/// Marks op with the decision; a bf16/f16 additive mask of an op given to
/// cuDNN is cast (exactly) to the float32 bias cuDNN's graph reads.
void mark(Operation *op, Value mask, const std::string &why, Type q) {
  std::string v =
      why.empty() ? (q.isBF16() ? "bf16" : "f16") : "kernel: " + why;
  op->setAttr("pf.cudnn_attention", StringAttr::get(op->getContext(), v));
  if (!why.empty() || !mask || !isLowPrecision(mask.getType()))
    return;
  auto g = cast<GlobalType>(mask.getType());
  OpBuilder b(op);
  auto wide = CastOp::create(b, op->getLoc(),
                             GlobalType::get(g.getShape(),
                                             Float32Type::get(op->getContext()),
                                             g.getPlacement(), g.getSbp()),
                             mask);
  op->replaceUsesOfWith(mask, wide.getResult());
}

struct SelectCudnnAttentionPass
    : public pf::impl::SelectCudnnAttentionPassBase<SelectCudnnAttentionPass> {
  void runOnOperation() override {
    getOperation().walk([&](Operation *op) {
      if (auto a = dyn_cast<AttentionOp>(op))
        mark(op, a.getMask(),
             refusal(a, {a.getKey(), a.getValue(), a.getResult()}),
             elementOf(a.getQuery()));
      else if (auto g = dyn_cast<AttentionGradOp>(op))
        mark(op, g.getMask(),
             refusal(g, {g.getKey(), g.getValue(), g.getOutput(),
                         g.getResultGrad(), g.getQueryGrad(), g.getKeyGrad(),
                         g.getValueGrad()}),
             elementOf(g.getQuery()));
    });
  }
};

} // namespace
