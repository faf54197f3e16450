//===- RankArtifacts.cpp - per-rank executables ---------------------------===//

#include "pf/Target/RankArtifacts.h"
#include "pf/Config.h"
#include "pf/Dialect/PF/IR/PFDialect.h"
#include "pf/Target/ArtifactAttrs.h"
#include "pf/Target/ManifestFormat.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

#include <string>
#include <vector>

using namespace mlir;
using namespace mlir::pf;

namespace {
/// Compiles one LLVM module to an object file for the host.
LogicalResult compileObject(Operation *where, llvm::Module &module,
                            StringRef path) {
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return where->emitError()
           << "no LLVM target for " << triple.str() << ": " << error;
  llvm::SubtargetFeatures features;
  for (auto &feature : llvm::sys::getHostCPUFeatures())
    features.AddFeature(feature.first(), feature.second);
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, llvm::sys::getHostCPUName(), features.getString(), options,
      llvm::Reloc::PIC_, std::nullopt,
      // The step is a straight run of calls into libpfrt: optimising it buys
      // nothing measurable, and the default level's codegen is superlinear
      // in the step's length (400 layers x 8 micro-batches: 24 s of CPU,
      // 5.5 s at None; linear).
      llvm::CodeGenOptLevel::None));
  module.setTargetTriple(triple);
  module.setDataLayout(machine->createDataLayout());
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return where->emitError()
           << "cannot write " << path << ": " << ec.message();
  llvm::legacy::PassManager pm;
  if (machine->addPassesToEmitFile(pm, out, nullptr,
                                   llvm::CodeGenFileType::ObjectFile))
    return where->emitError() << "the host target cannot emit object files";
  pm.run(module);
  return success();
}

/// Links `object` with libpfrt (and, for executables, its driver main).
LogicalResult link(Operation *where, StringRef object, StringRef output,
                   bool shared) {
  std::vector<std::string> args = {PF_LINKER};
  if (shared)
    args.push_back("-shared");
  args.push_back(object.str());
  args.push_back("-o");
  args.push_back(output.str());
  if (!shared) {
    args.push_back(PF_RUNTIME_MAIN_LIBRARY);
    args.push_back(PF_RUNTIME_LIBRARY);
  } else {
    // A host program (Python) calls runtime entry points the generated code
    // never references: keep the whole runtime in the shared object.
    args.push_back(PF_RUNTIME_MAIN_LIBRARY);
    args.push_back("-Wl,--whole-archive");
    args.push_back(PF_RUNTIME_LIBRARY);
    args.push_back("-Wl,--no-whole-archive");
  }
  for (StringRef lib : llvm::split(StringRef(PF_RUNTIME_LINK_LIBRARIES), ';'))
    if (!lib.empty())
      args.push_back(lib.str());
  args.push_back("-lm");
  std::vector<StringRef> argRefs(args.begin(), args.end());
  std::string error;
  int rc = llvm::sys::ExecuteAndWait(PF_LINKER, argRefs, std::nullopt, {}, 0, 0,
                                     &error);
  if (rc != 0) {
    std::string line;
    for (const std::string &a : args)
      line += a + " ";
    return where->emitError()
           << "linking " << output << " failed (exit " << rc
           << (error.empty() ? "" : ": ") << error << "): " << line;
  }
  return success();
}
} // namespace

/// A DenseI64ArrayAttr as a JSON array (empty when absent).
static llvm::json::Array jsonArray(Attribute a) {
  llvm::json::Array out;
  if (auto dims = dyn_cast_or_null<DenseI64ArrayAttr>(a))
    for (int64_t d : dims.asArrayRef())
      out.push_back(d);
  return out;
}

/// Translates `rankModule` to LLVM IR and links it into `dir`/`name` (an
/// executable) and `dir`/lib`name`.so.
static LogicalResult buildRank(ModuleOp rankModule, StringRef dir,
                               const std::string &name) {
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(rankModule, llvmContext, name);
  if (!llvmModule)
    return rankModule.emitError("cannot translate to LLVM IR (did "
                                "convert-pf-to-cpu run?)");
  SmallString<128> object(dir), exe(dir), so(dir);
  llvm::sys::path::append(object, name + ".o");
  llvm::sys::path::append(exe, name);
  llvm::sys::path::append(so, "lib" + name + ".so");
  if (failed(compileObject(rankModule, *llvmModule, object)) ||
      failed(link(rankModule, object, exe, /*shared=*/false)) ||
      failed(link(rankModule, object, so, /*shared=*/true)))
    return failure();
  // A leftover object file beside the artifacts is harmless.
  std::error_code notRemoved = llvm::sys::fs::remove(object);
  (void)notRemoved;
  return success();
}

/// The manifest's inputs of a rank: each step input's shape and dtype, and
/// where this rank's local data sits in the logical input: boxes (one per
/// micro-batch when the batch is split) of box_shape.
static llvm::json::Array inputsEntry(ModuleOp rankModule) {
  llvm::json::Array inputs;
  auto list = rankModule->getAttrOfType<ArrayAttr>(artifact::kInputsAttrName);
  if (!list)
    return inputs;
  namespace key = artifact::input;
  for (auto entry : list.getAsRange<DictionaryAttr>()) {
    llvm::json::Object input{
        {"index", cast<IntegerAttr>(entry.get(key::kIndex)).getInt()},
        {"shape", jsonArray(entry.get(key::kShape))},
        {"dtype", cast<StringAttr>(entry.get(key::kDtype)).getValue()}};
    if (Attribute a = entry.get(key::kLogicalShape))
      input["logical_shape"] = jsonArray(a);
    if (Attribute a = entry.get(key::kBoxShape))
      input["box_shape"] = jsonArray(a);
    if (auto boxes = dyn_cast_or_null<ArrayAttr>(entry.get(key::kBoxes))) {
      llvm::json::Array boxList;
      for (Attribute b : boxes)
        boxList.push_back(jsonArray(b));
      input["boxes"] = std::move(boxList);
    }
    inputs.push_back(std::move(input));
  }
  return inputs;
}

/// An inference step's results: local shape, dtype, placement and SBP.
static llvm::json::Array outputsEntry(ArrayAttr list) {
  llvm::json::Array outputs;
  namespace key = artifact::output;
  for (auto out : list.getAsRange<DictionaryAttr>()) {
    auto text = [&](StringRef name) {
      return cast<StringAttr>(out.get(name)).getValue().str();
    };
    outputs.push_back(llvm::json::Object{
        {"index", cast<IntegerAttr>(out.get(key::kIndex)).getInt()},
        {"local_shape", jsonArray(out.get(key::kLocalShape))},
        {"shape", jsonArray(out.get(key::kShape))},
        {"dtype", text(key::kDtype)},
        {"placement", text(key::kPlacement)},
        {"sbp", text(key::kSbp)}});
  }
  return outputs;
}

/// A rank's entry of the manifest.
static llvm::json::Object rankEntry(ModuleOp rankModule, int64_t rank,
                                    const std::string &name) {
  bool reportsLoss = false;
  if (auto r =
          rankModule->getAttrOfType<BoolAttr>(artifact::kReportsLossAttrName))
    reportsLoss = r.getValue();
  int64_t microbatches = 1;
  if (auto m = rankModule->getAttrOfType<IntegerAttr>(
          artifact::kNumMicrobatchesAttrName))
    microbatches = m.getInt();
  // The static memory plan's totals (bytes): the runtime's arena size.
  llvm::json::Object memory;
  if (auto plan =
          rankModule->getAttrOfType<DictionaryAttr>(artifact::kMemoryAttrName))
    for (NamedAttribute entry : plan)
      if (auto v = dyn_cast<IntegerAttr>(entry.getValue()))
        memory[entry.getName().getValue()] = v.getInt();
  std::string backend = "cpu";
  if (auto b =
          rankModule->getAttrOfType<StringAttr>(artifact::kBackendAttrName))
    backend = b.getValue().str();
  llvm::json::Object entry{{"rank", rank},
                           {"executable", name},
                           {"shared_object", "lib" + name + ".so"},
                           {"backend", backend},
                           {"inputs", inputsEntry(rankModule)},
                           {"reports_loss", reportsLoss},
                           {"num_microbatches", microbatches},
                           {"memory", std::move(memory)}};
  if (auto list =
          rankModule->getAttrOfType<ArrayAttr>(artifact::kOutputsAttrName))
    entry["outputs"] = outputsEntry(list);
  return entry;
}

/// Writes `manifest` to `dir`/manifest.json and a copy to `os`.
static LogicalResult writeManifest(ModuleOp module, StringRef dir,
                                   llvm::json::Object manifest,
                                   raw_ostream &os) {
  std::string text;
  llvm::raw_string_ostream textOs(text);
  textOs << llvm::formatv("{0:2}", llvm::json::Value(std::move(manifest)))
         << "\n";
  SmallString<128> manifestPath(dir);
  llvm::sys::path::append(manifestPath, "manifest.json");
  std::error_code ec;
  llvm::raw_fd_ostream file(manifestPath, ec);
  if (ec)
    return module.emitError() << "cannot write " << manifestPath;
  file << text;
  os << text;
  return success();
}

LogicalResult mlir::pf::emitRankArtifacts(ModuleOp module, StringRef dir,
                                          raw_ostream &os) {
  // Located at the module, without printing it: the whole input would follow.
  if (dir.empty())
    return emitError(
        module.getLoc(),
        "pf-emit-rank-artifacts needs an output directory: pf-translate "
        "--pf-emit-rank-artifacts in.mlir --pf-artifact-dir=DIR (-o names "
        "the file that receives a copy of the manifest)");
  // The pf dialect need not be loaded here: the rank modules are LLVM
  // dialect by now, so the helpers are built from the context.
  PFDialect::RankAttrHelper rankAttr(module.getContext());
  SmallVector<ModuleOp> ranks;
  for (auto m : module.getOps<ModuleOp>())
    if (rankAttr.isAttrPresent(m))
      ranks.push_back(m);
  if (ranks.empty())
    return module.emitError("pf-emit-rank-artifacts expects per-rank modules "
                            "lowered to the LLVM dialect "
                            "(pf-compile-cpu-pipeline)");
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return module.emitError()
           << "cannot create " << dir << ": " << ec.message();

  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();

  llvm::json::Array rankEntries;
  int64_t world = 0;
  if (IntegerAttr ws =
          PFDialect::WorldSizeAttrHelper(module.getContext()).getAttr(module))
    world = ws.getInt();
  for (ModuleOp rankModule : ranks) {
    int64_t rank = rankAttr.getAttr(rankModule).getInt();
    world = std::max(world, rank + 1);
    std::string name = ("rank" + llvm::Twine(rank)).str();
    if (failed(buildRank(rankModule, dir, name)))
      return failure();
    rankEntries.push_back(rankEntry(rankModule, rank, name));
  }
  return writeManifest(module, dir,
                       llvm::json::Object{{"format", kRankArtifactsFormat},
                                          {"world_size", world},
                                          {"ranks", std::move(rankEntries)}},
                       os);
}

void mlir::pf::registerRankArtifactsTranslation() {
  // The translation writes several files: their directory is its own option
  // (mlir-translate's `-o` is one output file, here a copy of the manifest).
  static llvm::cl::opt<std::string> artifactDir(
      "pf-artifact-dir",
      llvm::cl::desc("Directory that --pf-emit-rank-artifacts writes "
                     "rank<r>, librank<r>.so and manifest.json into"),
      llvm::cl::value_desc("directory"));
  TranslateFromMLIRRegistration registration(
      "pf-emit-rank-artifacts",
      "compile per-rank LLVM-dialect modules into DIR/rank<r> executables, "
      "DIR/librank<r>.so and DIR/manifest.json (--pf-artifact-dir=DIR)",
      [](Operation *op, raw_ostream &os) -> LogicalResult {
        auto module = dyn_cast<ModuleOp>(op);
        if (!module)
          return op->emitError("expected a builtin.module");
        return emitRankArtifacts(module, artifactDir, os);
      },
      [](DialectRegistry &registry) {
        registry.insert<PFDialect, LLVM::LLVMDialect>();
        registerBuiltinDialectTranslation(registry);
        registerLLVMDialectTranslation(registry);
      });
}
