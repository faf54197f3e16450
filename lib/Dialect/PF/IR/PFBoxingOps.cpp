//===- PFBoxingOps.cpp - verifiers of the layout-change ops ---------------===//

#include "pf/Dialect/PF/IR/PFOps.h"

#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace mlir::pf;

/// Ops in a rank's program (after pf-partition-ranks) carry local types;
/// the global checks do not apply there.
static bool inRankProgram(Operation *op) {
  auto module = op->getParentOfType<ModuleOp>();
  return module && module->hasAttr(PFDialect::RankAttrHelper::getNameStr());
}

static LogicalResult verifyGroups(Operation *op, ArrayAttr groups,
                                  PlacementAttr placement) {
  llvm::DenseSet<int64_t> seen;
  int64_t size = -1;
  for (Attribute a : groups) {
    auto g = cast<DenseI64ArrayAttr>(a).asArrayRef();
    if (g.empty() || (size >= 0 && static_cast<int64_t>(g.size()) != size))
      return op->emitOpError("groups must be non-empty and of one size");
    size = g.size();
    for (int64_t r : g) {
      if (!placement.contains(r))
        return op->emitOpError("group rank ")
               << r << " is not in the placement " << placement;
      if (!seen.insert(r).second)
        return op->emitOpError("rank ") << r << " is in two groups";
    }
  }
  if (static_cast<int64_t>(seen.size()) != placement.getNumRanks())
    return op->emitOpError("groups must cover the placement's ")
           << placement.getNumRanks() << " ranks";
  return success();
}

/// Global form of a group collective: same tensor and placement, and every
/// changed SBP entry goes `from` -> `to`.
static LogicalResult verifyGroupOp(Operation *op, ArrayAttr groups, SBPDim from,
                                   SBPDim to, StringRef expect) {
  if (inRankProgram(op))
    return success();
  auto in = cast<GlobalType>(op->getOperand(0).getType());
  auto out = cast<GlobalType>(op->getResult(0).getType());
  if (!in.isLayoutCompatibleWith(out))
    return op->emitOpError("input and result must have the same shape, "
                           "element type and placement");
  if (!in.hasSBP() || !out.hasSBP())
    return op->emitOpError("needs layouts on input and result");
  bool changed = false;
  for (unsigned d = 0; d < in.getSbp().size(); ++d) {
    SBPDim f = in.getSbp()[d], t = out.getSbp()[d];
    if (f == t)
      continue;
    changed = true;
    if (f != from || t != to)
      return op->emitOpError("changes ")
             << in.getSbp() << " to " << out.getSbp() << "; it does " << expect;
  }
  if (!changed)
    return op->emitOpError("does not change the layout ") << in.getSbp();
  return verifyGroups(op, groups, in.getPlacement());
}

/// Success if in and out have the same shape and element type.
static LogicalResult verifySameTensor(Operation *op, GlobalType in,
                                      GlobalType out) {
  if (in.getShape() == out.getShape() &&
      in.getElementType() == out.getElementType())
    return success();
  return op->emitOpError("input and result must have the same shape and "
                         "element type");
}

/// Whether p is the root's single-rank placement.
static bool onlyRoot(PlacementAttr p, int64_t root) {
  return p.getNumRanks() == 1 && p.getRanks()[0] == root;
}

LogicalResult AllReduceOp::verify() {
  return verifyGroupOp(*this, getGroups(), SBPDim::partial(),
                       SBPDim::broadcast(), "P -> B");
}

LogicalResult AllReduceWaitOp::verify() {
  Operation *start = getStarted().getDefiningOp();
  if (!isa_and_nonnull<AllReduceOp, AllGatherOp, ReduceScatterOp>(start))
    start = nullptr;
  IntegerAttr slot =
      start ? PFDialect::AsyncSlotAttrHelper(getContext()).getAttr(start)
            : IntegerAttr();
  if (!slot)
    return emitOpError("waits for a value that is not a started collective (a "
                       "pf.all_reduce, pf.all_gather or pf.reduce_scatter "
                       "with pf.async_slot)");
  StringRef name = start->getName().getStringRef();
  if (slot.getInt() != int64_t(getSlot()))
    return emitOpError("waits on slot ")
           << getSlot() << " but the " << name << " started in slot "
           << slot.getInt();
  if (getInput() != start->getOperand(0))
    return emitOpError("names another value than the ") << name << "'s input";
  if (!getStarted().hasOneUse())
    return emitOpError("is not the only user of the started ")
           << name << " (its result may be read only after the wait)";
  if (getResult().getType() != getStarted().getType())
    return emitOpError("result type ")
           << getResult().getType() << " differs from the " << name << "'s "
           << getStarted().getType();
  return success();
}

LogicalResult ReduceScatterOp::verify() {
  int64_t axis = getAxis();
  return verifyGroupOp(*this, getGroups(), SBPDim::partial(),
                       SBPDim::split(axis), "P -> S(axis)");
}

LogicalResult AllGatherOp::verify() {
  int64_t axis = getAxis();
  return verifyGroupOp(*this, getGroups(), SBPDim::split(axis),
                       SBPDim::broadcast(), "S(axis) -> B");
}

LogicalResult AllToAllOp::verify() {
  int64_t s = getSplitAxis(), c = getConcatAxis();
  if (s == c)
    return emitOpError("split and concat axes must differ");
  return verifyGroupOp(*this, getGroups(), SBPDim::split(c), SBPDim::split(s),
                       "S(concat_axis) -> S(split_axis)");
}

LogicalResult ShardOp::verify() {
  int64_t axis = getAxis();
  return verifyGroupOp(*this, getGroups(), SBPDim::broadcast(),
                       SBPDim::split(axis), "B -> S(axis)");
}

LogicalResult UnshardOp::verify() {
  int64_t axis = getAxis();
  return verifyGroupOp(*this, getGroups(), SBPDim::split(axis),
                       SBPDim::partial(), "S(axis) -> P");
}

LogicalResult KeepOneOp::verify() {
  return verifyGroupOp(*this, getGroups(), SBPDim::broadcast(),
                       SBPDim::partial(), "B -> P");
}

/// Broadcast and reduce: the root is among the ranks; on global values
/// (`global`, the operand or result named `which`, must be there) input and
/// result are one tensor whose layouts `layouts` checks.
template <typename RootedOp>
static LogicalResult
verifyRooted(RootedOp op, Value global, StringRef which,
             function_ref<LogicalResult(GlobalType, GlobalType)> layouts) {
  if (!llvm::is_contained(op.getRanks(), op.getRoot()))
    return op.emitOpError("root ") << op.getRoot() << " is not among the ranks";
  if (inRankProgram(op))
    return success();
  if (!global)
    return op.emitOpError("needs its ") << which << " on global values";
  auto in = cast<GlobalType>(op.getInput().getType());
  auto out = cast<GlobalType>(op.getResult().getType());
  if (failed(verifySameTensor(op, in, out)))
    return failure();
  return layouts(in, out);
}

LogicalResult BroadcastOp::verify() {
  return verifyRooted(
      *this, getInput(), "input",
      [&](GlobalType in, GlobalType out) -> LogicalResult {
        if (!onlyRoot(in.getPlacement(), getRoot()))
          return emitOpError(
              "input must live on the root's single-rank placement");
        if (!out.getPlacement().contains(getRoot()) || !out.hasSBP() ||
            !out.getSbp().isAllBroadcast())
          return emitOpError(
              "result must be B on a placement holding the root");
        return success();
      });
}

LogicalResult ReduceOp::verify() {
  return verifyRooted(
      *this, getResult(), "result",
      [&](GlobalType in, GlobalType out) -> LogicalResult {
        if (!in.hasSBP() || llvm::any_of(in.getSbp().getDims(), [](SBPDim d) {
              return !d.isPartial();
            }))
          return emitOpError("input must be P in every hierarchy dimension");
        if (!onlyRoot(out.getPlacement(), getRoot()))
          return emitOpError(
              "result must live on the root's single-rank placement");
        return success();
      });
}

LogicalResult TransferOp::verify() {
  if (inRankProgram(*this))
    return success();
  auto in = cast<GlobalType>(getInput().getType());
  auto out = cast<GlobalType>(getResult().getType());
  if (failed(verifySameTensor(*this, in, out)))
    return failure();
  size_t rank = in.getRank();
  for (Attribute a : getMoves()) {
    auto m = cast<DenseI64ArrayAttr>(a).asArrayRef();
    if (m.size() != 2 + 2 * rank)
      return emitOpError("each move is [src, dst, offsets, sizes] with ")
             << 2 + 2 * rank << " entries, got " << m.size();
    if (!in.getPlacement().contains(m[0]) || !out.getPlacement().contains(m[1]))
      return emitOpError("move ")
             << m[0] << " -> " << m[1]
             << " names a rank outside the source or destination placement";
    for (size_t i = 0; i < rank; ++i)
      if (m[2 + i] < 0 || m[2 + rank + i] <= 0 ||
          m[2 + i] + m[2 + rank + i] > in.getShape()[i])
        return emitOpError("move box out of bounds on axis ") << i;
  }
  return success();
}

LogicalResult DeviceCopyOp::verify() {
  auto in = cast<GlobalType>(getInput().getType());
  auto out = cast<GlobalType>(getResult().getType());
  if (in.getShape() != out.getShape() ||
      in.getElementType() != out.getElementType() ||
      in.getSbp() != out.getSbp())
    return emitOpError("copies one layout between devices; shape, element "
                       "type and SBP must agree");
  if (in.getPlacement().getRanks() != out.getPlacement().getRanks() ||
      in.getPlacement().getDevice() == out.getPlacement().getDevice())
    return emitOpError("needs the same ranks on two device kinds");
  return success();
}

LogicalResult ExtractBoxOp::verify() {
  auto in = cast<GlobalType>(getInput().getType());
  auto out = cast<GlobalType>(getResult().getType());
  ArrayRef<int64_t> off = getOffsets();
  if (static_cast<int64_t>(off.size()) != in.getRank() ||
      out.getRank() != in.getRank())
    return emitOpError("offsets, input and result need one rank");
  for (int64_t i = 0; i < in.getRank(); ++i)
    if (off[i] < 0 || off[i] + out.getShape()[i] > in.getShape()[i])
      return emitOpError("box out of bounds on axis ") << i;
  return success();
}

LogicalResult AssembleOp::verify() {
  auto out = cast<GlobalType>(getResult().getType());
  if (getOffsets().size() != getPieces().size())
    return emitOpError("needs one offset per piece");
  int64_t covered = 0;
  for (auto [piece, attr] : llvm::zip(getPieces(), getOffsets())) {
    auto p = cast<GlobalType>(piece.getType());
    auto off = cast<DenseI64ArrayAttr>(attr).asArrayRef();
    if (p.getRank() != out.getRank() ||
        static_cast<int64_t>(off.size()) != out.getRank())
      return emitOpError("pieces, offsets and result need one rank");
    for (int64_t i = 0; i < out.getRank(); ++i)
      if (off[i] < 0 || off[i] + p.getShape()[i] > out.getShape()[i])
        return emitOpError("piece out of bounds on axis ") << i;
    covered += p.getNumElements();
  }
  if (covered != out.getNumElements())
    return emitOpError("pieces hold ")
           << covered << " elements but the result has "
           << out.getNumElements();
  return success();
}
