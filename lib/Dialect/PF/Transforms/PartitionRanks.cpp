//===- PartitionRanks.cpp - one module per rank ---------------------------===//
//
// The SPMD program (layouts inferred, boxing lowered) becomes one module per
// world rank: values take their local shapes, ops of placements without the
// rank disappear, collectives stay with local types (their groups name the
// ranks), transfers become sends, receives and local box copies.
//
//===----------------------------------------------------------------------===//

#include "pf/Dialect/PF/IR/SBPUtils.h"
#include "pf/Dialect/PF/Transforms/Passes.h"
#include "pf/Support/RankParallel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/TypeSwitch.h"

#define DEBUG_TYPE "pf-partition-ranks"

namespace mlir::pf {
#define GEN_PASS_DEF_PARTITIONRANKSPASS
#include "pf/Dialect/PF/Transforms/Passes.h.inc"
} // namespace mlir::pf

using namespace mlir;
using namespace mlir::pf;

namespace {
/// The elements of `dense` (of logical `shape`) inside `box`, row-major.
DenseElementsAttr boxOfDense(DenseElementsAttr dense, ArrayRef<int64_t> shape,
                             const Box &box) {
  SmallVector<Attribute> all(dense.getValues<Attribute>());
  SmallVector<Attribute> part;
  int64_t rank = static_cast<int64_t>(shape.size());
  SmallVector<int64_t> idx(rank, 0);
  int64_t count = box.numElements();
  for (int64_t e = 0; e < count; ++e) {
    int64_t flat = 0;
    for (int64_t d = 0; d < rank; ++d)
      flat = flat * shape[d] + box.offsets[d] + idx[d];
    part.push_back(all[flat]);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++idx[d] < box.sizes[d])
        break;
      idx[d] = 0;
    }
  }
  return DenseElementsAttr::get(
      RankedTensorType::get(box.sizes, dense.getElementType()), part);
}

/// The placement an op computes on: that of its first global result, else
/// of its first global operand.
std::optional<PlacementAttr> placementOf(Operation *op) {
  for (Type t : op->getResultTypes())
    if (auto g = dyn_cast<GlobalType>(t))
      return g.getPlacement();
  for (Type t : op->getOperandTypes())
    if (auto g = dyn_cast<GlobalType>(t))
      return g.getPlacement();
  return std::nullopt;
}

class RankPartitioner {
public:
  RankPartitioner(ModuleOp module, int64_t rank)
      : module(module), rank(rank),
        dialect(module.getContext()->getLoadedDialect<PFDialect>()) {
    broadcast = SBPAttr::getBroadcast(module.getContext(), 1);
  }

  /// Rewrites `module` (a clone of the global program) into rank's program.
  LogicalResult run();

private:
  /// The local form of a type on this rank: its shard's shape on the
  /// single-rank placement, B.
  Type localize(Type t) const {
    auto g = dyn_cast<GlobalType>(t);
    if (!g || !g.getPlacement().contains(rank))
      return t;
    auto placement = PlacementAttr::get(
        t.getContext(), g.getPlacement().getDevice(), {1}, {rank});
    return GlobalType::get(t.getContext(), box(g).sizes, g.getElementType(),
                           placement, broadcast);
  }
  Box box(GlobalType g) const {
    return shardBox(g.getShape(), g.getPlacement(), g.getSbp(),
                    g.getPlacement().indexOf(rank));
  }
  bool participates(Operation *op) const;
  LogicalResult rewriteComm(Operation *op, OpBuilder &b,
                            SmallVectorImpl<Operation *> &foreign);
  LogicalResult lowerTransfer(TransferOp op, OpBuilder &b,
                              SmallVectorImpl<Operation *> &foreign);
  void annotateInput(func::FuncOp func, BlockArgument arg);
  LogicalResult partitionFunction(func::FuncOp func);
  // The steps of partitionFunction, in order.
  void annotateCrossEntropy(Operation *op, Value logits, bool sum,
                            OpBuilder &b);
  LogicalResult rewriteOps(Block &block, OpBuilder &b,
                           SmallVectorImpl<Operation *> &foreign);
  /// Kept results: (position in the global signature, global type).
  using KeptResults = SmallVector<std::pair<int64_t, Type>>;
  void keepLocalResults(func::FuncOp func, OpBuilder &b,
                        SmallVectorImpl<Value> &results, KeptResults &kept);
  LogicalResult eraseForeign(func::FuncOp func, ArrayRef<Operation *> foreign);
  LogicalResult boxDenseConstants(Block &block);
  void shiftGroupedOffsets(Block &block);
  void localizeTypes(Block &block);

  ModuleOp module;
  int64_t rank;
  /// The per-rank facts this pass records are the dialect's attributes.
  PFDialect *dialect;
  SBPAttr broadcast;
  /// Message tags: transfers numbered in program order (the same on every
  /// rank).
  llvm::DenseMap<Operation *, int64_t> tags;
};

bool RankPartitioner::participates(Operation *op) const {
  if (auto t = dyn_cast<TransferOp>(op))
    return cast<GlobalType>(t.getInput().getType())
               .getPlacement()
               .contains(rank) ||
           t.getType().getPlacement().contains(rank);
  if (auto bc = dyn_cast<BroadcastOp>(op))
    return llvm::is_contained(bc.getRanks(), rank);
  if (auto red = dyn_cast<ReduceOp>(op))
    return llvm::is_contained(red.getRanks(), rank);
  std::optional<PlacementAttr> p = placementOf(op);
  return !p || p->contains(rank);
}

/// Whether `rank` holds zeros of a value laid out by `g`: under a partial
/// sum only the rank at coordinate 0 of each P dimension holds the value.
bool holdsZerosOfPartial(GlobalType g, int64_t rank) {
  PlacementAttr p = g.getPlacement();
  int64_t index = p.indexOf(rank);
  ArrayRef<int64_t> hierarchy = p.getHierarchy();
  ArrayRef<SBPDim> dims = g.getSbp().getDims();
  for (int64_t d = int64_t(hierarchy.size()) - 1; d >= 0; --d) {
    int64_t coord = index % hierarchy[d];
    index /= hierarchy[d];
    if (d < int64_t(dims.size()) && dims[d].isPartial() && coord != 0)
      return true;
  }
  return false;
}

/// Where the rank's rows of each micro-batch come from: a step input split
/// on its batch axis and cut into m micro-batches holds, per micro-batch,
/// this rank's share of that micro-batch's logical rows, so that micro-batch
/// i is the same logical rows on every layout.
void RankPartitioner::annotateInput(func::FuncOp func, BlockArgument arg) {
  auto g = dyn_cast<GlobalType>(arg.getType());
  if (!g || !g.getPlacement().contains(rank))
    return;
  OpBuilder b(func.getContext());
  int64_t m = 1;
  for (Operation *user : arg.getUsers())
    if (auto mb = dyn_cast<MicrobatchOp>(user))
      m = mb.getCount();
  SmallVector<int64_t> mbShape(g.getShape());
  bool batchSplit =
      g.getRank() > 0 && g.getSbp().getSplitFactor(0, g.getPlacement()) > 1;
  if (!batchSplit)
    m = 1;
  mbShape[0] = g.getRank() > 0 ? g.getShape()[0] / m : 1;
  Box one = shardBox(mbShape, g.getPlacement(), g.getSbp(),
                     g.getPlacement().indexOf(rank));
  SmallVector<SmallVector<int64_t>> offsets;
  for (int64_t i = 0; i < m; ++i) {
    SmallVector<int64_t> off(one.offsets);
    if (!off.empty())
      off[0] += i * mbShape[0];
    offsets.push_back(off);
  }
  unsigned i = arg.getArgNumber();
  func.setArgAttr(i, dialect->getLogicalShapeAttrHelper().getName(),
                  b.getDenseI64ArrayAttr(g.getShape()));
  func.setArgAttr(i, dialect->getBoxesAttrHelper().getName(),
                  groupsAttr(func.getContext(), offsets));
  func.setArgAttr(i, dialect->getBoxShapeAttrHelper().getName(),
                  b.getDenseI64ArrayAttr(one.sizes));
  if (holdsZerosOfPartial(g, rank))
    func.setArgAttr(i, dialect->getZeroInputAttrHelper().getName(),
                    b.getUnitAttr());
}

LogicalResult
RankPartitioner::lowerTransfer(TransferOp op, OpBuilder &b,
                               SmallVectorImpl<Operation *> &foreign) {
  auto src = cast<GlobalType>(op.getInput().getType());
  GlobalType dst = op.getType();
  int64_t thisTag = tags.lookup(op);
  bool sends = src.getPlacement().contains(rank);
  bool receives = dst.getPlacement().contains(rank);
  Box srcBox = sends ? box(src) : Box();
  Box dstBox = receives ? box(dst) : Box();
  b.setInsertionPoint(op);
  Location loc = op.getLoc();
  int64_t r = src.getRank();
  SmallVector<Value> pieces;
  SmallVector<SmallVector<int64_t>> pieceOffsets;
  auto pieceType = [&](ArrayRef<int64_t> sizes) {
    return GlobalType::get(op.getContext(), sizes, src.getElementType(),
                           PlacementAttr::get(op.getContext(),
                                              dst.getPlacement().getDevice(),
                                              {1}, {rank}),
                           broadcast);
  };
  auto minus = [](ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
    SmallVector<int64_t> d;
    for (auto [x, y] : llvm::zip(a, b))
      d.push_back(x - y);
    return d;
  };
  auto extract = [&](ArrayRef<int64_t> off, ArrayRef<int64_t> sizes) -> Value {
    if (ArrayRef<int64_t>(srcBox.offsets) == off &&
        ArrayRef<int64_t>(srcBox.sizes) == sizes)
      return op.getInput();
    auto box = ExtractBoxOp::create(
        b, loc, pieceType(sizes), op.getInput(),
        b.getDenseI64ArrayAttr(minus(off, srcBox.offsets)));
    // The transfer's micro-batch, stage and phase: the copy belongs to the
    // same scheduled action as the send it feeds.
    box->setDiscardableAttrs(op->getDiscardableAttrDictionary());
    return box.getResult();
  };
  for (Attribute a : op.getMoves()) {
    ArrayRef<int64_t> m = cast<DenseI64ArrayAttr>(a).asArrayRef();
    int64_t from = m[0], to = m[1];
    ArrayRef<int64_t> off = m.slice(2, r), sizes = m.slice(2 + r, r);
    if (from == rank && to == rank) {
      pieces.push_back(extract(off, sizes));
      pieceOffsets.push_back(minus(off, dstBox.offsets));
    } else if (from == rank) {
      auto send = SendOp::create(b, loc, extract(off, sizes), to, thisTag);
      send->setAttrs(op->getDiscardableAttrDictionary());
    } else if (to == rank) {
      auto recv = RecvOp::create(b, loc, pieceType(sizes), from, thisTag);
      recv->setAttrs(op->getDiscardableAttrDictionary());
      pieces.push_back(recv.getResult());
      pieceOffsets.push_back(minus(off, dstBox.offsets));
    }
  }
  if (!receives) {
    // The result lives elsewhere; its users go with it.
    foreign.push_back(op);
    return success();
  }
  Value result;
  GlobalType local = cast<GlobalType>(localize(dst));
  if (pieces.size() == 1 &&
      cast<GlobalType>(pieces[0].getType()).getShape() == local.getShape()) {
    result = pieces[0];
    if (result.getType() != local)
      result = ToGlobalOp::create(b, loc, local, result);
  } else {
    auto assemble = AssembleOp::create(
        b, loc, local, pieces, groupsAttr(op.getContext(), pieceOffsets));
    assemble->setAttrs(op->getDiscardableAttrDictionary());
    result = assemble.getResult();
  }
  op.getResult().replaceAllUsesWith(result);
  op.erase();
  return success();
}

LogicalResult
RankPartitioner::rewriteComm(Operation *op, OpBuilder &b,
                             SmallVectorImpl<Operation *> &foreign) {
  b.setInsertionPoint(op);
  if (auto keep = dyn_cast<KeepOneOp>(op)) {
    // The first member of this rank's group keeps the value; the others
    // hold zeros.
    bool first = false;
    for (Attribute g : keep.getGroups()) {
      auto ranks = cast<DenseI64ArrayAttr>(g).asArrayRef();
      if (!ranks.empty() && ranks.front() == rank)
        first = true;
    }
    Value v = keep.getInput();
    if (!first) {
      auto t = cast<GlobalType>(localize(keep.getType()));
      auto zero = ConstantOp::create(
          b, keep.getLoc(), t,
          DenseElementsAttr::get(
              RankedTensorType::get(t.getShape(), t.getElementType()),
              b.getZeroAttr(t.getElementType())));
      v = zero.getResult();
    }
    keep.getResult().replaceAllUsesWith(v);
    keep.erase();
    return success();
  }
  if (auto copy = dyn_cast<DeviceCopyOp>(op)) {
    // CPU ranks run "cuda" placements on the host (PIPEFLOW_CUDA_AS_CPU):
    // the copy is the identity on local data.
    copy.getResult().replaceAllUsesWith(copy.getInput());
    copy.erase();
    return success();
  }
  if (auto bc = dyn_cast<BroadcastOp>(op)) {
    if (static_cast<int64_t>(bc.getRoot()) != rank && bc.getInput()) {
      auto fresh = BroadcastOp::create(b, bc.getLoc(), bc.getType(), Value(),
                                       bc.getRootAttr(), bc.getRanksAttr());
      fresh->setDiscardableAttrs(bc->getDiscardableAttrDictionary());
      bc.getResult().replaceAllUsesWith(fresh.getResult());
      bc.erase();
    }
    return success();
  }
  if (auto red = dyn_cast<ReduceOp>(op)) {
    if (static_cast<int64_t>(red.getRoot()) != rank && red.getResult()) {
      auto fresh = ReduceOp::create(b, red.getLoc(), Type(), red.getInput(),
                                    red.getRootAttr(), red.getRanksAttr());
      fresh->setDiscardableAttrs(red->getDiscardableAttrDictionary());
      // The result lives on the root; its users go with it.
      foreign.push_back(red);
    }
    return success();
  }
  if (auto t = dyn_cast<TransferOp>(op))
    return lowerTransfer(t, b, foreign);
  return success();
}

/// Layout-dependent local semantics of a cross-entropy, decided on global
/// types: the class group of a split by class, the batch split of a mean.
void RankPartitioner::annotateCrossEntropy(Operation *op, Value logits,
                                           bool sum, OpBuilder &b) {
  auto g = cast<GlobalType>(logits.getType());
  if (!g.getPlacement().contains(rank))
    return;
  // Split by class: the ranks holding the other column blocks of these
  // rows (coordinates equal on every dimension that does not split the
  // classes) all-reduce the rows' statistics.
  PlacementAttr place = g.getPlacement();
  SmallVector<bool> splitsClasses;
  bool byClass = false;
  for (SBPDim d : g.getSbp().getDims()) {
    splitsClasses.push_back(d.isSplit() && d.getAxis() == 1);
    byClass |= splitsClasses.back();
  }
  if (byClass) {
    SmallVector<int64_t> mine = place.getCoordinates(place.indexOf(rank));
    SmallVector<int64_t> group;
    for (int64_t pos = 0; pos < place.getNumRanks(); ++pos) {
      SmallVector<int64_t> c = place.getCoordinates(pos);
      bool same = true;
      for (auto [d, splits] : llvm::enumerate(splitsClasses))
        same &= splits || c[d] == mine[d];
      if (same)
        group.push_back(place.getRanks()[pos]);
    }
    dialect->getVocabGroupAttrHelper().setAttr(op,
                                               b.getDenseI64ArrayAttr(group));
    dialect->getShardOffsetAttrHelper().setAttr(
        op, b.getDenseI64ArrayAttr(box(g).offsets));
    dialect->getLogicalShapeAttrHelper().setAttr(
        op, b.getDenseI64ArrayAttr(g.getShape()));
  }
  if (sum)
    return; // a local sum is its share of the sum as it is
  int64_t split = g.getSbp().getSplitFactor(0, g.getPlacement());
  if (split > 1)
    // The local mean covers 1/split of the batch rows.
    dialect->getBatchSplitAttrHelper().setAttr(op, b.getI64IntegerAttr(split));
}

/// Collects the ops of other ranks into `foreign` and rewrites this rank's
/// communication.
LogicalResult
RankPartitioner::rewriteOps(Block &block, OpBuilder &b,
                            SmallVectorImpl<Operation *> &foreign) {
  for (auto t : block.getOps<TransferOp>())
    tags[t] = tags.size();
  for (Operation &op : llvm::make_early_inc_range(block)) {
    if (isa<func::ReturnOp>(op))
      continue;
    if (auto move = dyn_cast<ToGlobalOp>(op)) {
      auto src = dyn_cast<GlobalType>(move.getInput().getType());
      if (!src)
        return move.emitOpError(
            "pf-partition-ranks: a local-to-global conversion inside the "
            "step has no per-rank meaning yet");
      if (src != move.getType())
        return move.emitOpError("pf-partition-ranks: layout change ")
               << src << " -> " << move.getType()
               << " is not lowered (run pf-lower-boxing first)";
    }
    if (!participates(&op)) {
      foreign.push_back(&op);
      continue;
    }
    if (failed(rewriteComm(&op, b, foreign)))
      return failure();
  }
  return success();
}

/// Results that live on other ranks leave the signature; `kept` gets each
/// kept result's position in the global signature and its global type.
void RankPartitioner::keepLocalResults(func::FuncOp func, OpBuilder &b,
                                       SmallVectorImpl<Value> &results,
                                       KeptResults &kept) {
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  if (ret.getNumOperands() > 0)
    if (auto g = dyn_cast<GlobalType>(ret.getOperand(0).getType());
        g && g.getPlacement().contains(rank) &&
        g.getPlacement().getRanks()[0] != rank)
      dialect->getLossReplicaAttrHelper().setAttr(func, b.getUnitAttr());
  for (auto [i, v] : llvm::enumerate(ret.getOperands()))
    if (auto g = dyn_cast<GlobalType>(func.getResultTypes()[i]);
        !g || g.getPlacement().contains(rank)) {
      results.push_back(v);
      // The signature still has the global type (the value itself may be
      // a rewritten transfer's local one already).
      kept.push_back({static_cast<int64_t>(i), func.getResultTypes()[i]});
    }
  ret->setOperands(results);
}

/// Erases the ops of other ranks, and the arguments that live there.
LogicalResult RankPartitioner::eraseForeign(func::FuncOp func,
                                            ArrayRef<Operation *> foreign) {
  for (Operation *op : llvm::reverse(foreign)) {
    if (!op->use_empty())
      return op->emitOpError("pf-partition-ranks: a value on another rank's "
                             "placement is used on rank ")
             << rank << " without a layout change";
    op->erase();
  }
  Block &block = func.getBody().front();
  llvm::BitVector dropArgs(block.getNumArguments());
  for (BlockArgument arg : block.getArguments())
    if (auto g = dyn_cast<GlobalType>(arg.getType());
        g && !g.getPlacement().contains(rank)) {
      if (!arg.use_empty())
        return func.emitOpError("pf-partition-ranks: argument ")
               << arg.getArgNumber() << " of another rank is still used";
      dropArgs.set(arg.getArgNumber());
    }
  return func.eraseArguments(dropArgs);
}

/// Dense constants keep this rank's box of their value.
LogicalResult RankPartitioner::boxDenseConstants(Block &block) {
  for (auto c : block.getOps<ConstantOp>()) {
    auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
    GlobalType g = c.getType();
    if (!dense || dense.isSplat() || !g.getPlacement().contains(rank) ||
        !g.hasSBP())
      continue;
    Box shard = box(g);
    if (ArrayRef<int64_t>(shard.sizes) == g.getShape())
      continue;
    if (shard.isGrouped())
      return c.emitOpError("pf-partition-ranks: a dense constant cannot take "
                           "the grouped split ")
             << g.getSbp();
    c.setValueAttr(boxOfDense(dense, g.getShape(), shard));
  }
  return success();
}

/// A block cut out of (or padded into) a grouped split S(axis, g) over n
/// ranks starts at offset / n of each rank's local tensor.
void RankPartitioner::shiftGroupedOffsets(Block &block) {
  block.walk([&](Operation *op) {
    auto slice = dyn_cast<SliceOp>(op);
    auto pad = dyn_cast<PadOp>(op);
    if (!slice && !pad)
      return;
    auto g = cast<GlobalType>(slice ? slice.getInput().getType()
                                    : pad.getResult().getType());
    if (!g.hasSBP() || !g.getPlacement().contains(rank))
      return;
    SmallVector<int64_t> offsets(slice ? slice.getOffsets() : pad.getOffsets());
    bool changed = false;
    for (auto [d, dim] : llvm::enumerate(g.getSbp().getDims()))
      if (dim.isGrouped()) {
        offsets[dim.getAxis()] /= g.getPlacement().getHierarchy()[d];
        changed = true;
      }
    if (!changed)
      return;
    if (slice)
      slice.setOffsets(offsets);
    else
      pad.setOffsets(offsets);
  });
}

/// Local types everywhere, and the shapes written in attributes with them.
void RankPartitioner::localizeTypes(Block &block) {
  for (BlockArgument arg : block.getArguments())
    arg.setType(localize(arg.getType()));
  block.walk([&](Operation *op) {
    for (OpResult r : op->getResults())
      r.setType(localize(r.getType()));
  });
  // Shape attributes of the tensor ops follow their local results (split
  // axes start at offset 0 by the ops' SBP rules, so offsets stay).
  block.walk([&](Operation *op) {
    auto local = [&](Value v) { return cast<GlobalType>(v.getType()); };
    if (auto bc = dyn_cast<BroadcastToOp>(op))
      bc.setShape(local(bc.getResult()).getShape());
    else if (auto slice = dyn_cast<SliceOp>(op))
      slice.setSizes(local(slice.getResult()).getShape());
    else if (auto pad = dyn_cast<PadOp>(op))
      pad.setShape(local(pad.getResult()).getShape());
    else if (auto eg = dyn_cast<EmbeddingGradOp>(op))
      eg.setNumRows(local(eg.getResult()).getShape()[0]);
  });
  // Splat constants take their local shape.
  for (auto c : block.getOps<ConstantOp>()) {
    auto splat = dyn_cast<SplatElementsAttr>(c.getValue());
    GlobalType t = c.getType();
    if (splat && splat.getType().getShape() != t.getShape())
      c.setValueAttr(SplatElementsAttr::get(
          RankedTensorType::get(t.getShape(), t.getElementType()),
          splat.getSplatValue<Attribute>()));
  }
  // Same-layout moves left by the rewrite are no-ops now.
  for (auto move : llvm::make_early_inc_range(block.getOps<ToGlobalOp>()))
    if (move.getInput().getType() == move.getType()) {
      move.getResult().replaceAllUsesWith(move.getInput());
      move.erase();
    }
}

LogicalResult RankPartitioner::partitionFunction(func::FuncOp func) {
  Block &block = func.getBody().front();
  OpBuilder b(func.getContext());
  // Inputs keep their position in the global signature: the data stream of
  // input i is the same on whichever rank it lands.
  for (BlockArgument arg : block.getArguments()) {
    func.setArgAttr(arg.getArgNumber(), dialect->getInputAttrHelper().getName(),
                    b.getI64IntegerAttr(arg.getArgNumber()));
    annotateInput(func, arg);
  }
  for (Operation &op : block)
    TypeSwitch<Operation *>(&op)
        .Case<SoftmaxCrossEntropyOp, SoftmaxCrossEntropyGradOp>([&](auto ce) {
          annotateCrossEntropy(ce, ce.getLogits(), ce.getSum(), b);
        });

  SmallVector<Operation *> foreign;
  SmallVector<Value> results;
  KeptResults kept;
  if (failed(rewriteOps(block, b, foreign)))
    return failure();
  keepLocalResults(func, b, results, kept);
  if (failed(eraseForeign(func, foreign)) || failed(boxDenseConstants(block)))
    return failure();
  shiftGroupedOffsets(block);
  localizeTypes(block);

  SmallVector<Type> resultTypes;
  for (Value v : results)
    resultTypes.push_back(v.getType());
  func.setFunctionType(FunctionType::get(
      func.getContext(), block.getArgumentTypes(), resultTypes));
  func.setAllResultAttrs(ArrayRef<DictionaryAttr>{});
  for (auto [k, entry] : llvm::enumerate(kept)) {
    func.setResultAttr(k, dialect->getOutputAttrHelper().getName(),
                       b.getI64IntegerAttr(entry.first));
    func.setResultAttr(k, dialect->getGlobalTypeAttrHelper().getName(),
                       TypeAttr::get(entry.second));
  }
  return success();
}

LogicalResult RankPartitioner::run() {
  OpBuilder b(module.getContext());
  for (auto param : llvm::make_early_inc_range(module.getOps<ParamOp>())) {
    GlobalType g = param.getGlobalType();
    if (!g.getPlacement().contains(rank)) {
      param.erase();
      continue;
    }
    if (!g.hasSBP())
      return param.emitOpError("pf-partition-ranks: parameter layout not "
                               "inferred (run pf-infer-sbp first)");
    Box shard = box(g);
    // Initialisers draw the logical tensor's elements: the shard records
    // where it sits.
    dialect->getLogicalShapeAttrHelper().setAttr(
        param, b.getDenseI64ArrayAttr(g.getShape()));
    dialect->getShardOffsetAttrHelper().setAttr(
        param, b.getDenseI64ArrayAttr(shard.offsets));
    if (shard.isGrouped()) {
      // The parts must lie one after the other in the local buffer.
      for (int64_t k = 0; k < shard.groupAxis; ++k)
        if (shard.sizes[k] != 1)
          return param.emitOpError("pf-partition-ranks: the grouped split of ")
                 << g << " needs its axis " << shard.groupAxis
                 << " to be the first of size > 1 on each rank";
      dialect->getShardGroupsAttrHelper().setAttr(
          param, b.getDenseI64ArrayAttr(
                     {shard.groupAxis, shard.groups, shard.groupStride}));
    }
    // Under a partial sum only coordinate 0 of each P dimension holds the
    // value; the other ranks' addends are zeros.
    if (param.getInit().getKind() != InitKind::Zeros &&
        holdsZerosOfPartial(g, rank))
      dialect->getZeroInitAttrHelper().setAttr(param, b.getUnitAttr());
    param.setTypeAttr(TypeAttr::get(localize(g)));
  }
  // Dropout draws its mask at logical indices, and causal attention masks
  // by them: record where this rank's box of the operand (the queries)
  // sits.
  WalkResult walk = module.walk([&](Operation *op) -> WalkResult {
    if (!isa<DropoutOp, AttentionOp, AttentionGradOp>(op))
      return WalkResult::advance();
    auto g = cast<GlobalType>(op->getOperand(0).getType());
    if (!g.getPlacement().contains(rank))
      return WalkResult::advance();
    if (!g.hasSBP()) {
      op->emitOpError("pf-partition-ranks: layout not inferred");
      return WalkResult::interrupt();
    }
    dialect->getLogicalShapeAttrHelper().setAttr(
        op, b.getDenseI64ArrayAttr(g.getShape()));
    dialect->getShardOffsetAttrHelper().setAttr(
        op, b.getDenseI64ArrayAttr(box(g).offsets));
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  // A vocabulary-split embedding table: the rank's rows start at the box's
  // offset (the lookup gives zeros for ids outside them).
  module.walk([&](Operation *op) {
    Value table;
    if (auto e = dyn_cast<EmbeddingOp>(op))
      table = e.getTable();
    else if (auto g = dyn_cast<EmbeddingGradOp>(op))
      table = g.getResult();
    else
      return;
    auto g = cast<GlobalType>(table.getType());
    if (!g.hasSBP() || !g.getPlacement().contains(rank) ||
        g.getSbp().getSplitFactor(0, g.getPlacement()) == 1)
      return;
    dialect->getLogicalShapeAttrHelper().setAttr(
        op, b.getDenseI64ArrayAttr(g.getShape()));
    dialect->getShardOffsetAttrHelper().setAttr(
        op, b.getDenseI64ArrayAttr(box(g).offsets));
  });
  for (auto func : module.getOps<func::FuncOp>())
    if (!func.isExternal() && failed(partitionFunction(func)))
      return failure();
  return success();
}

/// A collective whose every group is one rank moves nothing: on a one-rank
/// placement P -> B, S -> B and the like are the same local data. (After
/// partitioning, its input and result have the same local type.)
void dropTrivialCollectives(ModuleOp rankModule) {
  SmallVector<Operation *> dead;
  rankModule.walk([&](Operation *op) {
    if (!isa<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp>(op))
      return;
    auto groups = op->getAttrOfType<ArrayAttr>("groups");
    if (!groups || op->getOperand(0).getType() != op->getResult(0).getType())
      return;
    for (auto g : groups.getAsRange<DenseI64ArrayAttr>())
      if (g.size() != 1)
        return;
    op->getResult(0).replaceAllUsesWith(op->getOperand(0));
    dead.push_back(op);
  });
  for (Operation *op : dead)
    op->erase();
}

struct PartitionRanksPass
    : public pf::impl::PartitionRanksPassBase<PartitionRanksPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    int64_t world = 0;
    WalkResult walk = module.walk([&](Operation *op) -> WalkResult {
      SmallVector<Type> types(op->getResultTypes());
      llvm::append_range(types, op->getOperandTypes());
      if (auto param = dyn_cast<ParamOp>(op))
        types.push_back(param.getType());
      if (auto func = dyn_cast<func::FuncOp>(op))
        llvm::append_range(types, func.getArgumentTypes());
      for (Type t : types) {
        auto g = dyn_cast<GlobalType>(t);
        if (!g)
          continue;
        if (!g.hasSBP()) {
          op->emitOpError("pf-partition-ranks: ")
              << g << " has no layout (run pf-spmd-pipeline first)";
          return WalkResult::interrupt();
        }
        for (int64_t r : g.getPlacement().getRanks())
          world = std::max(world, r + 1);
      }
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();

    OpBuilder b(module.getContext());
    b.setInsertionPointToEnd(module.getBody());
    auto *dialect = getContext().getLoadedDialect<PFDialect>();
    SmallVector<Operation *> original;
    for (Operation &op : module.getBody()->getOperations())
      original.push_back(&op);
    // The rank modules are made here, then each is filled (a clone of the
    // global program, which the tasks only read) and partitioned on its own
    // thread.
    SmallVector<ModuleOp> rankModules;
    for (int64_t r = 0; r < world; ++r) {
      auto rankModule =
          ModuleOp::create(module.getLoc(), ("rank" + Twine(r)).str());
      dialect->getRankAttrHelper().setAttr(rankModule, b.getI64IntegerAttr(r));
      b.insert(rankModule);
      rankModules.push_back(rankModule);
    }
    if (failed(forEachRankInOrder(&getContext(), world, [&](size_t r) {
          ModuleOp rankModule = rankModules[r];
          OpBuilder inner = OpBuilder::atBlockBegin(rankModule.getBody());
          IRMapping mapping;
          for (Operation *op : original)
            inner.clone(*op, mapping);
          if (failed(RankPartitioner(rankModule, r).run()))
            return failure();
          dropTrivialCollectives(rankModule);
          return success();
        })))
      return signalPassFailure();
    for (Operation *op : original)
      op->erase();
    dialect->getWorldSizeAttrHelper().setAttr(module,
                                              b.getI64IntegerAttr(world));
  }
};
} // namespace
