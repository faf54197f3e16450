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

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"

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

/// Forwards one buffer in one function; returns whether it did.
bool forward(func::FuncOp func, ParamOp buffer) {
  SmallVector<Operation *> accesses;
  func.walk([&](Operation *op) {
    if (auto r = dyn_cast<ReadParamOp>(op); r && r.getParam() == buffer.getSymName())
      accesses.push_back(op);
    else if (auto w = dyn_cast<WriteParamOp>(op);
             w && w.getParam() == buffer.getSymName())
      accesses.push_back(op);
  });
  if (accesses.empty())
    return false;
  Block *block = accesses.front()->getBlock();
  for (Operation *op : accesses)
    if (op->getBlock() != block)
      return false;
  llvm::sort(accesses, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
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
    Value zero = isa<WriteParamOp>(op) ? cast<WriteParamOp>(op).getValue() : Value();
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
    SmallVector<ModuleOp> modules = {top};
    top.walk([&](ModuleOp m) {
      if (m != top)
        modules.push_back(m);
    });
    for (ModuleOp module : modules) {
      SmallVector<ParamOp> buffers;
      for (auto p : module.getOps<ParamOp>())
        if (p->hasAttr(PFDialect::getGradOfAttrName()) &&
            p.getInit().getKind() == InitKind::Zeros)
          buffers.push_back(p);
      SmallVector<func::FuncOp> funcs;
      for (auto f : module.getOps<func::FuncOp>())
        if (!f.isExternal())
          funcs.push_back(f);
      for (ParamOp buffer : buffers) {
        // Only a buffer one function uses: another function would rely on
        // the writes this one stops doing.
        auto users = [&](func::FuncOp f) {
          return !SymbolTable::symbolKnownUseEmpty(buffer, f);
        };
        if (llvm::count_if(funcs, users) != 1)
          continue;
        for (func::FuncOp f : funcs)
          if (users(f))
            forward(f, buffer);
        if (SymbolTable::symbolKnownUseEmpty(buffer, module))
          buffer.erase();
      }
    }
  }
};

} // namespace
