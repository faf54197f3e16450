//===- InferSBP.cpp - choose every value's SBP layout by boxing cost ------===//

#include "SequenceParallel.h"
#include "pf/Dialect/PF/IR/SBPUtils.h"
#include "pf/Dialect/PF/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/DenseSet.h"

#include <limits>
#include <tuple>

#define DEBUG_TYPE "pf-infer-sbp"

namespace mlir::pf {
#define GEN_PASS_DEF_INFERSBPPASS
#include "pf/Dialect/PF/Transforms/Passes.h.inc"
} // namespace mlir::pf

using namespace mlir;
using namespace mlir::pf;

namespace {

constexpr double kInfinite = std::numeric_limits<double>::infinity();
constexpr double kChangeEpsilon = 1e-3;
/// Prices closer than this are equal for the memory tie-break (well below
/// kChangeEpsilon, well above the rounding of byte counts).
constexpr double kPriceTolerance = 1e-6;

/// Whether an op runs in the update (the optimizer's step): sequence
/// parallelism concerns activations, not the parameters' updates.
bool inUpdate(Operation *op) {
  auto phase = op ? op->getAttrOfType<StringAttr>(
                        PFDialect::PhaseAttrHelper::getNameStr())
                  : StringAttr();
  return phase && phase.getValue() == "update";
}

/// Whether an op computes a parameter's gradient (whose partial sums are
/// reduced once, at the update).
bool isBackwardWeight(Operation *op) {
  auto phase =
      op->getAttrOfType<StringAttr>(PFDialect::PhaseAttrHelper::getNameStr());
  return phase && phase.getValue() == "backward_weight";
}

/// Whether an op is part of the forward (no phase, or recomputed).
bool inForward(Operation *op) {
  auto phase =
      op->getAttrOfType<StringAttr>(PFDialect::PhaseAttrHelper::getNameStr());
  return !phase || phase.getValue() == "forward" ||
         phase.getValue() == "recompute";
}

/// A value whose layout is still open, and where it comes from.
struct Open {
  enum Kind { Leaf, Move, Derived } kind;
  Value source; // Move: the moved value
  /// Derived: the layouts the producer gives for free from its replicated
  /// operands, the default (all-B) first.
  SmallVector<SBPAttr> free = {};
};

class Inferrer {
public:
  Inferrer(ModuleOp module, bool sequenceParallel)
      : module(module), sequenceParallel(sequenceParallel) {
    for (auto p : module.getOps<ParamOp>())
      params[p.getSymName()] = p;
  }

  LogicalResult run(func::FuncOp func);
  void finishParams();
  /// With sequence parallelism: a located error where the program has no
  /// tensor-parallel axis to split the sequence over.
  LogicalResult checkSequenceParallel();

private:
  static GlobalType global(Value v) {
    return dyn_cast<GlobalType>(v.getType());
  }
  bool isOpen(Value v) const { return open.count(v); }

  /// Fixes an open value's layout (and, for a parameter read, the
  /// parameter's and its other open reads').
  void resolve(Value v, SBPAttr sbp);
  /// The layout an open value takes when nobody asks for one.
  SBPAttr defaultLayout(Value v);
  /// Resolves `v` if open, with its default.
  void settle(Value v) {
    if (isOpen(v))
      resolve(v, defaultLayout(v));
  }
  /// What giving `v` the layout `want` costs, in bytes per rank.
  double cost(Value v, SBPAttr want, Operation *consumer = nullptr);
  /// What changing a laid-out value's layout costs `consumer`.
  double changeCost(Value v, SBPAttr want, Operation *consumer);
  /// Sequence parallelism's accounts (below) once `op`'s signature is
  /// chosen; a located error where a row-parallel result's sequence does
  /// not divide.
  LogicalResult account(Operation *op, const NDSBPSignature &sig);
  bool hasCredit(Value v) const;
  /// Sequence parallelism's corrections to the price of `sig` (see its
  /// definition).
  double sequenceAdjustment(Operation *op, const NDSBPSignature &sig);
  bool allowedForConstant(Value v, SBPAttr sbp);
  /// The write of a parameter `user` (a consumer of `r`) is, if any.
  WriteParamOp writtenBy(Operation *user, Value r) const;
  /// What writing a result of layout `got` to a parameter costs later.
  double writeBackCost(WriteParamOp write, GlobalType t, SBPAttr got);

  LogicalResult visitSignatureOp(Operation *op);
  LogicalResult visitReturn(func::ReturnOp ret, func::FuncOp func);

  ModuleOp module;
  llvm::DenseMap<Value, Open> open;
  llvm::StringMap<ParamOp> params;
  /// Open reads of each parameter whose layout is open.
  llvm::StringMap<SmallVector<Value>> openReads;
  /// Layout changes already chosen for an earlier consumer in the same
  /// stage: pf-insert-boxing makes them once, later consumers reuse them.
  llvm::DenseSet<std::tuple<Value, SBPAttr, Attribute>> paid;

  /// Sequence parallelism (see changeCost). A reduce-scatter into the
  /// sequence axis is priced as the all-reduce, so it prepays one gather:
  /// it gets a credit, which the values computed from the scattered value
  /// along the sequence inherit, and which the first gather of one of them
  /// spends (that gather is then free).
  bool sequenceParallel;
  unsigned numCredits = 0;
  llvm::DenseMap<Value, SmallVector<unsigned, 2>> credits;
  llvm::DenseSet<unsigned> spent;
  /// The credit of each (value, layout) scatter, for its later consumers.
  llvm::DenseMap<std::pair<Value, SBPAttr>, unsigned> scatterCredit;
  /// The first forward op with a partial-sum activation (tensor-parallel).
  Operation *firstPartialActivation = nullptr;
};

void Inferrer::resolve(Value v, SBPAttr sbp) {
  auto it = open.find(v);
  if (it == open.end())
    return;
  // A derived value that cannot be produced as asked keeps its default;
  // pf-insert-boxing changes it for that consumer.
  if (it->second.kind == Open::Derived &&
      !llvm::is_contained(it->second.free, sbp))
    sbp = it->second.free.front();
  open.erase(it);
  v.setType(global(v).withSBP(sbp));
  if (auto read = v.getDefiningOp<ReadParamOp>()) {
    ParamOp param = params.lookup(read.getParam());
    if (param && !param.getGlobalType().hasSBP()) {
      param.setTypeAttr(TypeAttr::get(param.getGlobalType().withSBP(sbp)));
      for (Value other : openReads[read.getParam()])
        resolve(other, sbp);
      openReads.erase(read.getParam());
    }
  }
}

SBPAttr Inferrer::defaultLayout(Value v) {
  GlobalType t = global(v);
  MLIRContext *ctx = v.getContext();
  SBPAttr allB =
      SBPAttr::getBroadcast(ctx, t.getPlacement().getNumHierarchyDims());
  Open o = open.find(v)->second;
  if (o.kind == Open::Leaf)
    return allB;
  if (o.kind == Open::Derived)
    return o.free.front();
  // A move keeps its source's layout where it is valid and not partial.
  settle(o.source);
  SBPAttr src = global(o.source).getSbp();
  if (src && src.size() == allB.size() &&
      llvm::none_of(src.getDims(), [](SBPDim d) { return d.isPartial(); }) &&
      isValidLayout(t.getShape(), t.getPlacement(), src))
    return src;
  return allB;
}

bool Inferrer::allowedForConstant(Value v, SBPAttr sbp) {
  auto c = v.getDefiningOp<ConstantOp>();
  if (!c ||
      llvm::none_of(sbp.getDims(), [](SBPDim d) { return d.isPartial(); }))
    return true;
  // A partial constant is only the logical value if every addend is zero.
  auto splat = dyn_cast<SplatElementsAttr>(c.getValue());
  return splat && isa<FloatType>(splat.getElementType()) &&
         splat.getSplatValue<APFloat>().isZero();
}

/// The stage a consumer runs in (null outside staged programs): reuse of a
/// layout change stays within it.
static Attribute stageOf(Operation *op) {
  return op ? op->getAttr(PFDialect::StageAttrHelper::getNameStr())
            : Attribute();
}

/// What changing the layout of `t` to `want` costs inference (bytes, with
/// the deferred reductions priced in). `sequence`: a reduce-scatter into the
/// sequence axis is sequence parallelism's, the first half of an all-reduce.
static double changeCost(GlobalType t, SBPAttr want, bool sequence = false) {
  MLIRContext *ctx = t.getContext();
  // Reducing a partial sum into a split (reduce-scatter) is priced as
  // reducing it whole (all-reduce): whatever needs the value whole later
  // pays the all-gather the difference is, and a greedy order cannot
  // see that far. So Megatron's all-reduce after a row-parallel layer
  // wins its tie against a reduce-scatter that layer norm would take
  // (sequence parallelism moves the same bytes, and more ops).
  SBPAttr priced = want;
  SmallVector<SBPDim> dims(want.getDims());
  for (auto [d, from] : llvm::enumerate(t.getSbp().getDims()))
    if (from.isPartial() && dims[d].isSplit())
      dims[d] = SBPDim::broadcast();
  priced = SBPAttr::get(ctx, dims);
  // Under sequence parallelism the scatter into the sequence axis and its
  // later gather are the all-reduce's two halves (same bytes, the same
  // single change now): priced exactly as the all-reduce, so the memory
  // tie-break decides, and the gather is prepaid (Inferrer::cost).
  if (priced != want && sequence && isSequenceScatter(t, want))
    return boxingBytes(t, t.getSbp(), priced) + kChangeEpsilon;
  if (priced != want)
    return boxingBytes(t, t.getSbp(), priced) + 2 * kChangeEpsilon;
  // Making a whole value partial (one rank keeps it, the others hold
  // zeros) is free, but like the reduce-scatter above it is half a
  // bargain: the partial sum must be reduced again later. It is priced as
  // that all-reduce, so a residual stream stays whole and is reduced
  // where the row-parallel output joins it (Megatron's layout).
  SmallVector<SBPDim> whole(want.getDims());
  for (auto [d, from] : llvm::enumerate(t.getSbp().getDims()))
    if (!from.isPartial() && whole[d].isPartial())
      whole[d] = SBPDim::broadcast();
  SBPAttr reduced = SBPAttr::get(ctx, whole);
  if (reduced != want)
    return boxingBytes(t, t.getSbp(), reduced) +
           boxingBytes(t.withSBP(want), want, reduced) + 2 * kChangeEpsilon;
  // Any change costs a little more than none, so that a free local slice
  // (B -> S) does not win a tie against keeping the layout: slicing now
  // usually means gathering later.
  return boxingBytes(t, t.getSbp(), want) + kChangeEpsilon;
}

WriteParamOp Inferrer::writtenBy(Operation *user, Value r) const {
  if (auto write = dyn_cast<WriteParamOp>(user))
    return write;
  // Under sequence parallelism, also through a gradient's accumulation,
  // `write(read(g) + r) to g`: a partial gradient computed on sequence
  // shards must not defer a reduction into a split buffer that gathering
  // its operands would have avoided (the vocabulary-parallel embedding's).
  auto add = dyn_cast<AddOp>(user);
  if (!sequenceParallel || !add || !add->hasOneUse())
    return {};
  Value other = add.getLhs() == r ? add.getRhs() : add.getLhs();
  auto read = other.getDefiningOp<ReadParamOp>();
  auto write = dyn_cast<WriteParamOp>(*add->user_begin());
  if (read && write && read.getParam() == write.getParam())
    return write;
  return {};
}

double Inferrer::writeBackCost(WriteParamOp write, GlobalType t, SBPAttr got) {
  ParamOp p = params.lookup(write.getParam());
  if (!p)
    return 0;
  if (p.getGlobalType().hasSBP())
    return boxingBytes(t, got, p.getGlobalType().getSbp());
  // A gradient buffer without a layout is read next to its parameter by the
  // update: a layout other than the parameter's costs a change there (a
  // partial sum is reduced there anyway).
  auto of = p->getAttrOfType<FlatSymbolRefAttr>(
      PFDialect::GradOfAttrHelper::getNameStr());
  ParamOp param = of ? params.lookup(of.getValue()) : ParamOp();
  if (!param || !param.getGlobalType().hasSBP())
    return 0;
  return boxingBytes(t, withoutPartial(got), param.getGlobalType().getSbp());
}

bool Inferrer::hasCredit(Value v) const {
  auto it = credits.find(v);
  return it != credits.end() &&
         llvm::any_of(it->second, [&](unsigned c) { return !spent.count(c); });
}

double Inferrer::changeCost(Value v, SBPAttr want, Operation *consumer) {
  GlobalType t = global(v);
  bool sequence = sequenceParallel && consumer && !inUpdate(consumer);
  // A gather the scatter it undoes has paid for.
  if (sequence && isSequenceGather(t, want) && hasCredit(v))
    return kChangeEpsilon;
  return ::changeCost(t, want, sequence);
}

double Inferrer::cost(Value v, SBPAttr want, Operation *consumer) {
  GlobalType t = global(v);
  auto it = open.find(v);
  if (it == open.end()) {
    if (t.getSbp() == want)
      return 0;
    if (consumer && paid.contains({v, want, stageOf(consumer)}))
      return 0;
    return changeCost(v, want, consumer);
  }
  if (it->second.kind == Open::Leaf) {
    // Grouped splits start at parameters (pf-group-fused-splits); an input
    // or a constant other than a splat never takes one.
    if (hasGrouped(want) && !v.getDefiningOp<ReadParamOp>() &&
        !(v.getDefiningOp<ConstantOp>() &&
          isa<SplatElementsAttr>(v.getDefiningOp<ConstantOp>().getValue())))
      return kInfinite;
    return allowedForConstant(v, want) ? 0 : kInfinite;
  }
  if (it->second.kind == Open::Derived) {
    SBPAttr first = it->second.free.front();
    if (llvm::is_contained(it->second.free, want))
      return 0;
    return ::changeCost(t.withSBP(first), want);
  }
  Value source = it->second.source;
  settle(source);
  // Under sequence parallelism a move to another stage keeps its source's
  // split where it can (the sequence split, not the batch) at equal bytes.
  double resplit = sequenceParallel && global(source).getSbp() != want &&
                           !hasPartial(global(source).getSbp())
                       ? kChangeEpsilon
                       : 0;
  return transferBytes(global(source), t.withSBP(want)) + resplit;
}

/// Whether some result of `sig` is split over a hierarchy dimension over
/// which no operand is split.
static bool slicesReplicated(const NDSBPSignature &sig) {
  for (SBPAttr r : sig.results)
    for (auto [d, dim] : llvm::enumerate(r.getDims()))
      if (dim.isSplit() && llvm::none_of(sig.operands, [&](SBPAttr o) {
            return o && o[d].isSplit();
          }))
        return true;
  return false;
}

/// For a one-result op whose chosen signature `best` takes and gives
/// all-B layouts (result not fixed): every result layout without partial
/// sums that another signature produces from the same operand layouts, the
/// all-B one first; nullopt when there is no other.
static std::optional<SmallVector<SBPAttr>>
freeLayouts(Operation *op, const NDSBPSignature &best,
            ArrayRef<NDSBPSignature> candidates,
            ArrayRef<SBPAttr> fixedResults) {
  if (op->getNumResults() != 1 || fixedResults[0] ||
      !isa<GlobalType>(op->getResult(0).getType()) ||
      !best.results[0].isAllBroadcast() ||
      !llvm::all_of(best.operands,
                    [](SBPAttr o) { return !o || o.isAllBroadcast(); }))
    return std::nullopt;
  SmallVector<SBPAttr> free = {best.results[0]};
  for (const NDSBPSignature &sig : candidates)
    if (sig.operands == best.operands && !hasPartial(sig.results[0]) &&
        !llvm::is_contained(free, sig.results[0]))
      free.push_back(sig.results[0]);
  if (free.size() == 1)
    return std::nullopt;
  return free;
}

static std::string layoutList(ArrayRef<SBPAttr> sbps) {
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::interleaveComma(sbps, os);
  return s;
}

LogicalResult Inferrer::visitSignatureOp(Operation *op) {
  GlobalType first;
  for (Type t : op->getResultTypes())
    if ((first = dyn_cast<GlobalType>(t)))
      break;
  if (!first)
    for (Type t : op->getOperandTypes())
      if ((first = dyn_cast<GlobalType>(t)))
        break;
  if (!first)
    return success();
  PlacementAttr placement = first.getPlacement();
  SmallVector<NDSBPSignature> candidates = getNDSBPSignatures(op, placement);
  // Result layouts already given are constraints.
  SmallVector<SBPAttr> fixedResults;
  for (Value r : op->getResults())
    fixedResults.push_back(global(r) ? global(r).getSbp() : SBPAttr());
  const NDSBPSignature *best = nullptr;
  double bestCost = kInfinite, bestMemory = kInfinite;
  for (const NDSBPSignature &sig : candidates) {
    bool matches = true;
    for (auto [want, fixed] : llvm::zip(sig.results, fixedResults))
      matches &= !fixed || fixed == want;
    if (!matches)
      continue;
    double c = 0;
    for (auto [v, want] : llvm::zip(op->getOperands(), sig.operands))
      c += cost(v, want, op);
    if (sequenceParallel)
      c += sequenceAdjustment(op, sig);
    c += internalCommBytes(op, sig.operands, placement);
    // A result split over a dimension where no operand is split slices
    // replicated data: free now, but like a free operand slice (see cost)
    // it should not win a tie against keeping the layout.
    if (slicesReplicated(sig))
      c += kChangeEpsilon;
    // Look one step ahead where a result must end in a fixed layout: a
    // parameter it is written back to.
    for (auto [r, got] : llvm::zip(op->getResults(), sig.results))
      for (Operation *user : r.getUsers())
        if (WriteParamOp write = writtenBy(user, r))
          c += writeBackCost(write, global(r), got);
    // Under sequence parallelism, of two signatures moving the same bytes
    // the one whose results take less memory per rank wins (a tie-break:
    // never traded against bytes).
    double memory = 0;
    if (sequenceParallel)
      for (auto [r, got] : llvm::zip(op->getResults(), sig.results))
        if (GlobalType t = global(r))
          memory += perRankBytes(t, got);
    bool better = sequenceParallel ? c < bestCost - kPriceTolerance ||
                                         (c <= bestCost + kPriceTolerance &&
                                          memory < bestMemory)
                                   : c < bestCost;
    if (better || (!best && c == kInfinite)) {
      best = &sig;
      bestCost = c;
      bestMemory = memory;
    }
  }
  if (!best) {
    SmallVector<SBPAttr> given;
    for (Value v : op->getOperands()) {
      settle(v);
      given.push_back(global(v).getSbp());
    }
    return op->emitOpError("pf-infer-sbp: no SBP signature produces the "
                           "result layout(s) ")
           << layoutList(fixedResults) << " on " << placement
           << " (operand layouts " << layoutList(given) << ")";
  }
  if (sequenceParallel && failed(account(op, *best)))
    return failure();
  for (auto [v, want] : llvm::zip(op->getOperands(), best->operands)) {
    if (isOpen(v))
      resolve(v, want);
    else if (GlobalType t = global(v); t && t.getSbp() != want)
      paid.insert({v, want, stageOf(op)});
  }
  // An op computing a replicated result from replicated operands could as
  // well compute any split of it, for free: its consumer decides (so a
  // broadcast positional embedding is split with the data-parallel batch,
  // but stays whole under tensor parallelism).
  if (std::optional<SmallVector<SBPAttr>> free =
          freeLayouts(op, *best, candidates, fixedResults)) {
    open[op->getResult(0)] = {Open::Derived, Value(), std::move(*free)};
  } else {
    for (auto [r, sbp] : llvm::zip(op->getResults(), best->results))
      if (GlobalType t = global(r))
        r.setType(t.withSBP(sbp));
  }
  SmallVector<Attribute> wants(best->operands.begin(), best->operands.end());
  PFDialect::SbpOperandsAttrHelper(op->getContext())
      .setAttr(op, ArrayAttr::get(op->getContext(), wants));
  return success();
}

double Inferrer::sequenceAdjustment(Operation *op, const NDSBPSignature &sig) {
  if (inUpdate(op) || isBackwardWeight(op))
    return 0;
  bool scatters = false, carriesPartial = false;
  int slices = 0;
  for (auto [v, want] : llvm::zip(op->getOperands(), sig.operands)) {
    GlobalType t = global(v);
    if (auto it = open.find(v); t && it != open.end()) {
      // An open value derived from whole ones is sliced for free from its
      // default; other open values take any layout for nothing.
      if (it->second.kind != Open::Derived ||
          llvm::is_contained(it->second.free, want))
        continue;
      t = t.withSBP(it->second.free.front());
    }
    if (!t || !want)
      continue;
    carriesPartial |= hasPartial(t.getSbp()) && hasPartial(want);
    if (t.getSbp() == want || paid.contains({v, want, stageOf(op)}))
      continue;
    scatters |= isSequenceScatter(t, want);
    slices += isSequenceSlice(t, want);
  }
  // A whole operand sliced to meet a partial sum scattered along the
  // sequence (Megatron's residual stream entering its first
  // sequence-parallel region) is not a change of plan: the scatter has
  // paid for the gather of the result.
  double adjustment = scatters ? -slices * kChangeEpsilon : 0;
  // Carrying a partial sum through a linear op (a bias, dropout) defers its
  // reduction, priced here as the all-reduce it will be (as is the scatter
  // that would reduce it now), so that the memory tie-break reduces it
  // first, as Megatron scatters right after the row-parallel GEMM.
  if (carriesPartial)
    for (auto [r, got] : llvm::zip(op->getResults(), sig.results))
      if (GlobalType rt = global(r); rt && hasPartial(got))
        adjustment +=
            boxingBytes(rt, got, withoutPartial(got)) + kChangeEpsilon;
  return adjustment;
}

LogicalResult Inferrer::account(Operation *op, const NDSBPSignature &sig) {
  if (inForward(op))
    for (auto [r, got] : llvm::zip(op->getResults(), sig.results)) {
      GlobalType t = global(r);
      std::optional<int64_t> seq = sequenceAxis(t);
      if (!seq || !hasPartial(got))
        continue;
      if (!firstPartialActivation)
        firstPartialActivation = op;
      ArrayRef<int64_t> hierarchy = t.getPlacement().getHierarchy();
      for (auto [d, dim] : llvm::enumerate(got.getDims()))
        if (dim.isPartial() && t.getShape()[*seq] % hierarchy[d] != 0)
          return op->emitOpError("pf-infer-sbp: sequence parallelism splits "
                                 "the sequence axis (axis ")
                 << *seq << ", " << t.getShape()[*seq]
                 << " long) of this partial-sum result over the "
                 << hierarchy[d] << " ranks of hierarchy dimension " << d
                 << ", which does not divide it (make the sequence a "
                    "multiple of the tensor-parallel size, or turn "
                    "sequence parallelism off)";
    }
  if (inUpdate(op))
    return success();
  for (auto [v, want] : llvm::zip(op->getOperands(), sig.operands)) {
    GlobalType t = global(v);
    if (!t || !want || isOpen(v))
      continue;
    SmallVector<unsigned, 2> carried;
    if (t.getSbp() == want) {
      for (unsigned c : credits.lookup(v))
        if (!spent.count(c))
          carried.push_back(c);
    } else if (isSequenceScatter(t, want)) {
      auto [it, inserted] = scatterCredit.try_emplace({v, want}, numCredits);
      numCredits += inserted;
      carried.push_back(it->second);
    } else if (isSequenceGather(t, want) &&
               !paid.contains({v, want, stageOf(op)})) {
      for (unsigned c : credits.lookup(v))
        if (spent.insert(c).second)
          break;
    }
    // Results computed along the sequence from this operand inherit its
    // credits.
    if (carried.empty())
      continue;
    for (auto [r, got] : llvm::zip(op->getResults(), sig.results))
      if (GlobalType rt = global(r);
          rt && got == want && rt.getShape() == t.getShape())
        credits[r].append(carried.begin(), carried.end());
  }
  return success();
}

LogicalResult Inferrer::checkSequenceParallel() {
  if (!sequenceParallel)
    return success();
  if (!firstPartialActivation) {
    auto funcs = module.getOps<func::FuncOp>();
    Operation *at =
        funcs.empty() ? module.getOperation() : (*funcs.begin()).getOperation();
    return at->emitError("pf-infer-sbp: sequence parallelism needs a "
                         "tensor-parallel axis, but no activation of this "
                         "program is a partial sum (no row-parallel layer "
                         "whose sum a reduce-scatter could split along the "
                         "sequence)");
  }
  if (numCredits == 0)
    firstPartialActivation->emitWarning(
        "pf-infer-sbp: sequence parallelism is on, but no partial sum was "
        "reduce-scattered along the sequence (no layout moved the same "
        "bytes as the all-reduce with less memory)");
  return success();
}

LogicalResult Inferrer::visitReturn(func::ReturnOp ret, func::FuncOp func) {
  SmallVector<Type> results;
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    GlobalType declared = dyn_cast<GlobalType>(func.getResultTypes()[i]);
    GlobalType t = global(v);
    if (!t) {
      results.push_back(v.getType());
      continue;
    }
    if (declared && declared.hasSBP()) {
      // The host reads a result as one box per rank; a grouped split's
      // part is g blocks.
      if (llvm::any_of(declared.getSbp().getDims(),
                       [](SBPDim d) { return d.isGrouped(); }))
        return ret.emitOpError("pf-infer-sbp: result ")
               << i << " is declared with the grouped split "
               << declared.getSbp()
               << ", which a step cannot return (declare B or a plain split)";
      if (isOpen(v) && cost(v, declared.getSbp()) == 0)
        resolve(v, declared.getSbp());
      settle(v);
      results.push_back(declared);
      continue;
    }
    settle(v);
    // A partial sum is returned as its value, a grouped split whole (the
    // host reads one box per rank; a grouped part is g blocks).
    SmallVector<SBPDim> dims;
    for (SBPDim d : global(v).getSbp().getDims())
      dims.push_back(d.isPartial() || d.isGrouped() ? SBPDim::broadcast() : d);
    results.push_back(global(v).withSBP(SBPAttr::get(v.getContext(), dims)));
  }
  // The function's result layouts are a contract: change layouts here.
  OpBuilder b(ret);
  for (auto [i, t] : llvm::enumerate(results)) {
    Value v = ret.getOperand(i);
    if (v.getType() == t)
      continue;
    ret.setOperand(i, ToGlobalOp::create(b, ret.getLoc(), t, v).getResult());
  }
  func.setFunctionType(
      FunctionType::get(func.getContext(), func.getArgumentTypes(), results));
  return success();
}

LogicalResult Inferrer::run(func::FuncOp func) {
  Block &block = func.getBody().front();
  for (BlockArgument arg : block.getArguments())
    if (GlobalType t = global(arg); t && !t.hasSBP())
      open[arg] = {Open::Leaf, Value()};
  for (Operation &op : llvm::make_early_inc_range(block)) {
    if (auto read = dyn_cast<ReadParamOp>(op)) {
      ParamOp param = params.lookup(read.getParam());
      if (param && param.getGlobalType().hasSBP()) {
        read.getResult().setType(param.getGlobalType());
      } else if (!read.getType().hasSBP()) {
        open[read.getResult()] = {Open::Leaf, Value()};
        openReads[read.getParam()].push_back(read.getResult());
      }
      continue;
    }
    if (auto write = dyn_cast<WriteParamOp>(op)) {
      ParamOp param = params.lookup(write.getParam());
      if (param && !param.getGlobalType().hasSBP()) {
        settle(write.getValue());
        SBPAttr sbp = global(write.getValue()).getSbp();
        param.setTypeAttr(TypeAttr::get(param.getGlobalType().withSBP(sbp)));
        for (Value r : openReads[write.getParam()])
          resolve(r, sbp);
        openReads.erase(write.getParam());
      } else if (param && isOpen(write.getValue())) {
        SBPAttr want = param.getGlobalType().getSbp();
        if (cost(write.getValue(), want) == 0)
          resolve(write.getValue(), want);
        settle(write.getValue());
      }
      continue;
    }
    if (auto c = dyn_cast<ConstantOp>(op)) {
      if (!c.getType().hasSBP())
        open[c.getResult()] = {Open::Leaf, Value()};
      continue;
    }
    if (auto move = dyn_cast<ToGlobalOp>(op)) {
      if (!global(move.getInput()))
        continue;
      GlobalType target = move.getType();
      if (target.hasSBP()) {
        // The source takes the target's layout if it is free to.
        Value in = move.getInput();
        if (isOpen(in) && global(in).getPlacement() == target.getPlacement() &&
            cost(in, target.getSbp()) == 0)
          resolve(in, target.getSbp());
        settle(in);
      } else {
        open[move.getResult()] = {Open::Move, move.getInput()};
      }
      continue;
    }
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      if (failed(visitReturn(ret, func)))
        return failure();
      continue;
    }
    if (isa<SBPOpInterface>(op)) {
      if (failed(visitSignatureOp(&op)))
        return failure();
      continue;
    }
    if (auto scalar = dyn_cast<ScalarInputOp>(op)) {
      GlobalType t = scalar.getType();
      if (!t.hasSBP())
        scalar.getResult().setType(t.withSBP(SBPAttr::getBroadcast(
            t.getContext(), t.getPlacement().getNumHierarchyDims())));
      continue;
    }
    // Other ops must already be laid out.
    for (Value v : op.getResults())
      if (GlobalType t = global(v); t && !t.hasSBP())
        return op.emitOpError("pf-infer-sbp: no SBP rule for this op");
    for (Value v : op.getOperands())
      settle(v);
  }
  // Whatever is still open takes its default.
  SmallVector<Value> rest;
  for (auto &[v, o] : open)
    rest.push_back(v);
  for (Value v : rest)
    settle(v);
  func.setFunctionType(FunctionType::get(
      func.getContext(), block.getArgumentTypes(), func.getResultTypes()));
  return success();
}

void Inferrer::finishParams() {
  for (auto &[name, param] : params)
    if (!param.getGlobalType().hasSBP()) {
      GlobalType t = param.getGlobalType();
      param.setTypeAttr(TypeAttr::get(t.withSBP(SBPAttr::getBroadcast(
          t.getContext(), t.getPlacement().getNumHierarchyDims()))));
    }
}

struct InferSBPPass : public pf::impl::InferSBPPassBase<InferSBPPass> {
  using InferSBPPassBase::InferSBPPassBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    Inferrer inferrer(module, sequenceParallel);
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal() && failed(inferrer.run(func)))
        return signalPassFailure();
    if (failed(inferrer.checkSequenceParallel()))
      return signalPassFailure();
    inferrer.finishParams();
  }
};
} // namespace
