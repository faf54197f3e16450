//===- MemoryPlan.cpp - one arena per rank, planned at compile time -------===//

#include "pf/Conversion/Common/MemoryPlan.h"
#include "pf/Dialect/PF/IR/PFOps.h"
#include "pf/Target/ArtifactAttrs.h"

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

/// The short name of an element type, as the IR prints it.
StringRef dtypeName(Type t) {
  if (t.isF32())
    return "f32";
  if (t.isBF16())
    return "bf16";
  if (t.isF16())
    return "f16";
  if (t.isInteger(64))
    return "i64";
  if (t.isInteger(32))
    return "i32";
  if (t.isInteger(1))
    return "i1";
  return "other";
}

/// One buffer: an alias class of values and its lifetime in op positions
/// (inputs are defined at 0, ops count from 1; kEnd = after the last op).
struct Interval {
  int64_t bytes = 0;
  int64_t start = 0, end = 0;
  /// Its element type's name (f32, bf16, i64, ...).
  StringRef dtype;
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

/// Greedy by size (as TensorFlow Lite's offset planner): the largest
/// buffers first, each in the smallest gap, over its whole lifetime, among
/// the buffers already placed that live at the same time (else above
/// them). Online best-fit in time order fragments when large short-lived
/// buffers (logits, a gathered weight) come and go among long-lived ones;
/// this order places those first. Returns the arena's size.
int64_t allocateBySize(ArrayRef<Interval> buffers,
                       SmallVectorImpl<int64_t> &offsets) {
  SmallVector<unsigned> order;
  for (auto [i, b] : llvm::enumerate(buffers))
    if (!b.external)
      order.push_back(i);
  llvm::stable_sort(order, [&](unsigned a, unsigned b) {
    return buffers[a].bytes > buffers[b].bytes;
  });
  SmallVector<unsigned> placed;
  SmallVector<std::pair<int64_t, int64_t>> busy; // [offset, end) in use
  int64_t peak = 0;
  for (unsigned i : order) {
    const Interval &b = buffers[i];
    busy.clear();
    for (unsigned j : placed)
      if (buffers[j].start <= b.end && b.start <= buffers[j].end)
        busy.push_back({offsets[j], offsets[j] + buffers[j].bytes});
    llvm::sort(busy);
    int64_t at = 0, best = -1, bestGap = INT64_MAX;
    for (auto [lo, hi] : busy) {
      if (lo - at >= b.bytes && lo - at < bestGap) {
        best = at;
        bestGap = lo - at;
      }
      at = std::max(at, hi);
    }
    offsets[i] = best >= 0 ? best : at;
    peak = std::max(peak, offsets[i] + b.bytes);
    placed.push_back(i);
  }
  return peak;
}

/// The bytes of each element type live where the most bytes are live (they
/// add up to lowerBound).
llvm::StringMap<int64_t> liveByDtypeAtPeak(ArrayRef<Interval> buffers) {
  SmallVector<std::tuple<int64_t, int64_t, unsigned>> events; // at, +-, idx
  for (auto [i, b] : llvm::enumerate(buffers))
    if (!b.external) {
      events.push_back({b.start, b.bytes, i});
      if (b.end != kEnd)
        events.push_back({b.end + 1, -b.bytes, i});
    }
  llvm::sort(events);
  llvm::StringMap<int64_t> live, atPeak;
  int64_t total = 0, most = 0;
  for (auto [at, delta, i] : events) {
    live[buffers[i].dtype] += delta;
    total += delta;
    if (total > most) {
      most = total;
      atPeak = live;
    }
  }
  return atPeak;
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
/// backward op (or a recomputation for one: checkpointing, widened casts),
/// counted per micro-batch over the step. Returns the most
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
    if (!phase || !(phase.getValue().starts_with("backward") ||
                    phase.getValue() == "recompute"))
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

/// The micro-batch of a forward op (one without a phase counts): its results
/// that a backward op reads later are that micro-batch's activations in
/// flight.
std::optional<int64_t> forwardMicrobatch(Operation &op) {
  auto mb = op.getAttrOfType<IntegerAttr>(
      PFDialect::MicrobatchAttrHelper::getNameStr());
  auto phase =
      op.getAttrOfType<StringAttr>(PFDialect::PhaseAttrHelper::getNameStr());
  if (mb && (!phase || phase.getValue() == "forward"))
    return mb.getInt();
  return std::nullopt;
}

} // namespace

/// Plans a MemoryPlan: the persistent part (parameters), then the alias
/// classes of the step's values with their lifetimes, then the allocation.
class MemoryPlan::Planner {
public:
  Planner(const BufferAnalysis &buffers,
          const llvm::DenseMap<Operation *, Operation *> &sendDone)
      : buffers(buffers), sendDone(sendDone) {}

  LogicalResult placeParams(ModuleOp module);
  LogicalResult placeInputs(Block &step);
  LogicalResult placeStep(Block &step);
  MemoryPlan finish();

private:
  LogicalResult newClass(Value v, int64_t start, bool external);
  void alias(Value v, Value of) { plan.classOf[v] = plan.classOf[of]; }
  void use(Value v, int64_t at) {
    auto it = plan.classOf.find(v);
    if (it != plan.classOf.end())
      classes[it->second].end = std::max(classes[it->second].end, at);
  }
  LogicalResult placeOp(Operation &op, int64_t p);
  LogicalResult placeSend(SendOp send, int64_t p);
  LogicalResult placeConcatPiece(Operation &op, Value cat, int64_t p);
  Value foldedInto(Operation &op);
  LogicalResult placeResults(Operation &op, int64_t p);

  const BufferAnalysis &buffers;
  const llvm::DenseMap<Operation *, Operation *> &sendDone;
  MemoryPlan plan;
  SmallVector<Interval> classes;
  llvm::DenseMap<Operation *, int64_t> positionOf;
};

LogicalResult MemoryPlan::Planner::placeParams(ModuleOp module) {
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
  return success();
}

LogicalResult MemoryPlan::Planner::newClass(Value v, int64_t start,
                                            bool external) {
  Interval c;
  c.start = c.end = start;
  c.external = external;
  if (!external) {
    FailureOr<int64_t> bytes = bytesOfType(v.getLoc(), v.getType());
    if (failed(bytes))
      return failure();
    c.bytes = *bytes;
    c.dtype = dtypeName(cast<GlobalType>(v.getType()).getElementType());
  }
  plan.classOf[v] = classes.size();
  classes.push_back(c);
  return success();
}

/// Inputs loaded by parts have no buffer of their own: each micro-batch
/// slice gets one where it is taken. Other inputs stay resident and
/// unwritten for the whole step: the runtime loads a fixed synthetic batch
/// once and not again.
LogicalResult MemoryPlan::Planner::placeInputs(Block &step) {
  for (BlockArgument arg : step.getArguments()) {
    bool parts = buffers.isPartLoadedInput(arg);
    if (failed(newClass(arg, 0, parts)))
      return failure();
    if (!parts) {
      classes.back().end = kEnd;
      plan.inputBytes += classes.back().bytes;
    }
  }
  return success();
}

LogicalResult MemoryPlan::Planner::placeStep(Block &step) {
  for (Operation &op : step)
    positionOf[&op] = static_cast<int64_t>(positionOf.size()) + 1;
  int64_t position = 0;
  for (Operation &op : step)
    if (failed(placeOp(op, ++position)))
      return failure();
  return success();
}

/// Non-blocking: the buffer must stay until the send is known complete (or
/// the end of the step). A parameter's own buffer is sent from a copy.
LogicalResult MemoryPlan::Planner::placeSend(SendOp send, int64_t p) {
  Operation *done = sendDone.lookup(send);
  int64_t end = done ? positionOf.lookup(done) : kEnd;
  use(send.getValue(), end);
  Operation *def = send.getValue().getDefiningOp();
  while (isa_and_nonnull<ReshapeOp, FlattenOp, ToGlobalOp>(def))
    def = def->getOperand(0).getDefiningOp();
  if (!isa_and_nonnull<ReadParamOp>(def))
    return success();
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
  return success();
}

/// A GEMM writing one piece of a concat in place: the concat's buffer exists
/// from the first such GEMM on; the concat copies nothing.
LogicalResult MemoryPlan::Planner::placeConcatPiece(Operation &op, Value cat,
                                                    int64_t p) {
  if (!plan.classOf.count(cat)) {
    if (failed(newClass(cat, p, false)))
      return failure();
    // A forward result a backward op reads: in flight, as below.
    if (std::optional<int64_t> mb = forwardMicrobatch(op))
      classes.back().microbatch = *mb;
  }
  alias(op.getResult(0), cat);
  return success();
}

/// The value whose buffer a folded op's result shares, if the op is folded
/// into another.
Value MemoryPlan::Planner::foldedInto(Operation &op) {
  // Computed by the softmax after it (read there), or by the softmax
  // gradient before it (into that gradient's buffer).
  if (buffers.isFusedRelu(&op) || buffers.isFoldedBias(&op) ||
      buffers.isInSoftmaxPrologue(&op) || buffers.isFoldedGradScale(&op) ||
      buffers.isFoldedView(&op))
    return op.getOperand(0);
  // An accumulating GEMM writes into its accumulator; the add is free.
  if (Value acc = buffers.accumulatorOf(&op))
    return acc;
  if (buffers.isFoldedAdd(&op)) {
    Value lhs = op.getOperand(0);
    return buffers.accumulatorOf(lhs.getDefiningOp()) ? lhs : op.getOperand(1);
  }
  return Value();
}

LogicalResult MemoryPlan::Planner::placeResults(Operation &op, int64_t p) {
  bool noStorage =
      (buffers.groupOf(&op) && buffers.isGroupInternal(op.getResult(0))) ||
      isa<ScalarInputOp>(op) ||
      (isa<ReadParamOp>(op) && !buffers.isCopyingRead(&op)) ||
      (isa<ConstantOp>(op) && llvm::all_of(op.getUsers(), [](Operation *u) {
         return isa<WriteParamOp>(u);
       }));
  for (Value r : op.getResults())
    if (failed(newClass(r, p, noStorage || !buffers.inPlaceTarget(r).empty())))
      return failure();
  if (std::optional<int64_t> mb = forwardMicrobatch(op))
    for (Value r : op.getResults())
      classes[plan.classOf[r]].microbatch = *mb;
  return success();
}

/// The op at position `p`: the lifetimes of what it reads, and the classes
/// of its results.
LogicalResult MemoryPlan::Planner::placeOp(Operation &op, int64_t p) {
  // A grouped element-wise op is computed at its group's last op: what it
  // reads must live until then.
  Operation *at = buffers.computedAt(&op);
  int64_t reads = at == &op ? p : positionOf.lookup(at);
  for (Value operand : op.getOperands())
    use(operand, reads);
  if (isa<func::ReturnOp>(op)) {
    for (Value operand : op.getOperands())
      use(operand, kEnd);
    return success();
  }
  if (auto send = dyn_cast<SendOp>(op))
    return placeSend(send, p);
  if (isa<MicrobatchOp>(op) && buffers.isPartLoadedInput(op.getOperand(0)))
    return newClass(op.getResult(0), p, false);
  // Views, and the sum of a split all-reduce: its started buffer (the
  // all-reduce's input, the wait's second operand, has been kept until here
  // above).
  if (isa<ReshapeOp, FlattenOp, ToGlobalOp, MicrobatchOp, AllReduceWaitOp>(
          op)) {
    alias(op.getResult(0), op.getOperand(0));
    return success();
  }
  if (const StridedResult *sr = buffers.stridedResult(&op); sr && sr->concat)
    return placeConcatPiece(op, sr->concat->getResult(0), p);
  if (isa<ConcatOp>(op) && buffers.isFoldedConcat(&op))
    return success();
  if (Value into = foldedInto(op)) {
    alias(op.getResult(0), into);
    return success();
  }
  return placeResults(op, p);
}

MemoryPlan MemoryPlan::Planner::finish() {
  std::tie(plan.activationsInFlight, plan.activationPeakBytes) =
      countActivationsInFlight(classes, positionOf);
  // Both allocators; the smaller arena wins.
  SmallVector<int64_t> offsets(classes.size(), -1), bySize(classes.size(), -1);
  plan.stepPeakBytes = allocate(classes, offsets);
  if (int64_t sized = allocateBySize(classes, bySize);
      sized < plan.stepPeakBytes) {
    plan.stepPeakBytes = sized;
    offsets = std::move(bySize);
  }
  plan.lowerBoundBytes = lowerBound(classes);
  for (auto &[dtype, bytes] : liveByDtypeAtPeak(classes))
    if (bytes > 0)
      plan.peakLiveBytesByDtype.push_back({dtype.str(), bytes});
  llvm::sort(plan.peakLiveBytesByDtype);
  for (auto [i, c] : llvm::enumerate(classes)) {
    plan.classOffset.push_back(c.external ? -1
                                          : plan.persistentBytes + offsets[i]);
    plan.classBytes.push_back(c.bytes);
    plan.numBuffers += c.external ? 0 : 1;
  }
  for (auto &[send, index] : plan.sendCopies)
    index = plan.classOffset[index];
  plan.arenaBytes = plan.persistentBytes + plan.stepPeakBytes;
  return std::move(plan);
}

FailureOr<MemoryPlan>
MemoryPlan::build(ModuleOp module, Block &step, const BufferAnalysis &buffers,
                  const llvm::DenseMap<Operation *, Operation *> &sendDone) {
  Planner planner(buffers, sendDone);
  if (failed(planner.placeParams(module)) ||
      failed(planner.placeInputs(step)) || failed(planner.placeStep(step)))
    return failure();
  return planner.finish();
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
  namespace key = artifact::memory;
  Builder b(ctx);
  auto entry = [&](const Twine &name, int64_t v) {
    return b.getNamedAttr(b.getStringAttr(name), b.getI64IntegerAttr(v));
  };
  SmallVector<NamedAttribute> byDtype;
  for (const auto &[dtype, bytes] : peakLiveBytesByDtype)
    byDtype.push_back(
        entry(key::kLowerBoundPrefix + dtype + key::kBytesSuffix, bytes));
  SmallVector<NamedAttribute> entries(
      {entry(key::kArenaBytes, arenaBytes),
       entry(key::kPersistentBytes, persistentBytes),
       entry(key::kParameterBytes, parameterBytes),
       entry(key::kGradientBytes, gradientBytes),
       entry(key::kStateBytes, stateBytes), entry(key::kInputBytes, inputBytes),
       entry(key::kStepPeakBytes, stepPeakBytes),
       entry(key::kLowerBoundBytes, lowerBoundBytes),
       entry(key::kStepBuffers, numBuffers),
       entry(key::kActivationsInFlight, activationsInFlight),
       entry(key::kActivationPeakBytes, activationPeakBytes)});
  entries.append(byDtype);
  return b.getDictionaryAttr(entries);
}
