//===- LowerBoxing.cpp - layout changes become collectives and transfers --===//

#include "pf/Dialect/PF/IR/SBPUtils.h"
#include "pf/Dialect/PF/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#define DEBUG_TYPE "pf-lower-boxing"

namespace mlir::pf {
#define GEN_PASS_DEF_LOWERBOXINGPASS
#include "pf/Dialect/PF/Transforms/Passes.h.inc"
} // namespace mlir::pf

using namespace mlir;
using namespace mlir::pf;

namespace {

double elementBytes(GlobalType t) {
  return std::max<int64_t>(1, t.getElementType().getIntOrFloatBitWidth() / 8);
}

class Lowerer {
public:
  Lowerer(OpBuilder &b, ToGlobalOp move)
      : b(b), move(move), loc(move.getLoc()) {}

  /// Replaces the move; failure after a located error.
  LogicalResult run();

  /// One line per emitted communication op.
  SmallVector<std::string> lines;
  double bytes = 0;

private:
  template <typename OpTy, typename... Args>
  Value emit(GlobalType to, Value v, double cost, Args &&...args) {
    auto op = OpTy::create(b, loc, to, v, std::forward<Args>(args)...);
    copyAttrs(op);
    record(op, cast<GlobalType>(v.getType()), to, cost);
    return op->getResult(0);
  }
  void copyAttrs(Operation *op) {
    for (StringRef name : {PFDialect::StageAttrHelper::getNameStr(),
                           PFDialect::MicrobatchAttrHelper::getNameStr(),
                           PFDialect::PhaseAttrHelper::getNameStr()})
      if (Attribute a = move->getAttr(name))
        op->setAttr(name, a);
  }
  void record(Operation *op, GlobalType from, GlobalType to, double cost);

  /// Same placement: one change per hierarchy dimension (or one over the
  /// flattened placement).
  FailureOr<Value> samePlacement(Value v, SBPAttr to);
  /// The group collective taking v (one hierarchy entry `from`) to `out`
  /// (that entry `to`); null when the entries are equal.
  Value emitCollective(GlobalType out, Value v, SBPDim from, SBPDim to,
                       double cost, ArrayAttr groups);
  /// Changes hierarchy dimension d of v's layout to `to`.
  Value changeDim(Value v, unsigned d, SBPDim to);
  Value flatChange(Value v, SBPAttr to);
  FailureOr<Value> otherPlacement(Value v, GlobalType to);

  OpBuilder &b;
  ToGlobalOp move;
  Location loc;
};

void Lowerer::record(Operation *op, GlobalType from, GlobalType to,
                     double cost) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << op->getName().stripDialect() << " " << shapeString(from) << " "
     << from.getPlacement() << " " << from.getSbp() << " -> ";
  if (to.getPlacement() != from.getPlacement())
    os << to.getPlacement() << " ";
  os << to.getSbp();
  if (auto groups = op->getAttrOfType<ArrayAttr>("groups"))
    os << " groups " << groupsString(groups);
  if (auto ranks = op->getAttrOfType<DenseI64ArrayAttr>("ranks")) {
    os << " root " << op->getAttrOfType<IntegerAttr>("root").getInt()
       << " ranks [";
    llvm::interleaveComma(ranks.asArrayRef(), os);
    os << "]";
  }
  if (auto moves = op->getAttrOfType<ArrayAttr>("moves"))
    os << " moves " << moves.size();
  os << ": " << static_cast<int64_t>(cost) << " bytes/rank";
  if (auto fl = dyn_cast<FileLineColLoc>(loc))
    os << " at " << fl.getFilename() << ":" << fl.getLine() << ":"
       << fl.getColumn();
  lines.push_back(s);
  bytes += cost;
}

/// Total bytes of the tensor as the groups along d see it.
double seenBytes(GlobalType t, unsigned d) {
  double total = t.getNumElements() * elementBytes(t);
  for (unsigned e = 0; e < t.getSbp().size(); ++e)
    if (e != d && t.getSbp()[e].isSplit())
      total /= t.getPlacement().getHierarchy()[e];
  return total;
}

Value Lowerer::emitCollective(GlobalType out, Value v, SBPDim from, SBPDim to,
                              double cost, ArrayAttr groups) {
  if (from.isPartial() && to.isBroadcast())
    return emit<AllReduceOp>(out, v, cost, groups);
  if (from.isPartial() && to.isSplit())
    return emit<ReduceScatterOp>(out, v, cost, groups, to.getAxis());
  if (from.isSplit() && to.isBroadcast())
    return emit<AllGatherOp>(out, v, cost, groups, from.getAxis());
  if (from.isSplit() && to.isSplit())
    return emit<AllToAllOp>(out, v, cost, groups, to.getAxis(), from.getAxis());
  if (from.isBroadcast() && to.isSplit())
    return emit<ShardOp>(out, v, 0, groups, to.getAxis());
  if (from.isBroadcast() && to.isPartial())
    return emit<KeepOneOp>(out, v, 0, groups);
  if (from.isSplit() && to.isPartial())
    return emit<UnshardOp>(out, v, 0, groups, from.getAxis());
  return Value();
}

Value Lowerer::changeDim(Value v, unsigned d, SBPDim to) {
  auto t = cast<GlobalType>(v.getType());
  SBPDim from = t.getSbp()[d];
  MLIRContext *ctx = b.getContext();
  ArrayAttr groups = groupsAttr(ctx, hierarchyGroups(t.getPlacement(), d));
  int64_t n = t.getPlacement().getHierarchy()[d];
  double seen = seenBytes(t, d);
  GlobalType out = t.withSBP(withDim(t.getSbp(), d, to));
  double cost = transitionBytes(from, to, n, seen);
  Value changed = emitCollective(out, v, from, to, cost, groups);
  assert(changed && "every 1-D transition has one op");
  return changed;
}

/// The single 1-D entry a layout is on the flattened placement, if any.
std::optional<SBPDim> flatEntry(SBPAttr sbp) {
  SBPDim first = sbp[0];
  for (SBPDim d : sbp.getDims())
    if (d != first)
      return std::nullopt;
  return first;
}

Value Lowerer::flatChange(Value v, SBPAttr to) {
  auto t = cast<GlobalType>(v.getType());
  SBPDim from = *flatEntry(t.getSbp()), want = *flatEntry(to);
  MLIRContext *ctx = b.getContext();
  ArrayAttr groups =
      groupsAttr(ctx, {SmallVector<int64_t>(t.getPlacement().getRanks())});
  int64_t n = t.getPlacement().getNumRanks();
  GlobalType out = t.withSBP(to);
  double cost =
      transitionBytes(from, want, n, t.getNumElements() * elementBytes(t));
  Value changed = emitCollective(out, v, from, want, cost, groups);
  assert(changed && "every 1-D transition has one op");
  return changed;
}

FailureOr<Value> Lowerer::samePlacement(Value v, SBPAttr to) {
  auto t = cast<GlobalType>(v.getType());
  SBPAttr from = t.getSbp();
  if (from == to)
    return v;
  unsigned dims = from.size();
  // Hierarchy reduction: one collective over all ranks, when both layouts
  // are one entry repeated.
  if (dims > 1) {
    std::optional<SBPDim> f = flatEntry(from), w = flatEntry(to);
    if (f && w)
      return flatChange(v, to);
  }
  // Per dimension. A dimension may change when no later dimension splits
  // the axes it touches (the rank's data is then a plain sub-block);
  // gathers go inner to outer.
  auto canChange = [&](SBPAttr cur, unsigned d) {
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
  Value cur = v;
  while (true) {
    SBPAttr now = cast<GlobalType>(cur.getType()).getSbp();
    if (now == to)
      return cur;
    int chosen = -1;
    for (int d = dims - 1; d >= 0; --d)
      if (now[d] != to[d] && canChange(now, d)) {
        chosen = d;
        break;
      }
    if (chosen >= 0) {
      cur = changeDim(cur, chosen, to[chosen]);
      continue;
    }
    // No direct order: through all-B (always lowerable, more bytes).
    for (int d = dims - 1; d >= 0; --d)
      if (!cast<GlobalType>(cur.getType()).getSbp()[d].isBroadcast())
        cur = changeDim(cur, d, SBPDim::broadcast());
    for (unsigned d = 0; d < dims; ++d)
      if (!to[d].isBroadcast())
        cur = changeDim(cur, d, to[d]);
    return cur;
  }
}

SBPAttr withoutPartial(SBPAttr sbp) {
  SmallVector<SBPDim> dims;
  for (SBPDim d : sbp.getDims())
    dims.push_back(d.isPartial() ? SBPDim::broadcast() : d);
  return SBPAttr::get(sbp.getContext(), dims);
}

FailureOr<Value> Lowerer::otherPlacement(Value v, GlobalType to) {
  auto t = cast<GlobalType>(v.getType());
  PlacementAttr fp = t.getPlacement(), tp = to.getPlacement();
  MLIRContext *ctx = b.getContext();
  double total = t.getNumElements() * elementBytes(t);
  // 1 -> N broadcast.
  if (fp.getNumRanks() == 1 && tp.getNumRanks() > 1 &&
      tp.contains(fp.getRanks()[0]) && to.getSbp().isAllBroadcast() &&
      fp.getDevice() == tp.getDevice()) {
    auto op = BroadcastOp::create(b, loc, to, v,
                                  b.getI64IntegerAttr(fp.getRanks()[0]),
                                  b.getDenseI64ArrayAttr(tp.getRanks()));
    copyAttrs(op);
    record(op, t, to, total);
    return op.getResult();
  }
  // N -> 1 reduce of a partial sum.
  if (tp.getNumRanks() == 1 && fp.getNumRanks() > 1 &&
      fp.contains(tp.getRanks()[0]) && fp.getDevice() == tp.getDevice() &&
      llvm::all_of(t.getSbp().getDims(),
                   [](SBPDim d) { return d.isPartial(); }) &&
      to.getSbp().isAllBroadcast()) {
    auto op =
        ReduceOp::create(b, loc, to, v, b.getI64IntegerAttr(tp.getRanks()[0]),
                         b.getDenseI64ArrayAttr(fp.getRanks()));
    copyAttrs(op);
    record(op, t, to, total);
    return op.getResult();
  }
  // Reduce partial sums where they are.
  FailureOr<Value> src = samePlacement(v, withoutPartial(t.getSbp()));
  if (failed(src))
    return failure();
  GlobalType srcType = cast<GlobalType>(src->getType());
  SBPAttr dstNoP = withoutPartial(to.getSbp());
  GlobalType mid = to.withSBP(dstNoP);
  // cpu <-> cuda on the same ranks: change the layout, then copy.
  if (fp.getDevice() != tp.getDevice() && fp.getRanks() == tp.getRanks() &&
      fp.getHierarchy() == tp.getHierarchy()) {
    FailureOr<Value> there = samePlacement(*src, dstNoP);
    if (failed(there))
      return failure();
    auto copy = DeviceCopyOp::create(b, loc, mid, *there);
    copyAttrs(copy);
    record(copy, cast<GlobalType>(there->getType()), mid,
           mid.getNumElements() * elementBytes(mid) /
               std::max<int64_t>(1, tp.getNumRanks()));
    return samePlacement(copy.getResult(), to.getSbp());
  }
  if (fp.getDevice() != tp.getDevice())
    return move.emitOpError("pf-lower-boxing: cannot move ")
           << t << " to " << to
           << ": a device change must keep the ranks (move between ranks "
              "on one device kind first)";
  // Moves of slice intersections: every destination rank gets its box from
  // the sources holding it (itself if it holds it, else spread over the
  // holders).
  SmallVector<Attribute> moves;
  int64_t rank = t.getRank();
  double busiest = 0;
  for (int64_t q = 0; q < tp.getNumRanks(); ++q) {
    int64_t dst = tp.getRanks()[q];
    Box need = shardBox(to.getShape(), tp, dstNoP, q);
    // Distinct source boxes and their holders.
    SmallVector<std::pair<Box, SmallVector<int64_t>>> sources;
    for (int64_t p = 0; p < fp.getNumRanks(); ++p) {
      Box has = shardBox(t.getShape(), fp, srcType.getSbp(), p);
      auto it = llvm::find_if(sources, [&](auto &s) {
        return s.first.offsets == has.offsets && s.first.sizes == has.sizes;
      });
      if (it == sources.end())
        sources.push_back({has, {fp.getRanks()[p]}});
      else
        it->second.push_back(fp.getRanks()[p]);
    }
    double received = 0;
    for (auto &[has, holders] : sources) {
      Box piece = need.intersect(has);
      if (piece.isEmpty())
        continue;
      int64_t from =
          llvm::is_contained(holders, dst) ? dst : holders[q % holders.size()];
      SmallVector<int64_t> m = {from, dst};
      llvm::append_range(m, piece.offsets);
      llvm::append_range(m, piece.sizes);
      moves.push_back(b.getDenseI64ArrayAttr(m));
      if (from != dst)
        received += piece.numElements() * elementBytes(t);
    }
    busiest = std::max(busiest, received);
  }
  (void)rank;
  auto transfer =
      TransferOp::create(b, loc, mid, *src, ArrayAttr::get(ctx, moves));
  copyAttrs(transfer);
  record(transfer, srcType, mid, busiest);
  return samePlacement(transfer.getResult(), to.getSbp());
}

LogicalResult Lowerer::run() {
  auto from = dyn_cast<GlobalType>(move.getInput().getType());
  GlobalType to = move.getType();
  if (!from)
    return success(); // a local tensor made global: the front end's business
  if (!from.hasSBP() || !to.hasSBP())
    return move.emitOpError("pf-lower-boxing: layouts must be inferred "
                            "first (run pf-infer-sbp)");
  b.setInsertionPoint(move);
  FailureOr<Value> result = from.getPlacement() == to.getPlacement()
                                ? samePlacement(move.getInput(), to.getSbp())
                                : otherPlacement(move.getInput(), to);
  if (failed(result))
    return failure();
  move.getResult().replaceAllUsesWith(*result);
  move.erase();
  return success();
}

struct LowerBoxingPass : public pf::impl::LowerBoxingPassBase<LowerBoxingPass> {
  using LowerBoxingPassBase::LowerBoxingPassBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<ToGlobalOp> moves;
    module.walk([&](ToGlobalOp m) { moves.push_back(m); });
    OpBuilder b(module.getContext());
    SmallVector<std::string> lines;
    double total = 0;
    for (ToGlobalOp m : moves) {
      Lowerer lowerer(b, m);
      if (failed(lowerer.run()))
        return signalPassFailure();
      llvm::append_range(lines, lowerer.lines);
      total += lowerer.bytes;
    }
    if (!report)
      return;
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "pf boxing report: " << lines.size() << " communication op(s)\n";
    for (const std::string &l : lines)
      os << "  " << l << "\n";
    os << "  total: " << static_cast<int64_t>(total)
       << " bytes/rank per step\n";
    if (reportFile.empty()) {
      llvm::outs() << text;
      llvm::outs().flush();
      return;
    }
    std::error_code ec;
    llvm::raw_fd_ostream file(reportFile, ec, llvm::sys::fs::OF_Text);
    if (ec) {
      module.emitError("pf-lower-boxing: cannot write ")
          << reportFile << ": " << ec.message();
      return signalPassFailure();
    }
    file << text;
  }
};
} // namespace
