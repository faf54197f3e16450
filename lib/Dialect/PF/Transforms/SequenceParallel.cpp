//===- SequenceParallel.cpp - sequence parallelism's layouts --------------===//

#include "SequenceParallel.h"

using namespace mlir;
using namespace mlir::pf;

std::optional<int64_t> mlir::pf::sequenceAxis(GlobalType t) {
  if (!t || t.getRank() < 2)
    return std::nullopt;
  return t.getRank() - 2;
}

bool mlir::pf::isSequenceScatter(GlobalType t, SBPAttr want) {
  std::optional<int64_t> seq = sequenceAxis(t);
  if (!seq || !t.getSbp() || want.size() != t.getSbp().size())
    return false;
  bool any = false;
  for (auto [from, to] : llvm::zip(t.getSbp().getDims(), want.getDims())) {
    if (from == to)
      continue;
    if (!from.isPartial())
      return false;
    if (to.isSplit() && (to.getAxis() != *seq || to.isGrouped()))
      return false;
    any |= to.isSplit();
  }
  return any;
}

bool mlir::pf::isSequenceGather(GlobalType t, SBPAttr want) {
  std::optional<int64_t> seq = sequenceAxis(t);
  if (!seq || !t.getSbp() || want.size() != t.getSbp().size())
    return false;
  bool any = false;
  for (auto [from, to] : llvm::zip(t.getSbp().getDims(), want.getDims())) {
    if (from == to)
      continue;
    if (!from.isSplit() || from.getAxis() != *seq || from.isGrouped() ||
        !to.isBroadcast())
      return false;
    any = true;
  }
  return any;
}

bool mlir::pf::isSequenceSlice(GlobalType t, SBPAttr want) {
  std::optional<int64_t> seq = sequenceAxis(t);
  if (!seq || !t.getSbp() || want.size() != t.getSbp().size())
    return false;
  bool any = false;
  for (auto [from, to] : llvm::zip(t.getSbp().getDims(), want.getDims())) {
    if (from == to)
      continue;
    if (!from.isBroadcast() || !to.isSplit() || to.getAxis() != *seq ||
        to.isGrouped())
      return false;
    any = true;
  }
  return any;
}

double mlir::pf::perRankBytes(GlobalType t, SBPAttr sbp) {
  double bytes =
      static_cast<double>(t.getNumElements()) *
      std::max<int64_t>(1, t.getElementType().getIntOrFloatBitWidth() / 8);
  ArrayRef<int64_t> hierarchy = t.getPlacement().getHierarchy();
  for (auto [d, dim] : llvm::enumerate(sbp.getDims()))
    if (dim.isSplit())
      bytes /= static_cast<double>(hierarchy[d]);
  return bytes;
}
