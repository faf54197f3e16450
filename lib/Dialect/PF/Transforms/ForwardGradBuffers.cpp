//===- ForwardGradBuffers.cpp - keep gradients in registers, not buffers --===//
//
// A gradient buffer (pf.param with pf.grad_of, initialised to zeros) carries
// the accumulated gradient from micro-batch to micro-batch and into the
// update, which resets it to zeros for the next step. Once each rank's step
// is straight-line code in its final order (after pf-apply-schedule), the
// buffer's traffic can be forwarded: the first read of a step sees zeros
// (so `add(read, g)` is `g`), a later read sees the last value written, and
// once no read is left every write is dead. The gradient then lives in the
// step's arena like any other value: one add and two copies less per
// parameter and micro-batch, and no persistent buffer.
//
// A buffer is left alone unless all of this can be proven: zero initial
// value, the step ends by writing a zero splat to it, every first-of-step
// read only feeds adds, and reads and writes have the buffer's type.
//
//===----------------------------------------------------------------------===//

#include "pf/Dialect/PF/Transforms/Passes.h"
#include "pf/Support/RankParallel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::pf {
#define GEN_PASS_DEF_FORWARDGRADBUFFERSPASS
#include "pf/Dialect/PF/Transforms/Passes.h.inc"
} // namespace mlir::pf

using namespace mlir;
using namespace mlir::pf;

namespace {

bool isZeroSplat(Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  if (!c)
    return false;
  auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
  if (!dense || !dense.isSplat())
    return false;
  if (auto f = dyn_cast<DenseFPElementsAttr>(dense))
    return f.getSplatValue<APFloat>().isZero();
  return false;
}

/// Forwards one buffer given its reads and writes (all in one function, in
/// walk order); returns whether it did.
bool forward(ParamOp buffer, SmallVector<Operation *> accesses) {
  if (accesses.empty())
    return false;
  Block *block = accesses.front()->getBlock();
  for (Operation *op : accesses)
    if (op->getBlock() != block)
      return false;
  llvm::sort(accesses,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  auto last = dyn_cast<WriteParamOp>(accesses.back());
  if (!last || !isZeroSplat(last.getValue()))
    return false;
  Type type = buffer.getType();
  // Check first, then rewrite.
  bool sawWrite = false;
  for (Operation *op : accesses) {
    if (auto w = dyn_cast<WriteParamOp>(op)) {
      if (w.getValue().getType() != type)
        return false;
      sawWrite = true;
      continue;
    }
    auto r = cast<ReadParamOp>(op);
    if (r.getType() != type)
      return false;
    if (!sawWrite)
      for (Operation *user : r->getUsers())
        if (!isa<AddOp>(user) || user->getOperand(0) == user->getOperand(1) ||
            user->getResult(0).getType() != type)
          return false;
  }
  Value current; // null: the zeros the step starts with
  SmallVector<Operation *> dead;
  for (Operation *op : accesses) {
    if (auto w = dyn_cast<WriteParamOp>(op)) {
      current = w.getValue();
      dead.push_back(op);
      continue;
    }
    auto r = cast<ReadParamOp>(op);
    if (current) {
      r.getResult().replaceAllUsesWith(current);
    } else {
      for (Operation *add : llvm::make_early_inc_range(r->getUsers())) {
        Value other = add->getOperand(0) == r.getResult() ? add->getOperand(1)
                                                          : add->getOperand(0);
        add->getResult(0).replaceAllUsesWith(other);
        add->erase();
      }
    }
    dead.push_back(op);
  }
  for (Operation *op : dead) {
    Value zero =
        isa<WriteParamOp>(op) ? cast<WriteParamOp>(op).getValue() : Value();
    op->erase();
    if (zero && zero.use_empty() && zero.getDefiningOp<ConstantOp>())
      zero.getDefiningOp()->erase();
  }
  return true;
}

struct ForwardGradBuffersPass
    : public pf::impl::ForwardGradBuffersPassBase<ForwardGradBuffersPass> {
  void runOnOperation() override {
    ModuleOp top = getOperation();
    SmallVector<ModuleOp> modules;
    top.walk([&](ModuleOp m) {
      if (m != top)
        modules.push_back(m);
    });
    // The top module's own buffers, then each rank module's on the
    // context's threads (each touches its own module only).
    runOnModule(top);
    (void)forEachRankInOrder(&getContext(), modules.size(), [&](size_t i) {
      runOnModule(modules[i]);
      return success();
    });
  }

  /// One walk collects every buffer's accesses and the functions they are
  /// in; each buffer is then forwarded from its own list, and the buffers
  /// nothing refers to any more go. Linear in the module's size.
  void runOnModule(ModuleOp module) {
    llvm::StringMap<ParamOp> buffers;
    PFDialect::GradOfAttrHelper gradOfAttr(module.getContext());
    for (auto p : module.getOps<ParamOp>())
      if (gradOfAttr.isAttrPresent(p) &&
          p.getInit().getKind() == InitKind::Zeros)
        buffers[p.getSymName()] = p;
    if (buffers.empty())
      return;
    llvm::StringMap<SmallVector<Operation *>> accesses;
    llvm::StringMap<llvm::SmallPtrSet<Operation *, 2>> functions;
    for (auto f : module.getOps<func::FuncOp>())
      f.walk([&](Operation *op) {
        StringRef name;
        if (auto r = dyn_cast<ReadParamOp>(op))
          name = r.getParam();
        else if (auto w = dyn_cast<WriteParamOp>(op))
          name = w.getParam();
        if (name.empty() || !buffers.count(name))
          return;
        accesses[name].push_back(op);
        functions[name].insert(f);
      });
    for (auto &[name, list] : accesses)
      // Only a buffer one function uses: another function would rely on
      // the writes this one stops doing.
      if (functions[name].size() == 1)
        forward(buffers[name], list);
    // Erase the buffers with no reference left (one walk over the module:
    // parameter accesses, whose symbol is a property, and symbol references
    // in any other attribute).
    llvm::StringSet<> referenced;
    module.walk([&](Operation *op) {
      if (auto r = dyn_cast<ReadParamOp>(op))
        referenced.insert(r.getParam());
      else if (auto w = dyn_cast<WriteParamOp>(op))
        referenced.insert(w.getParam());
      else if (op != module.getOperation())
        op->getAttrDictionary().walk([&](SymbolRefAttr ref) {
          referenced.insert(ref.getRootReference().getValue());
        });
    });
    for (auto &[name, buffer] : buffers)
      if (!referenced.contains(name))
        buffer.erase();
  }
};

} // namespace
