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

/// How many times a step runs `op`: m for an op of a micro-batch template
/// (pf-microbatch{template}) of m micro-batches, else 1.
int64_t copiesPerStep(Operation *op) {
  if (!PFDialect::MicrobatchAttrHelper(op->getContext()).isAttrPresent(op))
    return 1;
  auto func = op->getParentOfType<func::FuncOp>();
  IntegerAttr m =
      func ? PFDialect::MicrobatchTemplateAttrHelper(op->getContext())
                 .getAttr(func)
           : IntegerAttr();
  return m ? m.getInt() : 1;
}

/// A report line for an op the step runs `copies` times.
void addReportLine(SmallVectorImpl<std::string> &lines, std::string line,
                   int64_t copies) {
  if (copies > 1)
    line += " (x" + std::to_string(copies) + ", one per micro-batch)";
  lines.push_back(std::move(line));
}

class Lowerer {
public:
  Lowerer(OpBuilder &b, ToGlobalOp move)
      : b(b), move(move), loc(move.getLoc()), copies(copiesPerStep(move)) {}

  /// Replaces the move; failure after a located error.
  LogicalResult run();

  /// One line per emitted communication op; how many the step runs and
  /// their bytes per rank in a step.
  SmallVector<std::string> lines;
  int64_t count = 0;
  double bytes = 0;
  /// Adds another lowerer's lines, count and bytes to these.
  void add(const Lowerer &other) {
    llvm::append_range(lines, other.lines);
    count += other.count;
    bytes += other.bytes;
  }

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

  /// Same placement: planBoxing's steps.
  Value samePlacement(Value v, SBPAttr to);
  /// The group collective taking v (one hierarchy entry `from`) to `out`
  /// (that entry `to`); null when the entries are equal.
  Value emitCollective(GlobalType out, Value v, SBPDim from, SBPDim to,
                       double cost, ArrayAttr groups);
  /// One step of planBoxing on v: a collective within the groups of its
  /// dimension, or over all ranks.
  Value applyStep(Value v, const BoxingStep &step);
  /// A pf.transfer of `v` to `out` by the exchange's moves.
  Value emitTransfer(Value v, GlobalType out, const Exchange &ex);
  FailureOr<Value> otherPlacement(Value v, GlobalType to);
  /// A layout change on one placement to or from a grouped split.
  LogicalResult changeGrouped(GlobalType from, GlobalType to);
  /// Replaces the move by moves through `steps` (the last its type), each
  /// lowered in turn; equal neighbours are skipped.
  LogicalResult through(ArrayRef<GlobalType> steps);

  OpBuilder &b;
  ToGlobalOp move;
  Location loc;
  int64_t copies;
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
  addReportLine(lines, s, copies);
  count += copies;
  bytes += cost * copies;
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
  if (step.dim == BoxingStep::kExchangeStep) {
    GlobalType out = t.withSBP(step.after);
    return emitTransfer(v, out, planExchange(t, out));
  }
  PlacementAttr p = t.getPlacement();
  SmallVector<SmallVector<int64_t>> groups =
      step.dim == BoxingStep::kFlatStep
          ? SmallVector<SmallVector<int64_t>>{SmallVector<int64_t>(
                p.getRanks())}
          : hierarchyGroups(p, step.dim);
  Value changed =
      emitCollective(t.withSBP(step.after), v, step.from, step.to, step.bytes,
                     groupsAttr(b.getContext(), groups));
  assert(changed && "every 1-D transition has one op");
  return changed;
}

Value Lowerer::emitTransfer(Value v, GlobalType out, const Exchange &ex) {
  SmallVector<Attribute> moves;
  for (const BoxMove &m : ex.moves) {
    SmallVector<int64_t> entry = {m.src, m.dst};
    llvm::append_range(entry, m.box.offsets);
    llvm::append_range(entry, m.box.sizes);
    moves.push_back(b.getDenseI64ArrayAttr(entry));
  }
  auto transfer =
      TransferOp::create(b, loc, out, v, ArrayAttr::get(b.getContext(), moves));
  copyAttrs(transfer);
  record(transfer, cast<GlobalType>(v.getType()), out, ex.bytes);
  return transfer.getResult();
}

Value Lowerer::samePlacement(Value v, SBPAttr to) {
  auto t = cast<GlobalType>(v.getType());
  Value cur = v;
  for (const BoxingStep &step : planBoxing(t, t.getSbp(), to))
    cur = applyStep(cur, step);
  return cur;
}

FailureOr<Value> Lowerer::otherPlacement(Value v, GlobalType to) {
  auto t = cast<GlobalType>(v.getType());
  PlacementAttr fp = t.getPlacement(), tp = to.getPlacement();
  TransferPlan plan = planTransfer(t, to);
  GlobalType mid = to.withSBP(withoutPartial(to.getSbp()));
  switch (plan.kind) {
  case TransferPlan::Kind::Broadcast: {
    auto op = BroadcastOp::create(b, loc, to, v,
                                  b.getI64IntegerAttr(fp.getRanks()[0]),
                                  b.getDenseI64ArrayAttr(tp.getRanks()));
    copyAttrs(op);
    record(op, t, to, plan.opBytes);
    return op.getResult();
  }
  case TransferPlan::Kind::Reduce: {
    auto op =
        ReduceOp::create(b, loc, to, v, b.getI64IntegerAttr(tp.getRanks()[0]),
                         b.getDenseI64ArrayAttr(fp.getRanks()));
    copyAttrs(op);
    record(op, t, to, plan.opBytes);
    return op.getResult();
  }
  case TransferPlan::Kind::DeviceCopy: {
    Value there = samePlacement(samePlacement(v, plan.reduced), mid.getSbp());
    auto copy = DeviceCopyOp::create(b, loc, mid, there);
    copyAttrs(copy);
    record(copy, cast<GlobalType>(there.getType()), mid, plan.opBytes);
    return samePlacement(copy.getResult(), to.getSbp());
  }
  case TransferPlan::Kind::Exchange:
    break;
  }
  if (fp.getDevice() != tp.getDevice())
    return move.emitOpError("pf-lower-boxing: cannot move ")
           << t << " to " << to
           << ": a device change must keep the ranks (move between ranks "
              "on one device kind first)";
  // Partial sums reduced where they are (all-reduce or reduce-scatter),
  // then every destination rank gets its box from the sources holding it.
  Value src = samePlacement(v, plan.reduced);
  Value moved = emitTransfer(src, mid, plan.exchange);
  return samePlacement(moved, to.getSbp());
}

/// Layouts `from` and `to` meet the reshape cutting axis a into (g, d / g)
/// when every grouped entry of theirs is S(a, g) or the same in both (its
/// axis is not a), and neither splits axis a otherwise: on the cut shape
/// each S(a, g) is the plain split S(a + 1) (each rank's blocks in their
/// local order) and every other split keeps its axis, shifted past the cut.
static bool meetsCut(SBPAttr from, SBPAttr to, int64_t a, int64_t g) {
  for (auto [f, t] : llvm::zip_equal(from.getDims(), to.getDims())) {
    for (SBPDim d : {f, t})
      if (d.isSplit() && d.getAxis() == a && d.getGroups() != g)
        return false;
    bool otherGrouped = (f.isGrouped() && f.getAxis() != a) ||
                        (t.isGrouped() && t.getAxis() != a);
    if (otherGrouped && f != t)
      return false;
  }
  return true;
}

/// `sbp` with every split of axis a (grouped or not) made B; every axis if
/// a is negative.
static SBPAttr withoutAxis(SBPAttr sbp, int64_t a) {
  SmallVector<SBPDim> dims;
  for (SBPDim d : sbp.getDims())
    dims.push_back(d.isSplit() && (a < 0 ? d.isGrouped() : d.getAxis() == a)
                       ? SBPDim::broadcast()
                       : d);
  return SBPAttr::get(sbp.getContext(), dims);
}

static SBPAttr onCut(SBPAttr sbp, int64_t a) {
  SmallVector<SBPDim> dims;
  for (SBPDim d : sbp.getDims())
    dims.push_back(!d.isSplit()       ? d
                   : d.getAxis() == a ? SBPDim::split(a + 1)
                   : d.getAxis() > a
                       ? SBPDim::split(d.getAxis() + 1, d.getGroups())
                       : d);
  return SBPAttr::get(sbp.getContext(), dims);
}

LogicalResult Lowerer::changeGrouped(GlobalType from, GlobalType to) {
  SBPDim grouped =
      *llvm::find_if(llvm::concat<const SBPDim>(from.getSbp().getDims(),
                                                to.getSbp().getDims()),
                     [](SBPDim d) { return d.isGrouped(); });
  int64_t a = grouped.getAxis(), g = grouped.getGroups();
  b.setInsertionPoint(move);
  if (meetsCut(from.getSbp(), to.getSbp(), a, g)) {
    // The change happens on the cut shape, between the reshapes.
    ArrayRef<int64_t> shape = from.getShape();
    SmallVector<int64_t> cut(shape.take_front(a));
    cut.push_back(g);
    cut.push_back(shape[a] / g);
    llvm::append_range(cut, shape.drop_front(a + 1));
    auto reshaped = ReshapeOp::create(
        b, loc,
        GlobalType::get(cut, from.getElementType(), from.getPlacement(),
                        onCut(from.getSbp(), a)),
        move.getInput());
    copyAttrs(reshaped);
    // Only S(a, g) changes there; a grouped split of another axis stays.
    auto cutType = cast<GlobalType>(reshaped.getType());
    for (const BoxingStep &step :
         planBoxing(cutType, cutType.getSbp(), onCut(to.getSbp(), a)))
      if (step.from.isGrouped() || step.to.isGrouped())
        return move.emitOpError("pf-lower-boxing: no boxing changes the "
                                "grouped splits in ")
               << from << " to " << to << " together";
    Value changed = samePlacement(reshaped.getResult(), onCut(to.getSbp(), a));
    auto back = ReshapeOp::create(b, loc, to, changed);
    copyAttrs(back);
    move.getResult().replaceAllUsesWith(back.getResult());
    move.erase();
    return success();
  }
  // A grouped split to or from another split of its axis (or another
  // grouping): through the layout where no entry splits axis a, each step
  // then one of the above or plain boxing. Moves one gather's bytes where
  // an all_to_all would do, but keeps the blocks' order without a layout
  // of its own.
  GlobalType mid = from.withSBP(withoutAxis(from.getSbp(), a));
  if (mid == from) // `to` itself splits axis a twice: no layout to reach
    return move.emitOpError("pf-lower-boxing: no boxing changes the "
                            "grouped split in ")
           << from << " to " << to
           << " (a grouped split's axis is split by no other dimension)";
  return through({mid, to});
}

LogicalResult Lowerer::through(ArrayRef<GlobalType> steps) {
  b.setInsertionPoint(move);
  Value cur = move.getInput();
  SmallVector<ToGlobalOp> moves;
  for (GlobalType t : steps) {
    if (cur.getType() == t)
      continue;
    auto step = ToGlobalOp::create(b, loc, t, cur);
    copyAttrs(step);
    moves.push_back(step);
    cur = step.getResult();
  }
  move.getResult().replaceAllUsesWith(cur);
  move.erase();
  for (ToGlobalOp step : moves) {
    Lowerer lowerer(b, step);
    if (failed(lowerer.run()))
      return failure();
    add(lowerer);
  }
  return success();
}

LogicalResult Lowerer::run() {
  auto from = dyn_cast<GlobalType>(move.getInput().getType());
  GlobalType to = move.getType();
  if (!from)
    return success(); // a local tensor made global: the front end's business
  if (!from.hasSBP() || !to.hasSBP())
    return move.emitOpError("pf-lower-boxing: layouts must be inferred "
                            "first (run pf-infer-sbp)");
  if (from.getPlacement() == to.getPlacement() &&
      from.getSbp() != to.getSbp() &&
      (hasGrouped(from.getSbp()) || hasGrouped(to.getSbp())))
    return changeGrouped(from, to);
  // A grouped split moving to other ranks: made B where it is (or where it
  // goes), the move between plain layouts.
  if (hasGrouped(from.getSbp()) || hasGrouped(to.getSbp()))
    return through({from.withSBP(withoutAxis(from.getSbp(), -1)),
                    to.withSBP(withoutAxis(to.getSbp(), -1)), to});
  b.setInsertionPoint(move);
  FailureOr<Value> result =
      from.getPlacement() == to.getPlacement()
          ? FailureOr<Value>(samePlacement(move.getInput(), to.getSbp()))
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
    int64_t count = 0;
    double total = 0;
    for (ToGlobalOp m : moves) {
      Lowerer lowerer(b, m);
      if (failed(lowerer.run()))
        return signalPassFailure();
      llvm::append_range(lines, lowerer.lines);
      count += lowerer.count;
      total += lowerer.bytes;
    }
    if (!report)
      return;
    // What the cross-entropy split by class moves itself (its rows'
    // statistics; pf-partition-ranks names the groups).
    module.walk([&](Operation *op) {
      if (!isa<SoftmaxCrossEntropyOp, SoftmaxCrossEntropyGradOp>(op))
        return;
      auto logits = cast<GlobalType>(op->getOperand(0).getType());
      if (!logits.hasSBP())
        return;
      int64_t n = 1;
      double bytes =
          internalCommBytes(op, {logits.getSbp()}, logits.getPlacement(), &n);
      if (n == 1)
        return;
      std::string line;
      llvm::raw_string_ostream os(line);
      os << op->getName().stripDialect() << " " << shapeString(logits) << " "
         << logits.getPlacement() << " " << logits.getSbp()
         << " split by class: all_reduce of the rows' max and sums within " << n
         << " ranks: " << static_cast<int64_t>(bytes) << " bytes/rank";
      if (auto fl = dyn_cast<FileLineColLoc>(op->getLoc()))
        os << " at " << fl.getFilename() << ":" << fl.getLine() << ":"
           << fl.getColumn();
      int64_t copies = copiesPerStep(op);
      addReportLine(lines, line, copies);
      count += copies;
      total += bytes * copies;
    });
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "pf boxing report: " << count << " communication op(s)\n";
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
