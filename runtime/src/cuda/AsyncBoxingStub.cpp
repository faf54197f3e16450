//===- AsyncBoxingStub.cpp - the split boxing twins without CUDA ----------===//
//
// CudaStub.cpp's rule for AsyncBoxing.cpp's rows: unreachable without
// pfrt_cuda_init, fatal if called.
//
//===----------------------------------------------------------------------===//

#include "../common/Internal.h"
#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

using namespace pfrt;

namespace {
[[noreturn]] void noCuda(const char *fn) {
  fatal("%s: libpfrt was built without CUDA support (PFRT_ENABLE_CUDA=OFF)",
        fn);
}
} // namespace

extern "C" {
int pfrt_cuda_box_all_gather_start(const void *, void *, int32_t, int64_t,
                                   const int64_t *, int64_t, const int64_t *,
                                   int64_t, int64_t) {
  noCuda("pfrt_cuda_box_all_gather_start");
}
int pfrt_cuda_box_reduce_scatter_start(const void *, void *, int32_t, int64_t,
                                       const int64_t *, int64_t,
                                       const int64_t *, int64_t, int64_t) {
  noCuda("pfrt_cuda_box_reduce_scatter_start");
}
int pfrt_cuda_box_collective_wait(int64_t) {
  noCuda("pfrt_cuda_box_collective_wait");
}
} // extern "C"
