//===- Pipelines.cpp - PipeFlow's registered pass pipelines ---------------===//

#include "pf/Pipelines/Pipelines.h"
#include "pf/Conversion/Passes.h"
#include "pf/Dialect/PF/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::pf;

/// pf-auto-stages when asked for (autoStages > 0 stages), then
/// pf-assign-stages.
static void addStagePasses(OpPassManager &pm, int64_t autoStages,
                           int64_t numChunks, StringRef balance, bool report) {
  if (autoStages > 0) {
    AutoStagesPassOptions options;
    options.numStages = autoStages;
    options.numChunks = numChunks;
    options.balance = balance.str();
    options.report = report;
    pm.addPass(createAutoStagesPass(options));
  }
  pm.addPass(createAssignStagesPass());
}

void mlir::pf::buildTrainingPipeline(OpPassManager &pm,
                                     const TrainingPipelineOptions &options) {
  AutodiffPassOptions autodiff;
  autodiff.accumulationSteps = options.accumulationSteps;
  pm.addPass(createAutodiffPass(autodiff));
  OptimizerPassOptions optimizer;
  optimizer.kind = options.optimizer;
  optimizer.momentum = options.momentum;
  optimizer.dampening = options.dampening;
  optimizer.nesterov = options.nesterov;
  optimizer.weightDecay = options.weightDecay;
  optimizer.beta1 = options.beta1;
  optimizer.beta2 = options.beta2;
  optimizer.epsilon = options.epsilon;
  optimizer.biasCorrection = options.biasCorrection;
  pm.addPass(createOptimizerPass(optimizer));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void mlir::pf::buildSPMDPipeline(OpPassManager &pm,
                                 const SPMDPipelineOptions &options) {
  pm.addPass(createInferSBPPass());
  pm.addPass(createInsertBoxingPass());
  pm.addPass(createCSEPass());
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

void mlir::pf::buildCompileCPUPipeline(
    OpPassManager &pm, const CompileCPUPipelineOptions &options) {
  TrainingPipelineOptions training;
  training.accumulationSteps = options.accumulationSteps;
  training.optimizer = options.optimizer;
  training.momentum = options.momentum;
  training.dampening = options.dampening;
  training.nesterov = options.nesterov;
  training.weightDecay = options.weightDecay;
  training.beta1 = options.beta1;
  training.beta2 = options.beta2;
  training.epsilon = options.epsilon;
  training.biasCorrection = options.biasCorrection;
  addStagePasses(pm, options.autoStages, options.numChunks, options.balance,
                 options.scheduleReport);
  buildTrainingPipeline(pm, training);
  MicrobatchPassOptions microbatch;
  microbatch.numMicrobatches = options.accumulationSteps;
  pm.addPass(createMicrobatchPass(microbatch));
  if (options.compileTo == CompileCPUPipelineOptions::Stop::Training)
    return;
  SPMDPipelineOptions spmd;
  spmd.boxingReport = options.boxingReport;
  buildSPMDPipeline(pm, spmd);
  if (options.compileTo == CompileCPUPipelineOptions::Stop::SPMD)
    return;
  pm.addPass(createPartitionRanksPass());
  if (options.schedule != "none") {
    SchedulePassOptions schedule;
    schedule.kind = options.schedule;
    schedule.numChunks = options.numChunks;
    schedule.report = options.scheduleReport;
    pm.addPass(createSchedulePass(schedule));
    pm.addPass(createApplySchedulePass());
  }
  if (options.splitStages) {
    pm.addPass(createSplitStagesPass());
    if (options.compileTo == CompileCPUPipelineOptions::Stop::Rank)
      return;
    pm.addPass(createInlineStagesPass());
  }
  pm.addPass(createForwardGradBuffersPass());
  if (options.compileTo == CompileCPUPipelineOptions::Stop::Rank)
    return;
  pm.addPass(createConvertPFToCPUPass());
}

void mlir::pf::buildStagePipeline(OpPassManager &pm,
                                  const StagePipelineOptions &options) {
  addStagePasses(pm, options.autoStages, options.numChunks, options.balance,
                 options.report);
  TrainingPipelineOptions training;
  training.accumulationSteps = options.accumulationSteps;
  buildTrainingPipeline(pm, training);
  MicrobatchPassOptions microbatch;
  microbatch.numMicrobatches = options.accumulationSteps;
  pm.addPass(createMicrobatchPass(microbatch));
  SchedulePassOptions schedule;
  schedule.kind = options.schedule;
  schedule.numChunks = options.numChunks;
  schedule.costs = options.costs;
  schedule.report = options.report;
  pm.addPass(createSchedulePass(schedule));
}

void mlir::pf::registerPipelines() {
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
  PassPipelineRegistration<SPMDPipelineOptions>(
      "pf-spmd-pipeline",
      "global program -> SPMD program (infer SBP, insert and lower boxing)",
      buildSPMDPipeline);
  PassPipelineRegistration<TrainingPipelineOptions>(
      "pf-training-pipeline",
      "forward + loss -> training step (pf-autodiff, pf-optimizer, cleanup)",
      buildTrainingPipeline);
}
