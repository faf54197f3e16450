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

/// What one hierarchy dimension's transition costs in bytes per rank on a
/// group of `n` ranks holding `bytes` bytes (the tensor as the group sees
/// it), by DESIGN.md's table. `to` may equal `from` (0).
double transitionBytes(SBPDim from, SBPDim to, int64_t n, double bytes);

/// One step of a layout change within a placement, as pf-lower-boxing emits
/// it: hierarchy dimension `dim` changes from `from` to `to` within its
/// groups, or (dim = -1) the whole flattened placement does (both layouts
/// are one entry repeated); `after` is the layout once done and `bytes`
/// what the step moves per rank.
struct BoxingStep {
  int64_t dim;
  SBPDim from, to;
  SBPAttr after;
  double bytes;
};

/// The steps taking `type` (on its placement) from layout `from` to `to`:
/// one collective over all ranks when both layouts are one entry repeated;
/// else dimension by dimension, innermost first among the dimensions that
/// may change (no later dimension splits an axis they touch, so the rank's
/// data stays a plain sub-block); when none may, through all-B. The one
/// plan both SBP inference's prices (boxingBytes) and the lowering follow.
SmallVector<BoxingStep> planBoxing(GlobalType type, SBPAttr from, SBPAttr to);

/// Bytes per rank of changing `type`'s layout from `from` to `to` on its
/// placement: the sum of planBoxing's steps, i.e. what the lowering moves.
double boxingBytes(GlobalType type, SBPAttr from, SBPAttr to);

/// Bytes the busiest receiving rank gets when `from` moves to another
/// placement as `to` (partial sums reduced first).
double transferBytes(GlobalType from, GlobalType to);

/// A box of a logical tensor: per-axis offsets and sizes.
struct Box {
  SmallVector<int64_t> offsets;
  SmallVector<int64_t> sizes;
  /// The intersection with `other`; empty sizes (some 0) if disjoint.
  Box intersect(const Box &other) const;
  bool isEmpty() const;
  int64_t numElements() const;
};

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
