//===- SequenceParallel.h - sequence parallelism's layouts -------*- C++
//-*-===//
//
// Internal to lib/Dialect/PF/Transforms: the layout changes pf-infer-sbp's
// `sequence-parallel` prices (Megatron-LM's sequence parallelism).
//
//===----------------------------------------------------------------------===//

#ifndef PF_LIB_DIALECT_PF_TRANSFORMS_SEQUENCEPARALLEL_H
#define PF_LIB_DIALECT_PF_TRANSFORMS_SEQUENCEPARALLEL_H

#include "pf/Dialect/PF/IR/PFOps.h"

#include <optional>

namespace mlir::pf {

/// The sequence axis of a value: the axis before the last ([batch,
/// sequence, hidden], or [tokens, hidden]); none for vectors and scalars.
std::optional<int64_t> sequenceAxis(GlobalType t);

/// Whether changing `t` to `want` reduces a partial sum into a plain split
/// of its sequence axis on some hierarchy dimension (a reduce-scatter), and
/// changes nothing else but other partial sums reduced whole or the same
/// way.
bool isSequenceScatter(GlobalType t, SBPAttr want);

/// Whether changing `t` to `want` only gathers plain splits of the sequence
/// axis (S(seq) -> B on some hierarchy dimensions: an all-gather).
bool isSequenceGather(GlobalType t, SBPAttr want);

/// Whether changing `t` to `want` only slices whole values along the
/// sequence axis (B -> S(seq): free).
bool isSequenceSlice(GlobalType t, SBPAttr want);

/// The bytes one rank holds of `t` laid out as `sbp` (a partial sum: the
/// whole tensor).
double perRankBytes(GlobalType t, SBPAttr sbp);

} // namespace mlir::pf

#endif // PF_LIB_DIALECT_PF_TRANSFORMS_SEQUENCEPARALLEL_H
