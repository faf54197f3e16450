//===- Scratch.cpp - the CPU kernels' scratch memory ----------------------===//
//
// KernelUtil.h's scratch(): a few grow-only, 64-byte-aligned buffers that
// the kernels borrow for one call at a time.
//
//===----------------------------------------------------------------------===//

#include "KernelUtil.h"

#include <cstdlib>

namespace pfrt {
namespace kern {

namespace {
constexpr int kSlots = 4;
struct Slot {
  void *ptr = nullptr;
  int64_t bytes = 0;
};
Slot gSlots[kSlots];
} // namespace

void *scratch(int slot, int64_t bytes) {
  if (slot < 0 || slot >= kSlots)
    fatal("internal: scratch slot %d out of range", slot);
  Slot &s = gSlots[slot];
  if (bytes <= s.bytes && s.ptr)
    return s.ptr;
  // Grow geometrically so a sequence of growing requests stays cheap.
  int64_t want = bytes > 2 * s.bytes ? bytes : 2 * s.bytes;
  if (want < 4096)
    want = 4096;
  want = (want + 63) / 64 * 64;
  std::free(s.ptr);
  s.ptr = std::aligned_alloc(64, size_t(want));
  if (!s.ptr)
    fatal("out of memory: kernel scratch of %lld bytes", (long long)want);
  s.bytes = want;
  return s.ptr;
}

} // namespace kern
} // namespace pfrt
