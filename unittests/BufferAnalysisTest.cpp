//===- BufferAnalysisTest.cpp - multi-tensor update groups ----------------===//
//
// Which optimizer updates BufferAnalysis groups into one multi-tensor call
// (groupUpdates, GPU ranks): a run of compatible in-place updates, and no
// run where one launch would reorder a read and a write of a parameter.
//
//===----------------------------------------------------------------------===//

#include "pf/Conversion/Common/BufferAnalysis.h"
#include "pf/Dialect/PF/IR/PFOps.h"
#include "pf/InitAllDialects.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "gtest/gtest.h"

#include <string>
#include <vector>

using namespace mlir;
using namespace mlir::pf;

namespace {

const char *const kType = "!pf.global<8xf32, #pf.placement<\"cuda\", [0]>, "
                          "#pf.sbp<[B]>>";
const char *const kScalar =
    "!pf.global<f32, #pf.placement<\"cuda\", [0]>, #pf.sbp<[B]>>";

class BufferAnalysisTest : public ::testing::Test {
protected:
  BufferAnalysisTest() {
    DialectRegistry registry;
    registerAllDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// Parses a module with parameters @a, @b, @c, @g and a step whose body
  /// is `body` (uses %lr, %lr2: run-time scalars), and returns, per update
  /// in program order, the index of its group or -1.
  std::vector<int> groups(const std::string &body) {
    std::string text;
    for (const char *p : {"a", "b", "c", "g"})
      text += std::string("pf.param @") + p + " : " + kType +
              " = #pf.init<zeros>\n";
    text += "func.func @step() {\n  %lr = pf.scalar_input \"lr\" : " +
            std::string(kScalar) +
            "\n  %lr2 = pf.scalar_input \"lr2\" : " + kScalar + "\n" + body +
            "  return\n}\n";
    module = parseSourceString<ModuleOp>(text, &context);
    EXPECT_TRUE(module) << text;
    if (!module)
      return {};
    auto step = cast<func::FuncOp>(module->lookupSymbol("step"));
    // A GPU rank's decisions (pf-gpu-folds without element-wise groups),
    // recorded as attributes, then read back as the lowering reads them:
    // the groups below went through the IR.
    Block &block = step.getBody().front();
    {
      BufferAnalysis decide(block);
      decide.planInPlace(block);
      decide.fuseBiasRelus(block);
      decide.foldAccumulation(block);
      decide.foldGemmBiases(block, /*withRelu=*/true);
      decide.pairBiasGradients(block);
      decide.groupUpdateRuns(block);
      decide.record(block);
    }
    BufferAnalysis analysis(block);
    copying.clear();
    step.walk([&](ReadParamOp read) {
      if (analysis.isCopyingRead(read))
        copying.push_back(read.getParam().str());
    });
    std::vector<int> out;
    std::vector<const UpdateGroup *> seen;
    step.walk([&](SGDUpdateOp op) {
      const UpdateGroup *g = analysis.updateGroupOf(op);
      if (!g) {
        out.push_back(-1);
        return;
      }
      auto it = std::find(seen.begin(), seen.end(), g);
      if (it == seen.end()) {
        seen.push_back(g);
        it = seen.end() - 1;
      }
      out.push_back(int(it - seen.begin()));
    });
    return out;
  }

  /// `%<name>_new = sgd_update(%<p>, %<grad>, %<lr>)` written back to @p.
  static std::string update(const std::string &p, const std::string &grad,
                            const std::string &lr = "%lr") {
    return "  %" + p + "_new = pf.sgd_update %" + p + "_r, " + grad + ", " +
           lr + " : (" + kType + ", " + kType + ", " + kScalar + ") -> " +
           kType + "\n  pf.write_param %" + p + "_new to @" + p + " : " +
           kType + "\n";
  }
  static std::string read(const std::string &p, const std::string &as) {
    return "  " + as + " = pf.read_param @" + p + " : " + kType + "\n";
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  /// The parameters whose reads copy (of the last `groups`).
  std::vector<std::string> copying;
};

TEST_F(BufferAnalysisTest, ARunOfInPlaceUpdatesIsOneGroup) {
  std::string body = read("g", "%grad") + read("a", "%a_r") +
                     read("b", "%b_r") + read("c", "%c_r") +
                     update("a", "%grad") + update("b", "%grad") +
                     update("c", "%grad");
  EXPECT_EQ(groups(body), (std::vector<int>{0, 0, 0}));
}

TEST_F(BufferAnalysisTest, AnotherLearningRateStartsAnotherRun) {
  std::string body = read("g", "%grad") + read("a", "%a_r") +
                     read("b", "%b_r") + read("c", "%c_r") +
                     update("a", "%grad") + update("b", "%grad") +
                     update("c", "%grad", "%lr2");
  EXPECT_EQ(groups(body), (std::vector<int>{0, 0, -1}));
}

// @a's update reads @b (its gradient) in place; a later update writes @b
// in place: one launch would not order the read before the write.
TEST_F(BufferAnalysisTest, NoMemberWritesWhatAnEarlierOneRead) {
  std::string body = read("a", "%a_r") + read("b", "%b_r") +
                     read("g", "%grad") + update("a", "%b_r") +
                     update("b", "%grad") + read("c", "%c_r") +
                     update("c", "%grad");
  EXPECT_EQ(groups(body), (std::vector<int>{-1, 0, 0}));
}

// The same through a view of the parameter (a reshape aliases its
// operand's buffer).
TEST_F(BufferAnalysisTest, AViewOfAParameterCountsAsReadingIt) {
  std::string body = read("a", "%a_r") + read("b", "%b_r") +
                     read("g", "%grad") + "  %bv = pf.reshape %b_r : " + kType +
                     " -> " + kType + "\n" + update("a", "%bv") +
                     update("b", "%grad");
  EXPECT_EQ(groups(body), (std::vector<int>{-1, -1}));
}

// A read of a parameter an earlier member wrote ends the run there (a
// use of it would also make @a's update not in place: then @a's update is
// no member at all).
TEST_F(BufferAnalysisTest, AReadOfAnUpdatedParameterEndsTheRun) {
  std::string body = read("g", "%grad") + read("a", "%a_r") +
                     read("b", "%b_r") + update("a", "%grad") +
                     update("b", "%grad") + read("a", "%again") +
                     read("c", "%c_r") + update("c", "%grad");
  EXPECT_EQ(groups(body), (std::vector<int>{0, 0, -1}));
  body = read("g", "%grad") + read("a", "%a_r") + read("b", "%b_r") +
         update("a", "%grad") + update("b", "%grad") + read("a", "%again") +
         read("c", "%c_r") + update("c", "%again");
  EXPECT_EQ(groups(body), (std::vector<int>{-1, 0, 0}));
}

// A view of a parameter read before its update and used after it: the
// read copies (the view aliases the read's buffer), so the update may
// still write the parameter in place, and the later reader sees the old
// values.
TEST_F(BufferAnalysisTest, AViewUsedAfterTheWriteMakesTheReadCopy) {
  std::string body = read("g", "%grad") + read("a", "%a_r") +
                     "  %av = pf.reshape %a_r : " + kType + " -> " + kType +
                     "\n" + read("b", "%b_r") + update("a", "%grad") +
                     update("b", "%grad") + read("c", "%c_r") +
                     update("c", "%av");
  EXPECT_EQ(groups(body), (std::vector<int>{0, 0, 0}));
  EXPECT_EQ(copying, (std::vector<std::string>{"a"}));
}

} // namespace
