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

std::optional<int64_t> mlir::pf::getStageAttrValue(Operation *op) {
  return getIntAttrValue(op, PFDialect::StageAttrHelper::getNameStr());
}

/// The attributes the fold passes record (lib/Conversion/Common/
/// FoldAttributes.cpp): success or an error if `attr` is one, none if not.
static std::optional<LogicalResult> verifyFoldAttribute(Operation *op,
                                                        NamedAttribute attr) {
  StringAttr name = attr.getName();
  Attribute value = attr.getValue();
  auto require = [&](bool ok, const char *what) -> LogicalResult {
    if (ok)
      return success();
    return op->emitError() << "'" << name.getValue() << "' must be " << what;
  };
  auto nonNegativeInt = [](Attribute a) {
    auto i = dyn_cast<IntegerAttr>(a);
    return i && i.getInt() >= 0;
  };
  if (name.getValue() == PFDialect::FoldAttrHelper::getNameStr()) {
    auto kind = dyn_cast<StringAttr>(value);
    return require(
        kind && llvm::is_contained(
                    ArrayRef<StringRef>{
                        "bias_relu", "gemm_bias", "gemm_bias_relu",
                        "gemm_accumulate", "softmax_prologue",
                        "softmax_grad_scale", "strided_view", "strided_concat"},
                    kind.getValue()),
        "one of \"bias_relu\", \"gemm_bias\", \"gemm_bias_relu\", "
        "\"gemm_accumulate\", \"softmax_prologue\", "
        "\"softmax_grad_scale\", \"strided_view\", \"strided_concat\"");
  }
  if (name.getValue() == PFDialect::FoldOperandAttrHelper::getNameStr()) {
    auto i = dyn_cast<IntegerAttr>(value);
    return require(i && (i.getInt() == 0 || i.getInt() == 1) && isa<AddOp>(op),
                   "0 or 1 on a pf.add");
  }
  if (name.getValue() == PFDialect::CopyReadAttrHelper::getNameStr())
    return require(isa<UnitAttr>(value) && isa<ReadParamOp>(op),
                   "a unit attribute on a pf.read_param");
  if (name.getValue() == PFDialect::InPlaceAttrHelper::getNameStr()) {
    auto list = dyn_cast<ArrayAttr>(value);
    return require(list && list.size() == op->getNumResults() &&
                       llvm::all_of(list, llvm::IsaPred<StringAttr>) &&
                       isa<SGDUpdateOp, AdamUpdateOp>(op),
                   "an array of one string a result on an optimizer update");
  }
  if (name.getValue() == PFDialect::BiasGradPairAttrHelper::getNameStr() ||
      name.getValue() == PFDialect::KernelGroupAttrHelper::getNameStr() ||
      name.getValue() == PFDialect::UpdateGroupAttrHelper::getNameStr())
    return require(nonNegativeInt(value), "a non-negative integer");
  if (name.getValue() == PFDialect::StridedAAttrHelper::getNameStr() ||
      name.getValue() == PFDialect::StridedBAttrHelper::getNameStr() ||
      name.getValue() == PFDialect::StridedResultAttrHelper::getNameStr())
    return require(isa<DenseI64ArrayAttr>(value) && isa<MatmulOp>(op),
                   "an array<i64: ...> on a pf.matmul");
  return std::nullopt;
}

LogicalResult PFDialect::verifyOperationAttribute(Operation *op,
                                                  NamedAttribute attr) {
  StringAttr name = attr.getName();
  Attribute value = attr.getValue();
  // Quotes the attribute's name for a message: 'pf.stage'.
  auto quoted = [&]() { return "'" + name.getValue().str() + "'"; };
  auto nonNegativeInt = [](Attribute a) {
    auto i = dyn_cast<IntegerAttr>(a);
    return i && i.getInt() >= 0;
  };
  // Success if ok, else "'NAME' must be WHAT".
  auto require = [&](bool ok, const char *what) -> LogicalResult {
    if (ok)
      return success();
    return op->emitError() << quoted() << " must be " << what;
  };
  if (name == getStageAttrHelper().getName()) {
    auto stage = dyn_cast<IntegerAttr>(value);
    if (!stage || !stage.getType().isSignlessInteger())
      return op->emitError()
             << quoted() << " must be an integer stage id, got " << value;
    if (stage.getInt() < 0)
      return op->emitError()
             << quoted() << " must be non-negative, got " << stage.getInt();
    return success();
  }
  if (name == getCheckpointAttrHelper().getName() ||
      name == getCheckpointSelectiveAttrHelper().getName())
    return require(isa<UnitAttr>(value), "a unit attribute");
  if (name == getAutocastAttrHelper().getName()) {
    auto dtype = dyn_cast<StringAttr>(value);
    return require(
        dtype && llvm::is_contained({"bf16", "f16", "f32"}, dtype.getValue()),
        R"(one of "bf16", "f16", "f32")");
  }
  if (name == getPhaseAttrHelper().getName()) {
    auto phase = dyn_cast<StringAttr>(value);
    if (!phase ||
        !llvm::is_contained({"forward", "backward_input", "backward_weight",
                             "recompute", "update"},
                            phase.getValue()))
      return op->emitError()
             << quoted()
             << " must be one of \"forward\", \"backward_input\", "
                "\"backward_weight\", \"recompute\", \"update\"; got "
             << value;
    return success();
  }
  if (name == getSbpOperandsAttrHelper().getName()) {
    auto list = dyn_cast<ArrayAttr>(value);
    if (!list || list.size() != op->getNumOperands() ||
        !llvm::all_of(list, [](Attribute a) { return isa<SBPAttr>(a); }))
      return op->emitError()
             << quoted() << " must list one #pf.sbp per operand";
    return success();
  }
  if (name == getMicrobatchAttrHelper().getName())
    return require(nonNegativeInt(value), "a non-negative integer");
  if (name == getMicrobatchTemplateAttrHelper().getName()) {
    auto m = dyn_cast<IntegerAttr>(value);
    return require(m && m.getInt() >= 2 && isa<func::FuncOp>(op),
                   "an integer >= 2 on a func.func");
  }
  // Per-rank facts recorded by pf-partition-ranks.
  if (name == getBatchSplitAttrHelper().getName()) {
    auto split = dyn_cast<IntegerAttr>(value);
    return require(split && split.getInt() >= 1, "a positive integer");
  }
  if (name == getLogicalShapeAttrHelper().getName() ||
      name == getShardOffsetAttrHelper().getName())
    return require(
        isa<DenseI64ArrayAttr>(value) &&
            isa<ParamOp, DropoutOp, EmbeddingOp, EmbeddingGradOp,
                SoftmaxCrossEntropyOp, SoftmaxCrossEntropyGradOp, AttentionOp,
                AttentionGradOp>(op),
        "an i64 array on a pf.param, pf.dropout, embedding, cross-entropy or "
        "attention op");
  if (name == getAsyncSlotAttrHelper().getName()) {
    auto slot = dyn_cast<IntegerAttr>(value);
    return require(slot && slot.getInt() >= 0 &&
                       slot.getInt() < kMaxAsyncSlots &&
                       isa<AllReduceOp, AllGatherOp, ReduceScatterOp>(op),
                   "an integer in [0, 64) on a pf.all_reduce, pf.all_gather "
                   "or pf.reduce_scatter");
  }
  if (name == getVocabGroupAttrHelper().getName()) {
    auto group = dyn_cast<DenseI64ArrayAttr>(value);
    return require(
        group && !group.empty() &&
            llvm::all_of(group.asArrayRef(),
                         [](int64_t r) { return r >= 0; }) &&
            isa<SoftmaxCrossEntropyOp, SoftmaxCrossEntropyGradOp>(op),
        "a non-empty array of ranks on a cross-entropy op");
  }
  if (name == getShardGroupsAttrHelper().getName()) {
    auto groups = dyn_cast<DenseI64ArrayAttr>(value);
    return require(groups && groups.size() == 3 && groups[0] >= 0 &&
                       groups[1] >= 2 && groups[2] > 0 && isa<ParamOp>(op),
                   "[axis >= 0, groups >= 2, stride > 0] on a pf.param");
  }
  if (name == getOptimizerAttrHelper().getName())
    return require(isa<DictionaryAttr>(value) && isa<ParamOp>(op),
                   "a dictionary on a pf.param");
  if (name == getStageFunctionAttrHelper().getName())
    return require(isa<UnitAttr>(value) && isa<func::FuncOp>(op),
                   "a unit attribute on a func.func");
  if (name == getLossReplicaAttrHelper().getName())
    return require(isa<UnitAttr>(value), "a unit attribute");
  if (name == getZeroInitAttrHelper().getName())
    return require(isa<UnitAttr>(value) && isa<ParamOp>(op),
                   "a unit attribute on a pf.param");
  if (name == getRankAttrHelper().getName() ||
      name == getWorldSizeAttrHelper().getName())
    return require(nonNegativeInt(value) && isa<ModuleOp>(op),
                   "a non-negative integer on a module");
  if (name == getGradOfAttrHelper().getName())
    return require(isa<FlatSymbolRefAttr>(value) && isa<ParamOp>(op),
                   "a symbol reference on a pf.param");
  if (name == getCudnnAttentionAttrHelper().getName()) {
    auto why = dyn_cast<StringAttr>(value);
    return require(why && isa<AttentionOp, AttentionGradOp>(op) &&
                       (why.getValue() == "bf16" || why.getValue() == "f16" ||
                        why.getValue().starts_with("kernel: ")),
                   "\"bf16\", \"f16\" or \"kernel: <why>\" on a "
                   "pf.attention or pf.attention_grad");
  }
  if (name == getTypedGemmAttrHelper().getName()) {
    auto kind = dyn_cast<StringAttr>(value);
    return require(kind && isa<MatmulOp>(op) &&
                       llvm::is_contained(
                           {"bf16->bf16", "bf16->f32", "f16->f16", "f16->f32"},
                           kind.getValue()),
                   "\"bf16->bf16\", \"bf16->f32\", \"f16->f16\" or "
                   "\"f16->f32\" on a pf.matmul");
  }
  // The fold passes' decisions (lib/Conversion/Common/FoldAttributes.cpp).
  if (std::optional<LogicalResult> fold = verifyFoldAttribute(op, attr))
    return *fold;
  // pf.input, pf.boxes, pf.box_shape, pf.zero_input and pf.load_by_parts
  // are argument attributes, pf.output and pf.global_type result
  // attributes: on an op they are as unknown as a misspelling.
  return op->emitError() << "unknown discardable attribute '" << name.getValue()
                         << "' of the pf dialect";
}
