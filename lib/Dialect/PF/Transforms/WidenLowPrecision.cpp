//===- WidenLowPrecision.cpp - bf16/f16 storage, float32 arithmetic -------===//
//
// Every PF op that reads or makes a bf16 or f16 value (but the casts and
// the ops that only move bytes, LowPrecision.h) becomes the same op on
// float32 values between casts: each low-precision operand cast to f32,
// the op with f32 result types, each result cast back. So the kernels
// compute in float32 and the values between ops (the activations the
// backward keeps, what is sent) stay 2 bytes, and every op works in bf16
// and f16 without a kernel of its own. A bf16/f16 constant becomes an f32
// constant of the same (exactly representable) values, read directly by
// the widened ops.
//
// With keep-gemms (the GPU pipeline's choice) a pf.matmul whose operands
// are bf16 (or both f16) and whose rows are 16-byte multiples stays on its
// low-precision operands, a typed GEMM (cuBLASLt on tensor cores, float32
// compute); when only casts to f32 read its result, it makes the f32
// result itself (the casts go: no rounding to bf16 in between). The
// decision is recorded as `pf.typed_gemm = "<operands>-><result>"`.
//
//===----------------------------------------------------------------------===//

#include "pf/Dialect/PF/IR/LowPrecision.h"
#include "pf/Dialect/PF/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"

#define DEBUG_TYPE "pf-widen-low-precision"

namespace mlir::pf {
#define GEN_PASS_DEF_WIDENLOWPRECISIONPASS
#include "pf/Dialect/PF/Transforms/Passes.h.inc"
} // namespace mlir::pf

using namespace mlir;
using namespace mlir::pf;

namespace {

/// `t` with an f32 element type where it has a bf16 or f16 one.
Type widened(Type t) {
  auto g = dyn_cast<GlobalType>(t);
  if (!g || !isLowPrecision(g))
    return t;
  return GlobalType::get(g.getShape(), Float32Type::get(t.getContext()),
                         g.getPlacement(), g.getSbp());
}

/// The attribute a kept (typed) GEMM carries: "bf16->bf16", "bf16->f32".
constexpr StringLiteral kTypedGemm = "pf.typed_gemm";

StringRef elementName(Type t) {
  Type e = cast<GlobalType>(t).getElementType();
  return e.isBF16() ? "bf16" : e.isF16() ? "f16" : "f32";
}

/// Whether keep-gemms keeps `op`: a pf.matmul on two bf16 (or two f16)
/// operands with a result of their type, every matrix's rows (the last
/// dimension: lda, ldb, ldc) a multiple of 8 elements, so that each row
/// and batch of the typed GEMM starts 16-byte aligned (tensor cores; the
/// runtime refuses less). Others are widened as every op is.
bool keepsTypedGemm(Operation *op) {
  auto mm = dyn_cast<MatmulOp>(op);
  if (!mm)
    return false;
  Type a = mm.getA().getType(), b = mm.getB().getType(),
       c = mm.getResult().getType();
  if (!isLowPrecision(a) || elementName(a) != elementName(b) ||
      elementName(a) != elementName(c))
    return false;
  for (Type t : {a, b, c}) {
    ArrayRef<int64_t> shape = cast<GlobalType>(t).getShape();
    if (shape.empty() || shape.back() % 8 != 0)
      return false;
  }
  return true;
}

/// Copies `from`'s discardable attributes (stage, phase, micro-batch tags)
/// onto `to`, so the casts belong to the op's action; not where the op's
/// box sits in its logical tensor (pf-partition-ranks records it for the
/// op itself: dropout draws, causal rows), nor an attention's cuDNN
/// decision.
void copyTags(Operation *from, Operation *to) {
  for (NamedAttribute a : from->getDiscardableAttrs())
    if (!isa<CastOp>(to) ||
        (a.getName() != PFDialect::LogicalShapeAttrHelper::getNameStr() &&
         a.getName() != PFDialect::ShardOffsetAttrHelper::getNameStr() &&
         a.getName() != PFDialect::CudnnAttentionAttrHelper::getNameStr()))
      to->setAttr(a.getName(), a.getValue());
}

struct WidenLowPrecisionPass
    : public pf::impl::WidenLowPrecisionPassBase<WidenLowPrecisionPass> {
  using WidenLowPrecisionPassBase::WidenLowPrecisionPassBase;
  /// The f32 constants that replaced bf16/f16 ones, by the cast back to
  /// the low type that now stands for the old constant.
  DenseMap<Value, Value> constantOf;

  /// A bf16/f16 constant: the same values in an f32 constant (exact), and
  /// a cast back for the users that keep the low type.
  LogicalResult widenConstant(ConstantOp op) {
    auto dense = dyn_cast<DenseFPElementsAttr>(op.getValue());
    if (!dense)
      return op.emitOpError("pf-widen-low-precision: a bf16/f16 constant "
                            "must be a dense value");
    Type f32 = Float32Type::get(op.getContext());
    auto valueType = cast<ShapedType>(dense.getType()).clone(f32);
    SmallVector<APFloat> values;
    for (APFloat v : dense.getValues<APFloat>()) {
      bool losesInfo = false;
      v.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven,
                &losesInfo);
      values.push_back(v);
    }
    OpBuilder b(op);
    auto wide = ConstantOp::create(b, op.getLoc(), widened(op.getType()),
                                   DenseElementsAttr::get(valueType, values));
    auto back = CastOp::create(b, op.getLoc(), op.getType(), wide);
    copyTags(op, wide);
    copyTags(op, back);
    op.getResult().replaceAllUsesWith(back.getResult());
    constantOf[back.getResult()] = wide.getResult();
    op.erase();
    return success();
  }

  /// `op` on f32 values between casts.
  LogicalResult widen(Operation *op) {
    if (op->getNumRegions() != 0)
      return op->emitOpError("pf-widen-low-precision: cannot widen an op "
                             "with regions");
    OpBuilder b(op);
    Location loc = op->getLoc();
    IRMapping mapping;
    for (Value v : op->getOperands()) {
      if (!isLowPrecision(v.getType()) || mapping.contains(v))
        continue;
      Value wide = constantOf.lookup(v);
      if (!wide) {
        auto cast = CastOp::create(b, loc, widened(v.getType()), v);
        copyTags(op, cast);
        wide = cast.getResult();
      }
      mapping.map(v, wide);
    }
    Operation *wideOp = b.clone(*op, mapping);
    b.setInsertionPointAfter(wideOp);
    for (auto [old, now] :
         llvm::zip_equal(op->getResults(), wideOp->getResults())) {
      if (!isLowPrecision(old.getType()))
        continue;
      now.setType(widened(old.getType()));
      auto back = CastOp::create(b, loc, old.getType(), now);
      copyTags(op, back);
      old.replaceAllUsesWith(back.getResult());
    }
    op->replaceAllUsesWith(wideOp->getResults()); // the f32 results left
    op->erase();
    return success();
  }

  /// A kept GEMM whose result only casts to f32 read: the GEMM makes the
  /// f32 result (float32 output of the typed GEMM), the casts go.
  void foldResultCasts(MatmulOp mm) {
    Value r = mm.getResult();
    Type wide = widened(r.getType());
    bool onlyCasts = !r.use_empty() && llvm::all_of(r.getUsers(), [&](auto *u) {
      return isa<CastOp>(u) && u->getResult(0).getType() == wide;
    });
    if (onlyCasts) {
      for (Operation *cast : llvm::to_vector(r.getUsers())) {
        cast->getResult(0).replaceAllUsesWith(r);
        cast->erase();
      }
      r.setType(wide);
    }
    mm->setAttr(kTypedGemm, StringAttr::get(mm.getContext(),
                                            (elementName(mm.getA().getType()) +
                                             "->" + elementName(r.getType()))
                                                .str()));
  }

  void runOnOperation() override {
    constantOf.clear();
    SmallVector<MatmulOp> kept;
    SmallVector<ConstantOp> constants;
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (auto c = dyn_cast<ConstantOp>(op); c && isLowPrecision(c.getType()))
        constants.push_back(c);
      else if (keepGemms && keepsTypedGemm(op))
        kept.push_back(cast<MatmulOp>(op));
      else if (!keepsLowPrecision(op) && touchesLowPrecision(op))
        ops.push_back(op);
    });
    for (ConstantOp c : constants)
      if (failed(widenConstant(c)))
        return signalPassFailure();
    for (Operation *op : ops)
      if (failed(widen(op)))
        return signalPassFailure();
    for (MatmulOp mm : kept)
      foldResultCasts(mm);
    // The casts back of constants that only widened ops read.
    for (auto [back, wide] : constantOf)
      if (back.use_empty())
        back.getDefiningOp()->erase();
  }
};

} // namespace
