//===- BufferAnalysis.h - buffer facts of a rank's step ---------*- C++ -*-===//
//
// Decisions about buffers and fusion over a rank's step (one block, in
// program order). Each kind is decided by a pass of its own
// (lib/Conversion/Fusion, `pf-fold-*`, `pf-fuse-*`, `pf-group-*`), which
// records it as attributes of the ops that pf-opt prints (`pf.fold`,
// `pf.kernel_group`, ...: FoldAttributes.cpp); the rank lowering only reads
// them back (BufferAnalysis(Block &)). A target picks the passes in its
// pipeline (pf-cpu-folds, pf-gpu-folds). The kinds:
//
//  - copying reads: a read_param aliases its parameter's buffer unless the
//    parameter is written before the read's last use; then it copies.
//  - in-place results: an element-wise optimizer update may compute its
//    result straight into the buffer a write_param stores it to (the
//    kernels allow out == in), unless the old value is still read after the
//    update or a read between the update and the store would see the new
//    value early. Its write_param is then a no-op.
//  - fused ReLUs: a bias_add whose only user is a relu computes both in one
//    pass into the relu's buffer (the pre-activation is never stored).
//  - inputs loaded by parts: an input read only through pf.microbatch
//    slices whose parts line up with its boxes is loaded one micro-batch at
//    a time where each slice is taken, into the slice's own buffer, so an
//    input never occupies more than the micro-batches in flight.
//  - folded biases: a bias_add over the last axis of a GEMM's only use is
//    computed by the GEMM (its bias rows fill C first, or cuBLASLt's BIAS
//    epilogue); with the relu (pf-fold-gemm-bias{relu}, GPU ranks) also when a
//    relu follows, by cuBLASLt's RELU_BIAS epilogue (a CPU rank keeps its fused
//    bias_add + relu pass, which costs one pass less there).
//  - bias gradients in the weight-gradient GEMM (pf-fold-bias-grad, GPU ranks):
//    reduce_sum(dZ, axis 0) and matmul(dZ, X, transpose_a) of one action
//    are one GEMM with cuBLASLt's BGRADB epilogue, run at the later of the
//    two when nothing reads the earlier one's result before it.
//  - accumulating GEMMs: in `add(acc, matmul(...))` where the matmul's only
//    user is the add and `acc` (a step buffer computed before the matmul)
//    is read by nothing else, the matmul adds its product into acc's buffer
//    (C += A B, beta = 1) and the add is free: gradient accumulation over
//    micro-batches without a separate pass or a temporary per micro-batch.
//  - the attention softmax (pf-fold-softmax, CPU ranks): a softmax over the
//  last
//    axis computes the masked_fill and mul_scalar before it (each its
//    successor's only operand use, one action) at its own place, reading
//    their input and mask there (a mask broadcast over leading axes from
//    its broadcast_to's input, without the broadcast); a mul_scalar that is
//    a softmax gradient's only user is computed by that gradient's kernel
//    into its buffer.
//  - multi-tensor updates (pf-group-updates, GPU ranks): a run of optimizer
//    updates of one kind, one action, one lr and step and the same
//    hyper-parameters, each computed in place, with nothing between them
//    but reads of parameters no member has written yet, run-time scalars,
//    constants and their no-op write_params, is one multi-tensor call at
//    the run's last update (pfrt_k_sgd_multi / pfrt_k_adam_multi).
//  - element-wise groups (only when asked, for the generated kernels): a
//    run of consecutive element-wise ops of one action and one shape is one
//    kernel at the last op's place (at most so many buffers). A member's result
//    read only inside the group is never stored; the others (and the last op's)
//    are the kernel's outputs.
//
//===----------------------------------------------------------------------===//

#ifndef PF_CONVERSION_COMMON_BUFFERANALYSIS_H
#define PF_CONVERSION_COMMON_BUFFERANALYSIS_H

#include "mlir/IR/Block.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <map>
#include <optional>
#include <vector>

namespace mlir::pf {

/// Element-wise ops computed by one kernel (BufferAnalysis).
struct ElementwiseGroup {
  /// Program order (consecutive in the block); the last is where the
  /// kernel runs.
  SmallVector<Operation *, 4> ops;
  /// What the ops read that none of them computes, in first-use order.
  SmallVector<Value, 4> inputs;
  /// The results read after the group (and the last op's), in op order.
  SmallVector<Value, 2> outputs;
  Operation *last() const { return ops.back(); }
};

/// What a softmax computes before its own pass (BufferAnalysis, with
/// pf-fold-softmax): softmax(mask ? fill : x * scale), the mask's rows repeated
/// every maskRows rows. The values are read from the ops when asked: a
/// lowering may have replaced the step's arguments since the analysis.
struct SoftmaxPrologue {
  Operation *scale = nullptr;     // a pf.mul_scalar, or null
  Operation *broadcast = nullptr; // the mask's pf.broadcast_to, or null
  Operation *fill = nullptr;      // a pf.masked_fill, or null
  double scaleValue = 1.0;
  double fillValue = 0.0;
  int64_t maskRows = 0;

  Value x() const { return (scale ? scale : fill)->getOperand(0); }
  /// Null without a masked_fill.
  Value mask() const {
    if (broadcast)
      return broadcast->getOperand(0);
    return fill ? fill->getOperand(1) : Value();
  }
};

/// Optimizer updates computed by one multi-tensor call at the last one
/// (pf-group-updates).
struct UpdateGroup {
  /// Program order; the last is where the call runs.
  SmallVector<Operation *, 8> updates;
  Operation *last() const { return updates.back(); }
};

/// A GEMM operand read through strides (pf-fold-views):
/// element (i_0, ..., i_{r-1}) of the operand is element
/// offset + sum_d i_d strides[d] of the buffer `root`'s operand holds (the
/// value the chain of slices, reshapes and transposes starts from, read
/// from the op when asked: a lowering may have replaced step arguments).
struct StridedOperand {
  Operation *root = nullptr;
  int64_t offset = 0;
  SmallVector<int64_t, 4> strides;

  Value base() const { return root->getOperand(0); }
};

/// A GEMM result written through strides (pf-fold-views)
/// straight into the buffer of the value its transposes, reshapes and
/// concat compute: element (i_0, ..., i_{r-1}) goes to element
/// offset + sum_d i_d strides[d] of the result's buffer, which is that
/// value's (`concat`, when the result is one of its pieces, whose buffer
/// then exists from the first such GEMM on).
struct StridedResult {
  Operation *concat = nullptr;
  int64_t offset = 0;
  SmallVector<int64_t, 4> strides;
};

/// The inputs and outputs of the kernel computing `ops` (as in
/// ElementwiseGroup), from the ops' operands as they are now: a lowering
/// that replaced values after the analysis (the step's arguments) takes
/// them again.
void groupBuffers(ArrayRef<Operation *> ops, SmallVectorImpl<Value> &inputs,
                  SmallVectorImpl<Value> &outputs);

/// The rows after which a mask of shape `from`, broadcast over leading
/// axes to `shape` (a softmax's input), repeats; none when the broadcast
/// is not over leading axes only.
std::optional<int64_t> broadcastMaskRows(ArrayRef<int64_t> shape,
                                         ArrayRef<int64_t> from);

class BufferAnalysis {
public:
  /// The decisions recorded in the attributes of `step`'s ops (the body of
  /// a rank's step function), as the fold passes set them (see
  /// FoldAttributes.cpp for the attributes). The lowering only reads these.
  explicit BufferAnalysis(Block &block);

  // The decisions, each made by one fold pass (lib/Conversion/Fusion):
  // each reads the decisions made before (the tables), adds its own, and
  // the pass records them all again (record). The order is the pipelines'.

  /// pf-plan-in-place: reads that copy their parameter (it is written
  /// before their last use), and optimizer updates computed straight into
  /// the parameter or state their write_param stores.
  void planInPlace(Block &block);
  /// pf-fuse-bias-relu: a bias_add whose only user is a relu computes both.
  void fuseBiasRelus(Block &block);
  /// pf-load-inputs-by-parts: inputs read only through micro-batch slices
  /// that line up with their boxes are loaded a micro-batch at a time.
  void loadInputsByParts(Block &block);
  /// pf-fold-accumulation: add(acc, matmul) as C += A B into acc's buffer.
  void foldAccumulation(Block &block);
  /// pf-fold-gemm-bias: a bias_add over the last axis of a GEMM's only use
  /// computed by the GEMM; with `withRelu` (cuBLASLt's RELU_BIAS) also
  /// when a fused relu follows.
  void foldGemmBiases(Block &block, bool withRelu);
  /// pf-fold-bias-grad: reduce_sum(dZ) and matmul(dZ, X) as one GEMM with
  /// cuBLASLt's BGRADB epilogue.
  void pairBiasGradients(Block &block);
  /// pf-fold-softmax: the scale and mask before a softmax computed by its
  /// pass, and the scale after a softmax gradient by the gradient's.
  void foldSoftmaxes(Block &block);
  /// pf-fold-views: slices, reshapes and transposes read or written by
  /// GEMMs through strides instead of copied.
  void foldViewsIntoGemms(Block &block);
  /// pf-group-elementwise: runs of element-wise ops (those `elementwise`
  /// accepts) computed by one generated kernel of at most `maxPointers`
  /// buffers.
  void groupElementwise(Block &block, bool (*elementwise)(Operation *),
                        unsigned maxPointers);
  /// pf-group-updates: runs of in-place optimizer updates as one
  /// multi-tensor call.
  void groupUpdateRuns(Block &block);

  /// Writes every decision of the tables as attributes of `step`'s ops
  /// (and its function's arguments), replacing those there.
  void record(Block &block) const;
  /// Removes every recorded decision from `step`'s ops and arguments.
  static void clearRecords(Block &block);
  /// Whether `name` is one of the attributes that record a decision.
  static bool isRecord(StringRef name);

  /// Whether the read_param `read` must copy its parameter.
  bool isCopyingRead(Operation *read) const {
    return copyingReads.contains(read);
  }
  /// The parameter (or state) a result is computed into, if any.
  StringRef inPlaceTarget(Value result) const { return inPlace.lookup(result); }
  /// Whether the relu `relu` is computed by the bias_add before it.
  bool isFusedRelu(Operation *relu) const { return fusedRelus.contains(relu); }
  /// The relu a bias_add computes too, or null.
  Operation *fusedReluOf(Operation *biasAdd) const {
    return fusedWith.lookup(biasAdd);
  }

  /// Whether input `arg` (a block argument) is loaded by parts.
  bool isPartLoadedInput(Value arg) const { return partLoaded.contains(arg); }

  /// The accumulator a matmul adds its product into, or null.
  Value accumulatorOf(Operation *matmul) const {
    return accumulators.lookup(matmul);
  }
  /// The bias_add a matmul computes too (its bias rows fill the product's
  /// buffer before the GEMM accumulates into it), or null.
  Operation *foldedBiasOf(Operation *matmul) const {
    return biasOf.lookup(matmul);
  }
  /// The relu a matmul computes too, after its folded bias (only with
  /// pf-fold-gemm-bias{relu}: cuBLASLt's RELU_BIAS epilogue), or null.
  Operation *foldedReluOf(Operation *matmul) const {
    return reluOf.lookup(matmul);
  }
  /// A weight-gradient matmul (C = A^T B) and the reduce_sum of A's rows
  /// (its bias gradient) computed by one GEMM (only with pf-fold-bias-grad:
  /// cuBLASLt's BGRADB epilogue): the other op of the pair, or null.
  Operation *biasGradPartnerOf(Operation *op) const {
    return biasGradPartner.lookup(op);
  }
  /// Where `op`'s computation runs: the last op of its element-wise group,
  /// the later op of its bias-gradient pair, else `op` itself (what it
  /// reads must live until then).
  Operation *computedAt(Operation *op) const {
    if (const ElementwiseGroup *g = groupOf(op))
      return g->last();
    if (auto it = deferredTo.find(op); it != deferredTo.end())
      return it->second;
    return op;
  }
  /// Whether `biasAdd` is computed by the matmul before it.
  bool isFoldedBias(Operation *biasAdd) const {
    return foldedBiases.contains(biasAdd);
  }
  /// Whether `add` is folded into the matmul that feeds it.
  bool isFoldedAdd(Operation *add) const { return foldedAdds.contains(add); }

  /// The element-wise group `op` belongs to, or null (without grouping,
  /// and for ops of no group).
  /// Operand `i` (0: a, 1: b) of the matmul `op` as strides into the
  /// buffer its views start from, or null (read as it is).
  const StridedOperand *stridedOperand(Operation *op, unsigned i) const {
    auto it = stridedOperands.find({op, i});
    return it == stridedOperands.end() ? nullptr : &it->second;
  }
  /// The matmul `op`'s result as strides into a later value's buffer, or
  /// null.
  const StridedResult *stridedResult(Operation *op) const {
    auto it = stridedResults.find(op);
    return it == stridedResults.end() ? nullptr : &it->second;
  }
  /// Whether the slice, reshape or transpose `op` is never computed: only
  /// GEMMs read it through strides, or a GEMM wrote its result in its
  /// layout already (its result aliases its operand).
  bool isFoldedView(Operation *op) const { return foldedViews.contains(op); }
  /// Whether the concat `op` copies nothing: GEMMs wrote every piece in
  /// place.
  bool isFoldedConcat(Operation *op) const {
    return foldedConcats.contains(op);
  }

  /// What the softmax `op` computes before its pass, or null.
  const SoftmaxPrologue *softmaxPrologueOf(Operation *op) const {
    auto it = softmaxPrologues.find(op);
    return it == softmaxPrologues.end() ? nullptr : &it->second;
  }
  /// Whether `op` is computed by a softmax after it (its prologue).
  bool isInSoftmaxPrologue(Operation *op) const {
    return inPrologue.contains(op);
  }
  /// The mul_scalar a softmax gradient computes too (into its own buffer),
  /// or null.
  Operation *gradScaleOf(Operation *softmaxGrad) const {
    return gradScales.lookup(softmaxGrad);
  }
  /// Whether the mul_scalar `op` is computed by the softmax gradient before
  /// it.
  bool isFoldedGradScale(Operation *op) const {
    return foldedGradScales.contains(op);
  }

  /// The multi-tensor update the optimizer update `op` belongs to, or
  /// null.
  const UpdateGroup *updateGroupOf(Operation *op) const {
    auto it = updateGroupIndex.find(op);
    return it == updateGroupIndex.end() ? nullptr : &updateGroups[it->second];
  }

  const ElementwiseGroup *groupOf(Operation *op) const {
    auto it = groupIndex.find(op);
    return it == groupIndex.end() ? nullptr : &groups[it->second];
  }
  /// Whether `v`, a result of a group's op, is never stored (only the
  /// group's kernel reads it, in registers).
  bool isGroupInternal(Value v) const {
    const ElementwiseGroup *g = groupOf(v.getDefiningOp());
    return g && !llvm::is_contained(g->outputs, v);
  }

private:
  void readStructure(Block &block);
  void readViews(Block &block);

  std::vector<ElementwiseGroup> groups;
  std::vector<UpdateGroup> updateGroups;
  llvm::DenseMap<Operation *, unsigned> updateGroupIndex;
  llvm::DenseMap<Operation *, unsigned> groupIndex;
  llvm::DenseSet<Value> partLoaded;
  llvm::DenseMap<Operation *, Value> accumulators;
  llvm::DenseSet<Operation *> foldedAdds;
  llvm::DenseSet<Operation *> copyingReads;
  llvm::DenseMap<Value, StringRef> inPlace;
  llvm::DenseSet<Operation *> fusedRelus;
  llvm::DenseMap<Operation *, Operation *> biasOf;
  llvm::DenseSet<Operation *> foldedBiases;
  llvm::DenseMap<Operation *, Operation *> reluOf;
  llvm::DenseMap<Operation *, Operation *> biasGradPartner;
  llvm::DenseMap<Operation *, Operation *> deferredTo;
  llvm::DenseMap<Operation *, Operation *> fusedWith;
  llvm::DenseMap<Operation *, SoftmaxPrologue> softmaxPrologues;
  llvm::DenseSet<Operation *> inPrologue;
  llvm::DenseMap<Operation *, Operation *> gradScales;
  llvm::DenseSet<Operation *> foldedGradScales;
  std::map<std::pair<Operation *, unsigned>, StridedOperand> stridedOperands;
  llvm::DenseSet<Operation *> foldedViews;
  std::map<Operation *, StridedResult> stridedResults;
  llvm::DenseSet<Operation *> foldedConcats;
};

} // namespace mlir::pf

#endif // PF_CONVERSION_COMMON_BUFFERANALYSIS_H
