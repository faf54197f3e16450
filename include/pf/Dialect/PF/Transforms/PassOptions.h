//===- PassOptions.h - options shared by passes and pipelines ---*- C++ -*-===//
//
// enumOptionValues: pass and pipeline options of the enums in PFEnums.td
// accept exactly the enums' spellings, written once in the .td.
//
// OptimizerOptionsT: pf-optimizer's options, declared once for the pass and
// for every pipeline that runs it (PassPipelineOptions composition), so that
// a new optimizer option is one declaration here.
//
//===----------------------------------------------------------------------===//

#ifndef PF_DIALECT_PF_TRANSFORMS_PASSOPTIONS_H
#define PF_DIALECT_PF_TRANSFORMS_PASSOPTIONS_H

#include "pf/Dialect/PF/IR/PFAttrs.h"

#include "mlir/Pass/PassOptions.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/CommandLine.h"

#include <initializer_list>

namespace mlir::pf {

/// An `llvm::cl` modifier, like `llvm::cl::values(clEnumValN(...), ...)`,
/// that offers every case of an ODS enum (cases numbered 0, 1, ... without
/// gaps) under its string, except the cases in `except`.
template <typename EnumT> class EnumOptionValues {
public:
  explicit EnumOptionValues(std::initializer_list<EnumT> except)
      : except(except) {}

  template <typename OptT> void apply(OptT &option) const {
    for (uint32_t i = 0;; ++i) {
      auto value = static_cast<EnumT>(i);
      llvm::StringRef name = stringifyEnum(value);
      if (name.empty())
        return;
      if (!llvm::is_contained(except, value))
        option.getParser().addLiteralOption(name, value, "");
    }
  }

private:
  llvm::SmallVector<EnumT> except;
};

template <typename EnumT>
EnumOptionValues<EnumT>
enumOptionValues(std::initializer_list<EnumT> except = {}) {
  return EnumOptionValues<EnumT>(except);
}

/// How pf-optimizer spells the update rule, and how the pipelines do.
inline constexpr char kOptimizerKindPassArg[] = "kind";
inline constexpr char kOptimizerKindPipelineArg[] = "optimizer";

/// pf-optimizer's options. `Base` registers them: the pass's generated base
/// class (the pass's flags) or PassPipelineOptions (a pipeline's flags).
/// `KindArg` is the update rule's flag there. A `pf.optimizer` dictionary on
/// a parameter overrides these for that parameter.
template <typename Base, const char *KindArg>
class OptimizerOptionsT : public Base {
  /// Pass::Option or PassOptions::Option.
  template <typename T> using Opt = typename Base::template Option<T>;

public:
  OptimizerOptionsT() = default;
  /// A cloned pass starts from the defaults; MLIR then copies the values.
  OptimizerOptionsT(const OptimizerOptionsT &other) : Base(other) {}

  Opt<OptimizerKind> kind{
      *this, KindArg, llvm::cl::desc("update rule: sgd, adam or adamw"),
      llvm::cl::init(OptimizerKind::SGD), enumOptionValues<OptimizerKind>()};
  Opt<double> momentum{*this, "momentum", llvm::cl::desc("SGD momentum"),
                       llvm::cl::init(0.0)};
  Opt<double> dampening{*this, "dampening", llvm::cl::desc("SGD dampening"),
                        llvm::cl::init(0.0)};
  Opt<bool> nesterov{*this, "nesterov", llvm::cl::desc("SGD Nesterov momentum"),
                     llvm::cl::init(false)};
  Opt<double> weightDecay{
      *this, "weight-decay",
      llvm::cl::desc("weight decay (default: 0 for SGD and Adam, 0.01 for "
                     "AdamW)"),
      llvm::cl::init(-1.0)};
  Opt<double> beta1{*this, "beta1", llvm::cl::desc("Adam beta1"),
                    llvm::cl::init(0.9)};
  Opt<double> beta2{*this, "beta2", llvm::cl::desc("Adam beta2"),
                    llvm::cl::init(0.999)};
  Opt<double> epsilon{*this, "eps", llvm::cl::desc("Adam epsilon"),
                      llvm::cl::init(1.0e-8)};
  Opt<bool> biasCorrection{*this, "bias-correction",
                           llvm::cl::desc("Adam bias correction"),
                           llvm::cl::init(true)};
  Opt<int64_t> zeroStage{
      *this, "zero-stage",
      llvm::cl::desc("ZeRO: split over each replicated (data-parallel) axis "
                     "the optimizer states (1), also the gradients (2), also "
                     "the parameters (3); 0: off"),
      llvm::cl::init(0)};
  Opt<int64_t> zeroMinSize{
      *this, "zero-min-size",
      llvm::cl::desc("ZeRO: parameters of fewer elements stay replicated"),
      llvm::cl::init(1024)};
  Opt<std::string> gradScaler{
      *this, "grad-scaler",
      llvm::cl::desc("loss scaling (flow.amp.GradScaler): none; static (the "
                     "loss gradient times the run-time scalar loss_scale, "
                     "the gradients times inv_loss_scale before clipping "
                     "and the update); dynamic (also: a step with a "
                     "non-finite gradient updates nothing, and the flag is "
                     "written to the state pf.found_inf)"),
      llvm::cl::init("none")};

  /// Takes the values of the same options registered elsewhere: a pipeline
  /// hands its options to the pf-optimizer it builds this way.
  template <typename OtherBase, const char *OtherKindArg>
  void copyOptimizerOptions(
      const OptimizerOptionsT<OtherBase, OtherKindArg> &other) {
    kind = other.kind;
    momentum = other.momentum;
    dampening = other.dampening;
    nesterov = other.nesterov;
    weightDecay = other.weightDecay;
    beta1 = other.beta1;
    beta2 = other.beta2;
    epsilon = other.epsilon;
    biasCorrection = other.biasCorrection;
    zeroStage = other.zeroStage;
    zeroMinSize = other.zeroMinSize;
    gradScaler = other.gradScaler;
  }
};

/// The optimizer's options as a pipeline option group: pipeline options
/// derive from it (with PassPipelineOptions<Self>) to offer them.
struct OptimizerOptions
    : public OptimizerOptionsT<PassPipelineOptions<OptimizerOptions>,
                               kOptimizerKindPipelineArg> {};

} // namespace mlir::pf

#endif // PF_DIALECT_PF_TRANSFORMS_PASSOPTIONS_H
