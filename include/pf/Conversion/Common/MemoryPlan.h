//===- MemoryPlan.h - one arena per rank, planned at compile time -*- C++
//-*-===//
//
// Every byte a rank's step touches gets an offset in one arena, computed
// here from the rank's scheduled program (its step is one block in the
// schedule's order, so the order of the ops is the order of execution):
//
//   [0, persistentBytes)   parameters, gradient buffers, optimizer states
//                          and running statistics, in declaration order;
//   [persistentBytes, arenaBytes)
//                          the step's buffers, reused as soon as a buffer's
//                          last reader has run.
//
// Buffers are alias classes of values (views, micro-batch slices, a relu
// fused into its bias_add, reads that alias a parameter and results
// computed in place share storage). A class lives from its first
// definition to its last use; a value sent with a non-blocking send lives
// until the op after which the send is known complete (SendCompletion.h),
// or to the end of the step; inputs and the step's results live to the end.
// Offsets come from a time-ordered best-fit allocator (free blocks coalesce; a
// buffer takes the smallest free block it fits, else the top grows);
// `lowerBound` is the most bytes live at any op, which no allocator can beat.
//
//===----------------------------------------------------------------------===//

#ifndef PF_CONVERSION_COMMON_MEMORYPLAN_H
#define PF_CONVERSION_COMMON_MEMORYPLAN_H

#include "pf/Conversion/Common/BufferAnalysis.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::pf {

/// Arena offsets are multiples of this (cache lines, AVX-512 loads).
constexpr int64_t kArenaAlignment = 64;

class MemoryPlan {
public:
  /// Plans `module`'s parameters and the buffers of `step` (its step
  /// function's body, before conversion). A located error for a value whose
  /// element type has no size.
  /// `sendDone` maps a send to the op after which it is complete
  /// (analyzeSendCompletion); other sends keep their buffer to the end.
  static FailureOr<MemoryPlan>
  build(ModuleOp module, Block &step, const BufferAnalysis &buffers,
        const llvm::DenseMap<Operation *, Operation *> &sendDone);

  /// The arena offset of `v`'s buffer, or -1 when it has none (it aliases a
  /// parameter, or lives outside the arena: run-time scalars).
  int64_t offsetOf(Value v) const;
  /// The buffer bytes of `v`'s class (rounded to kArenaAlignment).
  int64_t bytesOf(Value v) const;
  /// The temporary a send of a parameter's own buffer is copied into.
  int64_t sendCopyOffset(Operation *send) const {
    return sendCopies.lookup(send);
  }
  /// A parameter's offset.
  int64_t paramOffset(StringRef name) const { return params.lookup(name); }

  /// Totals (bytes).
  int64_t arenaBytes = 0;
  int64_t persistentBytes = 0;
  /// Peak of the step's buffers alone and the most bytes live at any op.
  int64_t stepPeakBytes = 0;
  int64_t lowerBoundBytes = 0;
  /// The persistent region's parts.
  int64_t parameterBytes = 0, gradientBytes = 0, stateBytes = 0;
  /// The step's inputs (live the whole step).
  int64_t inputBytes = 0;
  /// The number of step buffers planned.
  int64_t numBuffers = 0;
  /// The most micro-batches with forward activations still to be read by
  /// their backward at once (what the schedule simulation calls in flight),
  /// and the most bytes those activations take at once.
  int64_t activationsInFlight = 0, activationPeakBytes = 0;
  /// Where the most step bytes are live (lowerBoundBytes): those bytes by
  /// element type ("f32", "bf16", ...), sorted by name; in the report as
  /// step_lower_bound_<dtype>_bytes.
  SmallVector<std::pair<std::string, int64_t>> peakLiveBytesByDtype;

  /// The report as a dictionary (for the manifest and `memory-report`).
  DictionaryAttr toAttr(MLIRContext *ctx) const;

private:
  /// The steps of build (MemoryPlan.cpp).
  class Planner;

  /// Value -> index of its class.
  llvm::DenseMap<Value, unsigned> classOf;
  /// Class -> offset (-1: no arena storage) and bytes.
  SmallVector<int64_t> classOffset, classBytes;
  llvm::DenseMap<Operation *, int64_t> sendCopies;
  llvm::StringMap<int64_t> params;
};

} // namespace mlir::pf

#endif // PF_CONVERSION_COMMON_MEMORYPLAN_H
