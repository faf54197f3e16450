//===- ScheduleTrace.h - pictures of pipeline schedules ---------*- C++ -*-===//

#ifndef PF_TARGET_SCHEDULETRACE_H
#define PF_TARGET_SCHEDULETRACE_H

namespace mlir::pf {
/// Registers `--pf-emit-schedule-trace` (the predicted timeline of every
/// pf.schedule as Chrome-trace JSON, one row per rank) and
/// `--pf-emit-schedule-svg` (the same timeline as an SVG drawing).
void registerScheduleTraceTranslations();
} // namespace mlir::pf

#endif // PF_TARGET_SCHEDULETRACE_H
