//===- MemoryReport.cpp - pf-memory-report: does each rank fit ------------===//
//
// The rank lowering leaves every rank's static memory plan on its module
// (`pfrt.memory`, MemoryPlan::toAttr); this pass prints them as one table
// and, given the device's memory, fails on a rank whose arena is larger:
// the answer to "does it fit" before any job starts. `pf-opt
// --memory-report` appends it to any pipeline.
//
//===----------------------------------------------------------------------===//

#include "pf/Conversion/Passes.h"
#include "pf/Dialect/PF/IR/PFDialect.h"
#include "pf/Target/ArtifactAttrs.h"

#include "llvm/Support/FormatVariadic.h"

namespace mlir::pf {
#define GEN_PASS_DEF_MEMORYREPORTPASS
#include "pf/Conversion/Passes.h.inc"
} // namespace mlir::pf

using namespace mlir;
using namespace mlir::pf;

namespace key = artifact::memory;

namespace {

/// A column of the table: the plan's key and what the table calls it.
struct Category {
  StringLiteral key;
  StringLiteral name;
};

/// One line's columns, in order. Inputs and activations are part of the
/// step's peak; the arena is the whole plan.
constexpr Category kColumns[] = {{key::kParameterBytes, "parameters"},
                                 {key::kGradientBytes, "gradients"},
                                 {key::kStateBytes, "optimizer states"},
                                 {key::kInputBytes, "inputs"},
                                 {key::kActivationPeakBytes, "activations"},
                                 {key::kStepPeakBytes, "step peak"},
                                 {key::kArenaBytes, "arena"}};

/// The arena's parts: the largest says why a rank does not fit.
constexpr Category kArenaParts[] = {{key::kParameterBytes, "parameters"},
                                    {key::kGradientBytes, "gradients"},
                                    {key::kStateBytes, "optimizer states"},
                                    {key::kStepPeakBytes, "step peak"}};

/// One rank's plan.
struct RankPlan {
  /// The rank's module (an Operation *: errors are emitted at it from a
  /// const plan).
  Operation *module = nullptr;
  int64_t rank = 0;
  DictionaryAttr plan;

  /// The entry `name` (checked present by readPlans).
  int64_t bytes(StringRef name) const {
    return plan.getAs<IntegerAttr>(name).getInt();
  }
};

/// `bytes` in the largest binary unit it reaches, as the Python front end
/// writes it (`1.53 MiB`, `512 bytes`).
std::string readable(int64_t bytes) {
  constexpr std::pair<StringLiteral, int64_t> kUnits[] = {
      {"GiB", int64_t(1) << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}};
  for (const auto &[unit, scale] : kUnits)
    if (bytes >= scale)
      return llvm::formatv("{0:F2} {1}", double(bytes) / double(scale), unit);
  return llvm::formatv("{0} bytes", bytes);
}

/// `1607680 (1.53 MiB)`.
std::string sized(int64_t bytes) {
  return llvm::formatv("{0} ({1})", bytes, readable(bytes));
}

/// The rank modules' plans in rank order: the module itself when it is a
/// rank (`pf.rank`), else the rank modules it holds. A located error when
/// none has a plan, a rank lacks one the others have, or a plan lacks a
/// category.
FailureOr<SmallVector<RankPlan>> readPlans(ModuleOp top) {
  StringRef rankName = PFDialect::RankAttrHelper::getNameStr();
  SmallVector<ModuleOp> modules;
  if (top->hasAttr(rankName))
    modules.push_back(top);
  else
    llvm::append_range(modules, llvm::make_filter_range(
                                    top.getOps<ModuleOp>(), [&](ModuleOp m) {
                                      return m->hasAttr(rankName);
                                    }));
  SmallVector<RankPlan> plans;
  for (ModuleOp m : modules) {
    RankPlan p{m, 0,
               m->getAttrOfType<DictionaryAttr>(artifact::kMemoryAttrName)};
    if (auto r = m->getAttrOfType<IntegerAttr>(rankName))
      p.rank = r.getInt();
    plans.push_back(p);
  }
  if (llvm::none_of(plans, [](const RankPlan &p) { return bool(p.plan); }))
    return emitError(
        top.getLoc(),
        "no memory plan: run a compile pipeline (pf-compile-cpu-pipeline or "
        "pf-compile-gpu-pipeline, to its end: the rank lowering plans each "
        "rank's memory) first");
  bool complete = true;
  for (const RankPlan &p : plans) {
    if (!p.plan) {
      emitError(p.module->getLoc())
          << "rank " << p.rank
          << " has no memory plan (pfrt.memory) while other "
             "ranks of the module have one";
      complete = false;
      continue;
    }
    for (const Category &c : kColumns)
      if (!p.plan.getAs<IntegerAttr>(c.key)) {
        emitError(p.module->getLoc())
            << "rank " << p.rank << "'s memory plan has no integer " << c.key;
        complete = false;
      }
  }
  if (!complete)
    return failure();
  llvm::sort(plans, [](const RankPlan &a, const RankPlan &b) {
    return a.rank < b.rank;
  });
  return plans;
}

/// The plan's step lower bound by element type, from its
/// `step_lower_bound_<dtype>_bytes` entries (sorted by dtype, as the
/// dictionary is).
SmallVector<std::pair<StringRef, int64_t>>
lowerBoundByDtype(DictionaryAttr plan) {
  SmallVector<std::pair<StringRef, int64_t>> byDtype;
  for (NamedAttribute entry : plan) {
    StringRef name = entry.getName().getValue();
    auto bytes = dyn_cast<IntegerAttr>(entry.getValue());
    if (!bytes || name == key::kLowerBoundBytes ||
        !name.consume_front(key::kLowerBoundPrefix) ||
        !name.consume_back(key::kBytesSuffix))
      continue;
    byDtype.emplace_back(name, bytes.getInt());
  }
  return byDtype;
}

/// The rank with the largest arena (the first of equals).
const RankPlan &largestRank(ArrayRef<RankPlan> plans) {
  return *llvm::max_element(plans, [](const RankPlan &a, const RankPlan &b) {
    return a.bytes(key::kArenaBytes) < b.bytes(key::kArenaBytes);
  });
}

/// The table: a header, a line per rank, the largest rank's lower bound.
void printTable(ArrayRef<RankPlan> plans, raw_ostream &os) {
  os << "pf-memory-report: " << plans.size()
     << (plans.size() == 1 ? " rank" : " ranks")
     << ", bytes (arena = parameters + gradients + optimizer states + step "
        "peak)\n";
  for (const RankPlan &p : plans) {
    os << "rank " << p.rank << ": ";
    llvm::interleaveComma(kColumns, os, [&](const Category &c) {
      os << c.name << " " << sized(p.bytes(c.key));
    });
    os << "\n";
  }
  const RankPlan &largest = largestRank(plans);
  os << "largest: rank " << largest.rank << ", arena "
     << sized(largest.bytes(key::kArenaBytes));
  if (auto bound = largest.plan.getAs<IntegerAttr>(key::kLowerBoundBytes)) {
    os << "; step lower bound " << sized(bound.getInt());
    SmallVector<std::pair<StringRef, int64_t>> byDtype =
        lowerBoundByDtype(largest.plan);
    if (!byDtype.empty())
      os << ": ";
    llvm::interleaveComma(byDtype, os, [&](const auto &entry) {
      os << entry.first << " " << sized(entry.second);
    });
  }
  os << "\n";
}

/// A located error for every rank whose arena exceeds `device` bytes,
/// after the table's line saying which do.
LogicalResult checkDeviceMemory(ArrayRef<RankPlan> plans, int64_t device,
                                raw_ostream &os) {
  SmallVector<const RankPlan *> over;
  for (const RankPlan &p : plans)
    if (p.bytes(key::kArenaBytes) > device)
      over.push_back(&p);
  os << "device memory " << sized(device) << ": ";
  if (over.empty()) {
    const RankPlan &largest = largestRank(plans);
    os << "every rank fits, the largest (rank " << largest.rank << ") leaves "
       << sized(device - largest.bytes(key::kArenaBytes)) << "\n";
    return success();
  }
  os << (over.size() == 1 ? "rank " : "ranks ");
  llvm::interleaveComma(over, os, [&](const RankPlan *p) { os << p->rank; });
  os << (over.size() == 1 ? " does" : " do") << " not fit\n";
  for (const RankPlan *p : over) {
    const Category &part = *llvm::max_element(
        kArenaParts, [&](const Category &a, const Category &b) {
          return p->bytes(a.key) < p->bytes(b.key);
        });
    int64_t arena = p->bytes(key::kArenaBytes);
    InFlightDiagnostic diag = emitError(p->module->getLoc());
    diag << "rank " << p->rank << " does not fit: its memory plan needs "
         << arena << " bytes (" << readable(arena) << "), the device has "
         << device << " (" << readable(device) << "); the largest category is "
         << part.name << " " << sized(p->bytes(part.key));
    diag.attachNote()
        << "ZeRO (pf-optimizer's zero-stage) splits optimizer states, "
           "gradients and parameters over the data-parallel ranks; "
           "activation checkpointing and more pipeline stages lower the "
           "step's peak";
  }
  return failure();
}

struct MemoryReportPass
    : public pf::impl::MemoryReportPassBase<MemoryReportPass> {
  using MemoryReportPassBase::MemoryReportPassBase;

  void runOnOperation() override {
    markAllAnalysesPreserved();
    ModuleOp top = getOperation();
    if (deviceMemory < 0) {
      emitError(top.getLoc())
          << "pf-memory-report: device-memory must be at least 0 "
             "(0: no check), got "
          << int64_t(deviceMemory);
      return signalPassFailure();
    }
    FailureOr<SmallVector<RankPlan>> plans = readPlans(top);
    if (failed(plans))
      return signalPassFailure();
    printTable(*plans, llvm::errs());
    if (deviceMemory > 0 &&
        failed(checkDeviceMemory(*plans, deviceMemory, llvm::errs())))
      signalPassFailure();
  }
};

} // namespace
