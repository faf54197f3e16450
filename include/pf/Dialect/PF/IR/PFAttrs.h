//===- PFAttrs.h - PipeFlow attributes --------------------------*- C++ -*-===//

#ifndef PF_DIALECT_PF_IR_PFATTRS_H
#define PF_DIALECT_PF_IR_PFATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir::pf {

/// One entry of an SBP signature: Split(axis), Broadcast or Partial-sum.
class SBPDim {
public:
  enum class Kind : int8_t { Split, Broadcast, Partial };

  static SBPDim split(int64_t axis) { return SBPDim(Kind::Split, axis); }
  static SBPDim broadcast() { return SBPDim(Kind::Broadcast, -1); }
  static SBPDim partial() { return SBPDim(Kind::Partial, -1); }

  Kind getKind() const { return kind; }
  bool isSplit() const { return kind == Kind::Split; }
  bool isBroadcast() const { return kind == Kind::Broadcast; }
  bool isPartial() const { return kind == Kind::Partial; }
  /// The split axis; only meaningful for isSplit().
  int64_t getAxis() const { return axis; }

  bool operator==(const SBPDim &o) const {
    return kind == o.kind && axis == o.axis;
  }
  bool operator!=(const SBPDim &o) const { return !(*this == o); }

  /// "S(0)", "B" or "P".
  std::string str() const;

private:
  SBPDim(Kind kind, int64_t axis) : kind(kind), axis(axis) {}
  Kind kind;
  int64_t axis;
};

inline llvm::hash_code hash_value(const SBPDim &d) {
  return llvm::hash_combine(static_cast<int>(d.getKind()), d.getAxis());
}

inline llvm::raw_ostream &operator<<(llvm::raw_ostream &os, const SBPDim &d) {
  return os << d.str();
}

} // namespace mlir::pf

#include "pf/Dialect/PF/IR/PFEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "pf/Dialect/PF/IR/PFAttrs.h.inc"

#endif // PF_DIALECT_PF_IR_PFATTRS_H
