//===- Reduce.cpp - the device twin of reduce_sum -------------------------===//
//
// pfrt_cuda_k_reduce_sum: one thread per output summing its reduced extent
// in the CPU's order (ReduceBodies.h), or, where there are few outputs and
// long extents, partial sums first (one thread a part: a column chunk or a
// run of the last dim) and then the parts added in order.
//
//===----------------------------------------------------------------------===//

#include "ReduceBodies.h"
#include "Twin.h"

#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

using namespace pfrt;
using namespace pfrt::kern;
using namespace pfrt::twin;

extern "C" {

void pfrt_cuda_k_reduce_sum(const float *x, float *y, int64_t rank,
                            const int64_t *shape, const int8_t *reduce) {
  const char *fn = "pfrt_cuda_k_reduce_sum";
  ReduceSizes sizes = checkReduceSumArgs(fn, x, y, rank, shape, reduce);
  int64_t total = sizes.total;
  const int64_t outTotal = sizes.outTotal;
  dev::ReducePlan plan;
  switch (dev::makeReducePlan(rank, shape, reduce, &plan)) {
  case dev::kReduceNothing:
    return;
  case dev::kReduceZeros:
    pfrt_cuda_memset(y, 0, outTotal * int64_t(sizeof(float)));
    return;
  case dev::kReduceCopy: {
    void *args[] = {&x, &y, &total};
    launch(kCopy, total, args, fn);
    return;
  }
  case dev::kReduceSum: {
    if (plan.parts > 0) {
      // Its own buffer: the caller's x may lie in the twins' scratch.
      static GrowingBuffer partBuffer;
      int64_t n = mulChecked(fn, plan.parts, plan.outTotal);
      auto *part =
          reinterpret_cast<double *>(partBuffer.get(mulChecked(fn, n, 2), fn));
      void *partArgs[] = {&x, &part, &plan, &n};
      launch(plan.chunk > 0 ? kReduceColumnPart : kReduceRunPart, n, partArgs,
             fn);
      void *sumArgs[] = {&part, &y, &plan.outTotal, &plan.parts};
      launch(kReducePartsSum, plan.outTotal, sumArgs, fn);
      return;
    }
    void *args[] = {&x, &y, &plan};
    launch(kReduceSum, plan.outTotal, args, fn);
    return;
  }
  }
}

} // extern "C"
