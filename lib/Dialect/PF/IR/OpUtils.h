//===- OpUtils.h - shared helpers of the pf op verifiers --------*- C++ -*-===//
//
// Internal to lib/Dialect/PF/IR.
//
//===----------------------------------------------------------------------===//

#ifndef PF_LIB_DIALECT_PF_IR_OPUTILS_H
#define PF_LIB_DIALECT_PF_IR_OPUTILS_H

#include "pf/Dialect/PF/IR/PFOps.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::pf::detail {

/// Shared checks of the ops whose result types are inferred. Every check
/// emits a located error (when a location is known) and returns failure.
class Inference {
public:
  Inference(std::optional<Location> loc, StringRef opName)
      : loc(loc), opName(opName) {}

  /// Emits "'pf.<op>' op <message>" at the op's location.
  InFlightDiagnostic error() {
    if (!loc)
      return InFlightDiagnostic();
    return mlir::emitError(*loc) << "'pf." << opName << "' op ";
  }

  /// The operand's global type, or an error if it has none.
  FailureOr<GlobalType> global(Value v, StringRef what) {
    auto t = dyn_cast<GlobalType>(v.getType());
    if (!t) {
      (void)(error() << what << " must be a global tensor, got "
                     << v.getType());
      return failure();
    }
    return t;
  }

  LogicalResult samePlacement(ArrayRef<GlobalType> types) {
    for (GlobalType t : types.drop_front())
      if (t.getPlacement() != types.front().getPlacement())
        return error() << "operands must share one placement, got "
                       << types.front().getPlacement() << " and "
                       << t.getPlacement() << "; move one with pf.to_global";
    return success();
  }

  LogicalResult sameElementType(GlobalType a, GlobalType b, StringRef what) {
    if (a.getElementType() != b.getElementType())
      return error() << what << " element types differ: " << a.getElementType()
                     << " vs " << b.getElementType();
    return success();
  }

  LogicalResult isFloat(GlobalType t, StringRef what) {
    if (!isa<FloatType>(t.getElementType()))
      return error() << what << " must have a float element type, got "
                     << t.getElementType();
    return success();
  }

  LogicalResult hasRank(GlobalType t, int64_t rank, StringRef what) {
    if (t.getRank() != rank)
      return error() << what << " must have rank " << rank << ", got shape "
                     << shapeStr(t.getShape());
    return success();
  }

  /// Class labels (rank 1) for the rows of logits (rank 2): integers, one
  /// per row.
  LogicalResult labelsFor(GlobalType logits, GlobalType labels) {
    if (!labels.getElementType().isSignlessInteger())
      return error() << "labels must be integers, got "
                     << labels.getElementType();
    if (labels.getShape()[0] != logits.getShape()[0])
      return error() << "batch sizes differ: " << logits.getShape()[0]
                     << " logits rows vs " << labels.getShape()[0] << " labels";
    return success();
  }
  static std::string shapeStr(ArrayRef<int64_t> shape) {
    std::string s = "[";
    llvm::raw_string_ostream os(s);
    llvm::interleaveComma(shape, os);
    os << "]";
    return s;
  }

private:
  std::optional<Location> loc;
  StringRef opName;
};

/// Result type with the operand's placement and no SBP yet: choosing the
/// result layout is pf-infer-sbp's job.
inline GlobalType resultLike(GlobalType t, ArrayRef<int64_t> shape) {
  return GlobalType::get(t.getContext(), shape, t.getElementType(),
                         t.getPlacement(), SBPAttr());
}

/// The result type of an op over two tensors of one placement, element type
/// and shape (an element-wise binary op, or an element-wise gradient (x or y,
/// result_grad) with floatB): a tensor like them.
inline LogicalResult inferSameShape(std::optional<Location> loc,
                                    StringRef opName, Value a, StringRef aName,
                                    Value b, StringRef bName, bool floatB,
                                    SmallVectorImpl<Type> &results) {
  Inference inf(loc, opName);
  FailureOr<GlobalType> ta = inf.global(a, aName);
  FailureOr<GlobalType> tb = inf.global(b, bName);
  if (failed(ta) || failed(tb) || failed(inf.samePlacement({*ta, *tb})) ||
      (floatB && failed(inf.isFloat(*tb, bName))) ||
      failed(inf.sameElementType(*ta, *tb, "operand")))
    return failure();
  if (ta->getShape() != tb->getShape())
    return inf.error() << "operand shapes differ: "
                       << Inference::shapeStr(ta->getShape()) << " vs "
                       << Inference::shapeStr(tb->getShape());
  results.push_back(resultLike(*tb, tb->getShape()));
  return success();
}

/// OP::isCompatibleReturnTypes of an op with inferred result types: any SBP
/// (or none) on the results is compatible (compatibleGlobals).
#define PF_COMPATIBLE_RETURN_TYPES(OP)                                         \
  bool OP::isCompatibleReturnTypes(TypeRange l, TypeRange r) {                 \
    return compatibleGlobals(l, r);                                            \
  }

/// Result types are compatible with the inferred ones when shape, element
/// type and placement agree; any SBP (or none) is allowed.
inline bool compatibleGlobals(TypeRange inferred, TypeRange actual) {
  if (inferred.size() != actual.size())
    return false;
  for (auto [a, b] : llvm::zip(inferred, actual)) {
    auto ga = dyn_cast<GlobalType>(a);
    auto gb = dyn_cast<GlobalType>(b);
    if (!ga || !gb || !ga.isLayoutCompatibleWith(gb))
      return false;
  }
  return true;
}

/// Output extent of a sliding window (convolution or pooling); 0 if the
/// window does not fit.
inline int64_t windowOutput(int64_t in, int64_t kernel, int64_t stride,
                            int64_t pad, int64_t dilation) {
  int64_t span = dilation * (kernel - 1) + 1;
  int64_t padded = in + 2 * pad;
  if (padded < span)
    return 0;
  return (padded - span) / stride + 1;
}

} // namespace mlir::pf::detail

#endif // PF_LIB_DIALECT_PF_IR_OPUTILS_H
