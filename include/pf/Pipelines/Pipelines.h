//===- Pipelines.h - PipeFlow's registered pass pipelines -------*- C++ -*-===//
//
// Every compile PipeFlow performs is a registered pipeline, so that one
// pf-opt command reproduces it (no pipeline lives only in a driver).
//
//===----------------------------------------------------------------------===//

#ifndef PF_PIPELINES_PIPELINES_H
#define PF_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassOptions.h"

namespace mlir {
class OpPassManager;
namespace pf {

struct TrainingPipelineOptions
    : public PassPipelineOptions<TrainingPipelineOptions> {
  Option<int64_t> accumulationSteps{
      *this, "accumulation-steps",
      llvm::cl::desc("micro-batches per step (gradient accumulation)"),
      llvm::cl::init(1)};
  Option<std::string> optimizer{*this, "optimizer",
                                llvm::cl::desc("sgd, adam or adamw"),
                                llvm::cl::init("sgd")};
  Option<double> momentum{*this, "momentum", llvm::cl::desc("SGD momentum"),
                          llvm::cl::init(0.0)};
  Option<double> dampening{*this, "dampening",
                           llvm::cl::desc("SGD dampening"),
                           llvm::cl::init(0.0)};
  Option<bool> nesterov{*this, "nesterov", llvm::cl::desc("SGD Nesterov"),
                        llvm::cl::init(false)};
  Option<double> weightDecay{
      *this, "weight-decay",
      llvm::cl::desc("weight decay (default: 0, or 0.01 for AdamW)"),
      llvm::cl::init(-1.0)};
  Option<double> beta1{*this, "beta1", llvm::cl::init(0.9)};
  Option<double> beta2{*this, "beta2", llvm::cl::init(0.999)};
  Option<double> epsilon{*this, "eps", llvm::cl::init(1e-8)};
  Option<bool> biasCorrection{*this, "bias-correction", llvm::cl::init(true)};
};

struct CompileCPUPipelineOptions
    : public PassPipelineOptions<CompileCPUPipelineOptions> {
  Option<int64_t> accumulationSteps{
      *this, "accumulation-steps",
      llvm::cl::desc("micro-batches per step (gradient accumulation)"),
      llvm::cl::init(1)};
  Option<std::string> optimizer{*this, "optimizer",
                                llvm::cl::desc("sgd, adam or adamw"),
                                llvm::cl::init("sgd")};
  Option<double> momentum{*this, "momentum", llvm::cl::init(0.0)};
  Option<double> dampening{*this, "dampening", llvm::cl::init(0.0)};
  Option<bool> nesterov{*this, "nesterov", llvm::cl::init(false)};
  Option<double> weightDecay{*this, "weight-decay", llvm::cl::init(-1.0)};
  Option<double> beta1{*this, "beta1", llvm::cl::init(0.9)};
  Option<double> beta2{*this, "beta2", llvm::cl::init(0.999)};
  Option<double> epsilon{*this, "eps", llvm::cl::init(1e-8)};
  Option<bool> biasCorrection{*this, "bias-correction", llvm::cl::init(true)};
  Option<std::string> schedule{
      *this, "schedule",
      llvm::cl::desc("pipeline schedule: none (GPipe order, blocking), "
                     "gpipe, 1f1b, interleaved-1f1b or zb-h1"),
      llvm::cl::init("none")};
  Option<int64_t> numChunks{*this, "num-chunks",
                            llvm::cl::desc("virtual chunks (interleaved)"),
                            llvm::cl::init(1)};
  Option<std::string> boxingReport{
      *this, "boxing-report",
      llvm::cl::desc("write the boxing report to this file ('-' = stdout)"),
      llvm::cl::init("")};
  Option<int64_t> autoStages{
      *this, "auto-stages",
      llvm::cl::desc("cut the unstaged program into this many pipeline "
                     "stages (pf-auto-stages; 0 = the program's pf.stage)"),
      llvm::cl::init(0)};
  Option<std::string> balance{
      *this, "balance",
      llvm::cl::desc("auto-stages cost: flops, params or memory"),
      llvm::cl::init("flops")};
  Option<bool> splitStages{
      *this, "split-stages",
      llvm::cl::desc("make every scheduled action a function "
                     "(pf-split-stages; inlined again before the lowering)"),
      llvm::cl::init(false)};
  Option<bool> scheduleReport{
      *this, "schedule-report",
      llvm::cl::desc("print the auto-stages cut and the schedule report"),
      llvm::cl::init(false)};
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

struct StagePipelineOptions
    : public PassPipelineOptions<StagePipelineOptions> {
  Option<int64_t> autoStages{
      *this, "auto-stages",
      llvm::cl::desc("cut the unstaged program into this many pipeline "
                     "stages (0 = the program's pf.stage)"),
      llvm::cl::init(0)};
  Option<std::string> balance{*this, "balance",
                              llvm::cl::desc("flops, params or memory"),
                              llvm::cl::init("flops")};
  Option<int64_t> accumulationSteps{
      *this, "accumulation-steps",
      llvm::cl::desc("micro-batches per step"), llvm::cl::init(1)};
  Option<std::string> schedule{
      *this, "schedule",
      llvm::cl::desc("gpipe, 1f1b, interleaved-1f1b or zb-h1"),
      llvm::cl::init("1f1b")};
  Option<int64_t> numChunks{*this, "num-chunks",
                            llvm::cl::desc("virtual chunks per rank"),
                            llvm::cl::init(1)};
  Option<std::string> costs{
      *this, "costs",
      llvm::cl::desc("schedule report costs: unit or flops"),
      llvm::cl::init("flops")};
  Option<bool> report{*this, "report",
                      llvm::cl::desc("print the cut and the schedule report"),
                      llvm::cl::init(false)};
};

/// Forward + loss -> staged training step with micro-batches and a checked
/// pf.schedule: [pf-auto-stages], pf-assign-stages, the training pipeline
/// (SGD), pf-microbatch, pf-schedule.
void buildStagePipeline(OpPassManager &pm, const StagePipelineOptions &options);

/// Forward + loss -> full training step: autodiff, optimizer, cleanup.
void buildTrainingPipeline(OpPassManager &pm,
                           const TrainingPipelineOptions &options);

struct SPMDPipelineOptions
    : public PassPipelineOptions<SPMDPipelineOptions> {
  Option<std::string> boxingReport{
      *this, "boxing-report",
      llvm::cl::desc("write the boxing report to this file ('-' = stdout)"),
      llvm::cl::init("")};
};

/// Global program -> SPMD program: pf-infer-sbp, pf-insert-boxing, cleanup,
/// pf-lower-boxing.
void buildSPMDPipeline(OpPassManager &pm, const SPMDPipelineOptions &options);

/// pf IR (forward + loss) -> per-rank LLVM-dialect modules for CPU ranks:
/// training step, rank partitioning, lowering over libpfrt.
void buildCompileCPUPipeline(OpPassManager &pm,
                             const CompileCPUPipelineOptions &options);

/// Registers every PipeFlow pipeline with the global registry.
void registerPipelines();

} // namespace pf
} // namespace mlir

#endif // PF_PIPELINES_PIPELINES_H
