//===- ZeroSharding.cpp - ZeRO: updates split over replicated axes --------===//

#include "ZeroSharding.h"

#include "pf/Dialect/PF/IR/SBPUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace mlir::pf;

/// The layout of a sharded buffer of `param`: each B entry of its SBP
/// becomes S(k) for the first tensor axis k that keeps the layout valid, or
/// stays B. Null when nothing could be split.
static SBPAttr shardedLayout(GlobalType type) {
  SBPAttr sbp = type.getSbp();
  if (!sbp)
    return {};
  PlacementAttr placement = type.getPlacement();
  ArrayRef<int64_t> shape = type.getShape();
  SmallVector<SBPDim> dims(sbp.getDims().begin(), sbp.getDims().end());
  bool changed = false;
  for (auto [d, dim] : llvm::enumerate(dims)) {
    if (!dim.isBroadcast())
      continue;
    int64_t ranks = placement.getHierarchy()[d];
    if (ranks == 1)
      continue;
    // The first axis the layout can take (it divides evenly, and it is
    // not the axis of a grouped split, which no other entry may cut).
    for (int64_t k = 0, e = shape.size(); k < e; ++k) {
      SmallVector<SBPDim> tried(dims);
      tried[d] = SBPDim::split(k);
      if (!isValidLayout(shape, placement,
                         SBPAttr::get(type.getContext(), tried)))
        continue;
      dim = SBPDim::split(k);
      changed = true;
      break;
    }
  }
  return changed ? SBPAttr::get(type.getContext(), dims) : SBPAttr();
}

/// Gives `buffer` the layout `sbp`, and its reads the new type.
static void relayout(ModuleOp module, ParamOp buffer, SBPAttr sbp) {
  GlobalType type = buffer.getGlobalType();
  // A gradient buffer may have no layout yet (inference gives it P): its
  // shard is the parameter's sharded layout.
  GlobalType sharded = type.withSBP(sbp);
  buffer.setTypeAttr(TypeAttr::get(sharded));
  StringRef name = buffer.getSymName();
  module.walk([&](ReadParamOp read) {
    if (read.getParam() == name)
      read.getResult().setType(sharded);
  });
}

/// ZeRO-3 shards a parameter's storage, not the computation: every read
/// outside the update is moved back to the parameter's own layout
/// (`replicated`, B on the data-parallel axes) before its uses, so the
/// forward and backward compute as plain data parallelism does (each rank
/// its own batch with the whole weight, gathered just before its use),
/// rather than SBP inference being free to keep the weight split and
/// gather the activations of the whole batch instead.
static void computeReplicated(ModuleOp module, ParamOp param,
                              GlobalType replicated) {
  StringRef name = param.getSymName();
  PFDialect::PhaseAttrHelper phase(module.getContext());
  SmallVector<ReadParamOp> reads;
  module.walk([&](ReadParamOp read) {
    StringAttr p = phase.getAttr(read);
    if (read.getParam() == name && (!p || p.getValue() != "update"))
      reads.push_back(read);
  });
  for (ReadParamOp read : reads) {
    OpBuilder b(read->getContext());
    b.setInsertionPointAfter(read);
    auto whole = ToGlobalOp::create(b, read.getLoc(), replicated, read);
    whole->setDiscardableAttrs(read->getDiscardableAttrDictionary());
    read.getResult().replaceAllUsesExcept(whole.getResult(), whole);
  }
}

int64_t mlir::pf::shardOverReplicatedAxes(ModuleOp module,
                                          ArrayRef<ZeroMember> members,
                                          int64_t stage, int64_t minElements) {
  if (stage <= 0)
    return 0;
  int64_t split = 0;
  for (ZeroMember m : members) {
    GlobalType type = m.param.getGlobalType();
    if (type.getNumElements() < minElements)
      continue;
    SBPAttr sbp = shardedLayout(type);
    if (!sbp)
      continue;
    for (ParamOp state : m.states) {
      relayout(module, state, sbp);
      ++split;
    }
    if (stage >= 2 && m.gradBuffer) {
      relayout(module, m.gradBuffer, sbp);
      ++split;
    }
    if (stage >= 3) {
      relayout(module, m.param, sbp);
      computeReplicated(module, m.param, type);
      ++split;
    }
  }
  return split;
}
