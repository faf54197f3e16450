//===- CudaTestUtil.h - what the GPU layer's tests share --------*- C++ -*-===//
//
// What the tests of the GPU layer (test_cuda_*.cpp) share: the skip
// without a device, their own bump allocation in the device arena they plan
// with pfrt_cuda_arena_plan, and copies to and from it.
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_TEST_CUDATESTUTIL_H
#define PFRT_TEST_CUDATESTUTIL_H

#include "TestUtil.h"
#include "pfrt/pfrt_cuda.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace pt {

/// Without a CUDA device the test exits 77 (run_tests.sh says SKIP).
inline void skipWithoutDevice(const char *test) {
  if (pfrt_cuda_device_count() > 0)
    return;
  printf("%s: no CUDA device here, skipped\n", test);
  exit(77);
}

/// Buffers of the arena of `size` bytes (pfrt_cuda_arena_plan(size)), each
/// 256-byte aligned, never freed; running out is a failed CHECK.
struct DeviceArena {
  int64_t size;
  int64_t next = 0;

  explicit DeviceArena(int64_t bytes) : size(bytes) {}

  /// A fresh buffer of `bytes` (at least one byte of address).
  void *alloc(int64_t bytes) {
    int64_t at = next;
    next += (bytes + 255) / 256 * 256;
    CHECK(next <= size, "the test needs more than %lld bytes of arena",
          (long long)size);
    return pfrt_cuda_arena_ptr(at, bytes > 0 ? bytes : 1);
  }

  /// A fresh device copy of host[0..n).
  template <typename T> T *upload(const T *host, int64_t n) {
    const int64_t bytes = n * int64_t(sizeof(T));
    T *d = static_cast<T *>(alloc(bytes));
    if (bytes > 0)
      pfrt_cuda_h2d(d, host, bytes);
    return d;
  }
};

/// A host copy of the device's d[0..n).
template <typename T> std::vector<T> download(const T *d, int64_t n) {
  std::vector<T> h(static_cast<size_t>(n > 0 ? n : 0));
  if (n > 0)
    pfrt_cuda_d2h(h.data(), d, n * int64_t(sizeof(T)));
  return h;
}

} // namespace pt

#endif // PFRT_TEST_CUDATESTUTIL_H
