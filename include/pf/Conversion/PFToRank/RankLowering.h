//===- RankLowering.h - pf rank programs to LLVM over libpfrt ---*- C++ -*-===//
//
// The rank lowering of both targets (convert-pf-to-cpu, convert-pf-to-gpu)
// in pieces: a type converter (every !pf.global becomes the !llvm.ptr of
// its local buffer), a lowering state shared by the patterns of one rank
// module (its target: RankLoweringState::onDevice; every runtime call is
// the target's row of the runtime ABI, rt::RuntimeABI), and one populate
// function per op family:
//
//   compute         element-wise ops, matmul, bias_add, reductions, losses,
//                   dropout, transpose
//   conv and pool   convolutions, pooling, batch norm
//   communication   collectives, broadcast/reduce, boxes, send/recv
//   optimizer/state parameter reads and writes, run-time scalars, SGD, Adam
//   control/memory  constants, micro-batch views, packing, shape views,
//                   the step's return
//   logical         comparisons, logical ops, selections, casts
//
//===----------------------------------------------------------------------===//

#ifndef PF_CONVERSION_PFTORANK_RANKLOWERING_H
#define PF_CONVERSION_PFTORANK_RANKLOWERING_H

#include "pf/Conversion/Common/BufferAnalysis.h"
#include "pf/Conversion/Common/MemoryPlan.h"
#include "pf/Conversion/Common/RuntimeABI.h"
#include "pf/Conversion/Kernels/Elementwise.h"
#include "pf/Dialect/PF/IR/PFOps.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Transforms/DialectConversion.h"

#include <optional>
#include <tuple>

namespace mlir::pf {

/// !pf.global -> !llvm.ptr (the local buffer).
class RankTypeConverter : public TypeConverter {
public:
  explicit RankTypeConverter(MLIRContext *ctx);
};

/// How to load one micro-batch of an input loaded by parts (the arguments
/// of pfrt_load_input_part but the part).
struct PartInput {
  int64_t index = 0;
  int32_t dtype = 0;
  int64_t classes = 0;
  SmallVector<int64_t> logicalShape, offsets, boxShape;
  int64_t numBoxes = 1;
  bool zero = false;
};

/// What the patterns of one rank module share.
struct RankLoweringState {
  /// With `generatedKernels`, element-wise ops run as the compiler's own
  /// kernels (Kernels/Elementwise.h), grouped as the step's
  /// `pf.kernel_group` attributes say. Every fusion and buffer decision is
  /// read from the step's attributes (BufferAnalysis), which the fold
  /// passes set (pf-cpu-folds, pf-gpu-folds).
  RankLoweringState(ModuleOp module, Block &step,
                    rt::Target target = rt::Target::Host,
                    bool generatedKernels = false)
      : module(module), rt(module, target), buffers(step),
        generatedKernels(generatedKernels) {}

  /// Whether buffers are device addresses (convert-pf-to-gpu): calls go to
  /// the runtime's device twins, and host code must not touch buffers.
  bool onDevice() const { return rt.getTarget() == rt::Target::Device; }

  // The target hooks: what the patterns do differently on the two targets,
  // by name (the runtime calls themselves differ through rt::RuntimeABI,
  // which picks a function's device twin).

  /// Host data compiled into the module (dense constants) reaches a buffer
  /// by a copy to the device (else a host copy).
  bool copiesHostDataToDevice() const { return onDevice(); }
  /// Scalars are computed by inline LLVM code reading and writing buffers
  /// (clip_scale, scale_by); a device rank must not touch its buffers.
  bool computesScalarsInline() const { return !onDevice(); }
  /// Generated element-wise kernels are called as host functions (else
  /// launched through pfrt_launch_generated from the rank's kernel table).
  bool callsKernelsOnHost() const { return !onDevice(); }
  /// The job's collective groups are made into communicators at start-up
  /// (NCCL on GPU ranks).
  bool makesCommunicators() const { return onDevice(); }
  /// The placement device type this target compiles ("cuda" or "cpu"), also
  /// the manifest's backend.
  StringRef deviceName() const { return onDevice() ? "cuda" : "cpu"; }

  ModuleOp module;
  rt::RuntimeABI rt;
  BufferAnalysis buffers;
  /// Every buffer's arena offset (set before the patterns run).
  std::optional<MemoryPlan> plan;
  /// This module's world rank.
  int64_t rankId = 0;
  /// Parameter name -> the global holding its buffer's address.
  llvm::StringMap<LLVM::GlobalOp> paramGlobals;
  /// The run's seed (written by pf_init_params).
  LLVM::GlobalOp seedGlobal;
  /// Whether another rank reports the loss (several hold it).
  bool lossReplica = false;
  /// An inference step: results are reported as outputs, not losses.
  bool reportOutputs = false;
  /// With reportOutputs: each step result's position in the global
  /// signature (pf.output), which pfrt_report_output is given.
  SmallVector<int32_t> outputIndices;
  /// A training step: which of this rank's results is the loss (global
  /// position 0), or -1; the others are extra outputs, reported with
  /// pfrt_report_output like an inference step's.
  int64_t lossIndex = -1;
  /// Dense constants emitted as module globals (their names' counter).
  int64_t denseConstants = 0;
  /// Element-wise ops through the compiler's generated kernels: host twins
  /// called directly on a CPU rank, device twins launched through the
  /// runtime on a GPU rank (BufferAnalysis groups them).
  bool generatedKernels = false;
  /// A GPU rank's generated kernels, in the order of its kernel table
  /// (the index pfrt_launch_generated is given).
  SmallVector<kernels::ElementwiseKernel> deviceKernels;
  /// Fusion key -> the kernel's name (one kernel a distinct computation).
  llvm::StringMap<std::string> kernelNames;
  /// Send -> the op after which it is complete (SendCompletion.h).
  llvm::DenseMap<Operation *, Operation *> sendDone;
  /// The step's inputs loaded by parts (keyed by the value that stands for
  /// the input in the step's body).
  llvm::DenseMap<Value, PartInput> partInputs;
  /// Op -> the sends (their handles: the step's tracked sends numbered in
  /// program order, as the runtime numbers them) to wait for right after it.
  llvm::DenseMap<Operation *, SmallVector<int64_t, 1>> waitsAfter;
  int64_t trackedSends = 0;

  /// Marks where an action (stage, phase, micro-batch) begins, for
  /// StepOutlining: ops carrying none of them join the current action.
  void markAction(Operation *op, OpBuilder &b);
  static constexpr StringLiteral kActionMarker = "__pf_action_begin";
  std::optional<std::tuple<int64_t, StringRef, int64_t>> action;
  LLVM::LLVMFuncOp marker;

  // Helpers for patterns.
  Type ptrType() { return LLVM::LLVMPointerType::get(module.getContext()); }
  /// The address held by a parameter's global.
  Value paramPtr(OpBuilder &b, Location loc, StringRef name);
  /// The run's seed.
  Value seed(OpBuilder &b, Location loc);
  /// The planned arena buffer of `v`'s local data (located error for an
  /// element type the CPU kernels do not take).
  FailureOr<Value> alloc(OpBuilder &b, Location loc, Value v);
  /// The planned temporary a send of a parameter's buffer copies into.
  Value sendCopy(OpBuilder &b, Operation *send, int64_t bytes);
  /// The buffer of result `i` of `op`: the parameter it is computed into
  /// (BufferAnalysis) or its planned arena buffer.
  FailureOr<Value> result(OpBuilder &b, Operation *op, unsigned i = 0);
  /// An op of an element-wise group: the group's last op runs its kernel
  /// (host twin, or a launch on the device) and is replaced by its buffer;
  /// an earlier op is replaced by its buffer when the kernel stores its
  /// result, by a null pointer when the result stays in registers.
  LogicalResult lowerGrouped(Operation *op, const ElementwiseGroup &group,
                             ConversionPatternRewriter &b);
  /// Whether `op` has a generated kernel (Kernels/Elementwise.h).
  static bool hasGeneratedKernel(Operation *op) {
    return kernels::elementwiseKernelFor(op).has_value();
  }
  /// A GPU rank with generated kernels: its kernel table (names, packed
  /// host twins, pointer counts) and the placeholders of its image, which
  /// pf-embed-gpu-kernels fills; registered with the runtime at the start
  /// of pf_init_params.
  void emitKernelTable(OpBuilder &b, Location loc);
};

/// An element type as the runtime holds it: its PFRT_DTYPE_* code, bytes
/// per element and the manifest's name (f32, i64, i32, or bool for i1,
/// stored one byte an element).
struct RankDType {
  int32_t code;
  int64_t bytes;
  StringRef name;
};
/// The runtime's dtype of an element type, if it has one.
std::optional<RankDType> rankDType(Type elementType);
/// Bytes per element of a !pf.global type; a located error for an element
/// type the runtime does not hold.
FailureOr<int64_t> elementBytes(Operation *op, Type type);
/// Local shape and element count of a !pf.global value.
ArrayRef<int64_t> localShape(Value v);
int64_t localCount(Value v);
/// The runtime's dtype code and element size of a value whose type
/// elementBytes accepted.
int32_t dtypeCode(Value v);
int64_t dtypeBytes(Value v);
/// `v`'s local data in 4-byte words, rounded up: what the runtime's word
/// copies and messages (pfrt_k_copy, pfrt_k_fill, pfrt_broadcast, sends)
/// move for it. A bool tensor's last word may be part padding: arena
/// buffers are whole kArenaAlignment blocks, so a word copy into one never
/// reaches another value.
int64_t localWords(Value v);

/// pfrt_trace_begin for `op`: its name (or `label`), "comm" or its phase
/// ("forward" when it has none), its micro-batch and stage (-1 when absent).
void emitTraceBegin(RankLoweringState &state, Operation *op, OpBuilder &b,
                    bool comm, StringRef label = {});

/// Base of every pattern: wraps what the op lowers to in a trace event
/// (name, category, micro-batch, stage) unless the op is a view.
template <typename OpTy> class RankPattern : public OpConversionPattern<OpTy> {
public:
  using OpAdaptor = typename OpConversionPattern<OpTy>::OpAdaptor;
  enum class Trace { None, Compute, Comm };

  RankPattern(const TypeConverter &converter, RankLoweringState &state,
              Trace trace = Trace::Compute)
      : OpConversionPattern<OpTy>(converter, state.module.getContext()),
        state(state), trace(trace) {}

  LogicalResult
  matchAndRewrite(OpTy op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const final {
    state.rt.setCaller(op->getName().getStringRef());
    state.markAction(op, rewriter);
    if (const ElementwiseGroup *group = state.buffers.groupOf(op)) {
      if (failed(state.lowerGrouped(op, *group, rewriter)))
        return failure();
      for (int64_t handle : state.waitsAfter.lookup(op))
        state.rt.pfrt_wait_send(rewriter, op.getLoc(), handle);
      return success();
    }
    if (trace != Trace::None)
      emitTraceBegin(state, op, rewriter, trace == Trace::Comm);
    if (failed(lower(op, adaptor, rewriter)))
      return failure();
    if (trace != Trace::None)
      state.rt.pfrt_trace_end(rewriter, op.getLoc());
    // Sends this op's completion proves received: their buffers are free.
    for (int64_t handle : state.waitsAfter.lookup(op))
      state.rt.pfrt_wait_send(rewriter, op.getLoc(), handle);
    return success();
  }

protected:
  /// Emits the op's code before it and replaces (or erases) it.
  virtual LogicalResult lower(OpTy op, OpAdaptor adaptor,
                              ConversionPatternRewriter &rewriter) const = 0;

  /// The common shape of a one-result op: its planned buffer, `emit(out)`
  /// writing into it, and the op replaced by the buffer.
  template <typename Fn>
  LogicalResult emitInto(OpTy op, ConversionPatternRewriter &b,
                         Fn &&emit) const {
    FailureOr<Value> out = state.result(b, op);
    if (failed(out))
      return failure();
    emit(*out);
    b.replaceOp(op, *out);
    return success();
  }

  /// emitInto of an op whose kernel moves elements of `type` (its data):
  /// first the check that elementBytes knows their size.
  template <typename Fn>
  LogicalResult emitSizedInto(OpTy op, Type type, ConversionPatternRewriter &b,
                              Fn &&emit) const {
    if (failed(elementBytes(op, type)))
      return failure();
    return emitInto(op, b, std::forward<Fn>(emit));
  }

  /// The same for an op of several results: their buffers, `emit(outs)`
  /// writing into them, and the op replaced by them.
  template <typename Fn>
  LogicalResult emitIntoAll(OpTy op, ConversionPatternRewriter &b,
                            Fn &&emit) const {
    SmallVector<Value, 3> outs;
    for (unsigned i = 0, e = op->getNumResults(); i < e; ++i) {
      FailureOr<Value> out = state.result(b, op, i);
      if (failed(out))
        return failure();
      outs.push_back(*out);
    }
    emit(ArrayRef<Value>(outs));
    b.replaceOp(op, outs);
    return success();
  }

  RankLoweringState &state;

private:
  Trace trace;
};

/// Base of the patterns whose ops get no trace event (constants, views,
/// parameter reads, run-time scalars, micro-batch markers, the return).
template <typename OpTy> struct UntracedPattern : RankPattern<OpTy> {
  UntracedPattern(const TypeConverter &converter, RankLoweringState &state)
      : RankPattern<OpTy>(converter, state, RankPattern<OpTy>::Trace::None) {}
};

/// An op's converted operands (the buffers), as its patterns see them.
template <typename OpTy>
using RankAdaptor = typename RankPattern<OpTy>::OpAdaptor;

/// Copies the box `sizes` of `in` (the buffer of `inValue`) at `inOffsets`
/// to `out` (of `outValue`) at `outOffsets` (local shapes; no offsets: at 0;
/// offsets on split axes are 0 by the ops' SBP rules).
void copyBox(RankLoweringState &state, OpBuilder &b, Location loc, Value in,
             Value inValue, ArrayRef<int64_t> inOffsets, Value out,
             Value outValue, ArrayRef<int64_t> outOffsets,
             ArrayRef<int64_t> sizes);

/// What lowers a one-result op into its buffer `out` (RankPattern::emitInto):
/// the runtime calls of one kernel.
template <typename OpTy>
using EmitIntoFn = void(RankLoweringState &state, OpTy op,
                        RankAdaptor<OpTy> adaptor, ConversionPatternRewriter &b,
                        Value out);

/// What lowers an op of several results into their buffers `outs`
/// (RankPattern::emitIntoAll): the runtime calls of one kernel.
template <typename OpTy>
using EmitIntoAllFn = void(RankLoweringState &state, OpTy op,
                           RankAdaptor<OpTy> adaptor,
                           ConversionPatternRewriter &b, ArrayRef<Value> outs);

/// The pattern of an op that lowers to `Emit` into its results' buffers and
/// nothing else (no fusion or view to check first): an EmitIntoFn writes
/// the one result's, an EmitIntoAllFn every result's.
template <typename OpTy, auto *Emit>
class EmitIntoPattern : public RankPattern<OpTy> {
public:
  using RankPattern<OpTy>::RankPattern;

protected:
  LogicalResult lower(OpTy op, RankAdaptor<OpTy> adaptor,
                      ConversionPatternRewriter &b) const override {
    if constexpr (std::is_same_v<decltype(Emit), EmitIntoAllFn<OpTy> *>)
      return this->emitIntoAll(op, b, [&](ArrayRef<Value> outs) {
        Emit(this->state, op, adaptor, b, outs);
      });
    else
      return this->emitInto(
          op, b, [&](Value out) { Emit(this->state, op, adaptor, b, out); });
  }
};

/// Adds one family of the lowering patterns (each family in its own file:
/// ComputePatterns.cpp, ConvPoolPatterns.cpp, CommPatterns.cpp,
/// OptimizerPatterns.cpp, TensorPatterns.cpp, ControlPatterns.cpp, and
/// LogicalPatterns.cpp for comparisons, logical ops, pf.where and pf.cast,
/// AttentionPatterns.cpp for the fused attention ops).
using PopulateRankPatterns = void(const TypeConverter &converter,
                                  RewritePatternSet &patterns,
                                  RankLoweringState &state);
PopulateRankPatterns populatePFToCPUComputePatterns,
    populatePFToCPUConvPoolPatterns, populatePFToCPUCommPatterns,
    populatePFToCPUOptimizerPatterns, populatePFToCPUTensorPatterns,
    populatePFToCPUControlPatterns, populateRankLogicalPatterns,
    populateRankAttentionPatterns;

/// All of the above.
PopulateRankPatterns populateRankLoweringPatterns;

/// What convert-pf-to-cpu and convert-pf-to-gpu (its host side) share:
/// every per-rank module under `top` (or `top` itself) lowered to LLVM
/// functions calling libpfrt, for the host's or the device's buffers.
struct RankLoweringOptions {
  rt::Target target = rt::Target::Host;
  bool outlineActions = true;
  bool reportOutputs = false;
  bool generatedKernels = false;
  /// The pass's name, for errors.
  StringRef passName = "convert-pf-to-cpu";
};
LogicalResult lowerRankModules(ModuleOp top,
                               const RankLoweringOptions &options);

} // namespace mlir::pf

#endif // PF_CONVERSION_PFTORANK_RANKLOWERING_H
