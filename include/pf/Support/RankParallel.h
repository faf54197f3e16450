//===- RankParallel.h - one task per rank module, diagnostics in order ----===//
//
// pf-partition-ranks and the rank lowering do the same work for every rank
// module, each module its own island (the task reads what is shared and
// writes its own module only). They run those tasks on the context's
// threads; the diagnostics are exactly those of a loop in rank order that
// stops at the first failure.
//
//===----------------------------------------------------------------------===//

#ifndef PF_SUPPORT_RANKPARALLEL_H
#define PF_SUPPORT_RANKPARALLEL_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/ThreadPool.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <mutex>
#include <vector>

namespace mlir::pf {

namespace detail {
/// The task this thread runs: which call of forEachRankInOrder (its held
/// diagnostics) and which index; none when `held` is null. Calls may
/// overlap (a nested pass manager runs passes on sibling modules), so a
/// handler takes only its own call's diagnostics.
struct RankTask {
  const void *held = nullptr;
  size_t index = 0;
};
inline thread_local RankTask rankTask;
} // namespace detail

/// Runs task(i) for i in [0, n), in parallel when the context allows. Every
/// task's diagnostics are held back; then those of tasks 0..k are emitted in
/// order, k the first that failed (all of them when none did); a task after
/// a known failure is not started. Not failableParallelForEach: its handler
/// would emit every task's diagnostics, a failed task's successors'
/// included.
inline LogicalResult
forEachRankInOrder(MLIRContext *ctx, size_t n,
                   llvm::function_ref<LogicalResult(size_t)> task) {
  if (n <= 1 || !ctx->isMultithreadingEnabled()) {
    for (size_t i = 0; i < n; ++i)
      if (failed(task(i)))
        return failure();
    return success();
  }
  std::mutex mutex;
  std::vector<std::vector<Diagnostic>> held(n);
  std::vector<char> failedTask(n, 0);
  {
    ScopedDiagnosticHandler handler(ctx, [&](Diagnostic &diag) {
      if (detail::rankTask.held != &held)
        return failure(); // not this call's: the next handler's
      assert(detail::rankTask.index < n && "a task index out of range");
      std::lock_guard<std::mutex> lock(mutex);
      held[detail::rankTask.index].push_back(std::move(diag));
      return success();
    });
    llvm::ThreadPoolInterface &pool = ctx->getThreadPool();
    llvm::ThreadPoolTaskGroup tasks(pool);
    std::atomic<size_t> next(0), firstFailed(n);
    auto work = [&] {
      for (size_t i; (i = next++) < n;) {
        if (i > firstFailed.load())
          continue; // the sequential loop would have stopped before it
        detail::RankTask outer = detail::rankTask;
        detail::rankTask = {&held, i};
        failedTask[i] = failed(task(i));
        detail::rankTask = outer;
        if (failedTask[i]) {
          size_t seen = firstFailed.load();
          while (i < seen && !firstFailed.compare_exchange_weak(seen, i)) {
          }
        }
      }
    };
    size_t workers = std::min<size_t>(n, pool.getMaxConcurrency());
    for (size_t k = 0; k < workers; ++k)
      tasks.async(work);
    tasks.wait();
  }
  DiagnosticEngine &engine = ctx->getDiagEngine();
  for (size_t i = 0; i < n; ++i) {
    for (Diagnostic &diag : held[i])
      engine.emit(std::move(diag));
    if (failedTask[i])
      return failure();
  }
  return success();
}

} // namespace mlir::pf

#endif // PF_SUPPORT_RANKPARALLEL_H
