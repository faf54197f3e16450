//===- Pipelines.cpp - PipeFlow's registered pass pipelines ---------------===//

#include "pf/Pipelines/Pipelines.h"
#include "pf/Dialect/PF/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::pf;

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

void mlir::pf::registerPipelines() {
  PassPipelineRegistration<TrainingPipelineOptions>(
      "pf-training-pipeline",
      "forward + loss -> training step (pf-autodiff, pf-optimizer, cleanup)",
      buildTrainingPipeline);
}
