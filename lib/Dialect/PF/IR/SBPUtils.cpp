//===- SBPUtils.cpp - n-D signatures, boxing costs, shard boxes -----------===//

#include "pf/Dialect/PF/IR/SBPUtils.h"
#include "pf/Dialect/PF/IR/PFOps.h"

#include "llvm/Support/raw_ostream.h"

#include <limits>
#include <optional>

#include "pf/Interfaces/SBPInterface.cpp.inc"

using namespace mlir;
using namespace mlir::pf;

bool mlir::pf::isValidLayout(ArrayRef<int64_t> shape, PlacementAttr placement,
                             SBPAttr sbp) {
  if (!sbp || sbp.size() != placement.getNumHierarchyDims())
    return false;
  for (SBPDim d : sbp.getDims())
    if (d.isSplit() &&
        (d.getAxis() < 0 || d.getAxis() >= static_cast<int64_t>(shape.size())))
      return false;
  for (int64_t axis = 0, e = shape.size(); axis < e; ++axis)
    if (shape[axis] % sbp.getSplitFactor(axis, placement) != 0)
      return false;
  // A grouped split's axis is split by no other dimension, and each of its
  // blocks divides evenly.
  for (auto [d, dim] : llvm::enumerate(sbp.getDims())) {
    if (!dim.isGrouped())
      continue;
    int64_t axis = dim.getAxis();
    if (sbp.getSplitFactor(axis, placement) != placement.getHierarchy()[d] ||
        shape[axis] % (dim.getGroups() * placement.getHierarchy()[d]) != 0)
      return false;
  }
  return true;
}

/// Ops that compute every index of a split axis from the same index of
/// their operands' split axes (element-wise ops, matmul's rows, columns and
/// contraction, normalisation and reductions along other axes, axis
/// permutations): any relabelling of an axis's indices commutes with them,
/// so each of their signatures holds with every split grouped alike.
static bool keepsGroups(Operation *op) {
  return isa<MatmulOp, BiasAddOp, AddOp, SubOp, MulOp, DivOp, MulScalarOp,
             ReluOp, ReluGradOp, ActivationOp, ActivationGradOp, SoftmaxOp,
             SoftmaxGradOp, LayerNormOp, LayerNormGradInputOp,
             LayerNormGradParamsOp, TransposeOp, ReduceSumOp, MaskedFillOp,
             ClipScaleOp, ScaleByOp, SGDUpdateOp, AdamUpdateOp, CompareOp,
             LogicalAndOp, LogicalOrOp, LogicalXorOp, LogicalNotOp, WhereOp,
             CastOp>(op);
}

/// Whether a reshape carries its operand's axis `from` over whole as its
/// result's axis `to` (same extent, same elements after it), so that it
/// commutes with relabelling that axis.
static bool keepsAxis(Operation *op, int64_t from, int64_t to) {
  ArrayRef<int64_t> in =
      cast<GlobalType>(op->getOperand(0).getType()).getShape();
  ArrayRef<int64_t> out =
      cast<GlobalType>(op->getResult(0).getType()).getShape();
  auto after = [](ArrayRef<int64_t> shape, int64_t axis) {
    int64_t n = 1;
    for (int64_t d : shape.drop_front(axis + 1))
      n *= d;
    return n;
  };
  return in[from] == out[to] && after(in, from) == after(out, to);
}

/// The groups of the grouped splits among `op`'s operand layouts.
static SmallVector<int64_t> operandGroups(Operation *op) {
  SmallVector<int64_t> groups;
  for (Type t : op->getOperandTypes())
    if (auto g = dyn_cast<GlobalType>(t); g && g.hasSBP())
      for (SBPDim d : g.getSbp().getDims())
        if (d.isGrouped() && !llvm::is_contained(groups, d.getGroups()))
          groups.push_back(d.getGroups());
  return groups;
}

SmallVector<SBPSignature> mlir::pf::get1DSignatures(Operation *op) {
  SmallVector<SBPSignature> sigs;
  auto iface = dyn_cast<SBPOpInterface>(op);
  if (!iface)
    return sigs;
  iface.getSBPSignatures(sigs);
  // Grouped variants, for the groups an operand already has (a grouped
  // split starts at a parameter: pf-group-fused-splits).
  bool reshape = isa<ReshapeOp, FlattenOp>(op);
  if (keepsGroups(op) || reshape) {
    SmallVector<SBPSignature> grouped;
    for (int64_t g : operandGroups(op))
      for (const SBPSignature &s : sigs) {
        auto hasSplit = [](ArrayRef<SBPDim> dims) {
          return llvm::any_of(dims, [](SBPDim d) { return d.isSplit(); });
        };
        if (!hasSplit(s.operands) && !hasSplit(s.results))
          continue;
        if (reshape &&
            !(s.operands[0].isSplit() && s.results[0].isSplit() &&
              keepsAxis(op, s.operands[0].getAxis(), s.results[0].getAxis())))
          continue;
        SBPSignature v;
        for (SBPDim d : s.operands)
          v.operands.push_back(d.withGroups(g));
        for (SBPDim d : s.results)
          v.results.push_back(d.withGroups(g));
        grouped.push_back(std::move(v));
      }
    llvm::append_range(sigs, grouped);
  }
  // A grouped split S(a, g) is the plain split S(a + 1) of the reshape
  // cutting axis a into (g, d / g): each rank's blocks of the g groups, in
  // their local order (pf-lower-boxing changes a grouped split to B so).
  // And back: the reshape merging (g, d / g) into one axis takes S(a + 1)
  // to S(a, g) (g read from the result's layout where it has one).
  if (isa<ReshapeOp>(op)) {
    auto inType = cast<GlobalType>(op->getOperand(0).getType());
    auto outType = cast<GlobalType>(op->getResult(0).getType());
    // `cut` is `whole` with axis a cut into (g, d / g).
    auto cuts = [](ArrayRef<int64_t> whole, ArrayRef<int64_t> cut, size_t a,
                   int64_t g) {
      return cut.size() == whole.size() + 1 && a < whole.size() &&
             whole.take_front(a) == cut.take_front(a) && cut[a] == g &&
             cut[a + 1] * g == whole[a] &&
             whole.drop_front(a + 1) == cut.drop_front(a + 2);
    };
    for (int64_t g : operandGroups(op))
      for (size_t a = 0; a < inType.getShape().size(); ++a)
        if (cuts(inType.getShape(), outType.getShape(), a, g)) {
          SBPSignature v;
          v.operands.push_back(SBPDim::split(static_cast<int64_t>(a), g));
          v.results.push_back(SBPDim::split(static_cast<int64_t>(a) + 1));
          sigs.push_back(std::move(v));
        }
    if (outType.hasSBP())
      for (SBPDim d : outType.getSbp().getDims())
        if (d.isGrouped() && cuts(outType.getShape(), inType.getShape(),
                                  d.getAxis(), d.getGroups())) {
          SBPSignature v;
          v.operands.push_back(SBPDim::split(d.getAxis() + 1));
          v.results.push_back(d);
          sigs.push_back(std::move(v));
        }
  }
  SBPSignature allB;
  allB.operands.assign(op->getNumOperands(), SBPDim::broadcast());
  allB.results.assign(op->getNumResults(), SBPDim::broadcast());
  if (!llvm::is_contained(sigs, allB))
    sigs.push_back(allB);
  return sigs;
}

static GlobalType globalOf(Type t) { return dyn_cast<GlobalType>(t); }

SmallVector<NDSBPSignature>
mlir::pf::getNDSBPSignatures(Operation *op, PlacementAttr placement) {
  SmallVector<NDSBPSignature> out;
  SmallVector<SBPSignature> oneD = get1DSignatures(op);
  if (oneD.empty())
    return out;
  SBPSignature allB = oneD.back();
  for (SBPSignature &s : oneD)
    if (llvm::all_of(s.operands, [](SBPDim d) { return d.isBroadcast(); }) &&
        llvm::all_of(s.results, [](SBPDim d) { return d.isBroadcast(); }))
      allB = s;
  ArrayRef<int64_t> hierarchy = placement.getHierarchy();
  unsigned dims = hierarchy.size();
  // Odometer over the per-dimension choices.
  SmallVector<ArrayRef<SBPSignature>> choices;
  for (int64_t extent : hierarchy)
    choices.push_back(extent == 1 ? ArrayRef<SBPSignature>(allB)
                                  : ArrayRef<SBPSignature>(oneD));
  SmallVector<unsigned> index(dims, 0);
  MLIRContext *ctx = op->getContext();
  while (true) {
    NDSBPSignature sig;
    bool valid = true;
    auto form = [&](unsigned i, bool result) {
      SmallVector<SBPDim> entries;
      for (unsigned d = 0; d < dims; ++d) {
        const SBPSignature &s = choices[d][index[d]];
        entries.push_back(result ? s.results[i] : s.operands[i]);
      }
      SBPAttr sbp = SBPAttr::get(ctx, entries);
      Type t =
          result ? op->getResult(i).getType() : op->getOperand(i).getType();
      if (GlobalType g = globalOf(t))
        valid &= isValidLayout(g.getShape(), placement, sbp);
      return sbp;
    };
    for (unsigned i = 0; i < op->getNumOperands(); ++i)
      sig.operands.push_back(form(i, false));
    for (unsigned i = 0; i < op->getNumResults(); ++i)
      sig.results.push_back(form(i, true));
    if (valid)
      out.push_back(std::move(sig));
    // Advance: the last dimension varies fastest, so the first dimension's
    // preferred choice stays in front.
    int d = dims - 1;
    while (d >= 0 && ++index[d] == choices[d].size())
      index[d--] = 0;
    if (d < 0)
      break;
  }
  return out;
}

double mlir::pf::internalCommBytes(Operation *op, ArrayRef<SBPAttr> operands,
                                   PlacementAttr placement,
                                   int64_t *groupSize) {
  if (groupSize)
    *groupSize = 1;
  if (!isa<SoftmaxCrossEntropyOp, SoftmaxCrossEntropyGradOp>(op) ||
      operands.empty() || !operands[0])
    return 0;
  auto t = cast<GlobalType>(op->getOperand(0).getType());
  int64_t n = 1, rows = t.getShape()[0];
  for (auto [d, dim] : llvm::enumerate(operands[0].getDims())) {
    int64_t k = placement.getHierarchy()[d];
    if (dim.isSplit() && dim.getAxis() == 1)
      n *= k;
    else if (dim.isSplit() && dim.getAxis() == 0)
      rows /= k;
  }
  if (groupSize)
    *groupSize = n;
  if (n == 1)
    return 0;
  double perRow = isa<SoftmaxCrossEntropyOp>(op) ? 4 + 2 * 8 : 4 + 8;
  return 2.0 * static_cast<double>(n - 1) / n * perRow * rows;
}

double mlir::pf::transitionBytes(SBPDim from, SBPDim to, int64_t n,
                                 double bytes) {
  if (from == to || n == 1)
    return 0;
  double f = static_cast<double>(n - 1) / n;
  if (from.isPartial())
    return to.isBroadcast() ? 2 * f * bytes : f * bytes; // all-reduce / RS
  if (from.isSplit()) {
    if (to.isBroadcast())
      return f * bytes; // all-gather
    if (to.isSplit())
      return f * bytes / n; // all-to-all
    return 0;               // S -> P: each rank zero-pads its block
  }
  return 0; // B -> S (slice), B -> P (one rank keeps the value)
}

namespace {
double elementBytes(GlobalType t) {
  return std::max<int64_t>(1, t.getElementType().getIntOrFloatBitWidth() / 8);
}

/// The single 1-D entry a layout is on the flattened placement, if any.
std::optional<SBPDim> flatEntry(SBPAttr sbp) {
  SBPDim first = sbp[0];
  for (SBPDim d : sbp.getDims())
    if (d != first)
      return std::nullopt;
  return first;
}
} // namespace

SmallVector<BoxingStep> mlir::pf::planBoxing(GlobalType type, SBPAttr from,
                                             SBPAttr to) {
  SmallVector<BoxingStep> steps;
  if (from == to)
    return steps;
  PlacementAttr p = type.getPlacement();
  double total =
      type.getNumElements() *
      std::max<int64_t>(1, type.getElementType().getIntOrFloatBitWidth() / 8);
  unsigned dims = from.size();
  if (dims > 1) {
    std::optional<SBPDim> f = flatEntry(from), w = flatEntry(to);
    if (f && w && !f->isGrouped() && !w->isGrouped()) {
      steps.push_back(
          {-1, *f, *w, to, transitionBytes(*f, *w, p.getNumRanks(), total)});
      return steps;
    }
  }
  SBPAttr cur = from;
  auto change = [&](unsigned d, SBPDim entry) {
    // The group along d sees the tensor divided by the other dimensions'
    // splits.
    double seen = total;
    for (unsigned e = 0; e < dims; ++e)
      if (e != d && cur[e].isSplit())
        seen /= p.getHierarchy()[e];
    SBPAttr after = withDim(cur, d, entry);
    // A grouped split changes to and from B, P and splits of other axes
    // (pf-lower-boxing: the collective of a reshape that makes it a plain
    // split; only its own dimension splits its axis); to a split of its
    // own axis or another grouping it goes through B, so it is priced out.
    auto cutMeets = [](SBPDim grouped, SBPDim other) {
      return grouped.isGrouped() &&
             (!other.isSplit() || other.getAxis() != grouped.getAxis());
    };
    bool viaCut = cutMeets(cur[d], entry) || cutMeets(entry, cur[d]);
    auto plain = [](SBPDim x) {
      return x.isGrouped() ? SBPDim::split(x.getAxis()) : x;
    };
    double bytes =
        viaCut ? transitionBytes(plain(cur[d]), plain(entry),
                                 p.getHierarchy()[d], seen)
        : cur[d].isGrouped() || entry.isGrouped()
            ? std::numeric_limits<double>::infinity()
            : transitionBytes(cur[d], entry, p.getHierarchy()[d], seen);
    steps.push_back({d, cur[d], entry, after, bytes});
    cur = after;
  };
  auto canChange = [&](unsigned d) {
    SmallVector<int64_t> axes;
    if (cur[d].isSplit())
      axes.push_back(cur[d].getAxis());
    if (to[d].isSplit())
      axes.push_back(to[d].getAxis());
    for (unsigned e = d + 1; e < dims; ++e)
      if (cur[e].isSplit() && llvm::is_contained(axes, cur[e].getAxis()))
        return false;
    return true;
  };
  while (cur != to) {
    int chosen = -1;
    // A step's result must be a layout the tensor can have (a [10] tensor
    // is not split in 4 on the way from [S(0), B] to [P, S(0)]).
    for (int d = dims - 1; d >= 0; --d)
      if (cur[d] != to[d] && canChange(d) &&
          isValidLayout(type.getShape(), p, withDim(cur, d, to[d]))) {
        chosen = d;
        break;
      }
    if (chosen >= 0) {
      change(chosen, to[chosen]);
      continue;
    }
    // No direct order: through all-B (always lowerable, more bytes).
    for (int d = dims - 1; d >= 0; --d)
      if (!cur[d].isBroadcast())
        change(d, SBPDim::broadcast());
    for (unsigned d = 0; d < dims; ++d)
      if (!to[d].isBroadcast())
        change(d, to[d]);
  }
  if (dims < 2 || hasPartial(from) || hasPartial(to) || hasGrouped(from) ||
      hasGrouped(to))
    return steps;
  // On a hierarchy, per-dimension collectives can move more than the ranks
  // lack; a direct exchange of box intersections moves exactly that.
  double stepwise = 0;
  for (const BoxingStep &s : steps)
    stepwise += s.bytes;
  double direct = planExchange(type.withSBP(from), type.withSBP(to)).bytes;
  if (direct < stepwise)
    return {BoxingStep{BoxingStep::kExchangeStep, from[0], to[0], to, direct}};
  return steps;
}

double mlir::pf::boxingBytes(GlobalType type, SBPAttr from, SBPAttr to) {
  double cost = 0;
  for (const BoxingStep &step : planBoxing(type, from, to))
    cost += step.bytes;
  return cost;
}

SBPAttr mlir::pf::withoutPartial(SBPAttr sbp) {
  SmallVector<SBPDim> dims;
  for (SBPDim d : sbp.getDims())
    dims.push_back(d.isPartial() ? SBPDim::broadcast() : d);
  return SBPAttr::get(sbp.getContext(), dims);
}

bool mlir::pf::hasGrouped(SBPAttr sbp) {
  return llvm::any_of(sbp.getDims(), [](SBPDim d) { return d.isGrouped(); });
}

bool mlir::pf::hasPartial(SBPAttr sbp) {
  return llvm::any_of(sbp.getDims(), [](SBPDim d) { return d.isPartial(); });
}

Exchange mlir::pf::planExchange(GlobalType from, GlobalType to) {
  Exchange ex;
  PlacementAttr fp = from.getPlacement(), tp = to.getPlacement();
  double elem = elementBytes(from);
  // A rank holding a piece on another device kind still has to copy it.
  bool sameDevice = fp.getDevice() == tp.getDevice();
  // Distinct source boxes and their holders.
  SmallVector<std::pair<Box, SmallVector<int64_t>>> sources;
  for (int64_t p = 0; p < fp.getNumRanks(); ++p) {
    Box has = shardBox(from.getShape(), fp, from.getSbp(), p);
    auto it = llvm::find_if(sources, [&](auto &s) {
      return s.first.offsets == has.offsets && s.first.sizes == has.sizes;
    });
    if (it == sources.end())
      sources.push_back({has, {fp.getRanks()[p]}});
    else
      it->second.push_back(fp.getRanks()[p]);
  }
  for (int64_t q = 0; q < tp.getNumRanks(); ++q) {
    int64_t dst = tp.getRanks()[q];
    Box need = shardBox(to.getShape(), tp, withoutPartial(to.getSbp()), q);
    double received = 0;
    for (auto &[has, holders] : sources) {
      Box piece = need.intersect(has);
      if (piece.isEmpty())
        continue;
      bool holds = llvm::is_contained(holders, dst);
      int64_t src = holds ? dst : holders[q % holders.size()];
      ex.moves.push_back({src, dst, piece});
      if (!holds || !sameDevice)
        received += piece.numElements() * elem;
    }
    ex.bytes = std::max(ex.bytes, received);
  }
  return ex;
}

TransferPlan mlir::pf::planTransfer(GlobalType from, GlobalType to) {
  PlacementAttr fp = from.getPlacement(), tp = to.getPlacement();
  SBPAttr src = from.getSbp();
  double total = from.getNumElements() * elementBytes(from);
  TransferPlan plan;
  bool sameDevice = fp.getDevice() == tp.getDevice();
  // 1 -> N broadcast.
  if (fp.getNumRanks() == 1 && tp.getNumRanks() > 1 &&
      tp.contains(fp.getRanks()[0]) && to.getSbp().isAllBroadcast() &&
      sameDevice) {
    plan.kind = TransferPlan::Kind::Broadcast;
    plan.opBytes = total;
    return plan;
  }
  // N -> 1 reduce of a partial sum.
  if (tp.getNumRanks() == 1 && fp.getNumRanks() > 1 &&
      fp.contains(tp.getRanks()[0]) && sameDevice &&
      llvm::all_of(src.getDims(), [](SBPDim d) { return d.isPartial(); }) &&
      to.getSbp().isAllBroadcast()) {
    plan.kind = TransferPlan::Kind::Reduce;
    plan.opBytes = total;
    return plan;
  }
  // cpu <-> cuda on the same ranks: reduce, change the layout, then copy.
  if (!sameDevice && fp.getRanks() == tp.getRanks() &&
      fp.getHierarchy() == tp.getHierarchy()) {
    plan.kind = TransferPlan::Kind::DeviceCopy;
    plan.reduced = withoutPartial(src);
    plan.opBytes = total / std::max<int64_t>(1, tp.getNumRanks());
    return plan;
  }
  plan.kind = TransferPlan::Kind::Exchange;
  // Partial sums are reduced where they are: to B, or to S(axis) when the
  // pieces then move less in all.
  SmallVector<SBPAttr> candidates = {withoutPartial(src)};
  if (hasPartial(src) && sameDevice)
    for (int64_t axis = 0; axis < from.getRank(); ++axis) {
      SmallVector<SBPDim> dims;
      for (SBPDim d : src.getDims())
        dims.push_back(d.isPartial() ? SBPDim::split(axis) : d);
      SBPAttr c = SBPAttr::get(src.getContext(), dims);
      if (isValidLayout(from.getShape(), fp, c))
        candidates.push_back(c);
    }
  double best = -1;
  GlobalType mid = to.withSBP(withoutPartial(to.getSbp()));
  for (SBPAttr c : candidates) {
    Exchange ex = planExchange(from.withSBP(c), mid);
    double cost = boxingBytes(from, src, c) + ex.bytes;
    if (best < 0 || cost < best) {
      best = cost;
      plan.reduced = c;
      plan.exchange = std::move(ex);
    }
  }
  return plan;
}

double mlir::pf::transferBytes(GlobalType from, GlobalType to) {
  // Grouped splits stay on their placement (see planBoxing).
  if (hasGrouped(from.getSbp()) || hasGrouped(to.getSbp()))
    return std::numeric_limits<double>::infinity();
  TransferPlan plan = planTransfer(from, to);
  GlobalType mid = to.withSBP(withoutPartial(to.getSbp()));
  switch (plan.kind) {
  case TransferPlan::Kind::Broadcast:
  case TransferPlan::Kind::Reduce:
    return plan.opBytes;
  case TransferPlan::Kind::DeviceCopy:
    return boxingBytes(from, from.getSbp(), plan.reduced) +
           boxingBytes(from, plan.reduced, mid.getSbp()) + plan.opBytes +
           boxingBytes(mid, mid.getSbp(), to.getSbp());
  case TransferPlan::Kind::Exchange:
    break;
  }
  return boxingBytes(from, from.getSbp(), plan.reduced) + plan.exchange.bytes +
         boxingBytes(mid, mid.getSbp(), to.getSbp());
}

Box Box::intersect(const Box &other) const {
  Box r;
  for (size_t i = 0; i < offsets.size(); ++i) {
    int64_t lo = std::max(offsets[i], other.offsets[i]);
    int64_t hi =
        std::min(offsets[i] + sizes[i], other.offsets[i] + other.sizes[i]);
    r.offsets.push_back(lo);
    r.sizes.push_back(std::max<int64_t>(0, hi - lo));
  }
  return r;
}

bool Box::isEmpty() const {
  return llvm::any_of(sizes, [](int64_t s) { return s == 0; });
}

int64_t Box::numElements() const {
  int64_t n = 1;
  for (int64_t s : sizes)
    n *= s;
  return n;
}

Box mlir::pf::shardBox(ArrayRef<int64_t> shape, PlacementAttr placement,
                       SBPAttr sbp, int64_t pos) {
  Box box;
  box.offsets.assign(shape.size(), 0);
  box.sizes.assign(shape.begin(), shape.end());
  SmallVector<int64_t> coords = placement.getCoordinates(pos);
  for (unsigned d = 0; d < sbp.size(); ++d) {
    if (!sbp[d].isSplit())
      continue;
    int64_t axis = sbp[d].getAxis();
    int64_t n = placement.getHierarchy()[d];
    if (sbp[d].isGrouped()) {
      // No other dimension splits this axis (isValidLayout).
      int64_t g = sbp[d].getGroups(), total = box.sizes[axis];
      box.groupAxis = axis;
      box.groups = g;
      box.groupStride = total / g;
      box.sizes[axis] = total / n;
      box.offsets[axis] += coords[d] * (total / (g * n));
      continue;
    }
    box.sizes[axis] /= n;
    box.offsets[axis] += coords[d] * box.sizes[axis];
  }
  return box;
}

SmallVector<SmallVector<int64_t>>
mlir::pf::hierarchyGroups(PlacementAttr placement, unsigned dim) {
  ArrayRef<int64_t> h = placement.getHierarchy();
  SmallVector<SmallVector<int64_t>> groups;
  llvm::DenseMap<int64_t, unsigned> groupOf;
  // Key: the row-major index over the other dimensions.
  for (int64_t pos = 0; pos < placement.getNumRanks(); ++pos) {
    SmallVector<int64_t> c = placement.getCoordinates(pos);
    int64_t key = 0;
    for (unsigned d = 0; d < h.size(); ++d)
      if (d != dim)
        key = key * h[d] + c[d];
    auto [it, inserted] = groupOf.try_emplace(key, groups.size());
    if (inserted)
      groups.emplace_back();
    groups[it->second].push_back(placement.getRanks()[pos]);
  }
  return groups;
}

SBPAttr mlir::pf::withDim(SBPAttr sbp, unsigned dim, SBPDim entry) {
  SmallVector<SBPDim> dims(sbp.getDims());
  dims[dim] = entry;
  return SBPAttr::get(sbp.getContext(), dims);
}

ArrayAttr mlir::pf::groupsAttr(MLIRContext *ctx,
                               ArrayRef<SmallVector<int64_t>> groups) {
  SmallVector<Attribute> attrs;
  for (const SmallVector<int64_t> &g : groups)
    attrs.push_back(DenseI64ArrayAttr::get(ctx, g));
  return ArrayAttr::get(ctx, attrs);
}

std::string mlir::pf::groupsString(ArrayAttr groups) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleaveComma(groups, os, [&](Attribute a) {
    os << "[";
    llvm::interleaveComma(cast<DenseI64ArrayAttr>(a).asArrayRef(), os);
    os << "]";
  });
  os << "]";
  return s;
}

std::string mlir::pf::shapeString(GlobalType type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  for (int64_t d : type.getShape())
    os << d << "x";
  os << type.getElementType();
  return s;
}
