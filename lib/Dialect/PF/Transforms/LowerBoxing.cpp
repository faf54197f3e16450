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
  /// One step of planBoxing on v: a collective within the groups of its
  /// dimension, or over all ranks.
  Value applyStep(Value v, const BoxingStep &step);
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

Value Lowerer::applyStep(Value v, const BoxingStep &step) {
  auto t = cast<GlobalType>(v.getType());
  PlacementAttr p = t.getPlacement();
  SmallVector<SmallVector<int64_t>> groups =
      step.dim < 0 ? SmallVector<SmallVector<int64_t>>{SmallVector<int64_t>(
                         p.getRanks())}
                   : hierarchyGroups(p, step.dim);
  Value changed =
      emitCollective(t.withSBP(step.after), v, step.from, step.to, step.bytes,
                     groupsAttr(b.getContext(), groups));
  assert(changed && "every 1-D transition has one op");
  return changed;
}

FailureOr<Value> Lowerer::samePlacement(Value v, SBPAttr to) {
  auto t = cast<GlobalType>(v.getType());
  Value cur = v;
  for (const BoxingStep &step : planBoxing(t, t.getSbp(), to))
    cur = applyStep(cur, step);
  return cur;
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
