//===- SBPRules.cpp - the 1-D SBP signatures of every op ------------------===//
//
// Each rule lists the layouts in which running the op on every rank's local
// data computes the logical op, preferred (data-parallel) first. The all-B
// signature is added by get1DSignatures when a rule leaves it out.
//
// Conventions: S(k) = split of logical axis k, B = broadcast, P = partial
// sum. P passes only through ops that are linear in that operand (never
// through relu, pooling maxima or the loss).
//
//===----------------------------------------------------------------------===//

#include "pf/Dialect/PF/IR/PFOps.h"

using namespace mlir;
using namespace mlir::pf;

namespace {
const SBPDim B = SBPDim::broadcast();
const SBPDim P = SBPDim::partial();
SBPDim S(int64_t axis) { return SBPDim::split(axis); }

int64_t rankOf(Value v) { return cast<GlobalType>(v.getType()).getRank(); }

void add(SmallVectorImpl<SBPSignature> &sigs, ArrayRef<SBPDim> operands,
         ArrayRef<SBPDim> results) {
  sigs.push_back({SmallVector<SBPDim>(operands), SmallVector<SBPDim>(results)});
}

/// Element-wise unary op of rank r: S(k) for every axis, optionally P.
void unary(SmallVectorImpl<SBPSignature> &sigs, int64_t rank, bool linear) {
  for (int64_t k = 0; k < rank; ++k)
    add(sigs, {S(k)}, {S(k)});
  if (linear)
    add(sigs, {P}, {P});
}

/// Gradient (x or y, dy) -> dx of an element-wise unary op of rank r: S(k)
/// for every axis, and linear in dy.
void unaryGrad(SmallVectorImpl<SBPSignature> &sigs, int64_t rank) {
  for (int64_t k = 0; k < rank; ++k)
    add(sigs, {S(k), S(k)}, {S(k)});
  add(sigs, {B, P}, {P});
}
} // namespace

//===----------------------------------------------------------------------===//
// Forward ops
//===----------------------------------------------------------------------===//

void MatmulOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &sigs) {
  int64_t ra = rankOf(getA()), rb = rankOf(getB());
  bool ta = getTransposeA(), tb = getTransposeB();
  int64_t aM = ta ? ra - 1 : ra - 2, aK = ta ? ra - 2 : ra - 1;
  int64_t bK = tb ? rb - 1 : rb - 2, bN = tb ? rb - 2 : rb - 1;
  int64_t outM = ra - 2, outN = ra - 1;
  // Batch dimensions: split together (b batched) or on a alone (b 2-D).
  for (int64_t k = 0; k < ra - 2; ++k)
    add(sigs, {S(k), rb > 2 ? S(k) : B}, {S(k)});
  add(sigs, {S(aM), B}, {S(outM)}); // data parallel: rows of a
  add(sigs, {B, S(bN)}, {S(outN)}); // column-parallel: columns of b
  add(sigs, {S(aK), S(bK)}, {P});   // row-parallel: the contraction
  add(sigs, {P, B}, {P});
  add(sigs, {B, P}, {P});
}

void BiasAddOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &sigs) {
  int64_t rank = rankOf(getInput()), axis = getAxis();
  for (int64_t k = 0; k < rank; ++k)
    add(sigs, {S(k), k == axis ? S(0) : B}, {S(k)});
  add(sigs, {P, P}, {P});
}

void AddOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &sigs) {
  for (int64_t k = 0, r = rankOf(getLhs()); k < r; ++k)
    add(sigs, {S(k), S(k)}, {S(k)});
  add(sigs, {P, P}, {P});
}

void MulOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &sigs) {
  // Linear in each operand with the other fixed.
  for (int64_t k = 0, r = rankOf(getLhs()); k < r; ++k)
    add(sigs, {S(k), S(k)}, {S(k)});
  add(sigs, {P, B}, {P});
  add(sigs, {B, P}, {P});
}

void MulScalarOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &sigs) {
  unary(sigs, rankOf(getInput()), /*linear=*/true);
}

void DropoutOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &sigs) {
  // Linear for a fixed mask, and the mask is a function of logical indices.
  unary(sigs, rankOf(getInput()), /*linear=*/true);
}

void ReluOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &sigs) {
  unary(sigs, rankOf(getInput()), /*linear=*/false);
}

void ReluGradOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &sigs) {
  unaryGrad(sigs, rankOf(getOutput()));
}

void ActivationOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &sigs) {
  unary(sigs, rankOf(getInput()), /*linear=*/false);
}

void ActivationGradOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &sigs) {
  unaryGrad(sigs, rankOf(getInput()));
}

void SoftmaxOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &sigs) {
  // Any split but along the normalised axis.
  for (int64_t k = 0, r = rankOf(getInput()); k < r; ++k)
    if (k != static_cast<int64_t>(getAxis()))
      add(sigs, {S(k)}, {S(k)});
}

void SoftmaxGradOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &sigs) {
  for (int64_t k = 0, r = rankOf(getOutput()); k < r; ++k)
    if (k != static_cast<int64_t>(getAxis()))
      add(sigs, {S(k), S(k)}, {S(k)});
  add(sigs, {B, P}, {P}); // linear in dy
}

void LayerNormOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &sigs) {
  // Rows split any way but along the normalised (last) axis.
  for (int64_t k = 0, r = rankOf(getInput()); k + 1 < r; ++k)
    add(sigs, {S(k), B, B}, {S(k)});
}

void LayerNormGradInputOp::getSBPSignatures(
    SmallVectorImpl<SBPSignature> &sigs) {
  for (int64_t k = 0, r = rankOf(getInput()); k + 1 < r; ++k)
    add(sigs, {S(k), B, S(k)}, {S(k)});
}

void LayerNormGradParamsOp::getSBPSignatures(
    SmallVectorImpl<SBPSignature> &sigs) {
  // Sums over rows: each rank's rows give an addend.
  for (int64_t k = 0, r = rankOf(getInput()); k + 1 < r; ++k)
    add(sigs, {S(k), S(k)}, {P, P});
}

void EmbeddingOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &sigs) {
  // ids split along any axis (the table whole); or the embedding dimension
  // split (each rank gathers its columns).
  int64_t r = rankOf(getIds());
  for (int64_t k = 0; k < r; ++k)
    add(sigs, {B, S(k)}, {S(k)});
  add(sigs, {S(1), B}, {S(r)});
  // Vocabulary-parallel (Megatron): each rank looks up the ids in its rows
  // and gives zeros for the others, so the outputs add up.
  add(sigs, {S(0), B}, {P});
}

void EmbeddingGradOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &sigs) {
  // A split batch gives each rank a partial sum of the table gradient.
  int64_t r = rankOf(getIds());
  for (int64_t k = 0; k < r; ++k)
    add(sigs, {S(k), S(k)}, {P});
  add(sigs, {B, S(r)}, {S(1)});
  // Vocabulary-parallel: each rank accumulates the ids in its rows.
  add(sigs, {B, B}, {S(0)});
  add(sigs, {B, P}, {P});
}

void FlattenOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &sigs) {
  int64_t rank = rankOf(getInput());
  int64_t start = getStartDim() < 0 ? getStartDim() + rank : getStartDim();
  int64_t end = getEndDim() < 0 ? getEndDim() + rank : getEndDim();
  for (int64_t k = 0; k < rank; ++k) {
    if (k < start)
      add(sigs, {S(k)}, {S(k)});
    else if (k == start)
      add(sigs, {S(k)}, {S(start)}); // the outermost of the merged axes
    else if (k > end)
      add(sigs, {S(k)}, {S(k - (end - start))});
  }
  add(sigs, {P}, {P});
}

/// Axis k of `in` maps onto axis j of `out` when the elements before them
/// agree: a split of k is then a split of j (if j divides, checked by the
/// n-D helper).
static void reshapeSignatures(ArrayRef<int64_t> in, ArrayRef<int64_t> out,
                              SmallVectorImpl<SBPSignature> &sigs) {
  int64_t before = 1;
  for (size_t k = 0; k < in.size(); ++k) {
    int64_t outBefore = 1;
    for (size_t j = 0; j < out.size(); ++j) {
      if (outBefore == before && in[k] > 1 && out[j] > 1) {
        add(sigs, {S(k)}, {S(j)});
        break;
      }
      outBefore *= out[j];
    }
    before *= in[k];
  }
  add(sigs, {P}, {P});
}

void ReshapeOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &sigs) {
  reshapeSignatures(cast<GlobalType>(getInput().getType()).getShape(),
                    getType().getShape(), sigs);
}

void TransposeOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &sigs) {
  ArrayRef<int64_t> perm = getPerm();
  for (int64_t j = 0, e = perm.size(); j < e; ++j)
    add(sigs, {S(perm[j])}, {S(j)});
  add(sigs, {P}, {P});
}

void SoftmaxCrossEntropyOp::getSBPSignatures(
    SmallVectorImpl<SBPSignature> &sigs) {
  // The mean over a split batch: each rank's share of the mean, a partial
  // sum (pf-partition-ranks scales the local mean by local/global rows).
  // With ignored rows the local means do not add up to the global one; the
  // local sums do.
  if (!getIgnoreIndex() || getSum())
    add(sigs, {S(0), S(0)}, {P});
  // Split by class (Megatron's vocabulary-parallel cross-entropy): every
  // rank gets the whole loss; its lowering all-reduces the rows' maxima and
  // sums of exponentials (n + 2n numbers), never the logits.
  add(sigs, {S(1), B}, {B});
}

void SoftmaxCrossEntropyGradOp::getSBPSignatures(
    SmallVectorImpl<SBPSignature> &sigs) {
  if (!getIgnoreIndex() || getSum())
    add(sigs, {S(0), S(0), B}, {S(0)});
  add(sigs, {B, B, P}, {P});       // linear in the incoming gradient
  add(sigs, {S(1), B, B}, {S(1)}); // by class (the statistics all-reduced)
}

void ReduceSumOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &sigs) {
  ArrayRef<int64_t> axes = getAxes();
  int64_t rank = rankOf(getInput());
  for (int64_t k = 0; k < rank; ++k) {
    if (llvm::is_contained(axes, k)) {
      add(sigs, {S(k)}, {P});
      continue;
    }
    int64_t dropped = llvm::count_if(axes, [&](int64_t a) { return a < k; });
    add(sigs, {S(k)}, {S(k - dropped)});
  }
  add(sigs, {P}, {P});
}

//===----------------------------------------------------------------------===//
// Convolution, pooling, normalisation (NCHW)
//===----------------------------------------------------------------------===//

void Conv2DOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &sigs) {
  add(sigs, {S(0), B}, {S(0)}); // data parallel
  if (getGroups() == 1) {
    add(sigs, {B, S(0)}, {S(1)}); // output channels
    add(sigs, {S(1), S(1)}, {P}); // input channels: partial sums
  }
  add(sigs, {P, B}, {P});
}

void Conv2DGradInputOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &sigs) {
  // (dy, weight) -> dx
  add(sigs, {S(0), B}, {S(0)});
  if (getGroups() == 1) {
    add(sigs, {S(1), S(0)}, {P});
    add(sigs, {B, S(1)}, {S(1)});
  }
  add(sigs, {P, B}, {P});
}

void Conv2DGradWeightOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &sigs) {
  // (x, dy) -> dW
  add(sigs, {S(0), S(0)}, {P});
  if (getGroups() == 1) {
    add(sigs, {B, S(1)}, {S(0)});
    add(sigs, {S(1), B}, {S(1)});
  }
  add(sigs, {P, B}, {P});
  add(sigs, {B, P}, {P});
}

static void poolSignatures(SmallVectorImpl<SBPSignature> &sigs, bool linear) {
  add(sigs, {S(0)}, {S(0)});
  add(sigs, {S(1)}, {S(1)});
  if (linear)
    add(sigs, {P}, {P});
}

void MaxPool2DOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &sigs) {
  poolSignatures(sigs, /*linear=*/false);
}
void AvgPool2DOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &sigs) {
  poolSignatures(sigs, /*linear=*/true);
}
void GlobalAvgPoolOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &sigs) {
  poolSignatures(sigs, /*linear=*/true);
}
void AvgPool2DGradOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &sigs) {
  poolSignatures(sigs, /*linear=*/true);
}
void GlobalAvgPoolGradOp::getSBPSignatures(
    SmallVectorImpl<SBPSignature> &sigs) {
  poolSignatures(sigs, /*linear=*/true);
}
void MaxPool2DGradOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &sigs) {
  // (x, dy) -> dx
  add(sigs, {S(0), S(0)}, {S(0)});
  add(sigs, {S(1), S(1)}, {S(1)});
  add(sigs, {B, P}, {P});
}

void BatchNormOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &sigs) {
  // Channel split: each rank normalises its channels with exact statistics.
  // A batch split (local statistics) is not offered: it would change the
  // numbers (see docs/Rationale.md); a split batch is gathered first.
  add(sigs, {S(1), S(0), S(0), S(0), S(0)}, {S(1), S(0), S(0)});
}
void BatchNormGradInputOp::getSBPSignatures(
    SmallVectorImpl<SBPSignature> &sigs) {
  add(sigs, {S(1), S(0), S(1)}, {S(1)});
}
void BatchNormGradParamsOp::getSBPSignatures(
    SmallVectorImpl<SBPSignature> &sigs) {
  add(sigs, {S(1), S(1)}, {S(0), S(0)});
}

//===----------------------------------------------------------------------===//
// Optimizer, micro-batching
//===----------------------------------------------------------------------===//

/// Parameter-shaped operands and results share one split (or B); scalar
/// operands (lr, step) are B.
static void updateSignatures(Operation *op,
                             SmallVectorImpl<SBPSignature> &sigs) {
  // Replicated first (data parallel: every rank updates the whole
  // parameter after one all-reduce); a split update (ZeRO-style) wins only
  // where it moves fewer bytes.
  sigs.push_back({SmallVector<SBPDim>(op->getNumOperands(), B),
                  SmallVector<SBPDim>(op->getNumResults(), B)});
  int64_t rank = cast<GlobalType>(op->getOperand(0).getType()).getRank();
  for (int64_t k = 0; k < rank; ++k) {
    SBPSignature s;
    for (Value v : op->getOperands())
      s.operands.push_back(cast<GlobalType>(v.getType()).getRank() == 0 ? B
                                                                        : S(k));
    s.results.assign(op->getNumResults(), S(k));
    sigs.push_back(s);
  }
}

void ClipScaleOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &sigs) {
  // The norm needs the whole sum on every rank.
  add(sigs, {B}, {B});
}

void ScaleByOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &sigs) {
  // Linear in the input; the scale is one value everywhere.
  int64_t rank = rankOf(getInput());
  for (int64_t k = 0; k < rank; ++k)
    add(sigs, {S(k), B}, {S(k)});
  add(sigs, {P, B}, {P});
  add(sigs, {B, B}, {B});
}

void SGDUpdateOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &sigs) {
  updateSignatures(*this, sigs);
}
void AdamUpdateOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &sigs) {
  updateSignatures(*this, sigs);
}

void MicrobatchOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &sigs) {
  // A split batch: pf-partition-ranks loads each rank's rows of every
  // micro-batch, so micro-batch i is the logical rows i*B/m.. on any layout.
  unary(sigs, rankOf(getInput()), /*linear=*/true);
}

void PackOp::getSBPSignatures(SmallVectorImpl<SBPSignature> &sigs) {
  // Stacking along a new axis 0: each rank stacks its own parts.
  int64_t rank = rankOf(getElements().front());
  for (int64_t k = 0; k < rank; ++k)
    add(sigs, SmallVector<SBPDim>(getNumOperands(), S(k)), {S(k + 1)});
  add(sigs, SmallVector<SBPDim>(getNumOperands(), P), {P});
}
