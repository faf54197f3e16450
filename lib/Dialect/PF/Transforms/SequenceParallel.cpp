//===- SequenceParallel.cpp - sequence parallelism's layouts --------------===//

#include "SequenceParallel.h"

using namespace mlir;
using namespace mlir::pf;

std::optional<int64_t> mlir::pf::sequenceAxis(GlobalType t) {
  if (!t || t.getRank() < 2)
    return std::nullopt;
  return t.getRank() - 2;
}

namespace {
/// Whether `want` changes some entry of t's layout and `along` accepts each
/// change (from, to) given the sequence axis; `counts` says which accepted
/// changes make it a move of the kind asked (a partial sum staying partial
/// on one axis of a mesh while another scatters does not).
template <typename Along, typename Counts>
bool changesAlongSequence(GlobalType t, SBPAttr want, Along along,
                          Counts counts) {
  std::optional<int64_t> seq = sequenceAxis(t);
  if (!seq || !t.getSbp() || want.size() != t.getSbp().size())
    return false;
  bool any = false;
  for (auto [from, to] : llvm::zip(t.getSbp().getDims(), want.getDims())) {
    if (from == to)
      continue;
    if (!along(from, to, *seq))
      return false;
    any |= counts(to);
  }
  return any;
}

bool onSequence(SBPDim d, int64_t seq) {
  return d.isSplit() && d.getAxis() == seq && !d.isGrouped();
}
} // namespace

bool mlir::pf::isSequenceScatter(GlobalType t, SBPAttr want) {
  return changesAlongSequence(
      t, want,
      [](SBPDim from, SBPDim to, int64_t seq) {
        return from.isPartial() && (!to.isSplit() || onSequence(to, seq));
      },
      [](SBPDim to) { return to.isSplit(); });
}

bool mlir::pf::isSequenceGather(GlobalType t, SBPAttr want) {
  return changesAlongSequence(
      t, want,
      [](SBPDim from, SBPDim to, int64_t seq) {
        return onSequence(from, seq) && to.isBroadcast();
      },
      [](SBPDim) { return true; });
}

bool mlir::pf::isSequenceSlice(GlobalType t, SBPAttr want) {
  return changesAlongSequence(
      t, want,
      [](SBPDim from, SBPDim to, int64_t seq) {
        return from.isBroadcast() && onSequence(to, seq);
      },
      [](SBPDim) { return true; });
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
