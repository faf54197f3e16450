//===- Fusion.h - the fold passes and the targets' fold pipelines -*- C++
//-*-===//
//
// The fusion and buffer decisions of a rank's step are passes over the pf
// IR (include/pf/Conversion/Passes.td: pf-plan-in-place, pf-fuse-*,
// pf-fold-*, pf-group-*), each recording its decisions as attributes the
// rank lowering reads (BufferAnalysis). A target picks its passes:
// pf-cpu-folds and pf-gpu-folds are the CPU and GPU ranks' choices, which
// the compile pipelines run before they stop at `pf-compile-to=rank`.
//
//===----------------------------------------------------------------------===//

#ifndef PF_CONVERSION_FUSION_FUSION_H
#define PF_CONVERSION_FUSION_FUSION_H

#include "pf/Conversion/Common/BufferAnalysis.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace mlir::pf {

/// Calls `fn` on the body of every rank's step function: the function of
/// one block in each per-rank module (`pf.rank`), or in `top` itself when
/// it is one or holds none.
void forEachRankStep(ModuleOp top, llvm::function_ref<void(Block &)> fn);

/// The options of pf-cpu-folds (element-wise groups off by default) and
/// pf-gpu-folds (on: a GPU rank's element-wise ops are generated kernels).
template <bool GroupByDefault>
struct FoldPipelineOptions
    : public PassPipelineOptions<FoldPipelineOptions<GroupByDefault>> {
  mlir::detail::PassOptions::Option<bool> accumulation{
      *this, "fold-accumulation",
      llvm::cl::desc("fold add(acc, matmul) into the matmul "
                     "(pf-fold-accumulation)"),
      llvm::cl::init(true)};
  mlir::detail::PassOptions::Option<bool> generatedKernels{
      *this, "generated-kernels",
      llvm::cl::desc("group element-wise ops into generated kernels "
                     "(pf-group-elementwise)"),
      llvm::cl::init(GroupByDefault)};
};

/// A CPU rank's decisions: in place, bias + relu in one pass, inputs by
/// parts, accumulating GEMMs (with `accumulation`), GEMM biases (not before
/// a fused relu), the attention softmax's prologue, strided views into
/// GEMMs, and with `generatedKernels` element-wise groups.
void buildCPUFoldPipeline(OpPassManager &pm, bool accumulation,
                          bool generatedKernels);

/// A GPU rank's: in place, bias + relu, inputs by parts, accumulating
/// GEMMs, cuBLASLt's BIAS/RELU_BIAS and BGRADB epilogues, element-wise
/// groups (with `generatedKernels`) and multi-tensor updates.
void buildGPUFoldPipeline(OpPassManager &pm, bool accumulation,
                          bool generatedKernels);

/// Registers pf-cpu-folds and pf-gpu-folds.
void registerFoldPipelines();

} // namespace mlir::pf

#endif // PF_CONVERSION_FUSION_FUSION_H
