//===- Memory.cpp - Step arena, persistent memory, scalars, losses --------===//

#include "Internal.h"
#include "pfrt/pfrt.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace pfrt {
namespace {

constexpr int64_t kAlign = 64;
constexpr int64_t kFirstChunk = int64_t(1) << 20; // 1 MiB

int64_t roundUp(int64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

void *alignedAlloc(int64_t bytes, const char *what) {
  if (bytes > INT64_MAX - kAlign)
    fatal("%s: %lld bytes is too large", what, (long long)bytes);
  int64_t size = roundUp(bytes > 0 ? bytes : 1);
  void *p = std::aligned_alloc(size_t(kAlign), size_t(size));
  if (!p)
    fatal("%s: out of memory allocating %lld bytes", what, (long long)size);
  return p;
}

struct Chunk {
  char *base;
  int64_t size;
};

/// Bump allocator. Chunks are only added during a step (so live blocks
/// never move); pfrt_arena_reset folds several chunks into one.
struct Arena {
  std::vector<Chunk> chunks;
  int64_t used = 0; // bytes used in chunks.back()
} gArena;

struct Losses {
  std::vector<float> value;
  std::vector<char> have;
} gLosses;

std::unordered_map<std::string, std::unique_ptr<float>> &scalars() {
  static std::unordered_map<std::string, std::unique_ptr<float>> m;
  return m;
}

} // namespace

std::vector<float> stepLosses() {
  const Losses &l = gLosses;
  for (size_t i = 0; i < l.have.size(); ++i)
    if (!l.have[i])
      fatal("micro-batch %zu reported no loss this step, but micro-batch %zu "
            "did",
            i, l.have.size() - 1);
  return l.value;
}

} // namespace pfrt

using namespace pfrt;

extern "C" {

void *pfrt_arena_alloc(int64_t bytes) {
  if (bytes < 0)
    fatal("pfrt_arena_alloc: negative size %lld", (long long)bytes);
  if (bytes > INT64_MAX / 4)
    fatal("pfrt_arena_alloc: %lld bytes is too large", (long long)bytes);
  // Zero-byte requests still get a distinct 64-byte slot.
  int64_t need = roundUp(bytes > 0 ? bytes : 1);
  Arena &a = gArena;
  if (a.chunks.empty() || a.used + need > a.chunks.back().size) {
    int64_t size = a.chunks.empty() ? kFirstChunk : 2 * a.chunks.back().size;
    if (size < need)
      size = roundUp(need);
    a.chunks.push_back(
        {static_cast<char *>(alignedAlloc(size, "pfrt_arena_alloc")), size});
    a.used = 0;
  }
  void *p = a.chunks.back().base + a.used;
  a.used += need;
  return p;
}

void pfrt_arena_reset(void) {
  Arena &a = gArena;
  if (a.chunks.size() > 1) {
    // One chunk as large as all of this step's chunks: the next step of
    // the same program fits without growing.
    int64_t total = 0;
    for (const Chunk &c : a.chunks) {
      total += c.size;
      std::free(c.base);
    }
    a.chunks.clear();
    a.chunks.push_back(
        {static_cast<char *>(alignedAlloc(total, "pfrt_arena_reset")), total});
  }
  a.used = 0;
  gLosses.value.clear();
  gLosses.have.clear();
}

void *pfrt_alloc_persistent(int64_t bytes) {
  if (bytes < 0)
    fatal("pfrt_alloc_persistent: negative size %lld", (long long)bytes);
  void *p = alignedAlloc(bytes, "pfrt_alloc_persistent");
  std::memset(p, 0, size_t(roundUp(bytes > 0 ? bytes : 1)));
  return p;
}

float *pfrt_scalar(const char *name) {
  if (!name)
    fatal("pfrt_scalar: name is NULL");
  std::unique_ptr<float> &slot = scalars()[name];
  if (!slot)
    slot.reset(new float(0.0f));
  return slot.get();
}

void pfrt_report_loss(const float *loss, int32_t microbatch) {
  if (!loss)
    fatal("pfrt_report_loss: loss is NULL");
  if (microbatch < 0 || microbatch >= (1 << 24))
    fatal("pfrt_report_loss: micro-batch %d is outside [0, 2^24)", microbatch);
  Losses &l = gLosses;
  size_t i = size_t(microbatch);
  if (i >= l.have.size()) {
    l.have.resize(i + 1, 0);
    l.value.resize(i + 1, 0.0f);
  }
  if (l.have[i])
    fatal("pfrt_report_loss: micro-batch %d reported twice in one step "
          "(no pfrt_arena_reset in between)",
          microbatch);
  l.have[i] = 1;
  l.value[i] = *loss;
}

} // extern "C"
