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

#include <array>

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

  /// The operand's global type, which must have a float element type.
  FailureOr<GlobalType> floatGlobal(Value v, StringRef what) {
    FailureOr<GlobalType> t = global(v, what);
    if (failed(t) || failed(isFloat(*t, what)))
      return failure();
    return t;
  }

  /// The global types of the named operands (in their order), which must
  /// share one placement.
  template <size_t N>
  FailureOr<std::array<GlobalType, N>>
  globals(const std::pair<Value, StringRef> (&named)[N]) {
    std::array<GlobalType, N> types;
    bool ok = true;
    for (auto [t, n] : llvm::zip_equal(types, named)) {
      FailureOr<GlobalType> g = global(n.first, n.second);
      ok = succeeded(g) && ok;
      if (succeeded(g))
        t = *g;
    }
    if (!ok || failed(samePlacement(types)))
      return failure();
    return types;
  }

  /// globals() of which the one at `floatAt` (the data, beside labels, ids
  /// or a mask) must have a float element type.
  template <size_t N>
  FailureOr<std::array<GlobalType, N>>
  globals(const std::pair<Value, StringRef> (&named)[N], size_t floatAt) {
    FailureOr<std::array<GlobalType, N>> types = globals(named);
    if (failed(types) ||
        failed(isFloat((*types)[floatAt], named[floatAt].second)))
      return failure();
    return types;
  }

  /// globals() of operands of one float element type (named by the first).
  template <size_t N>
  FailureOr<std::array<GlobalType, N>>
  floatGlobals(const std::pair<Value, StringRef> (&named)[N]) {
    FailureOr<std::array<GlobalType, N>> types = globals(named);
    if (failed(types) || failed(isFloat(types->front(), named[0].second)))
      return failure();
    for (GlobalType t : ArrayRef(*types).drop_front())
      if (failed(sameElementType(types->front(), t, "operand")))
        return failure();
    return types;
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
  FailureOr<std::array<GlobalType, 2>> types =
      inf.globals({{a, aName}, {b, bName}});
  if (failed(types))
    return failure();
  auto [ta, tb] = *types;
  if ((floatB && failed(inf.isFloat(tb, bName))) ||
      failed(inf.sameElementType(ta, tb, "operand")))
    return failure();
  if (ta.getShape() != tb.getShape())
    return inf.error() << "operand shapes differ: "
                       << Inference::shapeStr(ta.getShape()) << " vs "
                       << Inference::shapeStr(tb.getShape());
  results.push_back(resultLike(tb, tb.getShape()));
  return success();
}

/// OP::inferReturnTypes by a helper: FN(location, opName, args...,
/// inferredReturnTypes), the args read from the op's `adaptor`.
#define PF_INFER_RETURN_TYPES(OP, FN, ...)                                     \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> location, Adaptor adaptor,        \
      SmallVectorImpl<Type> &inferredReturnTypes) {                            \
    return FN(location, getOperationName().drop_front(3), __VA_ARGS__,         \
              inferredReturnTypes);                                            \
  }

/// The type of a gradient of `v`: its logical type, layout undecided.
inline GlobalType gradType(Value v) {
  return cast<GlobalType>(v.getType()).withSBP({});
}

/// The opening of a gradient rule: without an incoming gradient `dy` no
/// operand of `op` gets one, and the rule is done (true).
inline bool noIncomingGradient(Operation *op, Value dy,
                               SmallVectorImpl<Value> &operandGrads) {
  if (dy)
    return false;
  operandGrads.append(op->getNumOperands(), Value());
  return true;
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
