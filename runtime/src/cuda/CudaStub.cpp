//===- CudaStub.cpp - pfrt_cuda_* in a runtime built without CUDA ---------===//
//
// The ABI stays the same: pfrt_cuda_init says why it cannot run (exit 2),
// the rest are unreachable without it and fatal if called.
//
//===----------------------------------------------------------------------===//

#include "../common/Internal.h"
#include "pfrt/pfrt_cuda.h"

#include <cstdio>
#include <cstdlib>

using namespace pfrt;

namespace {
[[noreturn]] void noCuda(const char *fn) {
  fatal("%s: libpfrt was built without CUDA support (PFRT_ENABLE_CUDA=OFF)",
        fn);
}
} // namespace

extern "C" {
int pfrt_cuda_device_count(void) { return 0; }
int pfrt_cuda_init(int64_t) {
  std::fprintf(stderr, "pfrt: rank 0: libpfrt was built without CUDA support "
                       "(PFRT_ENABLE_CUDA=OFF)\n");
  std::exit(2);
}
int pfrt_cuda_finalize(void) { return 0; }
int pfrt_cuda_arena_init(int64_t) { noCuda("pfrt_cuda_arena_init"); }
void *pfrt_cuda_arena_ptr(int64_t, int64_t) { noCuda("pfrt_cuda_arena_ptr"); }
int64_t pfrt_cuda_arena_high_water(void) { return 0; }
int pfrt_cuda_h2d(void *, const void *, int64_t) { noCuda("pfrt_cuda_h2d"); }
int pfrt_cuda_d2h(void *, const void *, int64_t) { noCuda("pfrt_cuda_d2h"); }
int pfrt_cuda_memset(void *, int32_t, int64_t) { noCuda("pfrt_cuda_memset"); }
int pfrt_cuda_synchronize(void) { noCuda("pfrt_cuda_synchronize"); }
void *pfrt_cuda_module_load(const void *) { noCuda("pfrt_cuda_module_load"); }
void *pfrt_cuda_function(void *, const char *) { noCuda("pfrt_cuda_function"); }
int pfrt_cuda_launch(void *, int64_t, int64_t, int64_t, int64_t, int64_t,
                     int64_t, int64_t, void **) {
  noCuda("pfrt_cuda_launch");
}
int pfrt_cuda_gemm(int32_t, int32_t, int64_t, int64_t, int64_t, float,
                   const void *, int64_t, const void *, int64_t, float, void *,
                   int64_t, int64_t, int64_t, int64_t, int64_t, int32_t, void *,
                   const void *, int32_t) {
  noCuda("pfrt_cuda_gemm");
}
int pfrt_cuda_graphs_enabled(void) { return 0; }
int pfrt_cuda_graph_begin(void) { noCuda("pfrt_cuda_graph_begin"); }
int pfrt_cuda_graph_end(void) { noCuda("pfrt_cuda_graph_end"); }
int pfrt_cuda_graph_launch(void) { noCuda("pfrt_cuda_graph_launch"); }
} // extern "C"
