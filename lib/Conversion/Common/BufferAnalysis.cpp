//===- BufferAnalysis.cpp - buffer facts of a rank's step -----------------===//

#include "pf/Conversion/Common/BufferAnalysis.h"
#include "pf/Dialect/PF/IR/LowPrecision.h"
#include "pf/Dialect/PF/IR/PFOps.h"

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::pf;

namespace {} // namespace

void mlir::pf::groupBuffers(ArrayRef<Operation *> ops,
                            SmallVectorImpl<Value> &inputs,
                            SmallVectorImpl<Value> &outputs) {
  inputs.clear();
  outputs.clear();
  llvm::SmallPtrSet<Operation *, 8> members(ops.begin(), ops.end());
  for (Operation *op : ops)
    for (Value v : op->getOperands())
      if (!members.contains(v.getDefiningOp()) &&
          !llvm::is_contained(inputs, v))
        inputs.push_back(v);
  for (Operation *op : ops) {
    Value r = op->getResult(0);
    if (op == ops.back() || llvm::any_of(r.getUsers(), [&](Operation *user) {
          return !members.contains(user);
        }))
      outputs.push_back(r);
  }
}

namespace {

/// The attributes that say which action an op belongs to.
bool sameAction(Operation *a, Operation *b) {
  for (StringRef name : {PFDialect::StageAttrHelper::getNameStr(),
                         PFDialect::PhaseAttrHelper::getNameStr(),
                         PFDialect::MicrobatchAttrHelper::getNameStr()})
    if (a->getAttr(name) != b->getAttr(name))
      return false;
  return true;
}

} // namespace

void BufferAnalysis::groupElementwise(Block &block,
                                      bool (*elementwise)(Operation *),
                                      unsigned maxPointers) {
  // An op a kernel may compute: one f32 result, operands of its type (one
  // element each, same index), and no buffer decision of its own.
  auto candidate = [&](Operation &op) {
    if (!elementwise(&op) || op.getNumResults() != 1 || groupIndex.count(&op) ||
        fusedRelus.count(&op) || foldedAdds.count(&op) ||
        inPrologue.count(&op) || foldedGradScales.count(&op) ||
        !inPlace.lookup(op.getResult(0)).empty())
      return false;
    Type t = op.getResult(0).getType();
    auto global = dyn_cast<GlobalType>(t);
    return global && global.getElementType().isF32() &&
           llvm::all_of(op.getOperandTypes(),
                        [&](Type operand) { return operand == t; });
  };
  SmallVector<Operation *, 4> open;
  auto close = [&] {
    if (open.empty())
      return;
    ElementwiseGroup g;
    g.ops.assign(open.begin(), open.end());
    groupBuffers(g.ops, g.inputs, g.outputs);
    for (Operation *op : g.ops)
      groupIndex[op] = groups.size();
    groups.push_back(std::move(g));
    open.clear();
  };
  SmallVector<Value, 4> inputs, outputs;
  for (Operation &op : block) {
    if (!candidate(op)) {
      close();
      continue;
    }
    // Consecutive, so every operand exists when the group's kernel runs:
    // an op that reads no member's result joins too (one launch less).
    bool joins =
        !open.empty() && sameAction(open.front(), &op) &&
        op.getResult(0).getType() == open.front()->getResult(0).getType();
    if (joins) {
      open.push_back(&op);
      groupBuffers(open, inputs, outputs);
      if (inputs.size() + outputs.size() <= maxPointers)
        continue;
      open.pop_back();
    }
    close();
    open.push_back(&op);
  }
  close();
}

/// Each op's position in `block`.
static llvm::DenseMap<Operation *, unsigned> programOrder(Block &block) {
  llvm::DenseMap<Operation *, unsigned> order;
  unsigned position = 0;
  for (Operation &op : block)
    order[&op] = position++;
  return order;
}

/// Calls `fn` on the ops that read `v`'s buffer: its users and, through
/// views (reshape, flatten and to_global lower to their operand's buffer),
/// theirs.
template <typename Fn> static void forEachBufferUser(Value v, Fn &&fn) {
  SmallVector<Value, 4> work{v};
  while (!work.empty()) {
    Value x = work.pop_back_val();
    for (Operation *user : x.getUsers()) {
      fn(user);
      if (isa<ReshapeOp, FlattenOp, ToGlobalOp>(user))
        work.push_back(user->getResult(0));
    }
  }
}

void BufferAnalysis::planInPlace(Block &block) {
  llvm::DenseMap<Operation *, unsigned> order = programOrder(block);
  // Reads, and writes, per parameter.
  llvm::StringMap<SmallVector<ReadParamOp>> reads;
  llvm::StringMap<SmallVector<WriteParamOp>> writes;
  for (Operation &op : block) {
    if (auto read = dyn_cast<ReadParamOp>(op))
      reads[read.getParam()].push_back(read);
    else if (auto write = dyn_cast<WriteParamOp>(op))
      writes[write.getParam()].push_back(write);
  }

  for (auto &[name, list] : reads)
    for (ReadParamOp read : list) {
      unsigned lastUse = order[read];
      forEachBufferUser(read.getResult(), [&](Operation *user) {
        lastUse = std::max(lastUse, order[user]);
      });
      for (WriteParamOp write : writes.lookup(name))
        if (order[write] > order[read] && order[write] < lastUse)
          copyingReads.insert(read);
    }

  for (Operation &op : block) {
    if (!isa<SGDUpdateOp, AdamUpdateOp>(op))
      continue;
    unsigned p = order[&op];
    for (Value r : op.getResults()) {
      if (!r.hasOneUse())
        continue;
      auto write = dyn_cast<WriteParamOp>(*r.getUsers().begin());
      if (!write || r.getType() != write.getValue().getType())
        continue;
      unsigned q = order[write];
      bool safe = true;
      for (ReadParamOp read : reads.lookup(write.getParam())) {
        unsigned at = order[read];
        if (at > p && at < q)
          safe = false;
        if (!copyingReads.contains(read))
          forEachBufferUser(read.getResult(), [&](Operation *user) {
            if (user != &op && order[user] > p)
              safe = false;
          });
      }
      for (WriteParamOp w : writes.lookup(write.getParam()))
        if (w != write && order[w] > p && order[w] < q)
          safe = false;
      if (safe)
        inPlace[r] = write.getParam();
    }
  }
}

void BufferAnalysis::fuseBiasRelus(Block &block) {
  for (auto ba : block.getOps<BiasAddOp>())
    if (ba->hasOneUse())
      if (auto relu = dyn_cast<ReluOp>(*ba->getUsers().begin())) {
        fusedRelus.insert(relu);
        fusedWith[ba] = relu;
      }
}

void BufferAnalysis::loadInputsByParts(Block &block) {
  // Inputs loaded by parts: only micro-batch slices read them, and each
  // part is whole boxes or an even row range of one box.
  auto func = dyn_cast_or_null<FunctionOpInterface>(block.getParentOp());
  for (BlockArgument arg : block.getArguments()) {
    if (!func || arg.use_empty())
      continue;
    int64_t parts = 0;
    bool slicesOnly = llvm::all_of(arg.getUsers(), [&](Operation *user) {
      auto mb = dyn_cast<MicrobatchOp>(user);
      if (!mb || (parts && parts != static_cast<int64_t>(mb.getCount())))
        return false;
      parts = static_cast<int64_t>(mb.getCount());
      return true;
    });
    if (!slicesOnly || parts < 2)
      continue;
    unsigned n = arg.getArgNumber();
    auto boxes = func.getArgAttrOfType<ArrayAttr>(
        n, PFDialect::BoxesAttrHelper::getNameStr());
    auto boxShape = func.getArgAttrOfType<DenseI64ArrayAttr>(
        n, PFDialect::BoxShapeAttrHelper::getNameStr());
    int64_t numBoxes = boxes ? static_cast<int64_t>(boxes.size()) : 1;
    auto type = cast<GlobalType>(arg.getType());
    if (type.getRank() == 0)
      continue;
    int64_t rows = boxShape ? boxShape.asArrayRef()[0] : type.getShape()[0];
    if (numBoxes % parts == 0 ||
        (parts % numBoxes == 0 && rows % (parts / numBoxes) == 0))
      partLoaded.insert(arg);
  }
}

void BufferAnalysis::foldAccumulation(Block &block) {
  llvm::DenseMap<Operation *, unsigned> order = programOrder(block);
  // The accumulator must own a fresh step buffer (not a parameter, input,
  // view or in-place result) that nothing else reads.
  for (auto add : block.getOps<AddOp>()) {
    for (unsigned i = 0; i < 2; ++i) {
      Value acc = add->getOperand(i), product = add->getOperand(1 - i);
      auto mm = product.getDefiningOp<MatmulOp>();
      Operation *def = acc.getDefiningOp();
      if (!mm || !product.hasOneUse() || !acc.hasOneUse() || !def ||
          acc == product || def->getBlock() != &block ||
          order[def] >= order[mm] || acc.getType() != product.getType() ||
          !inPlace.lookup(acc).empty() || accumulators.count(mm) ||
          !isa<MatmulOp, AddOp, ReluGradOp, ReduceSumOp, RecvOp>(def))
        continue;
      accumulators[mm] = acc;
      foldedAdds.insert(add);
      break;
    }
  }
}

void BufferAnalysis::foldGemmBiases(Block &block, bool withRelu) {
  llvm::DenseMap<Operation *, unsigned> order = programOrder(block);
  // A bias_add over the last axis of a plain GEMM's only use: the GEMM
  // starts from the bias rows (a relu-fused bias_add keeps its pass unless
  // `withRelu`).
  for (auto ba : block.getOps<BiasAddOp>()) {
    auto mm = ba.getInput().getDefiningOp<MatmulOp>();
    auto type = cast<GlobalType>(ba.getInput().getType());
    // The bias must exist when the GEMM runs (converted before it).
    Operation *biasDef = ba.getBias().getDefiningOp();
    if (mm && biasDef &&
        (biasDef->getBlock() != &block || order[biasDef] >= order[mm]))
      continue;
    // (Not into a typed bf16/f16 GEMM: its bias_add stays a kernel.)
    if (!mm || isLowPrecision(mm.getA().getType()) ||
        !ba.getInput().hasOneUse() || accumulators.count(mm) ||
        biasOf.count(mm) || (fusedWith.count(ba) && !withRelu) ||
        ba.getAxis() != type.getRank() - 1 ||
        ba.getType() != ba.getInput().getType() ||
        !type.getElementType().isF32())
      continue;
    biasOf[mm] = ba;
    foldedBiases.insert(ba);
    if (Operation *relu = fusedWith.lookup(ba))
      reluOf[mm] = relu;
  }
}

/// `op`'s discardable attributes but the recorded decisions (FoldAttributes).
static SmallVector<NamedAttribute> withoutRecords(Operation *op) {
  SmallVector<NamedAttribute> out;
  for (NamedAttribute a : op->getDiscardableAttrs())
    if (!BufferAnalysis::isRecord(a.getName()))
      out.push_back(a);
  return out;
}

void BufferAnalysis::groupUpdateRuns(Block &block) {
  auto lrOf = [](Operation *op) {
    if (auto sgd = dyn_cast<SGDUpdateOp>(op))
      return std::make_pair(sgd.getLr(), sgd.getStep());
    auto adam = cast<AdamUpdateOp>(op);
    return std::make_pair(adam.getLr(), adam.getStep());
  };
  // An update whose results are all computed in place (so deferring it
  // moves no arena buffer) and that no other analysis claimed.
  auto eligible = [&](Operation *op) {
    return isa<SGDUpdateOp, AdamUpdateOp>(op) && !groupIndex.count(op) &&
           !deferredTo.count(op) && !updateGroupIndex.count(op) &&
           llvm::all_of(op->getResults(),
                        [&](Value r) { return inPlace.count(r); });
  };
  auto compatible = [&](Operation *a, Operation *b) {
    return a->getName() == b->getName() &&
           a->getPropertiesAsAttribute() == b->getPropertiesAsAttribute() &&
           withoutRecords(a) == withoutRecords(b) && lrOf(a) == lrOf(b);
  };
  // The parameter whose buffer `v` is (a read_param, through views that
  // alias their operand's buffer), if any.
  auto paramOf = [&](Value v) -> StringRef {
    Operation *def = v.getDefiningOp();
    while (isa_and_nonnull<ReshapeOp, FlattenOp, ToGlobalOp>(def))
      def = def->getOperand(0).getDefiningOp();
    auto read = dyn_cast_or_null<ReadParamOp>(def);
    return read && !copyingReads.contains(read) ? read.getParam() : StringRef();
  };
  UpdateGroup run;
  // Parameters a member writes (in place): nothing in the run may read
  // them before the call. And the parameters members read in place: no
  // later member may write them (one launch orders no tensor before
  // another).
  llvm::StringSet<> pending, readByRun;
  auto close = [&] {
    if (run.updates.size() >= 2) {
      unsigned index = updateGroups.size();
      Operation *last = run.last();
      for (Operation *update : run.updates) {
        updateGroupIndex[update] = index;
        if (update != last)
          deferredTo[update] = last;
      }
      updateGroups.push_back(std::move(run));
    }
    run = UpdateGroup();
    pending.clear();
    readByRun.clear();
  };
  // Whether `op` may join the run: it reads no parameter a member wrote,
  // and writes none a member wrote or read.
  auto conflicts = [&](Operation *op) {
    for (Value v : op->getOperands())
      if (StringRef param = paramOf(v);
          !param.empty() && pending.contains(param))
        return true;
    for (Value r : op->getResults()) {
      StringRef target = inPlace.lookup(r);
      if (pending.contains(target) || readByRun.contains(target))
        return true;
    }
    return false;
  };
  for (Operation &op : block) {
    if (eligible(&op)) {
      if (!run.updates.empty() &&
          (!compatible(run.updates.front(), &op) || conflicts(&op)))
        close();
      run.updates.push_back(&op);
      for (Value r : op.getResults())
        pending.insert(inPlace.lookup(r));
      for (Value v : op.getOperands())
        if (StringRef param = paramOf(v); !param.empty())
          readByRun.insert(param);
      continue;
    }
    if (run.updates.empty())
      continue;
    if (auto read = dyn_cast<ReadParamOp>(op)) {
      if (pending.contains(read.getParam()))
        close();
      continue;
    }
    if (isa<ScalarInputOp, ConstantOp>(op))
      continue;
    if (auto write = dyn_cast<WriteParamOp>(op)) {
      Operation *def = write.getValue().getDefiningOp();
      if (def && llvm::is_contained(run.updates, def) &&
          !inPlace.lookup(write.getValue()).empty())
        continue; // computed in place: a no-op
    }
    close();
  }
  close();
}

void BufferAnalysis::foldSoftmaxes(Block &block) {
  // `v` is computed by `def`, an op of the block and of `user`'s action,
  // and read by `user` alone.
  auto onlyFor = [&](Value v, Operation *user, Operation *def) {
    return def && def->getBlock() == &block && v.hasOneUse() &&
           sameAction(def, user) && inPlace.lookup(v).empty();
  };
  auto isF32 = [](Value v) {
    return cast<GlobalType>(v.getType()).getElementType().isF32();
  };
  for (auto sm : block.getOps<SoftmaxOp>()) {
    auto type = cast<GlobalType>(sm.getInput().getType());
    if (type.getRank() == 0 ||
        static_cast<int64_t>(sm.getAxis()) != type.getRank() - 1 ||
        !isF32(sm.getInput()))
      continue;
    ArrayRef<int64_t> shape = type.getShape();
    int64_t rows = 1;
    for (int64_t d : shape.drop_back())
      rows *= d;
    SoftmaxPrologue p;
    Value in = sm.getInput();
    auto fill = in.getDefiningOp<MaskedFillOp>();
    if (fill && onlyFor(in, sm, fill) && fill.getInput().getType() == type) {
      p.fill = fill;
      p.fillValue = fill.getValue().convertToDouble();
      p.maskRows = rows;
      // A mask broadcast over leading axes only: its rows repeat.
      Value mask = fill.getMask();
      auto bc = mask.getDefiningOp<BroadcastToOp>();
      if (bc && onlyFor(mask, fill, bc))
        if (std::optional<int64_t> r = broadcastMaskRows(
                shape, cast<GlobalType>(bc.getInput().getType()).getShape())) {
          p.broadcast = bc;
          p.maskRows = *r;
        }
      in = fill.getInput();
    }
    auto scale = in.getDefiningOp<MulScalarOp>();
    Operation *user = p.fill ? p.fill : sm.getOperation();
    if (scale && onlyFor(in, user, scale) &&
        scale.getInput().getType() == type) {
      p.scale = scale;
      p.scaleValue = scale.getScalar().convertToDouble();
    }
    if (!p.scale && !p.fill)
      continue;
    // The prologue's reads move to the softmax: nothing in between may
    // write a parameter (a read_param shares its parameter's buffer).
    Operation *first = p.scale ? p.scale : (p.broadcast ? p.broadcast : p.fill);
    bool written = false;
    for (Operation *op = first; op && op != sm.getOperation();
         op = op->getNextNode())
      written |= isa<WriteParamOp, SGDUpdateOp, AdamUpdateOp>(op);
    if (written)
      continue;
    for (Operation *op : {p.scale, p.broadcast, p.fill})
      if (op) {
        inPrologue.insert(op);
        deferredTo[op] = sm;
      }
    softmaxPrologues[sm] = std::move(p);
  }
  for (auto grad : block.getOps<SoftmaxGradOp>()) {
    Value dx = grad.getResult();
    auto type = cast<GlobalType>(dx.getType());
    if (type.getRank() == 0 ||
        static_cast<int64_t>(grad.getAxis()) != type.getRank() - 1 ||
        !isF32(dx) || !dx.hasOneUse())
      continue;
    auto scale = dyn_cast<MulScalarOp>(*dx.getUsers().begin());
    // Not one a softmax computes already (softmax(scale(softmax_grad))).
    if (!scale || inPrologue.contains(scale) || scale->getBlock() != &block ||
        !sameAction(grad, scale) || scale.getType() != dx.getType() ||
        !inPlace.lookup(scale.getResult()).empty())
      continue;
    gradScales[grad] = scale;
    foldedGradScales.insert(scale);
  }
}

void BufferAnalysis::pairBiasGradients(Block &block) {
  llvm::DenseMap<Operation *, unsigned> order = programOrder(block);
  for (auto reduce : block.getOps<ReduceSumOp>()) {
    for (Operation *user : reduce.getInput().getUsers()) {
      auto mm = dyn_cast<MatmulOp>(user);
      if (!mm || isLowPrecision(mm.getA().getType()) ||
          !isBiasGradientPair(reduce, mm) || biasGradPartner.count(mm) ||
          biasOf.count(mm) || !sameAction(mm, reduce))
        continue;
      Operation *first = order.lookup(mm) < order.lookup(reduce)
                             ? mm.getOperation()
                             : reduce.getOperation();
      Operation *second = first == mm.getOperation() ? reduce.getOperation()
                                                     : mm.getOperation();
      // Nothing may read the earlier result before the GEMM runs.
      bool early =
          llvm::any_of(first->getResult(0).getUsers(), [&](Operation *u) {
            return order.lookup(u) <= order.lookup(second);
          });
      // An accumulator must exist at the later op (it does: before the
      // matmul); the matmul's operands exist at the earlier op.
      if (early)
        continue;
      biasGradPartner[mm] = reduce;
      biasGradPartner[reduce] = mm;
      deferredTo[first] = second;
      break;
    }
  }
}
