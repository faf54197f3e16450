//===- GraphDot.cpp - Graphviz drawing of pf functions --------------------===//

#include "pf/Target/GraphDot.h"
#include "pf/Dialect/PF/IR/PFOps.h"
#include "pf/Dialect/PF/IR/SBPUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/raw_ostream.h"

#include <set>

using namespace mlir;
using namespace mlir::pf;

namespace {
// Fill colours of stages 0, 1, ... (cycled); ops without a stage are white.
constexpr const char *kStageColours[] = {"#a6cee3", "#b2df8a", "#fdbf6f",
                                         "#cab2d6", "#fb9a99", "#ffff99",
                                         "#8dd3c7", "#d9d9d9"};

std::string escape(StringRef s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\')
      out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  return out;
}

/// "16x784xf32 cpu[0, 1] [S(0)]": what a value is, in one short label.
std::string describe(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  auto global = dyn_cast<GlobalType>(type);
  if (!global) {
    os << type;
    return s;
  }
  os << shapeString(global) << "\n";
  PlacementAttr p = global.getPlacement();
  os << p.getDevice() << "[";
  if (p.getNumHierarchyDims() > 1) {
    llvm::interleave(p.getHierarchy(), os, "x");
    os << ": ";
  }
  llvm::interleaveComma(p.getRanks(), os);
  os << "] ";
  if (SBPAttr sbp = global.getSbp()) {
    os << "[";
    llvm::interleaveComma(sbp.getDims(), os,
                          [&](const SBPDim &d) { os << d.str(); });
    os << "]";
  } else {
    os << "[?]";
  }
  return s;
}

class GraphWriter {
public:
  explicit GraphWriter(raw_ostream &os) : os(os) {}

  void writeFunction(func::FuncOp func, unsigned index) {
    os << "  subgraph cluster_" << index << " {\n";
    os << "    label=\"@" << escape(func.getSymName()) << "\";\n";
    for (BlockArgument arg : func.getArguments()) {
      std::string id = newNode();
      nodes[arg] = id;
      os << "    " << id << " [shape=ellipse, label=\"%arg"
         << arg.getArgNumber() << "\"];\n";
    }
    func.walk([&](Operation *op) {
      if (op == func.getOperation())
        return;
      writeOp(op);
    });
    os << "  }\n";
  }

  void writeLegend() {
    if (stages.empty())
      return;
    os << "  subgraph cluster_legend {\n    label=\"stages\";\n";
    for (int64_t s : stages)
      os << "    legend_" << s << " [shape=box, style=filled, fillcolor=\""
         << kStageColours[s % std::size(kStageColours)] << "\", label=\"stage "
         << s << "\"];\n";
    os << "  }\n";
  }

private:
  std::string newNode() { return "n" + std::to_string(counter++); }

  void writeOp(Operation *op) {
    std::string id = newNode();
    std::string label = op->getName().getStringRef().str();
    if (auto read = dyn_cast<ReadParamOp>(op))
      label += " @" + read.getParamAttr().getValue().str();
    else if (auto write = dyn_cast<WriteParamOp>(op))
      label += " @" + write.getParamAttr().getValue().str();
    std::optional<int64_t> stage = getStageAttrValue(op);
    os << "    " << id << " [shape=box, style=filled, fillcolor=\"";
    if (stage) {
      stages.insert(*stage);
      os << kStageColours[*stage % std::size(kStageColours)];
      label += "\nstage " + std::to_string(*stage);
    } else {
      os << "white";
    }
    os << "\", label=\"" << escape(label) << "\"];\n";
    for (Value operand : op->getOperands()) {
      auto it = nodes.find(operand);
      if (it == nodes.end())
        continue; // Defined outside the function (cannot happen in func).
      os << "    " << it->second << " -> " << id << " [label=\""
         << escape(describe(operand.getType())) << "\"];\n";
    }
    for (Value result : op->getResults())
      nodes[result] = id;
  }

  raw_ostream &os;
  unsigned counter = 0;
  llvm::DenseMap<Value, std::string> nodes;
  std::set<int64_t> stages;
};
} // namespace

LogicalResult mlir::pf::emitGraphDot(Operation *op, raw_ostream &os) {
  auto module = dyn_cast<ModuleOp>(op);
  if (!module)
    return op->emitError("pf-emit-graph-dot expects a builtin.module");
  os << "digraph pipeflow {\n  rankdir=TB;\n  node [fontname=\"Helvetica\"];\n"
     << "  edge [fontname=\"Helvetica\", fontsize=9];\n";
  GraphWriter writer(os);
  unsigned index = 0;
  for (auto func : module.getOps<func::FuncOp>())
    if (!func.isExternal())
      writer.writeFunction(func, index++);
  writer.writeLegend();
  os << "}\n";
  return success();
}

void mlir::pf::registerGraphDotTranslation() {
  TranslateFromMLIRRegistration registration(
      "pf-emit-graph-dot",
      "draw each function's op graph with shapes, placements and SBP "
      "(Graphviz dot)",
      [](Operation *op, raw_ostream &os) { return emitGraphDot(op, os); },
      [](DialectRegistry &registry) {
        registry.insert<PFDialect, func::FuncDialect>();
      });
}
