//===- BoxingCostTest.cpp - inference prices = lowered bytes --------------===//
//
// One cost function (issue 18): for every layout change of the boxing
// table, SBP inference's price (boxingBytes) must equal the bytes per rank
// the lowering's ops move (pf-lower-boxing's report, op by op). 1-D: all 16
// changes among B, P, S(0), S(1) on 4 ranks, each also at its lower bound.
// n-D: changes on a 2x2 grid, per dimension and on the flattened placement.
// The n-D changes whose lowering still gathers and re-slices (a later
// dimension splits the same axis) are listed apart, above the lower bound
// (the most any rank must receive of its new box); the test fails when
// either side changes, so the list stays true.
//
//===----------------------------------------------------------------------===//

#include "pf/Dialect/PF/IR/PFDialect.h"
#include "pf/Dialect/PF/IR/PFOps.h"
#include "pf/Dialect/PF/IR/SBPUtils.h"
#include "pf/Dialect/PF/Transforms/Passes.h"
#include "pf/InitAllDialects.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "gtest/gtest.h"

#include <regex>
#include <string>

using namespace mlir;
using namespace mlir::pf;

namespace {

struct Case {
  std::string placement, from, to;
};

class BoxingCostTest : public ::testing::Test {
protected:
  BoxingCostTest() {
    DialectRegistry registry;
    registerAllDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// (inference price, lowered bytes) of one to_global of a 8x16xf32.
  std::pair<double, double> prices(const Case &c) {
    std::string type = "!pf.global<8x16xf32, #pf.placement<\"cpu\", " +
                       c.placement + ">, #pf.sbp<[";
    std::string from = type + c.from + "]>>", to = type + c.to + "]>>";
    std::string text = "func.func @f(%x: " + from + ") -> " + to +
                       " {\n  %y = pf.to_global %x : " + from + " -> " + to +
                       "\n  return %y : " + to + "\n}\n";
    OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &context);
    EXPECT_TRUE(module) << text;
    if (!module)
      return {-1, -1};
    double price = -1;
    module->walk([&](ToGlobalOp op) {
      auto in = cast<GlobalType>(op.getInput().getType());
      price = boxingBytes(in, in.getSbp(), op.getType().getSbp());
    });
    SmallString<64> path;
    llvm::sys::fs::createTemporaryFile("boxing-report", "txt", path);
    PassManager pm(&context);
    LowerBoxingPassOptions options;
    options.report = true;
    options.reportFile = std::string(path);
    pm.addPass(createLowerBoxingPass(options));
    EXPECT_TRUE(succeeded(pm.run(*module))) << text;
    auto buffer = llvm::MemoryBuffer::getFile(path);
    llvm::sys::fs::remove(path);
    EXPECT_TRUE(static_cast<bool>(buffer));
    double lowered = 0;
    std::string report = buffer ? (*buffer)->getBuffer().str() : "";
    std::regex bytes(": (\\d+) bytes/rank at");
    for (std::sregex_iterator it(report.begin(), report.end(), bytes), end;
         it != end; ++it)
      lowered += std::stod((*it)[1]);
    return {price, lowered};
  }

  /// Without partial sums: the most bytes any rank must receive, the part
  /// of its new box it does not hold already.
  double receiveBound(const Case &c) {
    std::string text = "!pf.global<8x16xf32, #pf.placement<\"cpu\", " +
                       c.placement + ">, #pf.sbp<[" + c.from + "]>>";
    auto from = cast<GlobalType>(parseType(text, &context));
    text = "#pf.sbp<[" + c.to + "]>";
    auto to = cast<SBPAttr>(parseAttribute(text, &context));
    PlacementAttr p = from.getPlacement();
    double bound = 0;
    for (int64_t q = 0; q < p.getNumRanks(); ++q) {
      Box need = shardBox(from.getShape(), p, to, q);
      Box has = shardBox(from.getShape(), p, from.getSbp(), q);
      int64_t held = need.intersect(has).numElements();
      bound = std::max(bound, 4.0 * (need.numElements() - held));
    }
    return bound;
  }

  MLIRContext context;
};

TEST_F(BoxingCostTest, EveryOneDimensionalChangeIsPricedAsLowered) {
  const char *layouts[] = {"B", "P", "S(0)", "S(1)"};
  int checked = 0;
  for (const char *from : layouts)
    for (const char *to : layouts) {
      Case c{"[0, 1, 2, 3]", from, to};
      auto [price, lowered] = prices(c);
      EXPECT_EQ(price, lowered) << from << " -> " << to;
      ++checked;
    }
  EXPECT_EQ(checked, 16);
  // The lower bounds: among B and S, what each rank must receive; from P,
  // a bandwidth-optimal all-reduce (2 (n-1)/n T) or reduce-scatter
  // ((n-1)/n T); to P, nothing (S -> P zero-pads, B -> P keeps one).
  const double total = 8 * 16 * 4, f = 3.0 / 4;
  for (const char *from : layouts)
    for (const char *to : layouts) {
      Case c{"[0, 1, 2, 3]", from, to};
      double lowered = prices(c).second, bound;
      if (std::string(to) == "P")
        bound = 0;
      else if (std::string(from) == "P")
        bound = std::string(to) == "B" ? 2 * f * total : f * total;
      else
        bound = receiveBound(c);
      EXPECT_EQ(lowered, bound) << from << " -> " << to;
    }
}

TEST_F(BoxingCostTest, TwoDimensionalChangesArePricedAsLowered) {
  const std::string grid = "[[0, 1], [2, 3]]";
  const Case cases[] = {
      {grid, "S(0), P", "S(0), B"}, {grid, "P, S(1)", "B, S(1)"},
      {grid, "S(0), S(0)", "B, B"}, {grid, "P, P", "B, B"},
      {grid, "S(0), P", "B, B"},    {grid, "B, B", "S(0), S(1)"},
      {grid, "S(0), B", "S(0), P"}, {grid, "P, B", "S(1), S(0)"},
      {grid, "S(1), S(0)", "B, B"}, {grid, "S(0), S(1)", "P, P"},
  };
  for (const Case &c : cases) {
    auto [price, lowered] = prices(c);
    EXPECT_EQ(price, lowered) << "(" << c.from << ") -> (" << c.to << ")";
  }
}

TEST_F(BoxingCostTest, ConflictingSplitOrdersStillMoveMoreThanTheBound) {
  // Known gap (issue 18): these gather and re-slice. When the lowering
  // reaches the price, move them to the test above.
  const std::string grid = "[[0, 1], [2, 3]]";
  const Case cases[] = {{grid, "B, S(0)", "S(0), S(0)"},
                        {grid, "S(0), S(1)", "S(1), S(0)"}};
  for (const Case &c : cases) {
    auto [price, lowered] = prices(c);
    EXPECT_EQ(price, lowered) << "(" << c.from << ") -> (" << c.to << ")";
    EXPECT_GT(lowered, receiveBound(c))
        << "(" << c.from << ") -> (" << c.to << ")";
  }
  // (B, S0) -> (S0, S0): T/2 gathered per rank against a bound of T/4.
  EXPECT_EQ(prices(cases[0]).second, 256);
  EXPECT_EQ(receiveBound(cases[0]), 128);
}

} // namespace
