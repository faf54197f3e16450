//===- Logical.cpp - device twins of comparisons and boolean tensors ------===//
//
// pfrt_cuda_k_{compare, logical, where, cast}: the CPU kernels' checks
// (common/KernelArgs.h), then one thread per element (LogicalBodies.h).
//
//===----------------------------------------------------------------------===//

#include "LogicalBodies.h"
#include "Twin.h"

#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

using namespace pfrt;
using namespace pfrt::kern;
using namespace pfrt::twin;

extern "C" {

void pfrt_cuda_k_compare(const void *a, const void *b, uint8_t *out, int64_t n,
                         int32_t dtype, int32_t predicate) {
  const char *fn = "pfrt_cuda_k_compare";
  checkCompareArgs(fn, a, b, out, n, dtype, predicate);
  void *args[] = {&a, &b, &out, &dtype, &predicate, &n};
  launch(kCompare, n, args, fn);
}

void pfrt_cuda_k_logical(const uint8_t *a, const uint8_t *b, uint8_t *out,
                         int64_t n, int32_t kind) {
  const char *fn = "pfrt_cuda_k_logical";
  checkLogicalArgs(fn, a, b, out, n, kind);
  void *args[] = {&a, &b, &out, &kind, &n};
  launch(kLogical, n, args, fn);
}

void pfrt_cuda_k_where(const uint8_t *cond, const void *a, const void *b,
                       void *out, int64_t n, int32_t dtype) {
  const char *fn = "pfrt_cuda_k_where";
  int64_t bytes = checkWhereArgs(fn, cond, a, b, out, n, dtype);
  void *args[] = {&cond, &a, &b, &out, &bytes, &n};
  launch(kWhere, n, args, fn);
}

void pfrt_cuda_k_cast(const void *x, int32_t xDtype, void *y, int32_t yDtype,
                      int64_t n) {
  const char *fn = "pfrt_cuda_k_cast";
  checkCastArgs(fn, x, xDtype, y, yDtype, n);
  void *args[] = {&x, &xDtype, &y, &yDtype, &n};
  launch(kCast, n, args, fn);
}

} // extern "C"
