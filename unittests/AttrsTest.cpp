//===- AttrsTest.cpp - C++ API of placements, SBP and global types --------===//

#include "pf/Dialect/PF/IR/PFOps.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::pf;

namespace {
class PFAttrsTest : public ::testing::Test {
protected:
  PFAttrsTest() { context.getOrLoadDialect<PFDialect>(); }

  template <typename T> T parse(StringRef text) {
    return dyn_cast_or_null<T>(parseAttribute(text, &context));
  }
  GlobalType parseGlobal(StringRef text) {
    return dyn_cast_or_null<GlobalType>(parseType(text, &context));
  }

  MLIRContext context;
};

TEST_F(PFAttrsTest, PlacementHierarchy) {
  auto p =
      parse<PlacementAttr>("#pf.placement<\"cuda\", [[4, 5, 6], [1, 2, 3]]>");
  ASSERT_TRUE(p);
  EXPECT_TRUE(p.isCuda());
  EXPECT_EQ(p.getNumHierarchyDims(), 2u);
  EXPECT_EQ(p.getNumRanks(), 6);
  EXPECT_EQ(p.indexOf(1), 3);
  EXPECT_EQ(p.indexOf(7), -1);
  EXPECT_EQ(p.getCoordinates(4), (SmallVector<int64_t>{1, 1}));
  EXPECT_EQ(p.getCoordinates(2), (SmallVector<int64_t>{0, 2}));
  PlacementAttr flat = p.flatten();
  EXPECT_EQ(flat.getNumHierarchyDims(), 1u);
  EXPECT_EQ(flat.getRanks(), p.getRanks());
}

TEST_F(PFAttrsTest, PlacementRejectsBadRankLists) {
  ScopedDiagnosticHandler silence(&context,
                                  [](Diagnostic &) { return success(); });
  EXPECT_FALSE(parse<PlacementAttr>("#pf.placement<\"cpu\", [0, 0]>"));
  EXPECT_FALSE(parse<PlacementAttr>("#pf.placement<\"cpu\", [-1]>"));
  EXPECT_FALSE(parse<PlacementAttr>("#pf.placement<\"cpu\", [[0, 1], [2]]>"));
  EXPECT_FALSE(parse<PlacementAttr>("#pf.placement<\"tpu\", [0]>"));
}

TEST_F(PFAttrsTest, SBPEntries) {
  auto sbp = parse<SBPAttr>("#pf.sbp<[S(1), B, P]>");
  ASSERT_TRUE(sbp);
  ASSERT_EQ(sbp.size(), 3u);
  EXPECT_TRUE(sbp[0].isSplit());
  EXPECT_EQ(sbp[0].getAxis(), 1);
  EXPECT_TRUE(sbp[1].isBroadcast());
  EXPECT_TRUE(sbp[2].isPartial());
  EXPECT_EQ(sbp[0].str(), "S(1)");
  EXPECT_FALSE(sbp.isAllBroadcast());
  EXPECT_TRUE(SBPAttr::getBroadcast(&context, 2).isAllBroadcast());
  EXPECT_EQ(SBPAttr::get(&context, {SBPDim::split(1), SBPDim::broadcast(),
                                    SBPDim::partial()}),
            sbp);
}

TEST_F(PFAttrsTest, LocalShapeUnderNDSBP) {
  GlobalType t = parseGlobal("!pf.global<8x12xf32, #pf.placement<\"cpu\", "
                             "[[0, 1, 2], [3, 4, 5]]>, #pf.sbp<[S(0), S(1)]>>");
  ASSERT_TRUE(t);
  EXPECT_EQ(t.getLocalShape(), (SmallVector<int64_t>{4, 4}));
  EXPECT_EQ(t.getNumElements(), 96);
  EXPECT_EQ(t.getSbp().getSplitFactor(0, t.getPlacement()), 2);
  EXPECT_EQ(t.getSbp().getSplitFactor(1, t.getPlacement()), 3);

  // Both hierarchy dims split axis 0: 2 * 3 = 6 shards of 24 / 6 rows.
  GlobalType both = parseGlobal(
      "!pf.global<24x5xf32, #pf.placement<\"cpu\", [[0, 1, 2], [3, 4, 5]]>, "
      "#pf.sbp<[S(0), S(0)]>>");
  ASSERT_TRUE(both);
  EXPECT_EQ(both.getLocalShape(), (SmallVector<int64_t>{4, 5}));
  EXPECT_EQ(both.getLocalTensorType().getShape(), (ArrayRef<int64_t>{4, 5}));
}

TEST_F(PFAttrsTest, GlobalTypeLayoutCompatibility) {
  GlobalType a = parseGlobal(
      "!pf.global<4x4xf32, #pf.placement<\"cpu\", [0, 1]>, #pf.sbp<[S(0)]>>");
  ASSERT_TRUE(a);
  GlobalType b = a.withSBP(SBPAttr::getBroadcast(&context, 1));
  EXPECT_NE(a, b);
  EXPECT_TRUE(a.isLayoutCompatibleWith(b));
  EXPECT_FALSE(a.isLayoutCompatibleWith(a.withShape({2, 8})));
  EXPECT_FALSE(a.withSBP({}).hasSBP());
}

TEST_F(PFAttrsTest, NonDivisibleSplitIsRejected) {
  std::string message;
  ScopedDiagnosticHandler capture(&context, [&](Diagnostic &d) {
    message = d.str();
    return success();
  });
  EXPECT_FALSE(parseGlobal(
      "!pf.global<15x4xf32, #pf.placement<\"cpu\", [0, 1]>, #pf.sbp<[S(0)]>>"));
  EXPECT_NE(message.find("dimension 0 of size 15 is not divisible by the 2 "
                         "ranks"),
            std::string::npos)
      << message;
}

TEST_F(PFAttrsTest, InitRoundTrip) {
  auto init = parse<InitAttr>("#pf.init<kaiming_uniform(784)>");
  ASSERT_TRUE(init);
  EXPECT_EQ(init.getKind(), InitKind::KaimingUniform);
  EXPECT_EQ(init.getFirst(), 784.0);
  auto normal = parse<InitAttr>("#pf.init<normal(0.5, 2.0)>");
  ASSERT_TRUE(normal);
  EXPECT_EQ(normal.getFirst(), 0.5);
  EXPECT_EQ(normal.getSecond(), 2.0);
}
} // namespace
