//===- FoldAttributes.cpp - BufferAnalysis's decisions in the IR ----------===//
//
// The fold passes (lib/Conversion/Fusion) record BufferAnalysis's decisions
// as discardable attributes, so that pf-opt prints every fusion decision and
// the rank lowering only reads them (BufferAnalysis(Block &)):
//
//   pf.copy_read                    a read_param that copies its parameter
//   pf.in_place = ["w", ""]         an optimizer update: the parameter or
//                                   state each result is computed into
//   pf.load_by_parts (argument)     an input loaded a micro-batch at a time
//   pf.fold = "bias_relu"           a relu the bias_add before it computes
//   pf.fold = "gemm_bias"           a bias_add the GEMM before it computes
//   pf.fold = "gemm_bias_relu"      a relu computed by that GEMM too
//   pf.fold = "gemm_accumulate"     an add(acc, matmul) the matmul computes
//                                   (C += A B); pf.fold_operand = the
//                                   product's operand number
//   pf.bias_grad_pair = n           the matmul and reduce_sum of one BGRADB
//                                   GEMM (run at the later one)
//   pf.fold = "softmax_prologue"    the mul_scalar, masked_fill and mask
//                                   broadcast_to a softmax computes
//   pf.fold = "softmax_grad_scale"  a mul_scalar the softmax gradient
//                                   before it computes
//   pf.fold = "strided_view"        a slice, reshape or transpose never
//                                   computed (GEMMs read or write through it)
//   pf.fold = "strided_concat"      a concat whose pieces GEMMs wrote
//   pf.strided_a, pf.strided_b      a matmul operand read through strides:
//                                   [views, offset, strides...] (views: the
//                                   view ops from the operand to the base)
//   pf.strided_result               a matmul writing through strides:
//                                   [offset, strides...]
//   pf.kernel_group = n             the element-wise ops of one generated
//                                   kernel (run at the last)
//   pf.update_group = n             the updates of one multi-tensor call
//
// What follows from the structure (a fused relu's bias_add is its operand's
// producer, a prologue's softmax its user, ...) is found again when read.
//
//===----------------------------------------------------------------------===//

#include "pf/Conversion/Common/BufferAnalysis.h"
#include "pf/Dialect/PF/IR/PFOps.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

#include <map>

using namespace mlir;
using namespace mlir::pf;

namespace {
using Helpers = PFDialect;

constexpr StringLiteral kBiasRelu = "bias_relu";
constexpr StringLiteral kGemmBias = "gemm_bias";
constexpr StringLiteral kGemmBiasRelu = "gemm_bias_relu";
constexpr StringLiteral kGemmAccumulate = "gemm_accumulate";
constexpr StringLiteral kSoftmaxPrologue = "softmax_prologue";
constexpr StringLiteral kSoftmaxGradScale = "softmax_grad_scale";
constexpr StringLiteral kStridedView = "strided_view";
constexpr StringLiteral kStridedConcat = "strided_concat";
} // namespace

/// The `pf.fold` kind of `op`, or "".
static StringRef foldOf(Operation *op) {
  if (!op)
    return "";
  auto kind = Helpers::FoldAttrHelper(op->getContext()).getAttr(op);
  return kind ? kind.getValue() : StringRef();
}

/// `op`'s `name` attribute as an int, or -1.
static int64_t intAttr(Operation *op, StringRef name) {
  auto a = op->getAttrOfType<IntegerAttr>(name);
  return a ? a.getInt() : -1;
}

/// The ops of each id of the integer attribute `name`, in program order.
static std::map<int64_t, SmallVector<Operation *, 4>> groupsOf(Block &block,
                                                               StringRef name) {
  std::map<int64_t, SmallVector<Operation *, 4>> out;
  for (Operation &op : block)
    if (int64_t id = intAttr(&op, name); id >= 0)
      out[id].push_back(&op);
  return out;
}

std::optional<int64_t> mlir::pf::broadcastMaskRows(ArrayRef<int64_t> shape,
                                                   ArrayRef<int64_t> from) {
  SmallVector<int64_t> padded(shape.size() - from.size(), 1);
  llvm::append_range(padded, from);
  size_t k = 0;
  while (k + 1 < padded.size() && padded[k] == 1)
    ++k;
  if (ArrayRef<int64_t>(padded).drop_front(k) != shape.drop_front(k))
    return std::nullopt;
  int64_t rows = 1;
  for (int64_t d : shape.drop_front(k).drop_back())
    rows *= d;
  return rows;
}

BufferAnalysis::BufferAnalysis(Block &block) {
  MLIRContext *ctx = block.getParentOp()->getContext();
  for (Operation &op : block) {
    if (Helpers::CopyReadAttrHelper(ctx).isAttrPresent(&op))
      copyingReads.insert(&op);
    if (auto targets = Helpers::InPlaceAttrHelper(ctx).getAttr(&op))
      for (auto [r, t] : llvm::zip(op.getResults(), targets))
        if (auto name = dyn_cast<StringAttr>(t); name && !name.empty())
          inPlace[r] = name.getValue();
  }
  if (auto func = dyn_cast_or_null<FunctionOpInterface>(block.getParentOp()))
    for (BlockArgument arg : block.getArguments())
      if (func.getArgAttr(arg.getArgNumber(),
                          Helpers::LoadByPartsAttrHelper::getNameStr()))
        partLoaded.insert(arg);
  readStructure(block);
  readViews(block);
}

void BufferAnalysis::readStructure(Block &block) {
  for (Operation &op : block) {
    StringRef kind = foldOf(&op);
    if (kind == kBiasRelu || kind == kGemmBiasRelu) {
      Operation *ba = op.getOperand(0).getDefiningOp();
      fusedRelus.insert(&op);
      fusedWith[ba] = &op;
    }
    if (kind == kGemmBias || kind == kGemmBiasRelu) {
      Operation *ba =
          kind == kGemmBias ? &op : op.getOperand(0).getDefiningOp();
      Operation *mm = ba->getOperand(0).getDefiningOp();
      if (kind == kGemmBias) {
        biasOf[mm] = ba;
        foldedBiases.insert(ba);
      } else {
        reluOf[mm] = &op;
      }
    }
    if (kind == kGemmAccumulate) {
      int64_t i = intAttr(&op, Helpers::FoldOperandAttrHelper::getNameStr());
      Value product = op.getOperand(i), acc = op.getOperand(1 - i);
      accumulators[product.getDefiningOp()] = acc;
      foldedAdds.insert(&op);
    }
    if (kind == kSoftmaxGradScale) {
      gradScales[op.getOperand(0).getDefiningOp()] = &op;
      foldedGradScales.insert(&op);
    }
  }
  // Softmax prologues: the marked ops before each softmax.
  for (auto sm : block.getOps<SoftmaxOp>()) {
    SoftmaxPrologue p;
    Value in = sm.getInput();
    auto type = cast<GlobalType>(in.getType());
    ArrayRef<int64_t> shape = type.getShape();
    auto fill = in.getDefiningOp<MaskedFillOp>();
    if (fill && foldOf(fill) == kSoftmaxPrologue) {
      p.fill = fill;
      p.fillValue = fill.getValue().convertToDouble();
      p.maskRows = 1;
      for (int64_t d : shape.drop_back())
        p.maskRows *= d;
      auto bc = fill.getMask().getDefiningOp<BroadcastToOp>();
      if (bc && foldOf(bc) == kSoftmaxPrologue) {
        p.broadcast = bc;
        p.maskRows = *broadcastMaskRows(
            shape, cast<GlobalType>(bc.getInput().getType()).getShape());
      }
      in = fill.getInput();
    }
    auto scale = in.getDefiningOp<MulScalarOp>();
    if (scale && foldOf(scale) == kSoftmaxPrologue) {
      p.scale = scale;
      p.scaleValue = scale.getScalar().convertToDouble();
    }
    if (!p.scale && !p.fill)
      continue;
    for (Operation *op : {p.scale, p.broadcast, p.fill})
      if (op) {
        inPrologue.insert(op);
        deferredTo[op] = sm;
      }
    softmaxPrologues[sm] = p;
  }
  for (auto &[id, ops] :
       groupsOf(block, Helpers::BiasGradPairAttrHelper::getNameStr())) {
    (void)id;
    if (ops.size() != 2)
      continue;
    biasGradPartner[ops[0]] = ops[1];
    biasGradPartner[ops[1]] = ops[0];
    deferredTo[ops[0]] = ops[1];
  }
  for (auto &[id, ops] :
       groupsOf(block, Helpers::KernelGroupAttrHelper::getNameStr())) {
    (void)id;
    ElementwiseGroup g;
    g.ops.assign(ops.begin(), ops.end());
    groupBuffers(g.ops, g.inputs, g.outputs);
    for (Operation *op : g.ops)
      groupIndex[op] = groups.size();
    groups.push_back(std::move(g));
  }
  for (auto &[id, ops] :
       groupsOf(block, Helpers::UpdateGroupAttrHelper::getNameStr())) {
    (void)id;
    UpdateGroup g;
    g.updates.assign(ops.begin(), ops.end());
    for (Operation *op : g.updates) {
      updateGroupIndex[op] = updateGroups.size();
      if (op != g.last())
        deferredTo[op] = g.last();
    }
    updateGroups.push_back(std::move(g));
  }
}

void BufferAnalysis::readViews(Block &block) {
  for (Operation &op : block) {
    StringRef kind = foldOf(&op);
    if (kind == kStridedView)
      foldedViews.insert(&op);
    else if (kind == kStridedConcat)
      foldedConcats.insert(&op);
  }
  for (auto mm : block.getOps<MatmulOp>()) {
    for (unsigned index = 0; index < 2; ++index) {
      auto row = mm->getAttrOfType<DenseI64ArrayAttr>(
          index == 0 ? Helpers::StridedAAttrHelper::getNameStr()
                     : Helpers::StridedBAttrHelper::getNameStr());
      if (!row || row.size() < 2)
        continue;
      ArrayRef<int64_t> v = row.asArrayRef();
      // The base's view op: `views` producers up from the operand.
      Operation *root = mm->getOperand(index).getDefiningOp();
      for (int64_t k = 1; k < v[0] && root; ++k)
        root = root->getOperand(0).getDefiningOp();
      if (!root)
        continue;
      StridedOperand s;
      s.root = root;
      s.offset = v[1];
      s.strides.assign(v.begin() + 2, v.end());
      stridedOperands[{mm, index}] = std::move(s);
    }
    auto row = mm->getAttrOfType<DenseI64ArrayAttr>(
        Helpers::StridedResultAttrHelper::getNameStr());
    if (!row || row.empty())
      continue;
    StridedResult res;
    res.offset = row[0];
    res.strides.assign(row.asArrayRef().begin() + 1, row.asArrayRef().end());
    // Through its transpose and reshapes, a piece of a folded concat?
    Value last = mm.getResult();
    while (last.hasOneUse() &&
           isa<TransposeOp, ReshapeOp>(*last.getUsers().begin()))
      last = last.getUsers().begin()->getResult(0);
    if (last.hasOneUse())
      if (auto cat = dyn_cast<ConcatOp>(*last.getUsers().begin());
          cat && foldedConcats.contains(cat))
        res.concat = cat;
    stridedResults[mm] = std::move(res);
  }
}

/// The attributes that record decisions (on ops).
static ArrayRef<StringLiteral> recordNames() {
  static const StringLiteral names[] = {
      Helpers::FoldAttrHelper::getNameStr(),
      Helpers::FoldOperandAttrHelper::getNameStr(),
      Helpers::CopyReadAttrHelper::getNameStr(),
      Helpers::InPlaceAttrHelper::getNameStr(),
      Helpers::BiasGradPairAttrHelper::getNameStr(),
      Helpers::KernelGroupAttrHelper::getNameStr(),
      Helpers::UpdateGroupAttrHelper::getNameStr(),
      Helpers::StridedAAttrHelper::getNameStr(),
      Helpers::StridedBAttrHelper::getNameStr(),
      Helpers::StridedResultAttrHelper::getNameStr()};
  return names;
}

bool BufferAnalysis::isRecord(StringRef name) {
  return llvm::is_contained(recordNames(), name);
}

void BufferAnalysis::clearRecords(Block &block) {
  for (Operation &op : block)
    for (StringRef name : recordNames())
      op.removeAttr(name);
  if (auto func = dyn_cast_or_null<FunctionOpInterface>(block.getParentOp()))
    for (BlockArgument arg : block.getArguments())
      func.removeArgAttr(arg.getArgNumber(),
                         Helpers::LoadByPartsAttrHelper::getNameStr());
}

void BufferAnalysis::record(Block &block) const {
  MLIRContext *ctx = block.getParentOp()->getContext();
  Builder b(ctx);
  clearRecords(block);
  auto fold = [&](Operation *op, StringRef kind) {
    op->setAttr(Helpers::FoldAttrHelper::getNameStr(), b.getStringAttr(kind));
  };

  for (Operation &op : block) {
    if (copyingReads.contains(&op))
      op.setAttr(Helpers::CopyReadAttrHelper::getNameStr(), b.getUnitAttr());
    if (!isa<SGDUpdateOp, AdamUpdateOp>(op) ||
        llvm::none_of(op.getResults(),
                      [&](Value r) { return inPlace.count(r); }))
      continue;
    SmallVector<Attribute> targets;
    for (Value r : op.getResults())
      targets.push_back(b.getStringAttr(inPlace.lookup(r)));
    op.setAttr(Helpers::InPlaceAttrHelper::getNameStr(),
               b.getArrayAttr(targets));
  }
  if (auto func = dyn_cast_or_null<FunctionOpInterface>(block.getParentOp()))
    for (BlockArgument arg : block.getArguments())
      if (partLoaded.contains(arg))
        func.setArgAttr(arg.getArgNumber(),
                        Helpers::LoadByPartsAttrHelper::getNameStr(),
                        b.getUnitAttr());
  for (Operation *relu : fusedRelus)
    fold(relu, kBiasRelu);
  for (auto [mm, relu] : reluOf)
    fold(relu, kGemmBiasRelu);
  for (Operation *ba : foldedBiases)
    fold(ba, kGemmBias);
  for (auto [mm, acc] : accumulators)
    for (Operation *add : mm->getResult(0).getUsers())
      if (foldedAdds.contains(add)) {
        fold(add, kGemmAccumulate);
        add->setAttr(Helpers::FoldOperandAttrHelper::getNameStr(),
                     b.getI64IntegerAttr(add->getOperand(0) == acc ? 1 : 0));
      }
  for (Operation *op : inPrologue)
    fold(op, kSoftmaxPrologue);
  for (Operation *op : foldedGradScales)
    fold(op, kSoftmaxGradScale);
  for (Operation *op : foldedViews)
    fold(op, kStridedView);
  for (Operation *op : foldedConcats)
    fold(op, kStridedConcat);

  // Ids in program order, so that the printed IR is stable.
  int64_t pairs = 0;
  for (Operation &op : block) {
    Operation *partner = biasGradPartner.lookup(&op);
    if (!partner || !op.isBeforeInBlock(partner))
      continue;
    for (Operation *member : {&op, partner})
      member->setAttr(Helpers::BiasGradPairAttrHelper::getNameStr(),
                      b.getI64IntegerAttr(pairs));
    ++pairs;
  }
  for (auto [i, g] : llvm::enumerate(groups))
    for (Operation *op : g.ops)
      op->setAttr(Helpers::KernelGroupAttrHelper::getNameStr(),
                  b.getI64IntegerAttr(i));
  for (auto [i, g] : llvm::enumerate(updateGroups))
    for (Operation *op : g.updates)
      op->setAttr(Helpers::UpdateGroupAttrHelper::getNameStr(),
                  b.getI64IntegerAttr(i));

  for (const auto &[key, s] : stridedOperands) {
    auto [mm, index] = key;
    // The number of view ops from the operand up to the root.
    int64_t views = 1;
    for (Operation *v = mm->getOperand(index).getDefiningOp(); v && v != s.root;
         v = v->getOperand(0).getDefiningOp())
      ++views;
    SmallVector<int64_t> row{views, s.offset};
    llvm::append_range(row, s.strides);
    mm->setAttr(index == 0 ? Helpers::StridedAAttrHelper::getNameStr()
                           : Helpers::StridedBAttrHelper::getNameStr(),
                b.getDenseI64ArrayAttr(row));
  }
  for (const auto &[mm, res] : stridedResults) {
    SmallVector<int64_t> row{res.offset};
    llvm::append_range(row, res.strides);
    mm->setAttr(Helpers::StridedResultAttrHelper::getNameStr(),
                b.getDenseI64ArrayAttr(row));
  }
}
