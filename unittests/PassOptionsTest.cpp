//===- PassOptionsTest.cpp - options shared by passes and pipelines -------===//

#include "pf/Dialect/PF/Transforms/Passes.h"
#include "pf/Pipelines/Pipelines.h"

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::pf;

namespace {

std::string textualPipeline(Pass &pass) {
  std::string text;
  llvm::raw_string_ostream os(text);
  pass.printAsTextualPipeline(os);
  return text;
}

TEST(PassOptionsTest, PipelinesComposeTheOptimizerOptions) {
  TrainingPipelineOptions training;
  ASSERT_TRUE(succeeded(training.parseFromString(
      "optimizer=adamw momentum=0.5 beta2=0.99 accumulation-steps=3")));
  EXPECT_EQ(training.kind, OptimizerKind::AdamW);
  EXPECT_EQ(training.momentum, 0.5);
  EXPECT_EQ(training.beta2, 0.99);
  EXPECT_EQ(training.accumulationSteps, 3);
  // Unset options keep pf-optimizer's defaults.
  EXPECT_EQ(training.weightDecay, -1.0);
  EXPECT_TRUE(training.biasCorrection);

  // The same group, the same flags, in the CPU pipeline.
  CompileCPUPipelineOptions cpu;
  ASSERT_TRUE(succeeded(cpu.parseFromString(
      "optimizer=adam eps=1e-6 schedule=zb-h1 balance=memory")));
  EXPECT_EQ(cpu.kind, OptimizerKind::Adam);
  EXPECT_EQ(cpu.epsilon, 1e-6);
  EXPECT_EQ(cpu.schedule, ScheduleKind::ZBH1);
  EXPECT_EQ(cpu.balance, StageBalance::Memory);
}

TEST(PassOptionsTest, EnumOptionsTakeTheTdSpellings) {
  TrainingPipelineOptions training;
  EXPECT_TRUE(failed(training.parseFromString("optimizer=lamb")));
  // The pipelines' `optimizer` is pf-optimizer's `kind`.
  EXPECT_TRUE(failed(training.parseFromString("kind=adam")));

  CompileCPUPipelineOptions cpu;
  EXPECT_EQ(cpu.schedule, ScheduleKind::None);
  ASSERT_TRUE(succeeded(cpu.parseFromString("schedule=interleaved-1f1b")));
  EXPECT_EQ(cpu.schedule, ScheduleKind::Interleaved1F1B);

  // The stage pipeline schedules by default.
  StagePipelineOptions stage;
  EXPECT_EQ(stage.schedule, ScheduleKind::OneFOneB);
  EXPECT_EQ(stage.costs, ScheduleCosts::Flops);
  ASSERT_TRUE(succeeded(stage.parseFromString("schedule=none costs=unit")));
  EXPECT_EQ(stage.schedule, ScheduleKind::None);
  EXPECT_EQ(stage.costs, ScheduleCosts::Unit);
}

TEST(PassOptionsTest, PipelineOptionsReachThePass) {
  TrainingPipelineOptions training;
  ASSERT_TRUE(succeeded(
      training.parseFromString("optimizer=adamw nesterov=true beta1=0.8")));
  std::unique_ptr<Pass> pass = createOptimizerPass(training);
  std::string text = textualPipeline(*pass);
  EXPECT_NE(text.find("kind=adamw"), std::string::npos) << text;
  EXPECT_NE(text.find("nesterov=true"), std::string::npos) << text;
  EXPECT_NE(text.find("beta1=8.000000e-01"), std::string::npos) << text;

  // The pass parses its own spelling of the same options.
  std::unique_ptr<Pass> parsed = createOptimizerPass();
  ASSERT_TRUE(succeeded(
      parsed->initializeOptions("kind=adamw nesterov=true beta1=0.8",
                                [](const Twine &) { return failure(); })));
  EXPECT_EQ(textualPipeline(*parsed), text);

  // Copying a pass manager clones the pass with its option values.
  OpPassManager pm("builtin.module");
  pm.addPass(std::move(pass));
  OpPassManager copy = pm;
  std::string copied;
  llvm::raw_string_ostream os(copied);
  copy.printAsTextualPipeline(os);
  EXPECT_NE(copied.find(text), std::string::npos) << copied;
}

} // namespace
