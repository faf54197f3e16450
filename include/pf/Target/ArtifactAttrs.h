//===- ArtifactAttrs.h - a lowered rank module's facts ----------*- C++ -*-===//
//
// convert-pf-to-cpu leaves these module attributes on every per-rank module
// (`pf.rank = r`) for pf-emit-rank-artifacts, which copies them into
// manifest.json for pf-run and the Python front end. They describe the
// runtime's view of the rank (the `pfrt` prefix), not pf IR, so they are
// named constants rather than pf dialect attributes.
//
//===----------------------------------------------------------------------===//

#ifndef PF_TARGET_ARTIFACTATTRS_H
#define PF_TARGET_ARTIFACTATTRS_H

#include "llvm/ADT/StringRef.h"

namespace mlir::pf::artifact {

/// ArrayAttr: one DictionaryAttr per step input the rank reads, with the
/// keys in `input` below.
inline constexpr llvm::StringLiteral kInputsAttrName = "pfrt.inputs";
/// BoolAttr: whether the rank's step returns a loss the host reports.
inline constexpr llvm::StringLiteral kReportsLossAttrName = "pfrt.reports_loss";
/// IntegerAttr: micro-batches per step, i.e. losses per step (1 if absent).
inline constexpr llvm::StringLiteral kNumMicrobatchesAttrName =
    "pfrt.num_microbatches";
/// DictionaryAttr of IntegerAttr: the static memory plan's totals in bytes
/// (the runtime's arena size among them).
inline constexpr llvm::StringLiteral kMemoryAttrName = "pfrt.memory";
/// StringAttr: "cpu" (convert-pf-to-cpu) or "cuda" (convert-pf-to-gpu), the
/// manifest's `backend` (absent: "cpu").
inline constexpr llvm::StringLiteral kBackendAttrName = "pfrt.backend";
/// DictionaryAttr {actions, functions} (IntegerAttr each), only with
/// convert-pf-to-cpu{outline-actions}: how many actions the step runs and
/// how many outlined functions they share. For tests and reports; not in
/// the manifest.
inline constexpr llvm::StringLiteral kActionsAttrName = "pfrt.actions";

/// Keys of one `pfrt.inputs` entry.
/// An inference step's results (convert-pf-to-cpu{report-outputs}): an
/// array of dictionaries with the keys in `output`.
inline constexpr llvm::StringLiteral kOutputsAttrName = "pfrt.outputs";

namespace output {
inline constexpr llvm::StringLiteral kIndex = "index";
inline constexpr llvm::StringLiteral kLocalShape = "local_shape";
/// The global result's logical shape.
inline constexpr llvm::StringLiteral kShape = "shape";
inline constexpr llvm::StringLiteral kDtype = "dtype";
inline constexpr llvm::StringLiteral kPlacement = "placement";
inline constexpr llvm::StringLiteral kSbp = "sbp";
} // namespace output

namespace input {
/// IntegerAttr: the input's position in the global step signature.
inline constexpr llvm::StringLiteral kIndex = "index";
/// DenseI64ArrayAttr: the local (per-rank) shape.
inline constexpr llvm::StringLiteral kShape = "shape";
/// StringAttr: "f32", "i64", "i32" or "bool" (RankDType::name).
inline constexpr llvm::StringLiteral kDtype = "dtype";
/// Where the local data sits in the logical input, copied from the step
/// argument's pf.logical_shape, pf.box_shape and pf.boxes (optional).
inline constexpr llvm::StringLiteral kLogicalShape = "logical_shape";
inline constexpr llvm::StringLiteral kBoxShape = "box_shape";
inline constexpr llvm::StringLiteral kBoxes = "boxes";
} // namespace input

/// Keys of `pfrt.memory` (MemoryPlan::toAttr), each an IntegerAttr: bytes,
/// except the counts kActivationsInFlight and kStepBuffers.
namespace memory {
/// The whole plan: kPersistentBytes + kStepPeakBytes.
inline constexpr llvm::StringLiteral kArenaBytes = "arena_bytes";
/// kParameterBytes + kGradientBytes + kStateBytes.
inline constexpr llvm::StringLiteral kPersistentBytes = "persistent_bytes";
inline constexpr llvm::StringLiteral kParameterBytes = "parameter_bytes";
inline constexpr llvm::StringLiteral kGradientBytes = "gradient_bytes";
/// Optimizer states and running statistics.
inline constexpr llvm::StringLiteral kStateBytes = "state_bytes";
/// The step's buffers at their peak; inputs and activations are among them.
inline constexpr llvm::StringLiteral kStepPeakBytes = "step_peak_bytes";
inline constexpr llvm::StringLiteral kInputBytes = "input_bytes";
inline constexpr llvm::StringLiteral kActivationPeakBytes =
    "activation_peak_bytes";
inline constexpr llvm::StringLiteral kActivationsInFlight =
    "activations_in_flight";
inline constexpr llvm::StringLiteral kStepBuffers = "step_buffers";
/// The most step bytes live at once, and those bytes by element type:
/// kLowerBoundPrefix + dtype + kBytesSuffix ("step_lower_bound_f32_bytes").
inline constexpr llvm::StringLiteral kLowerBoundBytes =
    "step_lower_bound_bytes";
inline constexpr llvm::StringLiteral kLowerBoundPrefix = "step_lower_bound_";
inline constexpr llvm::StringLiteral kBytesSuffix = "_bytes";
} // namespace memory

} // namespace mlir::pf::artifact

#endif // PF_TARGET_ARTIFACTATTRS_H
