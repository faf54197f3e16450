//===- SBPUtils.h - n-D signatures, boxing costs, shard boxes ---*- C++ -*-===//
//
// Shared by pf-infer-sbp, pf-insert-boxing, pf-lower-boxing and
// pf-partition-ranks.
//
//===----------------------------------------------------------------------===//

#ifndef PF_DIALECT_PF_IR_SBPUTILS_H
#define PF_DIALECT_PF_IR_SBPUTILS_H

#include "pf/Dialect/PF/IR/PFOps.h"

namespace mlir::pf {

/// An n-D signature: one SBP (one entry per hierarchy dimension) per
/// operand and per result.
struct NDSBPSignature {
  SmallVector<SBPAttr> operands;
  SmallVector<SBPAttr> results;
};

/// True if `sbp` lays out a tensor of `shape` over `placement`: one entry per
/// hierarchy dimension, split axes in range, split dimensions divisible.
bool isValidLayout(ArrayRef<int64_t> shape, PlacementAttr placement,
                   SBPAttr sbp);

/// The op's 1-D signatures (the all-B one included); empty if the op does
/// not implement SBPOpInterface.
SmallVector<SBPSignature> get1DSignatures(Operation *op);

/// The op's n-D signatures on `placement`, in preference order: products of
/// 1-D signatures, one per hierarchy dimension (a dimension of one rank
/// only takes the all-B signature), kept when every operand and result
/// layout is valid for its shape.
SmallVector<NDSBPSignature> getNDSBPSignatures(Operation *op,
                                               PlacementAttr placement);

/// Bytes per rank that an op's own lowering moves when its operands have
/// the layouts `operands` (0 for every op but one): the cross-entropy split
/// by class all-reduces its rows' maxima (floats) and sums of exponentials
/// and label logits (doubles; its gradient only the sums) among the ranks
/// holding one row's classes. `groupSize` (optional) gets their number.
double internalCommBytes(Operation *op, ArrayRef<SBPAttr> operands,
                         PlacementAttr placement, int64_t *groupSize = nullptr);

/// What one hierarchy dimension's transition costs in bytes per rank on a
/// group of `n` ranks holding `bytes` bytes (the tensor as the group sees
/// it), by DESIGN.md's table. `to` may equal `from` (0).
double transitionBytes(SBPDim from, SBPDim to, int64_t n, double bytes);

/// One step of a layout change within a placement, as pf-lower-boxing emits
/// it: hierarchy dimension `dim` changes from `from` to `to` within its
/// groups, or (dim = kFlatStep) the whole flattened placement does (both
/// layouts are one entry repeated), or (dim = kExchangeStep) the ranks
/// exchange box intersections point to point (planExchange); `after` is the
/// layout once done and `bytes` what the step moves per rank.
struct BoxingStep {
  static constexpr int64_t kFlatStep = -1;
  static constexpr int64_t kExchangeStep = -2;
  int64_t dim;
  SBPDim from, to;
  SBPAttr after;
  double bytes;
};

/// The steps taking `type` (on its placement) from layout `from` to `to`:
/// one collective over all ranks when both layouts are one entry repeated;
/// else dimension by dimension, innermost first among the dimensions that
/// may change (no later dimension splits an axis they touch, so the rank's
/// data stays a plain sub-block), through all-B when none may; and on a
/// hierarchy, when neither layout has a partial entry and that moves less,
/// one exchange of box intersections instead (e.g. (B, S(0)) -> (S(0),
/// S(0)) on 2x2: T/4 to two ranks, where gathering and re-slicing moves
/// T/2). The one plan both SBP inference's prices (boxingBytes) and the
/// lowering follow.
SmallVector<BoxingStep> planBoxing(GlobalType type, SBPAttr from, SBPAttr to);

/// Bytes per rank of changing `type`'s layout from `from` to `to` on its
/// placement: the sum of planBoxing's steps, i.e. what the lowering moves.
double boxingBytes(GlobalType type, SBPAttr from, SBPAttr to);

/// Bytes per rank of moving `from` to another placement as `to`: the sum of
/// planTransfer's parts, i.e. what the lowering moves.
double transferBytes(GlobalType from, GlobalType to);

/// The same layout with every partial entry read as B.
SBPAttr withoutPartial(SBPAttr sbp);
bool hasPartial(SBPAttr sbp);
/// Whether some entry of `sbp` is a grouped split.
bool hasGrouped(SBPAttr sbp);

/// A box of a logical tensor: per-axis offsets and sizes.
struct Box {
  SmallVector<int64_t> offsets;
  SmallVector<int64_t> sizes;
  /// Under a grouped split S(axis, g) a rank's box is g parts: part k has
  /// `sizes` but sizes[groupAxis] / groups, and `offsets` but
  /// offsets[groupAxis] + k * groupStride (the parts lie one after the
  /// other along groupAxis in the rank's local tensor).
  int64_t groupAxis = -1, groups = 1, groupStride = 0;
  bool isGrouped() const { return groups > 1; }
  /// The intersection with `other`; empty sizes (some 0) if disjoint.
  Box intersect(const Box &other) const;
  bool isEmpty() const;
  int64_t numElements() const;
};

/// World rank `src` sends the logical box `box` to world rank `dst` (a local
/// copy when they are equal).
struct BoxMove {
  int64_t src, dst;
  Box box;
};

/// Point-to-point moves giving every rank of `to`'s placement its box of the
/// tensor (partial entries of `to` read as B) from the ranks of `from`'s
/// placement (no partial entries), and the most bytes any rank receives.
/// Each destination takes a piece from itself when it holds it, else from
/// one of its holders (spread by destination).
struct Exchange {
  SmallVector<BoxMove> moves;
  double bytes = 0;
};
Exchange planExchange(GlobalType from, GlobalType to);

/// How a value moves to another placement (pf-lower-boxing; priced by
/// transferBytes).
struct TransferPlan {
  enum class Kind {
    Broadcast,  // one rank to a placement holding it, all-B: pf.broadcast
    Reduce,     // all-P to one of its ranks: pf.reduce
    DeviceCopy, // cpu <-> cuda on the same ranks: reduce partial sums (to
                // `reduced`), change the layout, pf.device_copy
    Exchange,   // reduce partial sums in place (to `reduced`), then moves
  };
  Kind kind;
  /// Exchange: the source layout after reducing partial entries; each P
  /// becomes B (all-reduce) or S(axis) (reduce-scatter), whichever moves
  /// fewer bytes in all (a reduce-scatter then a transfer of the pieces
  /// moves half of an all-reduce first).
  SBPAttr reduced;
  Exchange exchange;
  /// Broadcast, Reduce, DeviceCopy: what the one op moves per rank.
  double opBytes = 0;
};
TransferPlan planTransfer(GlobalType from, GlobalType to);

/// The part of the logical tensor that the rank at row-major position `pos`
/// of the placement holds under `sbp` (hierarchy dimension 0 splits first,
/// later dimensions split the piece further). Partial entries do not
/// change the box: the rank holds an addend of the whole box.
Box shardBox(ArrayRef<int64_t> shape, PlacementAttr placement, SBPAttr sbp,
             int64_t pos);

/// The groups of one hierarchy dimension: for every combination of the
/// other dimensions' coordinates, the ranks along `dim` (in order).
SmallVector<SmallVector<int64_t>> hierarchyGroups(PlacementAttr placement,
                                                  unsigned dim);

/// The same layout with entry `dim` replaced.
SBPAttr withDim(SBPAttr sbp, unsigned dim, SBPDim entry);

/// Groups as an attribute: [[0, 1], [2, 3]].
ArrayAttr groupsAttr(MLIRContext *ctx, ArrayRef<SmallVector<int64_t>> groups);

/// A groups attribute (groupsAttr) as text for reports: "[[0, 1], [2, 3]]".
std::string groupsString(ArrayAttr groups);

/// A global tensor's shape and element type as text: "16x784xf32".
std::string shapeString(GlobalType type);

} // namespace mlir::pf

#endif // PF_DIALECT_PF_IR_SBPUTILS_H
