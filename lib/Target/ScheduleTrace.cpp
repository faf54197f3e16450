//===- ScheduleTrace.cpp - pictures of pipeline schedules -----------------===//

#include "pf/Target/ScheduleTrace.h"
#include "pf/Analysis/Schedule.h"
#include "pf/Dialect/PF/IR/PFOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mlir::pf;

namespace {
struct Timeline {
  ScheduleOp op;
  schedule::Plan plan;
  schedule::Result result;
};

FailureOr<SmallVector<Timeline>> timelines(Operation *root) {
  SmallVector<Timeline> out;
  auto module = dyn_cast<ModuleOp>(root);
  if (!module)
    return root->emitError("expected a builtin.module");
  for (auto op : module.getOps<ScheduleOp>()) {
    Timeline t{op, schedule::planOf(op), {}};
    t.result = schedule::simulate(t.plan, op.getNumStages(),
                                  op.getNumMicrobatches(), op.getNumChunks(),
                                  schedule::splitsW(t.plan), schedule::Costs());
    if (!t.result.error.empty())
      return op.emitOpError() << t.result.error;
    out.push_back(std::move(t));
  }
  if (out.empty())
    return module.emitError("no pf.schedule to draw (run pf-schedule)");
  return out;
}

const char *colour(char kind) {
  return kind == 'F' ? "#7fb3e0" : kind == 'B' ? "#f4a261" : "#90be6d";
}
} // namespace

void mlir::pf::registerScheduleTraceTranslations() {
  TranslateFromMLIRRegistration trace(
      "pf-emit-schedule-trace",
      "the predicted timeline of each pf.schedule as Chrome-trace JSON "
      "(unit costs; 1 unit = 1 ms)",
      [](Operation *op, raw_ostream &os) -> LogicalResult {
        auto lines = timelines(op);
        if (failed(lines))
          return failure();
        llvm::json::Array events;
        for (auto &t : *lines) {
          bool chunks = t.op.getNumChunks() > 1;
          for (auto [r, actions] : llvm::enumerate(t.plan))
            for (auto [a, time] : llvm::zip(actions, t.result.times[r]))
              events.push_back(llvm::json::Object{
                  {"name", a.str(chunks)},
                  {"cat", std::string(1, a.kind)},
                  {"ph", "X"},
                  {"ts", time.first * 1000.0},
                  {"dur", (time.second - time.first) * 1000.0},
                  {"pid", 0},
                  {"tid", (int64_t)r},
                  {"args", llvm::json::Object{{"microbatch", a.mb},
                                              {"chunk", a.chunk}}}});
        }
        os << llvm::formatv("{0:2}", llvm::json::Value(llvm::json::Object{
                                         {"traceEvents", std::move(events)}}))
           << "\n";
        return success();
      },
      [](DialectRegistry &registry) { registry.insert<PFDialect>(); });

  TranslateFromMLIRRegistration svg(
      "pf-emit-schedule-svg",
      "the predicted timeline of each pf.schedule as an SVG drawing",
      [](Operation *op, raw_ostream &os) -> LogicalResult {
        auto lines = timelines(op);
        if (failed(lines))
          return failure();
        const double unit = 28, row = 30, left = 70, top = 30;
        double height = top, width = left;
        for (auto &t : *lines) {
          height += row * (t.plan.size() + 2);
          width = std::max(width, left + unit * t.result.makespan + 20);
        }
        os << llvm::formatv("<svg xmlns=\"http://www.w3.org/2000/svg\" "
                            "width=\"{0:F0}\" height=\"{1:F0}\" "
                            "font-family=\"Helvetica\" font-size=\"11\">\n",
                            width, height);
        double y = top;
        for (auto &t : *lines) {
          bool chunks = t.op.getNumChunks() > 1;
          os << llvm::formatv("<text x=\"4\" y=\"{0}\" font-size=\"13\">{1}: "
                              "{2} stages, {3} micro-batches, bubble "
                              "{4:F1}%</text>\n",
                              y - 8, t.op.getKind(), t.op.getNumStages(),
                              t.op.getNumMicrobatches(),
                              100.0 * t.result.bubbleFraction());
          for (auto [r, actions] : llvm::enumerate(t.plan)) {
            os << llvm::formatv("<text x=\"4\" y=\"{0}\">rank {1}</text>\n",
                                y + row * r + 18, r);
            for (auto [a, time] : llvm::zip(actions, t.result.times[r])) {
              double x = left + unit * time.first;
              double w = unit * (time.second - time.first);
              os << llvm::formatv(
                  "<rect x=\"{0}\" y=\"{1}\" width=\"{2}\" height=\"{3}\" "
                  "fill=\"{4}\" stroke=\"#333\"/><text x=\"{5}\" y=\"{6}\" "
                  "text-anchor=\"middle\">{7}</text>\n",
                  x, y + row * r + 2, w, row - 4, colour(a.kind), x + w / 2,
                  y + row * r + 19, a.str(chunks));
            }
          }
          y += row * (t.plan.size() + 2);
        }
        os << "</svg>\n";
        return success();
      },
      [](DialectRegistry &registry) { registry.insert<PFDialect>(); });
}
