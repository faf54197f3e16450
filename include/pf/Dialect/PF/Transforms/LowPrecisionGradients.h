//===- LowPrecisionGradients.h - gradient sums in bf16/f16 ------*- C++ -*-===//
//
// The compile pipelines' `gradient-dtype=bf16|f16`
// (graph.config.set_gradient_dtype): each data-parallel gradient reduction
// moves 2-byte elements. Run between pf-insert-boxing and pf-lower-boxing.
//
//===----------------------------------------------------------------------===//

#ifndef PF_DIALECT_PF_TRANSFORMS_LOWPRECISIONGRADIENTS_H
#define PF_DIALECT_PF_TRANSFORMS_LOWPRECISIONGRADIENTS_H

#include "mlir/Pass/Pass.h"

#include <memory>

namespace mlir::pf {

/// The type the gradient all-reduces move.
enum class GradientDtype { F32, BF16, F16 };

/// Each update-phase layout change of a float32 value that is only
/// all-reduces and reduce-scatters (partial -> broadcast or split on every
/// changed entry: a gradient's data-parallel sum), and each backward_weight
/// one that is only reduce-scatters (ZeRO-2/3: partial -> split, the
/// gradient's shard), becomes cast to `dtype` -> the same change in
/// `dtype` -> cast back to f32, so that pf-lower-boxing emits (and its
/// report counts) all-reduces and reduce-scatters of 2-byte elements,
/// which pf-widen-low-precision keeps (LowPrecision.h). Nothing for F32.
std::unique_ptr<Pass> createLowPrecisionGradientsPass(GradientDtype dtype);

} // namespace mlir::pf

#endif // PF_DIALECT_PF_TRANSFORMS_LOWPRECISIONGRADIENTS_H
