//===- Pipelines.cpp - PipeFlow's registered pass pipelines ---------------===//

#include "pf/Pipelines/Pipelines.h"
#include "pf/Conversion/Fusion/Fusion.h"
#include "pf/Conversion/Passes.h"
#include "pf/Dialect/PF/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::pf;

/// pf-auto-stages when asked for (autoStages > 0 stages), then
/// pf-assign-stages.
static void addStagePasses(OpPassManager &pm, const StagingOptions &options,
                           bool report) {
  if (options.autoStages > 0) {
    AutoStagesPassOptions autoStages;
    autoStages.numStages = options.autoStages;
    autoStages.numChunks = options.numChunks;
    autoStages.balance = options.balance;
    autoStages.report = report;
    pm.addPass(createAutoStagesPass(autoStages));
  }
  pm.addPass(createAssignStagesPass());
}

/// pf-schedule for the staging options' schedule; false for `none`.
static bool addSchedulePass(OpPassManager &pm, const StagingOptions &options,
                            ScheduleCosts costs, bool report) {
  if (options.schedule == ScheduleKind::None)
    return false;
  SchedulePassOptions schedule;
  schedule.kind = options.schedule;
  schedule.numChunks = options.numChunks;
  schedule.costs = costs;
  schedule.report = report;
  pm.addPass(createSchedulePass(schedule));
  return true;
}

void mlir::pf::buildTrainingPipeline(OpPassManager &pm,
                                     const TrainingPipelineOptions &options) {
  AutodiffPassOptions autodiff;
  autodiff.accumulationSteps = options.accumulationSteps;
  if (options.gradScaler != "none")
    autodiff.lossScale = "loss_scale";
  // Before autodiff: gradients and optimizer states copy the layouts.
  if (options.fuseAttention)
    pm.addPass(createFuseAttentionPass());
  // After the fusion: a fused attention is recomputed as one op.
  pm.addPass(createSelectiveCheckpointPass());
  pm.addPass(createGroupFusedSplitsPass());
  pm.addPass(createDecomposeLossesPass());
  // The forward in mixed precision; autodiff differentiates the casts.
  pm.addPass(createAutocastPass(AutocastPassOptions{options.autocast}));
  pm.addPass(createAutodiffPass(autodiff));
  pm.addPass(createOptimizerPass(options));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void mlir::pf::buildSPMDPipeline(OpPassManager &pm,
                                 const SPMDPipelineOptions &options) {
  // For graphs without the training passes (a no-op after them).
  pm.addPass(createGroupFusedSplitsPass());
  InferSBPPassOptions infer;
  infer.sequenceParallel = options.sequenceParallel;
  pm.addPass(createInferSBPPass(infer));
  pm.addPass(createInsertBoxingPass());
  pm.addPass(createCSEPass());
  // Before the lowering, so that the boxing report counts 2-byte elements.
  pm.addPass(createLowPrecisionGradientsPass(options.gradientDtype));
  LowerBoxingPassOptions lower;
  if (!options.boxingReport.empty()) {
    lower.report = true;
    if (options.boxingReport != "-")
      lower.reportFile = options.boxingReport;
  }
  pm.addPass(createLowerBoxingPass(lower));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

/// pf-microbatch with one micro-batch per accumulation step; with
/// `keepTemplate`, one micro-batch's copy for pf-unroll-microbatches.
static void addMicrobatchPass(OpPassManager &pm,
                              const TrainingPipelineOptions &options,
                              bool keepTemplate = false) {
  MicrobatchPassOptions microbatch;
  microbatch.numMicrobatches = options.accumulationSteps;
  microbatch.keepTemplate = keepTemplate;
  pm.addPass(createMicrobatchPass(microbatch));
}

/// The CPU and GPU pipelines: the same passes up to the rank lowering.
static void buildCompilePipeline(OpPassManager &pm,
                                 const CompileCPUPipelineOptions &options,
                                 bool gpu) {
  using Stop = CompileCPUPipelineOptions::Stop;
  addStagePasses(pm, options, options.scheduleReport);
  if (options.training) {
    buildTrainingPipeline(pm, options);
  } else {
    // As in training: fused splits grouped before casts hide their GEMMs.
    if (options.fuseAttention)
      pm.addPass(createFuseAttentionPass());
    // Nothing is recomputed without a backward; the marks are resolved
    // (and dropped) all the same.
    pm.addPass(createSelectiveCheckpointPass());
    pm.addPass(createGroupFusedSplitsPass());
    pm.addPass(createAutocastPass(AutocastPassOptions{options.autocast}));
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
  }
  // SBP inference, boxing and the rank partition work on one micro-batch;
  // each rank's program gets its m copies after them (compile time up to
  // there independent of the number of micro-batches). The stops before
  // the rank programs print the step with every copy.
  addMicrobatchPass(pm, options, /*keepTemplate=*/true);
  if (options.compileTo == Stop::Training) {
    pm.addPass(createUnrollMicrobatchesPass());
    return;
  }
  buildSPMDPipeline(pm, options);
  if (options.compileTo == Stop::SPMD) {
    pm.addPass(createUnrollMicrobatchesPass());
    return;
  }
  // ZeRO-3: the backward gathers its weights again (the forward's die after
  // the forward).
  if (options.training && options.zeroStage == 3)
    pm.addPass(createRegatherParamsPass());
  // ZeRO-2/3: each gradient's shard is taken as soon as it is complete.
  // Under mixed precision too, each bf16/f16 gradient is accumulated into
  // its f32 sum as soon as it is complete, so no micro-batch's whole f32
  // gradient waits for the end of its backward. (In f32 the accumulation
  // folds into the weight-gradient GEMM where it is.)
  if (options.training)
    pm.addPass(createEarlyGradientShardsPass(
        EarlyGradientShardsPassOptions{options.zeroStage < 2}));
  pm.addPass(createPartitionRanksPass());
  pm.addPass(createUnrollMicrobatchesPass());
  if (addSchedulePass(pm, options, ScheduleCosts::Unit, options.scheduleReport))
    pm.addPass(createApplySchedulePass());
  if (options.splitStages) {
    pm.addPass(createSplitStagesPass());
    if (options.compileTo == Stop::Rank)
      return;
    pm.addPass(createInlineStagesPass());
  }
  pm.addPass(createForwardGradBuffersPass());
  BucketGradientsPassOptions buckets;
  buckets.bucketBytes = options.bucketBytes;
  using Overlap = CompileCPUPipelineOptions::Overlap;
  buckets.overlap = options.overlapGradients == Overlap::On ||
                    (options.overlapGradients == Overlap::Auto && gpu);
  pm.addPass(createBucketGradientsPass(buckets));
  // bf16/f16 storage, float32 arithmetic: here every value is rank-local
  // and every communication op is placed (a bucket's all-reduce, a boxing
  // collective on a low-precision value computes in f32; sends and recvs
  // keep 2 bytes), and the fold passes then fuse the widened f32 ops as any
  // others (casts are never fused: their rounding stays pf.cast's).
  // GPU ranks: bf16/f16 attention through cuDNN's fused flash attention
  // where it can (kept unwidened), the decision on each op
  // (pf.cudnn_attention).
  if (gpu)
    pm.addPass(createSelectCudnnAttentionPass());
  // GPU ranks keep bf16/f16 GEMMs as typed cuBLASLt GEMMs (tensor cores,
  // float32 compute); CPU ranks widen every op.
  pm.addPass(createWidenLowPrecisionPass(WidenLowPrecisionPassOptions{gpu}));
  // Blocking collectives split around the work that does not need them
  // (tensor and sequence parallelism's, ZeRO's), on the final order of
  // the rank's ops and before the fold passes decide on it.
  if (options.overlapCollectives == Overlap::On ||
      (options.overlapCollectives == Overlap::Auto && gpu))
    pm.addPass(createOverlapCollectivesPass());
  // The fusion and buffer decisions, in the IR the rank stop prints.
  if (gpu)
    buildGPUFoldPipeline(pm, /*accumulation=*/true, /*generatedKernels=*/true);
  else
    buildCPUFoldPipeline(pm, /*accumulation=*/true, options.generatedKernels);
  if (options.compileTo == Stop::Rank)
    return;
  pm.addPass(createVerifyCommPass());
  if (gpu) {
    ConvertPFToGPUPassOptions lowering;
    lowering.reportOutputs = !options.training;
    // Element-wise ops are the compiler's kernels on a GPU, always.
    lowering.generatedKernels = true;
    pm.addPass(createConvertPFToGPUPass(lowering));
    pm.addPass(createEmbedGPUKernelsPass());
    return;
  }
  ConvertPFToCPUPassOptions lowering;
  lowering.reportOutputs = !options.training;
  lowering.generatedKernels = options.generatedKernels;
  pm.addPass(createConvertPFToCPUPass(lowering));
}

void mlir::pf::buildCompileCPUPipeline(
    OpPassManager &pm, const CompileCPUPipelineOptions &options) {
  buildCompilePipeline(pm, options, /*gpu=*/false);
}

void mlir::pf::buildCompileGPUPipeline(
    OpPassManager &pm, const CompileCPUPipelineOptions &options) {
  buildCompilePipeline(pm, options, /*gpu=*/true);
}

void mlir::pf::buildStagePipeline(OpPassManager &pm,
                                  const StagePipelineOptions &options) {
  addStagePasses(pm, options, options.report);
  buildTrainingPipeline(pm, options);
  addMicrobatchPass(pm, options);
  addSchedulePass(pm, options, options.costs, options.report);
}

void mlir::pf::registerPipelines() {
  registerFoldPipelines();
  PassPipelineRegistration<StagePipelineOptions>(
      "pf-stage-pipeline",
      "pf IR (forward + loss) -> staged training step with micro-batches and "
      "a verified pipeline schedule",
      buildStagePipeline);
  PassPipelineRegistration<CompileCPUPipelineOptions>(
      "pf-compile-cpu-pipeline",
      "pf IR (forward + loss) -> per-rank LLVM-dialect modules for CPU ranks",
      [](OpPassManager &pm, const CompileCPUPipelineOptions &options) {
        buildCompileCPUPipeline(pm, options);
      });
  PassPipelineRegistration<CompileCPUPipelineOptions>(
      "pf-compile-gpu-pipeline",
      "pf IR (forward + loss) -> per-rank LLVM-dialect modules for GPU ranks "
      "(one GPU a rank; the CPU pipeline's options)",
      [](OpPassManager &pm, const CompileCPUPipelineOptions &options) {
        buildCompileGPUPipeline(pm, options);
      });
  PassPipelineRegistration<SPMDPipelineOptions>(
      "pf-spmd-pipeline",
      "global program -> SPMD program (infer SBP, insert and lower boxing)",
      buildSPMDPipeline);
  PassPipelineRegistration<TrainingPipelineOptions>(
      "pf-training-pipeline",
      "forward + loss -> training step (pf-autodiff, pf-optimizer, cleanup)",
      buildTrainingPipeline);
}
