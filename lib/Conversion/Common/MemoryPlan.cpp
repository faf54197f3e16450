//===- MemoryPlan.cpp - one arena per rank, planned at compile time -------===//

#include "pf/Conversion/Common/MemoryPlan.h"
#include "pf/Dialect/PF/IR/PFOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <map>
#include <tuple>

using namespace mlir;
using namespace mlir::pf;

namespace {

int64_t roundUp(int64_t bytes) {
  int64_t b = bytes > 0 ? bytes : 1;
  return (b + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

FailureOr<int64_t> bytesOfType(Location loc, Type type) {
  auto global = cast<GlobalType>(type);
  Type elem = global.getElementType();
  // Whole bytes per element: an i1 (bool) is stored in one byte.
  int64_t width =
      elem.isIntOrFloat() ? (elem.getIntOrFloatBitWidth() + 7) / 8 : 0;
  if (width == 0)
    return emitError(loc) << "the memory plan has no size for " << elem;
  return roundUp(width * global.getNumElements());
}

/// One buffer: an alias class of values and its lifetime in op positions
/// (inputs are defined at 0, ops count from 1; kEnd = after the last op).
struct Interval {
  int64_t bytes = 0;
  int64_t start = 0, end = 0;
  /// The micro-batch whose forward defined it (-1: none).
  int64_t microbatch = -1;
  bool external = false; // a parameter, a run-time scalar, or nothing
};
constexpr int64_t kEnd = INT64_MAX;

/// Best-fit over a coalescing free list, in order of starts.
int64_t allocate(SmallVectorImpl<Interval> &buffers,
                 SmallVectorImpl<int64_t> &offsets) {
  SmallVector<unsigned> byStart, byEnd;
  for (auto [i, b] : llvm::enumerate(buffers))
    if (!b.external)
      byStart.push_back(i);
  byEnd = byStart;
  llvm::stable_sort(byStart, [&](unsigned a, unsigned b) {
    return buffers[a].start < buffers[b].start;
  });
  llvm::stable_sort(byEnd, [&](unsigned a, unsigned b) {
    return buffers[a].end < buffers[b].end;
  });
  std::map<int64_t, int64_t> freeBlocks; // offset -> size
  int64_t top = 0;
  auto release = [&](int64_t off, int64_t size) {
    auto next = freeBlocks.lower_bound(off);
    if (next != freeBlocks.end() && off + size == next->first) {
      size += next->second;
      next = freeBlocks.erase(next);
    }
    if (next != freeBlocks.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == off) {
        prev->second += size;
        off = prev->first;
        size = prev->second;
      } else {
        freeBlocks[off] = size;
      }
    } else {
      freeBlocks[off] = size;
    }
    // A free block at the top shrinks the arena in use.
    auto last = freeBlocks.find(off);
    if (off + size == top) {
      top = off;
      freeBlocks.erase(last);
    }
  };
  int64_t peak = 0;
  size_t nextEnd = 0;
  for (unsigned i : byStart) {
    Interval &b = buffers[i];
    // Buffers whose last reader ran before this definition are free.
    while (nextEnd < byEnd.size() && buffers[byEnd[nextEnd]].end < b.start) {
      unsigned j = byEnd[nextEnd++];
      if (offsets[j] >= 0)
        release(offsets[j], buffers[j].bytes);
    }
    auto best = freeBlocks.end();
    for (auto it = freeBlocks.begin(); it != freeBlocks.end(); ++it)
      if (it->second >= b.bytes &&
          (best == freeBlocks.end() || it->second < best->second))
        best = it;
    if (best != freeBlocks.end()) {
      offsets[i] = best->first;
      int64_t rest = best->second - b.bytes, at = best->first + b.bytes;
      freeBlocks.erase(best);
      if (rest > 0)
        freeBlocks[at] = rest;
    } else {
      offsets[i] = top;
      top += b.bytes;
    }
    peak = std::max(peak, top);
  }
  return peak;
}

/// The most bytes live at any position.
int64_t lowerBound(ArrayRef<Interval> buffers) {
  SmallVector<std::pair<int64_t, int64_t>> events; // (position, +-bytes)
  for (const Interval &b : buffers)
    if (!b.external) {
      events.push_back({b.start, b.bytes});
      if (b.end != kEnd)
        events.push_back({b.end + 1, -b.bytes});
    }
  llvm::sort(events, [](auto a, auto b) {
    return a.first != b.first ? a.first < b.first : a.second < b.second;
  });
  int64_t live = 0, most = 0;
  for (auto [at, delta] : events) {
    live += delta;
    most = std::max(most, live);
  }
  return most;
}

/// Activations in flight: forward-defined buffers whose last reader is a
/// backward op, counted per micro-batch over the step. Returns the most
/// micro-batches with such buffers live at once and the most bytes.
std::pair<int64_t, int64_t> countActivationsInFlight(
    ArrayRef<Interval> classes,
    const llvm::DenseMap<Operation *, int64_t> &positionOf) {
  SmallVector<Operation *> opAt(positionOf.size() + 1, nullptr);
  for (auto &[op, at] : positionOf)
    opAt[at] = op;
  SmallVector<std::tuple<int64_t, int64_t, int64_t>> events; // at, +-1, idx
  for (auto [i, c] : llvm::enumerate(classes)) {
    if (c.external || c.microbatch < 0 || c.end == kEnd ||
        c.end >= static_cast<int64_t>(opAt.size()))
      continue;
    auto phase = opAt[c.end]->getAttrOfType<StringAttr>(
        PFDialect::PhaseAttrHelper::getNameStr());
    if (!phase || !phase.getValue().starts_with("backward"))
      continue;
    events.push_back({c.start, 1, i});
    events.push_back({c.end + 1, -1, i});
  }
  llvm::sort(events);
  llvm::DenseMap<int64_t, int64_t> liveOf; // micro-batch -> live buffers
  int64_t bytes = 0, most = 0, mostBytes = 0;
  for (auto [at, delta, i] : events) {
    int64_t &n = liveOf[classes[i].microbatch];
    n += delta;
    if (n == 0)
      liveOf.erase(classes[i].microbatch);
    bytes += delta * classes[i].bytes;
    most = std::max<int64_t>(most, liveOf.size());
    mostBytes = std::max(mostBytes, bytes);
  }
  return {most, mostBytes};
}

} // namespace

FailureOr<MemoryPlan>
MemoryPlan::build(ModuleOp module, Block &step, const BufferAnalysis &buffers,
                  const llvm::DenseMap<Operation *, Operation *> &sendDone) {
  MemoryPlan plan;
  for (auto param : module.getOps<ParamOp>()) {
    FailureOr<int64_t> bytes = bytesOfType(param.getLoc(), param.getType());
    if (failed(bytes))
      return failure();
    plan.params[param.getSymName()] = plan.persistentBytes;
    plan.persistentBytes += *bytes;
    if (param->hasAttr(PFDialect::GradOfAttrHelper::getNameStr()))
      plan.gradientBytes += *bytes;
    else if (param.getBuffer())
      plan.stateBytes += *bytes;
    else
      plan.parameterBytes += *bytes;
  }

  SmallVector<Interval> classes;
  auto newClass = [&](Value v, int64_t start, bool external) -> LogicalResult {
    Interval c;
    c.start = c.end = start;
    c.external = external;
    if (!external) {
      FailureOr<int64_t> bytes = bytesOfType(v.getLoc(), v.getType());
      if (failed(bytes))
        return failure();
      c.bytes = *bytes;
    }
    plan.classOf[v] = classes.size();
    classes.push_back(c);
    return success();
  };
  auto alias = [&](Value v, Value of) { plan.classOf[v] = plan.classOf[of]; };
  auto use = [&](Value v, int64_t at) {
    auto it = plan.classOf.find(v);
    if (it != plan.classOf.end())
      classes[it->second].end = std::max(classes[it->second].end, at);
  };

  // Inputs loaded by parts have no buffer of their own: each micro-batch
  // slice gets one where it is taken. Other inputs stay resident and
  // unwritten for the whole step: the runtime loads a fixed synthetic batch
  // once and not again.
  for (BlockArgument arg : step.getArguments()) {
    bool parts = buffers.isPartLoadedInput(arg);
    if (failed(newClass(arg, 0, parts)))
      return failure();
    if (!parts) {
      classes.back().end = kEnd;
      plan.inputBytes += classes.back().bytes;
    }
  }
  llvm::DenseMap<Operation *, int64_t> positionOf;
  for (Operation &op : step)
    positionOf[&op] = static_cast<int64_t>(positionOf.size()) + 1;
  int64_t position = 0;
  for (Operation &op : step) {
    int64_t p = ++position;
    // A grouped element-wise op is computed at its group's last op: what it
    // reads must live until then.
    const ElementwiseGroup *group = buffers.groupOf(&op);
    Operation *at = buffers.computedAt(&op);
    int64_t reads = at == &op ? p : positionOf.lookup(at);
    for (Value operand : op.getOperands())
      use(operand, reads);
    if (isa<func::ReturnOp>(op)) {
      for (Value operand : op.getOperands())
        use(operand, kEnd);
      continue;
    }
    if (auto send = dyn_cast<SendOp>(op)) {
      // Non-blocking: the buffer must stay until the send is known complete
      // (or the end of the step). A parameter's own buffer is sent from a
      // copy.
      Operation *done = sendDone.lookup(send);
      int64_t end = done ? positionOf.lookup(done) : kEnd;
      use(send.getValue(), end);
      Operation *def = send.getValue().getDefiningOp();
      while (isa_and_nonnull<ReshapeOp, FlattenOp, ToGlobalOp>(def))
        def = def->getOperand(0).getDefiningOp();
      if (isa_and_nonnull<ReadParamOp>(def)) {
        Interval c;
        c.start = p;
        c.end = end;
        FailureOr<int64_t> bytes =
            bytesOfType(send.getLoc(), send.getValue().getType());
        if (failed(bytes))
          return failure();
        c.bytes = *bytes;
        plan.sendCopies[send] = classes.size(); // an index until allocation
        classes.push_back(c);
      }
      continue;
    }
    if (isa<MicrobatchOp>(op) && buffers.isPartLoadedInput(op.getOperand(0))) {
      if (failed(newClass(op.getResult(0), p, false)))
        return failure();
      continue;
    }
    if (isa<ReshapeOp, FlattenOp, ToGlobalOp, MicrobatchOp>(op)) {
      alias(op.getResult(0), op.getOperand(0));
      continue;
    }
    // The sum of a split all-reduce is its started buffer; the all-reduce's
    // input (the wait's second operand) has been kept until here above.
    if (isa<AllReduceWaitOp>(op)) {
      alias(op.getResult(0), op.getOperand(0));
      continue;
    }
    // A GEMM writing one piece of a concat in place: the concat's buffer
    // exists from the first such GEMM on; the concat copies nothing.
    if (const StridedResult *sr = buffers.stridedResult(&op);
        sr && sr->concat) {
      Value cat = sr->concat->getResult(0);
      if (!plan.classOf.count(cat)) {
        if (failed(newClass(cat, p, false)))
          return failure();
        // A forward result a backward op reads: in flight, as below.
        auto mb = op.getAttrOfType<IntegerAttr>(
            PFDialect::MicrobatchAttrHelper::getNameStr());
        auto phase = op.getAttrOfType<StringAttr>(
            PFDialect::PhaseAttrHelper::getNameStr());
        if (mb && (!phase || phase.getValue() == "forward"))
          classes.back().microbatch = mb.getInt();
      }
      alias(op.getResult(0), cat);
      continue;
    }
    if (isa<ConcatOp>(op) && buffers.isFoldedConcat(&op))
      continue;
    // Computed by the softmax after it (read there), or by the softmax
    // gradient before it (into that gradient's buffer).
    if (buffers.isFusedRelu(&op) || buffers.isFoldedBias(&op) ||
        buffers.isInSoftmaxPrologue(&op) || buffers.isFoldedGradScale(&op) ||
        buffers.isFoldedView(&op)) {
      alias(op.getResult(0), op.getOperand(0));
      continue;
    }
    // An accumulating GEMM writes into its accumulator; the add is free.
    if (Value acc = buffers.accumulatorOf(&op)) {
      alias(op.getResult(0), acc);
      continue;
    }
    if (buffers.isFoldedAdd(&op)) {
      Value lhs = op.getOperand(0);
      alias(op.getResult(0), buffers.accumulatorOf(lhs.getDefiningOp())
                                 ? lhs
                                 : op.getOperand(1));
      continue;
    }
    bool noStorage =
        (group && buffers.isGroupInternal(op.getResult(0))) ||
        isa<ScalarInputOp>(op) ||
        (isa<ReadParamOp>(op) && !buffers.isCopyingRead(&op)) ||
        (isa<ConstantOp>(op) && llvm::all_of(op.getUsers(), [](Operation *u) {
           return isa<WriteParamOp>(u);
         }));
    for (Value r : op.getResults())
      if (failed(
              newClass(r, p, noStorage || !buffers.inPlaceTarget(r).empty())))
        return failure();
    // A forward op's result that a backward op reads later is one of its
    // micro-batch's activations in flight.
    if (auto mb = op.getAttrOfType<IntegerAttr>(
            PFDialect::MicrobatchAttrHelper::getNameStr())) {
      auto phase = op.getAttrOfType<StringAttr>(
          PFDialect::PhaseAttrHelper::getNameStr());
      if (!phase || phase.getValue() == "forward")
        for (Value r : op.getResults())
          classes[plan.classOf[r]].microbatch = mb.getInt();
    }
  }

  std::tie(plan.activationsInFlight, plan.activationPeakBytes) =
      countActivationsInFlight(classes, positionOf);

  SmallVector<int64_t> offsets(classes.size(), -1);
  plan.stepPeakBytes = allocate(classes, offsets);
  plan.lowerBoundBytes = lowerBound(classes);
  for (auto [i, c] : llvm::enumerate(classes)) {
    plan.classOffset.push_back(c.external ? -1
                                          : plan.persistentBytes + offsets[i]);
    plan.classBytes.push_back(c.bytes);
    plan.numBuffers += c.external ? 0 : 1;
  }
  for (auto &[send, index] : plan.sendCopies)
    index = plan.classOffset[index];
  plan.arenaBytes = plan.persistentBytes + plan.stepPeakBytes;
  return plan;
}

int64_t MemoryPlan::offsetOf(Value v) const {
  auto it = classOf.find(v);
  return it == classOf.end() ? -1 : classOffset[it->second];
}

int64_t MemoryPlan::bytesOf(Value v) const {
  auto it = classOf.find(v);
  return it == classOf.end() ? 0 : classBytes[it->second];
}

DictionaryAttr MemoryPlan::toAttr(MLIRContext *ctx) const {
  Builder b(ctx);
  auto entry = [&](StringRef name, int64_t v) {
    return b.getNamedAttr(name, b.getI64IntegerAttr(v));
  };
  return b.getDictionaryAttr(
      {entry("arena_bytes", arenaBytes),
       entry("persistent_bytes", persistentBytes),
       entry("parameter_bytes", parameterBytes),
       entry("gradient_bytes", gradientBytes), entry("state_bytes", stateBytes),
       entry("input_bytes", inputBytes),
       entry("step_peak_bytes", stepPeakBytes),
       entry("step_lower_bound_bytes", lowerBoundBytes),
       entry("step_buffers", numBuffers),
       entry("activations_in_flight", activationsInFlight),
       entry("activation_peak_bytes", activationPeakBytes)});
}
