//===- Optimizer.cpp - parameter updates of SGD and Adam(W) ---------------===//

#include "ZeroSharding.h"
#include "pf/Dialect/PF/Transforms/PassOptions.h"
#include "pf/Dialect/PF/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

#include <map>

#define DEBUG_TYPE "pf-optimizer"

namespace mlir::pf {
#define GEN_PASS_DEF_OPTIMIZERPASS
#include "pf/Dialect/PF/Transforms/Passes.h.inc"
} // namespace mlir::pf

using namespace mlir;
using namespace mlir::pf;

namespace {

/// The options come from OptimizerOptionsT, shared with the pipelines.
struct OptimizerPass
    : public OptimizerOptionsT<pf::impl::OptimizerPassBase<OptimizerPass>,
                               kOptimizerKindPassArg> {
  void runOnOperation() override;

private:
  LogicalResult checkOptions();
  /// A zero-initialised state buffer next to `param` with its type.
  ParamOp getOrCreateState(SymbolTable &table, ParamOp param, StringRef suffix);
  /// The named run-time scalar on `placement`, created once per function.
  Value getScalar(OpBuilder &b, Location loc, StringRef name,
                  PlacementAttr placement);

  /// One parameter's update rule: the pass options, overridden by the
  /// parameter's `pf.optimizer` dictionary (parameter groups, several
  /// optimizers).
  struct Settings {
    OptimizerKind kind = OptimizerKind::SGD;
    std::string lr = "lr";
    double momentum = 0, dampening = 0, decay = 0, beta1 = 0.9, beta2 = 0.999,
           epsilon = 1e-8;
    bool nesterov = false, biasCorrection = true;
    /// Gradient clipping by the global norm of the parameters sharing
    /// `clipGroup` (0: none).
    double clipMaxNorm = 0;
    int64_t clipGroup = 0;
  };
  /// One parameter to update.
  struct Entry {
    ParamOp gradBuffer, param;
    WriteParamOp lastWrite;
    Settings settings;
    Value grad;
    /// The optimizer-state buffers the update reads and writes.
    SmallVector<ParamOp, 2> states;
  };
  /// Multiplies the gradients of each clipping group by its factor.
  LogicalResult clip(OpBuilder &b, MutableArrayRef<Entry> entries);
  /// Loss scaling: every gradient times the run-time scalar inv_loss_scale;
  /// with a dynamic scaler also the step's found-inf flag (`foundInf`).
  void unscale(OpBuilder &b, SymbolTable &table,
               MutableArrayRef<Entry> entries);
  /// The parameter update of `e` (and its states), then its gradient
  /// buffer cleared.
  void update(OpBuilder &b, SymbolTable &table, Entry &e);
  /// `newValue`, or `oldValue` when the step found a non-finite gradient.
  Value guard(OpBuilder &b, Location loc, Value oldValue, Value newValue,
              const Entry &e);
  /// Stage of `where`'s last gradient write, phase "update".
  void tag(Operation *op, const Entry &where);
  FailureOr<Settings> settingsFor(ParamOp param);
  LogicalResult check(const Settings &s, Operation *at, double rawDecay);

  double decay = 0.0;
  DenseMap<std::pair<Attribute, Attribute>, Value> scalars;
  /// The function's found-inf flag (0, or NaN when a gradient is not
  /// finite) on the first updated parameter's placement; null without a
  /// dynamic grad scaler.
  Value foundInf;
  /// `foundInf != foundInf` (i1) by placement.
  DenseMap<Attribute, Value> skips;
  /// Scalars created since the last update was tagged with its stage.
  SmallVector<Operation *> newScalars;
};

LogicalResult OptimizerPass::check(const Settings &s, Operation *at,
                                   double rawDecay) {
  auto err = [&]() {
    return at->emitError() << "pf-optimizer"
                           << (isa<ParamOp>(at) ? " (pf.optimizer)" : "")
                           << ": ";
  };
  if (rawDecay < 0.0 && rawDecay != -1.0)
    return err() << "weight-decay must be >= 0, got " << rawDecay;
  if (s.lr.empty())
    return err() << "the learning-rate scalar name is empty";
  if (s.kind == OptimizerKind::SGD) {
    if (s.momentum < 0.0)
      return err() << "momentum must be >= 0, got " << s.momentum;
    if (s.dampening < 0.0 || s.dampening > 1.0)
      return err() << "dampening must be in [0, 1], got " << s.dampening;
    if (s.nesterov && (s.momentum <= 0.0 || s.dampening != 0.0))
      return err() << "nesterov needs momentum > 0 and zero dampening";
    return success();
  }
  if (s.beta1 < 0.0 || s.beta1 >= 1.0 || s.beta2 < 0.0 || s.beta2 >= 1.0)
    return err() << "betas must be in [0, 1), got (" << s.beta1 << ", "
                 << s.beta2 << ")";
  if (s.epsilon < 0.0)
    return err() << "eps must be >= 0, got " << s.epsilon;
  return success();
}

FailureOr<OptimizerPass::Settings> OptimizerPass::settingsFor(ParamOp param) {
  Settings s;
  s.kind = kind;
  s.momentum = momentum, s.dampening = dampening, s.nesterov = nesterov;
  s.beta1 = beta1, s.beta2 = beta2, s.epsilon = epsilon;
  s.biasCorrection = biasCorrection;
  double rawDecay = weightDecay;
  DictionaryAttr dict =
      PFDialect::OptimizerAttrHelper(param.getContext()).getAttr(param);
  if (dict) {
    for (NamedAttribute a : dict) {
      StringRef key = a.getName().getValue();
      auto f = dyn_cast<FloatAttr>(a.getValue());
      auto i = dyn_cast<IntegerAttr>(a.getValue());
      auto str = dyn_cast<StringAttr>(a.getValue());
      auto flag = dyn_cast<BoolAttr>(a.getValue());
      double num = f ? f.getValueAsDouble() : i ? double(i.getInt()) : 0.0;
      bool isNum = f || i;
      if (key == "kind" && str) {
        std::optional<OptimizerKind> k = symbolizeOptimizerKind(str);
        if (!k)
          return param.emitError()
                 << "pf-optimizer (pf.optimizer): kind must be sgd, adam or "
                    "adamw, got '"
                 << str.getValue() << "'";
        s.kind = *k;
      } else if (key == "lr" && str)
        s.lr = str.str();
      else if (key == "momentum" && isNum)
        s.momentum = num;
      else if (key == "dampening" && isNum)
        s.dampening = num;
      else if (key == "weight_decay" && isNum)
        rawDecay = num;
      else if (key == "beta1" && isNum)
        s.beta1 = num;
      else if (key == "beta2" && isNum)
        s.beta2 = num;
      else if (key == "eps" && isNum)
        s.epsilon = num;
      else if (key == "nesterov" && flag)
        s.nesterov = flag.getValue();
      else if (key == "bias_correction" && flag)
        s.biasCorrection = flag.getValue();
      else if (key == "clip_max_norm" && isNum && num > 0)
        s.clipMaxNorm = num;
      else if (key == "clip_group" && i)
        s.clipGroup = i.getInt();
      else
        return param.emitOpError()
               << "pf.optimizer: unknown or ill-typed entry '" << key
               << "' (expected kind, lr: strings; momentum, dampening, "
                  "weight_decay, beta1, beta2, eps: numbers; clip_max_norm: "
                  "a positive number; clip_group: an integer; nesterov, "
                  "bias_correction: booleans)";
    }
  }
  s.decay = rawDecay >= 0.0 ? rawDecay
                            : (s.kind == OptimizerKind::AdamW ? 0.01 : 0.0);
  if (failed(check(s, dict ? param.getOperation() : getOperation(), rawDecay)))
    return failure();
  return s;
}

LogicalResult OptimizerPass::checkOptions() {
  ModuleOp module = getOperation();
  decay = weightDecay >= 0.0 ? weightDecay.getValue()
                             : (kind == OptimizerKind::AdamW ? 0.01 : 0.0);
  if (weightDecay < 0.0 && weightDecay != -1.0)
    return module.emitError() << "pf-optimizer: weight-decay must be >= 0, got "
                              << static_cast<double>(weightDecay);
  if (zeroStage < 0 || zeroStage > 3)
    return module.emitError()
           << "pf-optimizer: zero-stage must be 0, 1, 2 or 3, got "
           << static_cast<int64_t>(zeroStage);
  if (gradScaler != "none" && gradScaler != "static" && gradScaler != "dynamic")
    return module.emitError()
           << "pf-optimizer: grad-scaler must be none, static or dynamic, "
              "got '"
           << static_cast<std::string>(gradScaler) << "'";
  if (zeroMinSize < 0)
    return module.emitError()
           << "pf-optimizer: zero-min-size must be >= 0, got "
           << static_cast<int64_t>(zeroMinSize);
  if (kind == OptimizerKind::SGD) {
    if (momentum < 0.0)
      return module.emitError() << "pf-optimizer: momentum must be >= 0, got "
                                << static_cast<double>(momentum);
    if (dampening < 0.0 || dampening > 1.0)
      return module.emitError()
             << "pf-optimizer: dampening must be in [0, 1], got "
             << static_cast<double>(dampening);
    if (nesterov && (momentum <= 0.0 || dampening != 0.0))
      return module.emitError() << "pf-optimizer: nesterov needs momentum > 0 "
                                   "and zero dampening";
    return success();
  }
  if (beta1 < 0.0 || beta1 >= 1.0 || beta2 < 0.0 || beta2 >= 1.0)
    return module.emitError() << "pf-optimizer: betas must be in [0, 1), got ("
                              << static_cast<double>(beta1) << ", "
                              << static_cast<double>(beta2) << ")";
  if (epsilon < 0.0)
    return module.emitError() << "pf-optimizer: eps must be >= 0, got "
                              << static_cast<double>(epsilon);
  return success();
}

ParamOp OptimizerPass::getOrCreateState(SymbolTable &table, ParamOp param,
                                        StringRef suffix) {
  std::string name = (param.getSymName() + "." + suffix).str();
  if (auto existing = table.lookup<ParamOp>(name))
    return existing;
  OpBuilder mb(param);
  mb.setInsertionPointAfter(param);
  auto state = ParamOp::create(
      mb, param.getLoc(), mb.getStringAttr(name), param.getTypeAttr(),
      InitAttr::get(param.getContext(), InitKind::Zeros, APFloat(0.0),
                    APFloat(0.0)),
      /*buffer=*/mb.getUnitAttr());
  table.insert(state);
  return state;
}

Value OptimizerPass::getScalar(OpBuilder &b, Location loc, StringRef name,
                               PlacementAttr placement) {
  auto key =
      std::make_pair(Attribute(b.getStringAttr(name)), Attribute(placement));
  if (Value v = scalars.lookup(key))
    return v;
  auto type = GlobalType::get(
      b.getContext(), {}, b.getF32Type(), placement,
      SBPAttr::getBroadcast(b.getContext(), placement.getNumHierarchyDims()));
  Value v = ScalarInputOp::create(b, loc, type, name);
  newScalars.push_back(v.getDefiningOp());
  scalars[key] = v;
  return v;
}

void OptimizerPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (failed(checkOptions()))
    return signalPassFailure();
  SymbolTable table(module);
  MLIRContext *ctx = module.getContext();
  PFDialect::GradOfAttrHelper gradOfAttr(ctx);

  // Gradient buffers and the functions that accumulate into them.
  SmallVector<ParamOp> gradBuffers;
  for (auto p : module.getOps<ParamOp>())
    if (gradOfAttr.isAttrPresent(p))
      gradBuffers.push_back(p);
  if (gradBuffers.empty()) {
    module.emitError("pf-optimizer found no gradient buffers: run "
                     "pf-autodiff first");
    return signalPassFailure();
  }

  // Each parameter once (several functions may update it).
  SmallVector<ZeroMember> members;
  DenseSet<Operation *> seen;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal())
      continue;
    scalars.clear();
    skips.clear();
    foundInf = Value();
    auto ret = cast<func::ReturnOp>(func.getBody().back().getTerminator());
    OpBuilder b(ret);
    SmallVector<Entry> entries;
    for (ParamOp gradBuffer : gradBuffers) {
      // The last accumulation into the buffer gives the update its stage.
      WriteParamOp lastWrite;
      func.walk([&](WriteParamOp w) {
        if (w.getParam() == gradBuffer.getSymName())
          lastWrite = w;
      });
      if (!lastWrite)
        continue;
      FlatSymbolRefAttr ofRef = gradOfAttr.getAttr(gradBuffer);
      auto param = table.lookup<ParamOp>(ofRef.getValue());
      if (!param) {
        gradBuffer.emitOpError()
            << "holds the gradient of " << ofRef << ", which is not a pf.param";
        return signalPassFailure();
      }
      FailureOr<Settings> set = settingsFor(param);
      if (failed(set))
        return signalPassFailure();
      entries.push_back(Entry{gradBuffer, param, lastWrite, *set, Value()});
    }
    unscale(b, table, entries);
    if (failed(clip(b, entries)))
      return signalPassFailure();
    for (Entry &e : entries) {
      update(b, table, e);
      if (seen.insert(e.param).second)
        members.push_back(ZeroMember{e.param, e.gradBuffer, e.states});
    }
  }
  shardOverReplicatedAxes(module, members, zeroStage, zeroMinSize);
}

void OptimizerPass::update(OpBuilder &b, SymbolTable &table, Entry &e) {
  ParamOp param = e.param, gradBuffer = e.gradBuffer;
  Location loc = param.getLoc();
  GlobalType pType = param.getGlobalType();
  PlacementAttr placement = pType.getPlacement();
  GlobalType updated = pType.withSBP({});
  SmallVector<Operation *> created;
  auto track = [&](Operation *op) {
    created.push_back(op);
    return op;
  };
  auto read = [&](ParamOp p) -> Value {
    return track(ReadParamOp::create(b, loc, p.getGlobalType(),
                                     FlatSymbolRefAttr::get(p)))
        ->getResult(0);
  };
  // `old` is the value read this step: a skipped step writes it back.
  auto write = [&](Value v, Value old, ParamOp p) {
    if (foundInf)
      v = guard(b, loc, old, v, e);
    track(WriteParamOp::create(b, loc, v, FlatSymbolRefAttr::get(p)));
  };
  const Settings &o = e.settings;
  Value w = read(param);
  // A clipped or unscaled gradient was read (and scaled) before.
  Value g = e.grad ? e.grad : read(gradBuffer);
  Value lr = getScalar(b, loc, o.lr, placement);

  if (o.kind == OptimizerKind::SGD) {
    Value buf, step;
    Type bufType;
    ParamOp state;
    if (o.momentum != 0.0) {
      state = getOrCreateState(table, param, "momentum_buffer");
      e.states.push_back(state);
      buf = read(state);
      step = getScalar(b, loc, "step", placement);
      bufType = updated;
    }
    auto sgd = SGDUpdateOp::create(
        b, loc, updated, bufType, w, g, lr, buf, step,
        b.getF64FloatAttr(o.momentum), b.getF64FloatAttr(o.dampening),
        b.getF64FloatAttr(o.decay), o.nesterov ? b.getUnitAttr() : UnitAttr());
    track(sgd);
    write(sgd.getNewParam(), w, param);
    if (state)
      write(sgd.getNewMomentumBuffer(), buf, state);
  } else {
    ParamOp m = getOrCreateState(table, param, "exp_avg");
    ParamOp v = getOrCreateState(table, param, "exp_avg_sq");
    e.states.append({m, v});
    Value step = getScalar(b, loc, "step", placement);
    Value oldM = read(m), oldV = read(v);
    auto adam = AdamUpdateOp::create(
        b, loc, updated, updated, updated, w, g, oldM, oldV, lr, step,
        b.getF64FloatAttr(o.beta1), b.getF64FloatAttr(o.beta2),
        b.getF64FloatAttr(o.epsilon), b.getF64FloatAttr(o.decay),
        o.kind == OptimizerKind::AdamW ? b.getUnitAttr() : UnitAttr(),
        b.getBoolAttr(o.biasCorrection));
    track(adam);
    write(adam.getNewParam(), w, param);
    write(adam.getNewExpAvg(), oldM, m);
    write(adam.getNewExpAvgSq(), oldV, v);
  }
  created.append(newScalars.begin(), newScalars.end());
  newScalars.clear();
  // Clear the gradient for the next step's accumulation.
  GlobalType gType = gradBuffer.getGlobalType();
  auto zeroType =
      RankedTensorType::get(gType.getShape(), gType.getElementType());
  Value zero =
      track(ConstantOp::create(
                b, loc, gType.withSBP({}),
                DenseElementsAttr::get(
                    zeroType, FloatAttr::get(gType.getElementType(), 0.0))))
          ->getResult(0);
  track(WriteParamOp::create(b, loc, zero, FlatSymbolRefAttr::get(gradBuffer)));
  for (Operation *op : created)
    tag(op, e);
}

/// torch.cuda.amp.GradScaler's unscale_ and found-inf check, in the global
/// view: each gradient times the run-time scalar inv_loss_scale; with a
/// dynamic scaler each gradient's reduce_sum(g * 0) (0 if every element is
/// finite, else NaN), moved to the first entry's placement and added there
/// first, so that one reduction gives the step's flag on every rank. The
/// flag is written to the state `pf.found_inf` (the host reads it to update
/// the scale), and guard() keeps the old values where it is NaN.
void OptimizerPass::unscale(OpBuilder &b, SymbolTable &table,
                            MutableArrayRef<Entry> entries) {
  if (gradScaler == "none" || entries.empty())
    return;
  MLIRContext *ctx = b.getContext();
  Entry &home = entries.front();
  PlacementAttr hp = home.param.getGlobalType().getPlacement();
  for (Entry &e : entries) {
    Location loc = e.param.getLoc();
    auto read = ReadParamOp::create(b, loc, e.gradBuffer.getGlobalType(),
                                    FlatSymbolRefAttr::get(e.gradBuffer));
    auto type = cast<GlobalType>(read.getType());
    Value inv = getScalar(b, loc, "inv_loss_scale", type.getPlacement());
    auto scaled = ScaleByOp::create(b, loc, read.getResult(), inv);
    e.grad = scaled.getResult();
    SmallVector<Operation *> created = {read, scaled};
    if (gradScaler == "dynamic") {
      auto zeroed = MulScalarOp::create(b, loc, e.grad, b.getF64FloatAttr(0.0));
      auto sum = ReduceSumOp::create(
          b, loc, zeroed,
          b.getDenseI64ArrayAttr(llvm::to_vector(
              llvm::seq<int64_t>(0, static_cast<int64_t>(type.getRank())))));
      created.append({zeroed, sum});
      Value here = sum.getResult();
      if (type.getPlacement() != hp) {
        auto moved = ToGlobalOp::create(
            b, loc,
            GlobalType::get(
                ctx, {}, b.getF32Type(), hp,
                SBPAttr::getBroadcast(ctx, hp.getNumHierarchyDims())),
            here);
        PFDialect::PhaseAttrHelper(ctx).setAttr(moved,
                                                StringAttr::get(ctx, "update"));
        here = moved.getResult();
      }
      if (foundInf) {
        auto add = AddOp::create(b, loc, foundInf, here);
        tag(add, home);
        here = add.getResult();
      }
      foundInf = here;
    }
    created.append(newScalars.begin(), newScalars.end());
    newScalars.clear();
    for (Operation *op : created)
      tag(op, e);
  }
  if (!foundInf)
    return;
  ParamOp flag = table.lookup<ParamOp>("pf.found_inf");
  if (!flag) {
    OpBuilder mb(home.param);
    auto flagType =
        GlobalType::get(ctx, {}, b.getF32Type(), hp,
                        SBPAttr::getBroadcast(ctx, hp.getNumHierarchyDims()));
    flag = ParamOp::create(
        mb, home.param.getLoc(), mb.getStringAttr("pf.found_inf"),
        TypeAttr::get(flagType),
        InitAttr::get(ctx, InitKind::Zeros, APFloat(0.0), APFloat(0.0)),
        /*buffer=*/mb.getUnitAttr());
    table.insert(flag);
  }
  auto write = WriteParamOp::create(b, home.param.getLoc(), foundInf,
                                    FlatSymbolRefAttr::get(flag));
  tag(write, home);
}

Value OptimizerPass::guard(OpBuilder &b, Location loc, Value oldValue,
                           Value newValue, const Entry &e) {
  auto type = cast<GlobalType>(oldValue.getType());
  PlacementAttr placement = type.getPlacement();
  Value skip = skips.lookup(placement);
  if (!skip) {
    MLIRContext *ctx = b.getContext();
    Value flag = foundInf;
    if (cast<GlobalType>(flag.getType()).getPlacement() != placement) {
      auto moved = ToGlobalOp::create(
          b, loc,
          GlobalType::get(
              ctx, {}, b.getF32Type(), placement,
              SBPAttr::getBroadcast(ctx, placement.getNumHierarchyDims())),
          flag);
      PFDialect::PhaseAttrHelper(ctx).setAttr(moved,
                                              StringAttr::get(ctx, "update"));
      flag = moved.getResult();
    }
    auto ne = CompareOp::create(b, loc, flag, flag, "ne");
    tag(ne, e);
    skip = skips[placement] = ne.getResult();
  }
  if (type.getRank() > 0) {
    auto shaped = BroadcastToOp::create(
        b, loc, skip, b.getDenseI64ArrayAttr(type.getShape()));
    tag(shaped, e);
    skip = shaped.getResult();
  }
  auto where = WhereOp::create(b, loc, skip, oldValue, newValue);
  tag(where, e);
  return where.getResult();
}

void OptimizerPass::tag(Operation *op, const Entry &where) {
  MLIRContext *ctx = op->getContext();
  if (IntegerAttr stage =
          PFDialect::StageAttrHelper(ctx).getAttr(where.lastWrite))
    PFDialect::StageAttrHelper(ctx).setAttr(op, stage);
  PFDialect::PhaseAttrHelper(ctx).setAttr(op, StringAttr::get(ctx, "update"));
}

/// torch.nn.utils.clip_grad_norm_ (norm type 2) per clipping group, on the
/// logical gradients: each member's sum of squares (SBP inference reduces
/// split and partial layouts), moved to the first member's placement and
/// added there; the factor moves back to every member's placement and
/// scales its gradient before the update. Moves between placements (the
/// stages of a pipeline) are left unstaged, in the update phase.
LogicalResult OptimizerPass::clip(OpBuilder &b,
                                  MutableArrayRef<Entry> entries) {
  std::map<int64_t, SmallVector<Entry *>> groups;
  for (Entry &e : entries)
    if (e.settings.clipMaxNorm > 0)
      groups[e.settings.clipGroup].push_back(&e);
  MLIRContext *ctx = b.getContext();
  PFDialect::PhaseAttrHelper phaseAttr(ctx);
  auto scalarOn = [&](PlacementAttr p) {
    return GlobalType::get(ctx, {}, b.getF32Type(), p,
                           SBPAttr::getBroadcast(ctx, p.getNumHierarchyDims()));
  };
  auto move = [&](Value v, PlacementAttr to, Location loc) -> Value {
    auto t = cast<GlobalType>(v.getType());
    if (t.getPlacement() == to)
      return v;
    auto m = ToGlobalOp::create(b, loc, scalarOn(to), v);
    phaseAttr.setAttr(m, StringAttr::get(ctx, "update"));
    return m.getResult();
  };
  for (auto &[id, members] : groups) {
    Entry &home = *members.front();
    double maxNorm = home.settings.clipMaxNorm;
    PlacementAttr hp = home.param.getGlobalType().getPlacement();
    Location loc = home.param.getLoc();
    Value total;
    for (Entry *m : members) {
      if (m->settings.clipMaxNorm != maxNorm)
        return m->param.emitOpError()
               << "pf.optimizer: clip group " << id << " has max norms "
               << maxNorm << " and " << m->settings.clipMaxNorm;
      Location mloc = m->param.getLoc();
      if (!m->grad) {
        auto read = ReadParamOp::create(b, mloc, m->gradBuffer.getGlobalType(),
                                        FlatSymbolRefAttr::get(m->gradBuffer));
        tag(read, *m);
        m->grad = read.getResult();
      }
      auto sq = MulOp::create(b, mloc, m->grad, m->grad);
      tag(sq, *m);
      auto type = cast<GlobalType>(m->grad.getType());
      auto sum = ReduceSumOp::create(
          b, mloc, sq,
          b.getDenseI64ArrayAttr(llvm::to_vector(
              llvm::seq<int64_t>(0, static_cast<int64_t>(type.getRank())))));
      tag(sum, *m);
      Value here = move(sum.getResult(), hp, mloc);
      if (!total) {
        total = here;
        continue;
      }
      auto add = AddOp::create(b, loc, total, here);
      tag(add, home);
      total = add.getResult();
    }
    auto factor =
        ClipScaleOp::create(b, loc, total, b.getF64FloatAttr(maxNorm));
    tag(factor, home);
    for (Entry *m : members) {
      Location mloc = m->param.getLoc();
      Value f = move(factor.getResult(),
                     cast<GlobalType>(m->grad.getType()).getPlacement(), mloc);
      auto scaled = ScaleByOp::create(b, mloc, m->grad, f);
      tag(scaled, *m);
      m->grad = scaled.getResult();
    }
  }
  return success();
}
} // namespace

std::unique_ptr<Pass>
mlir::pf::createOptimizerPass(const OptimizerOptions &options) {
  auto pass = std::make_unique<OptimizerPass>();
  pass->copyOptimizerOptions(options);
  return pass;
}
