//===- pf-fuzz.cpp - libFuzzer target: parser, verifiers, pipelines -------===//
//
// One input is one MLIR text. It is parsed with every PipeFlow dialect
// registered (the parser runs the verifiers); a module that parses is then
// compiled, each time from a fresh copy, by pf-compile-cpu-pipeline as a
// training step (SGD) and as an inference program, down to the LLVM
// dialect. Errors are expected and swallowed; what the fuzzer looks for is
// a crash, an assertion, a sanitizer report, a hang (-timeout) or a leak.
//
// Built only with PF_ENABLE_FUZZER=ON and clang (-fsanitize=fuzzer); see
// scripts/fuzz.sh, which also builds every PipeFlow library with
// -fsanitize=fuzzer-no-link,address.
//
//===----------------------------------------------------------------------===//

#include "pf/InitAllDialects.h"
#include "pf/Pipelines/Pipelines.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <cstddef>
#include <cstdint>
#include <string>

using namespace mlir;

namespace {

void compile(ModuleOp module, bool training) {
  OwningOpRef<ModuleOp> copy(cast<ModuleOp>(module->clone()));
  PassManager pm(module.getContext());
  pf::CompileCPUPipelineOptions options;
  options.training = training;
  pf::buildCompileCPUPipeline(pm, options);
  (void)pm.run(*copy);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  DialectRegistry registry;
  pf::registerAllDialects(registry);
  MLIRContext context(registry, MLIRContext::Threading::DISABLED);
  context.loadAllAvailableDialects();
  ScopedDiagnosticHandler quiet(&context,
                                [](Diagnostic &) { return success(); });
  ParserConfig config(&context);
  // MLIR's lexer expects a NUL after the buffer, as files read by pf-opt
  // (MemoryBuffer) have: the bytes are copied into a string that has one.
  std::string text(reinterpret_cast<const char *>(data), size);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, config);
  if (!module)
    return 0;
  compile(*module, /*training=*/true);
  compile(*module, /*training=*/false);
  return 0;
}
