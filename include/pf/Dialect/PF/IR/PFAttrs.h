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
///
/// A split may be grouped, S(axis, g): the axis is read as g equal blocks
/// and every block is split the way S(axis) splits the whole axis, so a
/// rank holds its part of each block, the parts one after the other. This
/// is the layout of a fused projection (nanoGPT's c_attn: q, k and v in one
/// weight) whose output is cut into its g blocks: each block is then split
/// contiguously, as if the g projections were separate (Megatron stores its
/// fused QKV weight interleaved for the same reason).
class SBPDim {
public:
  enum class Kind : int8_t { Split, Broadcast, Partial };

  static SBPDim split(int64_t axis, int64_t groups = 1) {
    return SBPDim(Kind::Split, axis, groups);
  }
  static SBPDim broadcast() { return SBPDim(Kind::Broadcast, -1); }
  static SBPDim partial() { return SBPDim(Kind::Partial, -1); }

  Kind getKind() const { return kind; }
  bool isSplit() const { return kind == Kind::Split; }
  bool isBroadcast() const { return kind == Kind::Broadcast; }
  bool isPartial() const { return kind == Kind::Partial; }
  /// The split axis; only meaningful for isSplit().
  int64_t getAxis() const { return axis; }
  /// The blocks of a grouped split (1: a plain split or not a split).
  int64_t getGroups() const { return groups; }
  bool isGrouped() const { return groups > 1; }
  /// This entry with a split's groups set to `g` (others unchanged).
  SBPDim withGroups(int64_t g) const {
    return isSplit() ? split(axis, g) : *this;
  }

  bool operator==(const SBPDim &o) const {
    return kind == o.kind && axis == o.axis && groups == o.groups;
  }
  bool operator!=(const SBPDim &o) const { return !(*this == o); }

  /// "S(0)", "S(0, 3)", "B" or "P".
  std::string str() const;

private:
  SBPDim(Kind kind, int64_t axis, int64_t groups = 1)
      : kind(kind), axis(axis), groups(groups) {}
  Kind kind;
  int64_t axis;
  int64_t groups;
};

inline llvm::hash_code hash_value(const SBPDim &d) {
  return llvm::hash_combine(static_cast<int>(d.getKind()), d.getAxis(),
                            d.getGroups());
}

inline llvm::raw_ostream &operator<<(llvm::raw_ostream &os, const SBPDim &d) {
  return os << d.str();
}

} // namespace mlir::pf

#include "pf/Dialect/PF/IR/PFEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "pf/Dialect/PF/IR/PFAttrs.h.inc"

#endif // PF_DIALECT_PF_IR_PFATTRS_H
