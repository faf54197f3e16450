//===- BufferAnalysis.cpp - buffer facts of a rank's step -----------------===//

#include "pf/Conversion/Common/BufferAnalysis.h"
#include "pf/Dialect/PF/IR/PFOps.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace mlir::pf;

BufferAnalysis::BufferAnalysis(Block &block, bool foldAccumulation) {
  llvm::DenseMap<Operation *, unsigned> order;
  unsigned position = 0;
  for (Operation &op : block)
    order[&op] = position++;

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
      for (Operation *user : read->getUsers())
        lastUse = std::max(lastUse, order[user]);
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
          for (Operation *user : read->getUsers())
            if (user != &op && order[user] > p)
              safe = false;
      }
      for (WriteParamOp w : writes.lookup(write.getParam()))
        if (w != write && order[w] > p && order[w] < q)
          safe = false;
      if (safe)
        inPlace[r] = write.getParam();
    }
  }

  for (auto ba : block.getOps<BiasAddOp>())
    if (ba->hasOneUse())
      if (auto relu = dyn_cast<ReluOp>(*ba->getUsers().begin())) {
        fusedRelus.insert(relu);
        fusedWith[ba] = relu;
      }

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

  // Accumulating GEMMs. The accumulator must own a fresh step buffer (not a
  // parameter, input, view or in-place result) that nothing else reads.
  for (auto add : block.getOps<AddOp>()) {
    if (!foldAccumulation)
      break;
    for (unsigned i = 0; i < 2; ++i) {
      Value acc = add->getOperand(i), product = add->getOperand(1 - i);
      auto mm = product.getDefiningOp<MatmulOp>();
      Operation *def = acc.getDefiningOp();
      if (!mm || !product.hasOneUse() || !acc.hasOneUse() || !def ||
          acc == product || def->getBlock() != &block ||
          order[def] >= order[mm] || acc.getType() != product.getType() ||
          !inPlace.lookup(acc).empty() ||
          !isa<MatmulOp, AddOp, ReluGradOp, ReduceSumOp, RecvOp>(def))
        continue;
      accumulators[mm] = acc;
      foldedAdds.insert(add);
      break;
    }
  }

  // A bias_add over the last axis of a plain GEMM's only use: the GEMM
  // starts from the bias rows (a relu-fused bias_add keeps its pass).
  for (auto ba : block.getOps<BiasAddOp>()) {
    auto mm = ba.getInput().getDefiningOp<MatmulOp>();
    auto type = cast<GlobalType>(ba.getInput().getType());
    // The bias must exist when the GEMM runs (converted before it).
    Operation *biasDef = ba.getBias().getDefiningOp();
    if (mm && biasDef &&
        (biasDef->getBlock() != &block || order[biasDef] >= order[mm]))
      continue;
    if (!mm || !ba.getInput().hasOneUse() || accumulators.count(mm) ||
        fusedWith.count(ba) || ba.getAxis() != type.getRank() - 1 ||
        ba.getType() != ba.getInput().getType() ||
        !type.getElementType().isF32())
      continue;
    biasOf[mm] = ba;
    foldedBiases.insert(ba);
  }
}
