//===- PFDialect.cpp - PipeFlow dialect -----------------------------------===//

#include "pf/Dialect/PF/IR/PFDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "pf/Dialect/PF/IR/PFOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::pf;

#include "pf/Dialect/PF/IR/PFDialect.cpp.inc"

namespace {
/// Gives placements readable aliases (`#cpu_0_1`) so that printed IR stays
/// short when many types share a placement.
struct PFOpAsmInterface : public OpAsmDialectInterface {
  using OpAsmDialectInterface::OpAsmDialectInterface;

  AliasResult getAlias(Attribute attr, raw_ostream &os) const override {
    auto placement = dyn_cast<PlacementAttr>(attr);
    if (!placement)
      return AliasResult::NoAlias;
    os << placement.getDevice();
    if (placement.getNumRanks() > 8) {
      os << "_n" << placement.getNumRanks();
      return AliasResult::FinalAlias;
    }
    if (placement.getNumHierarchyDims() > 1) {
      os << "_";
      llvm::interleave(placement.getHierarchy(), os, "x");
    }
    for (int64_t r : placement.getRanks())
      os << "_" << r;
    return AliasResult::FinalAlias;
  }
};
} // namespace

void PFDialect::initialize() {
  registerAttributes();
  registerTypes();
  addOperations<
#define GET_OP_LIST
#include "pf/Dialect/PF/IR/PFOps.cpp.inc"
      >();
  addInterfaces<PFOpAsmInterface>();
}

std::optional<int64_t> mlir::pf::getIntAttrValue(Operation *op,
                                                 StringRef name) {
  if (auto a = op ? op->getAttrOfType<IntegerAttr>(name) : IntegerAttr())
    return a.getInt();
  return std::nullopt;
}

LogicalResult PFDialect::verifyOperationAttribute(Operation *op,
                                                  NamedAttribute attr) {
  if (attr.getName() == getStageAttrName()) {
    auto stage = dyn_cast<IntegerAttr>(attr.getValue());
    if (!stage || !stage.getType().isSignlessInteger())
      return op->emitError() << "'" << getStageAttrName()
                             << "' must be an integer stage id, got "
                             << attr.getValue();
    if (stage.getInt() < 0)
      return op->emitError() << "'" << getStageAttrName()
                             << "' must be non-negative, got "
                             << stage.getInt();
    return success();
  }
  if (attr.getName() == getCheckpointAttrName()) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError() << "'" << getCheckpointAttrName()
                             << "' must be a unit attribute";
    return success();
  }
  if (attr.getName() == getPhaseAttrName()) {
    auto phase = dyn_cast<StringAttr>(attr.getValue());
    if (!phase ||
        !llvm::is_contained({"forward", "backward_input", "backward_weight",
                             "recompute", "update"},
                            phase.getValue()))
      return op->emitError()
             << "'" << getPhaseAttrName()
             << "' must be one of \"forward\", \"backward_input\", "
                "\"backward_weight\", \"recompute\", \"update\"; got "
             << attr.getValue();
    return success();
  }
  if (attr.getName() == getSBPOperandsAttrName()) {
    auto list = dyn_cast<ArrayAttr>(attr.getValue());
    if (!list || list.size() != op->getNumOperands() ||
        !llvm::all_of(list, [](Attribute a) { return isa<SBPAttr>(a); }))
      return op->emitError() << "'" << getSBPOperandsAttrName()
                             << "' must list one #pf.sbp per operand";
    return success();
  }
  if (attr.getName() == getMicrobatchAttrName()) {
    auto value = dyn_cast<IntegerAttr>(attr.getValue());
    if (!value || value.getInt() < 0)
      return op->emitError() << "'" << getMicrobatchAttrName()
                             << "' must be a non-negative integer";
    return success();
  }
  // Per-rank facts recorded by pf-partition-ranks.
  if (attr.getName() == "pf.batch_split") {
    auto value = dyn_cast<IntegerAttr>(attr.getValue());
    if (!value || value.getInt() < 1)
      return op->emitError() << "'pf.batch_split' must be a positive integer";
    return success();
  }
  if (attr.getName() == "pf.logical_shape" ||
      attr.getName() == "pf.shard_offset") {
    if (!isa<DenseI64ArrayAttr>(attr.getValue()) ||
        !isa<ParamOp, DropoutOp>(op))
      return op->emitError() << "'" << attr.getName().getValue()
                             << "' must be an i64 array on a pf.param or "
                                "pf.dropout";
    return success();
  }
  if (attr.getName() == "pf.optimizer") {
    if (!isa<DictionaryAttr>(attr.getValue()) || !isa<ParamOp>(op))
      return op->emitError()
             << "'pf.optimizer' must be a dictionary on a pf.param";
    return success();
  }
  if (attr.getName() == "pf.stage_function") {
    if (!isa<UnitAttr>(attr.getValue()) || !isa<func::FuncOp>(op))
      return op->emitError()
             << "'pf.stage_function' must be a unit attribute on a func.func";
    return success();
  }
  if (attr.getName() == "pf.loss_replica") {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError() << "'pf.loss_replica' must be a unit attribute";
    return success();
  }
  if (attr.getName() == "pf.zero_init") {
    if (!isa<UnitAttr>(attr.getValue()) || !isa<ParamOp>(op))
      return op->emitError() << "'pf.zero_init' must be a unit attribute on "
                                "a pf.param";
    return success();
  }
  if (attr.getName() == getRankAttrName() ||
      attr.getName() == getWorldSizeAttrName()) {
    auto value = dyn_cast<IntegerAttr>(attr.getValue());
    if (!value || value.getInt() < 0 || !isa<ModuleOp>(op))
      return op->emitError() << "'" << attr.getName().getValue()
                             << "' must be a non-negative integer on a module";
    return success();
  }
  if (attr.getName() == getGradOfAttrName()) {
    if (!isa<FlatSymbolRefAttr>(attr.getValue()) || !isa<ParamOp>(op))
      return op->emitError() << "'" << getGradOfAttrName()
                             << "' must be a symbol reference on a pf.param";
    return success();
  }
  return op->emitError() << "unknown discardable attribute '"
                         << attr.getName().getValue()
                         << "' of the pf dialect";
}
