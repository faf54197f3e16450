//===- Memory.cpp - Step arena, persistent memory, scalars, losses --------===//

#include "Internal.h"
#include "pfrt/pfrt.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <sys/mman.h>
#include <sys/resource.h>

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

StepOutputs gOutputs;

std::unordered_map<std::string, std::unique_ptr<float>> &scalars() {
  static std::unordered_map<std::string, std::unique_ptr<float>> m;
  return m;
}

} // namespace

StepOutputs stepOutputs() { return gOutputs; }

void checkArenaRange(const char *fn, const char *what, int64_t offset,
                     int64_t bytes, int64_t size, int64_t align,
                     int64_t &highWater) {
  if (offset < 0 || bytes < 0 || offset > size - bytes ||
      (align > 1 && offset % align != 0))
    fatal("%s: [%lld, %lld + %lld) is outside the %s of %lld bytes%s", fn,
          (long long)offset, (long long)offset, (long long)bytes, what,
          (long long)size, align > 1 ? " or misaligned" : "");
  if (offset + bytes > highWater)
    highWater = offset + bytes;
}

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
  gOutputs.data.clear();
  gOutputs.have.clear();
}

namespace {
/// The planned arena: mapped once, zero pages until touched.
struct PlannedArena {
  char *base = nullptr;
  int64_t bytes = 0;
  int64_t highWater = 0;
} gPlanned;

/// Bytes this process may still take: PFRT_ARENA_LIMIT when set (tests),
/// else MemAvailable from /proc/meminfo; -1 when unknown.
int64_t availableBytes() {
  if (const char *limit = std::getenv("PFRT_ARENA_LIMIT"))
    return std::strtoll(limit, nullptr, 10);
  FILE *f = std::fopen("/proc/meminfo", "r");
  if (!f)
    return -1;
  char line[256];
  int64_t kib = -1;
  while (std::fgets(line, sizeof(line), f))
    if (std::sscanf(line, "MemAvailable: %lld kB", (long long *)&kib) == 1)
      break;
  std::fclose(f);
  return kib < 0 ? -1 : kib * 1024;
}
} // namespace

int pfrt_arena_plan(int64_t bytes) {
  PlannedArena &a = gPlanned;
  if (bytes < 0)
    fatal("pfrt_arena_plan: negative size %lld", (long long)bytes);
  if (a.base) {
    if (bytes > a.bytes)
      fatal("pfrt_arena_plan: the arena was planned with %lld bytes, now "
            "%lld are asked",
            (long long)a.bytes, (long long)bytes);
    return 0;
  }
  int64_t size = roundUp(bytes > 0 ? bytes : 1);
  int64_t available = availableBytes();
  if (available >= 0 && size > available)
    fatal("cannot allocate the planned arena: %lld bytes asked, %lld bytes "
          "available",
          (long long)size, (long long)available);
  void *p = mmap(nullptr, size_t(size), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    fatal("cannot allocate the planned arena: %lld bytes asked, %lld bytes "
          "available (mmap: %s)",
          (long long)size, (long long)available, std::strerror(errno));
  a.base = static_cast<char *>(p);
  a.bytes = size;
  return 0;
}

void *pfrt_arena_at(int64_t offset, int64_t bytes) {
  PlannedArena &a = gPlanned;
  if (!a.base)
    fatal("pfrt_arena_at: no planned arena (pfrt_arena_plan not called)");
  checkArenaRange("pfrt_arena_at", "planned arena", offset, bytes, a.bytes,
                  kAlign, a.highWater);
  return a.base + offset;
}

int64_t pfrt_arena_planned_bytes(void) { return gPlanned.bytes; }

int64_t pfrt_arena_high_water(void) { return gPlanned.highWater; }

int64_t pfrt_peak_rss_bytes(void) {
  struct rusage u;
  if (getrusage(RUSAGE_SELF, &u) != 0)
    return -1;
  return int64_t(u.ru_maxrss) * 1024; // Linux: KiB
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

void pfrt_report_output(int32_t index, const void *data, int64_t bytes) {
  if (index < 0 || index >= (1 << 24))
    fatal("pfrt_report_output: result %d is outside [0, 2^24)", index);
  if (bytes < 0 || (bytes > 0 && !data))
    fatal("pfrt_report_output: result %d: %lld bytes at %p", index,
          (long long)bytes, data);
  StepOutputs &o = gOutputs;
  size_t i = size_t(index);
  if (i >= o.have.size()) {
    o.have.resize(i + 1, 0);
    o.data.resize(i + 1);
  }
  if (o.have[i])
    fatal("pfrt_report_output: result %d reported twice in one step "
          "(no pfrt_arena_reset in between)",
          index);
  o.have[i] = 1;
  const char *p = static_cast<const char *>(data);
  o.data[i].assign(p, p + bytes);
}

} // extern "C"
