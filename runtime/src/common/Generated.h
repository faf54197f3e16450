//===- Generated.h - a rank's table of generated kernels --------*- C++ -*-===//
//
// What the host rows (Generated.cpp) and the device twins (cuda/Generated.cpp)
// of pfrt_generated_kernels / pfrt_launch_generated share: the table the
// compiled pf_init_params registers, and the checks of a launch.
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_COMMON_GENERATED_H
#define PFRT_SRC_COMMON_GENERATED_H

#include "pfrt/pfrt.h"

#include <cstdint>

namespace pfrt {

/// The most buffers a generated kernel takes (pfrt_launch_generated's
/// fixed arity; the compiler's kernels::kMaxLaunchPointers).
constexpr int64_t kMaxGeneratedPointers = 8;

struct GeneratedTable {
  const void *image = nullptr;
  int64_t imageBytes = 0;
  int64_t count = 0;
  const char *const *names = nullptr;
  const pfrt_host_kernel *hostTwins = nullptr;
  const int64_t *numPointers = nullptr;
};

/// The table after checking it (fatal, naming `fn`, when malformed).
GeneratedTable checkGeneratedTable(const char *fn, const void *image,
                                   int64_t image_bytes, int64_t count,
                                   const char *const *names,
                                   const pfrt_host_kernel *host_twins,
                                   const int64_t *num_pointers);

/// Checks a launch of kernel `index` of `table` (registered, index in
/// range, the registered pointer count, no NULL buffer, n >= 0) and gathers
/// its buffers into `out`; fatal naming `fn` otherwise.
void checkGeneratedLaunch(const char *fn, const GeneratedTable &table,
                          bool registered, int64_t index, int64_t n,
                          int64_t num_pointers, void *const given[8],
                          void *out[8]);

} // namespace pfrt

#endif // PFRT_SRC_COMMON_GENERATED_H
