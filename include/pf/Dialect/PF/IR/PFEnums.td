//===- PFEnums.td - choices shared across pf's layers ------*- tablegen -*-===//
//
// Enums that name a choice in one place for every layer that makes it: the
// `kind` of a pf.optimizer rule and of a pf.schedule, pass options
// (pf-optimizer, pf-schedule, pf-auto-stages), the pipelines' options and
// the analyses. The string of each case is its spelling everywhere: on the
// command line (`kind=adamw`, `schedule=zb-h1`, `balance=params`), in IR and
// in reports. Cases are numbered 0, 1, ... without gaps (the option parsers
// enumerate them; see enumOptionValues in PassOptions.h).
//
//===----------------------------------------------------------------------===//

#ifndef PF_DIALECT_PF_IR_PFENUMS_TD
#define PF_DIALECT_PF_IR_PFENUMS_TD

include "mlir/IR/EnumAttr.td"

def PF_OptimizerKind : I32Enum<"OptimizerKind", "parameter update rule", [
    I32EnumCase<"SGD", 0, "sgd">,
    I32EnumCase<"Adam", 1, "adam">,
    I32EnumCase<"AdamW", 2, "adamw">
  ]> {
  let cppNamespace = "::mlir::pf";
}

def PF_ScheduleKind : I32Enum<"ScheduleKind", "static pipeline schedule", [
    // No schedule: pf-microbatch's program order (every forward, then every
    // backward, GPipe-like) with blocking transfers. Only the pipelines
    // offer it; pf-schedule builds one of the others.
    I32EnumCase<"None", 0, "none">,
    I32EnumCase<"GPipe", 1, "gpipe">,
    I32EnumCase<"OneFOneB", 2, "1f1b">,
    I32EnumCase<"Interleaved1F1B", 3, "interleaved-1f1b">,
    I32EnumCase<"ZBH1", 4, "zb-h1">
  ]> {
  let cppNamespace = "::mlir::pf";
}

def PF_ScheduleCosts : I32Enum<"ScheduleCosts",
    "costs of a schedule's actions in its simulation", [
    // F = B = W = 1.
    I32EnumCase<"Unit", 0, "unit">,
    // Every stage's forward, input-gradient and weight-gradient FLOPs.
    I32EnumCase<"Flops", 1, "flops">
  ]> {
  let cppNamespace = "::mlir::pf";
}

def PF_AutocastDtype : I32Enum<"AutocastDtype",
    "the low-precision type pf-autocast computes GEMMs in", [
    // No global autocast: only ops marked `pf.autocast` are converted.
    I32EnumCase<"None", 0, "none">,
    I32EnumCase<"BF16", 1, "bf16">,
    I32EnumCase<"F16", 2, "f16">
  ]> {
  let cppNamespace = "::mlir::pf";
}

def PF_StageBalance : I32Enum<"StageBalance",
    "the cost pf-auto-stages balances across stages", [
    // Forward + input- and weight-gradient FLOPs.
    I32EnumCase<"Flops", 0, "flops">,
    // Parameter bytes.
    I32EnumCase<"Params", 1, "params">,
    // Parameter and gradient bytes plus the activations kept for backward.
    I32EnumCase<"Memory", 2, "memory">
  ]> {
  let cppNamespace = "::mlir::pf";
}

def PF_ComparePredicate : I32Enum<"ComparePredicate",
    "the relation pf.compare tests", [
    // Also the runtime's codes (pfrt_k_compare's `predicate`).
    I32EnumCase<"EQ", 0, "eq">,
    I32EnumCase<"NE", 1, "ne">,
    I32EnumCase<"LT", 2, "lt">,
    I32EnumCase<"LE", 3, "le">,
    I32EnumCase<"GT", 4, "gt">,
    I32EnumCase<"GE", 5, "ge">
  ]> {
  let cppNamespace = "::mlir::pf";
}

#endif // PF_DIALECT_PF_IR_PFENUMS_TD
