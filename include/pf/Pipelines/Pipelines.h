//===- Pipelines.h - PipeFlow's registered pass pipelines -------*- C++ -*-===//
//
// Every compile PipeFlow performs is a registered pipeline, so that one
// pf-opt command reproduces it (no pipeline lives only in a driver).
//
//===----------------------------------------------------------------------===//

#ifndef PF_PIPELINES_PIPELINES_H
#define PF_PIPELINES_PIPELINES_H

#include "pf/Dialect/PF/Transforms/LowPrecisionGradients.h"
#include "pf/Dialect/PF/Transforms/PassOptions.h"

#include "mlir/Pass/PassOptions.h"

namespace mlir {
class OpPassManager;
namespace pf {

// Option groups are declared once and composed: a pipeline's options derive
// from PassPipelineOptions<Self> and from the groups it offers (they share
// one option registry, a virtual base), and each build function takes the
// group it needs. OptimizerOptions (PassOptions.h) is pf-optimizer's own.

/// Forward + loss -> training step: gradient accumulation and the
/// optimizer's rule (every option of pf-optimizer, `optimizer=` for its
/// `kind`).
struct TrainingPipelineOptions
    : public PassPipelineOptions<TrainingPipelineOptions>,
      public OptimizerOptions {
  Option<int64_t> accumulationSteps{
      *this, "accumulation-steps",
      llvm::cl::desc("micro-batches per step (gradient accumulation)"),
      llvm::cl::init(1)};
  Option<AutocastDtype> autocast{
      *this, "autocast",
      llvm::cl::desc("mixed precision (pf-autocast): GEMMs in bf16 or f16; "
                     "none: only the ops marked pf.autocast"),
      llvm::cl::init(AutocastDtype::None), enumOptionValues<AutocastDtype>()};
  Option<bool> fuseAttention{
      *this, "fuse-attention",
      llvm::cl::desc("rewrite the unfused attention spelling as pf.attention "
                     "(pf-fuse-attention)"),
      llvm::cl::init(true)};
};

/// How a pipeline stages the program: cut into stages by pf-auto-stages
/// (or the program's pf.stage) and the micro-batches' schedule.
struct StagingOptions : public PassPipelineOptions<StagingOptions> {
  Option<int64_t> autoStages{
      *this, "auto-stages",
      llvm::cl::desc("cut the unstaged program into this many pipeline "
                     "stages (pf-auto-stages; 0 = the program's pf.stage)"),
      llvm::cl::init(0)};
  Option<StageBalance> balance{
      *this, "balance",
      llvm::cl::desc("auto-stages cost: flops, params or memory"),
      llvm::cl::init(StageBalance::Flops), enumOptionValues<StageBalance>()};
  Option<ScheduleKind> schedule{
      *this, "schedule",
      llvm::cl::desc("pipeline schedule: none (GPipe order, blocking), "
                     "gpipe, 1f1b, interleaved-1f1b or zb-h1"),
      llvm::cl::init(ScheduleKind::None), enumOptionValues<ScheduleKind>()};
  Option<int64_t> numChunks{
      *this, "num-chunks",
      llvm::cl::desc("virtual chunks per rank (interleaved-1f1b)"),
      llvm::cl::init(1)};
};

/// Global program -> SPMD program.
struct SPMDPipelineOptions : public PassPipelineOptions<SPMDPipelineOptions> {
  Option<std::string> boxingReport{
      *this, "boxing-report",
      llvm::cl::desc("write the boxing report to this file ('-' = stdout)"),
      llvm::cl::init("")};
  Option<GradientDtype> gradientDtype{
      *this, "gradient-dtype",
      llvm::cl::desc("the type the data-parallel gradient all-reduces (and "
                     "ZeRO-2/3's reduce-scatters) move "
                     "(graph.config.set_gradient_dtype); the gradients and "
                     "their buffers stay f32"),
      llvm::cl::init(GradientDtype::F32),
      llvm::cl::values(
          clEnumValN(GradientDtype::F32, "f32", "float32 (the default)"),
          clEnumValN(GradientDtype::BF16, "bf16",
                     "rounded to bfloat16, summed in bfloat16 (each "
                     "pairwise sum in f32, rounded to nearest even)"),
          clEnumValN(GradientDtype::F16, "f16",
                     "rounded to float16, summed in float16 (as bf16)"))};
  Option<bool> sequenceParallel{
      *this, "sequence-parallel",
      llvm::cl::desc("Megatron-LM's sequence parallelism (pf-infer-sbp "
                     "sequence-parallel; graph.config."
                     "enable_sequence_parallel): layer norm, dropout and "
                     "residual regions split along the sequence over the "
                     "tensor-parallel axis"),
      llvm::cl::init(false)};
};

/// pf IR (forward + loss) -> per-rank LLVM-dialect modules for CPU ranks.
struct CompileCPUPipelineOptions
    : public PassPipelineOptions<CompileCPUPipelineOptions>,
      public TrainingPipelineOptions,
      public StagingOptions,
      public SPMDPipelineOptions {
  Option<bool> splitStages{
      *this, "split-stages",
      llvm::cl::desc("make every scheduled action a function "
                     "(pf-split-stages; inlined again before the lowering)"),
      llvm::cl::init(false)};
  Option<bool> training{
      *this, "training",
      llvm::cl::desc("compile a training step (pf-autodiff, pf-optimizer); "
                     "false: a forward-only (inference) program"),
      llvm::cl::init(true)};
  Option<bool> scheduleReport{
      *this, "schedule-report",
      llvm::cl::desc("print the auto-stages cut and the schedule report"),
      llvm::cl::init(false)};
  Option<bool> generatedKernels{
      *this, "generated-kernels",
      llvm::cl::desc("element-wise ops through the compiler's generated "
                     "kernels (convert-pf-to-cpu generated-kernels)"),
      llvm::cl::init(false)};
  Option<int64_t> bucketBytes{
      *this, "bucket-bytes",
      llvm::cl::desc("gradient all-reduces packed into buckets of at most "
                     "this many bytes (pf-bucket-gradients; 0: one a "
                     "gradient)"),
      llvm::cl::init(25 << 20)};
  enum class Overlap { Auto, On, Off };
  Option<Overlap> overlapGradients{
      *this, "overlap-gradients",
      llvm::cl::desc("start each gradient bucket's all-reduce as soon as its "
                     "last gradient is computed and wait at the update "
                     "(pf-bucket-gradients overlap)"),
      llvm::cl::init(Overlap::Auto),
      llvm::cl::values(
          clEnumValN(Overlap::Auto, "auto",
                     "on for GPU ranks (NCCL overlaps it), off for CPU ranks"),
          clEnumValN(Overlap::On, "on", "always"),
          clEnumValN(Overlap::Off, "off", "never"))};
  Option<Overlap> overlapCollectives{
      *this, "overlap-collectives",
      llvm::cl::desc("split blocking all-reduces, all-gathers and "
                     "reduce-scatters into start and wait around the work "
                     "that does not need them (pf-overlap-collectives)"),
      llvm::cl::init(Overlap::Auto),
      llvm::cl::values(
          clEnumValN(Overlap::Auto, "auto",
                     "on for GPU ranks (NCCL overlaps it), off for CPU ranks"),
          clEnumValN(Overlap::On, "on", "always"),
          clEnumValN(Overlap::Off, "off", "never"))};
  enum class Stop { Training, SPMD, Rank, Lower };
  Option<Stop> compileTo{
      *this, "pf-compile-to", llvm::cl::desc("where the compile stops"),
      llvm::cl::init(Stop::Lower),
      llvm::cl::values(
          clEnumValN(Stop::Training, "training",
                     "after the training step (autodiff, optimizer)"),
          clEnumValN(Stop::SPMD, "spmd",
                     "after SBP inference and boxing (global SPMD program)"),
          clEnumValN(Stop::Rank, "rank", "after per-rank partitioning"),
          clEnumValN(Stop::Lower, "lower", "LLVM dialect (the default)"))};
};

/// Forward + loss -> staged training step with micro-batches and a checked
/// schedule (1F1B unless `schedule` says otherwise).
struct StagePipelineOptions : public PassPipelineOptions<StagePipelineOptions>,
                              public TrainingPipelineOptions,
                              public StagingOptions {
  StagePipelineOptions() { schedule.setInitialValue(ScheduleKind::OneFOneB); }
  Option<ScheduleCosts> costs{
      *this, "costs", llvm::cl::desc("schedule report costs: unit or flops"),
      llvm::cl::init(ScheduleCosts::Flops), enumOptionValues<ScheduleCosts>()};
  Option<bool> report{*this, "report",
                      llvm::cl::desc("print the cut and the schedule report"),
                      llvm::cl::init(false)};
};

/// Forward + loss -> staged training step with micro-batches and a checked
/// pf.schedule: [pf-auto-stages], pf-assign-stages, the training pipeline,
/// pf-microbatch, pf-schedule (unless schedule=none).
void buildStagePipeline(OpPassManager &pm, const StagePipelineOptions &options);

/// Forward + loss -> full training step: autodiff, optimizer, cleanup.
void buildTrainingPipeline(OpPassManager &pm,
                           const TrainingPipelineOptions &options);

/// Global program -> SPMD program: pf-infer-sbp, pf-insert-boxing, cleanup,
/// pf-lower-boxing.
void buildSPMDPipeline(OpPassManager &pm, const SPMDPipelineOptions &options);

/// pf IR (forward + loss) -> per-rank LLVM-dialect modules for CPU ranks:
/// training step, rank partitioning, lowering over libpfrt.
void buildCompileCPUPipeline(OpPassManager &pm,
                             const CompileCPUPipelineOptions &options);

/// The same for GPU ranks (convert-pf-to-gpu last), with the same options
/// (generated-kernels is always on there: a GPU rank's element-wise ops are
/// the compiler's kernels whatever the option says).
void buildCompileGPUPipeline(OpPassManager &pm,
                             const CompileCPUPipelineOptions &options);

/// Registers every PipeFlow pipeline with the global registry.
void registerPipelines();

} // namespace pf
} // namespace mlir

#endif // PF_PIPELINES_PIPELINES_H
