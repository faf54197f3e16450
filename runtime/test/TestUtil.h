/*===- TestUtil.h - Helpers shared by the pfrt-* test programs ------------===*
 *
 * C and C++. A failed CHECK goes through pfrt_fatal, so it aborts the whole
 * MPI job with a non-zero exit code and names the rank.
 *
 *===----------------------------------------------------------------------===*/

#ifndef PFRT_TEST_TESTUTIL_H
#define PFRT_TEST_TESTUTIL_H

#include "pfrt/pfrt.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static inline void pt_fail(const char *file, int line, const char *cond,
                           const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  pfrt_fatal("CHECK failed at %s:%d: (%s) %s", file, line, cond, msg);
}

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond))                                                               \
      pt_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);                         \
  } while (0)

/* splitmix64 finaliser: a good 64-bit mixer for deterministic test data. */
static inline uint64_t pt_mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* Test value in [-1, 1), a pure function of its arguments, so every rank can
 * compute every other rank's input for a serial reference. Never all zero. */
static inline float pt_value(uint64_t seed, uint64_t a, uint64_t b,
                             uint64_t i) {
  uint64_t h = pt_mix(seed ^ pt_mix(a ^ pt_mix(b ^ pt_mix(i))));
  return (float)((double)(h >> 40) * (1.0 / 8388608.0) - 1.0);
}

/* Uniform integer in [lo, hi] from a running state. */
static inline int64_t pt_randint(uint64_t *state, int64_t lo, int64_t hi) {
  *state = pt_mix(*state);
  return lo + (int64_t)(*state % (uint64_t)(hi - lo + 1));
}

/* A fresh seed per run (PFRT_TEST_SEED overrides), identical on all ranks.
 * Rank 0 prints it so a failure can be replayed. */
static inline uint64_t pt_seed(const char *test) {
  int64_t seed = 0;
  const char *env = getenv("PFRT_TEST_SEED");
  if (env && *env) {
    seed = (int64_t)strtoull(env, NULL, 10);
  } else if (pfrt_rank() == 0) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    seed = (int64_t)(pt_mix((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^
                            (uint64_t)getpid()) >>
                     1);
  }
  int n = pfrt_world_size();
  int64_t world[64];
  CHECK(n <= 64, "tests assume at most 64 ranks");
  for (int i = 0; i < n; ++i)
    world[i] = i;
  pfrt_broadcast_i64(&seed, 1, 0, world, n);
  if (pfrt_rank() == 0)
    printf("%s: PFRT_TEST_SEED=%llu world=%d\n", test, (unsigned long long)seed,
           n);
  return (uint64_t)seed;
}

static inline int pt_bits_equal(const float *a, const float *b, int64_t n) {
  return n == 0 || memcmp(a, b, (size_t)n * sizeof(float)) == 0;
}

/* pfrt_init, then this rank, the world size and the run's seed (pt_seed). */
static inline uint64_t pt_start(int *argc, char ***argv, const char *test,
                                int *rank, int *size) {
  pfrt_init(argc, argv);
  *rank = pfrt_rank();
  *size = pfrt_world_size();
  return pt_seed(test);
}

/* The end of a test's main: pfrt_finalize, then rank 0 prints the summary (a
 * printf format and its values). Returns 0, main's exit status. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static inline int pt_finish(int rank, const char *fmt, ...) {
  pfrt_finalize();
  if (rank == 0) {
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
  }
  return 0;
}

#ifdef __cplusplus
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace pt {

using Shape = std::vector<int64_t>;

/// Elements in a row-major tensor of this shape (1 for rank 0).
inline int64_t numel(const Shape &s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

/// The rank groups the multi-rank tests share, in this order: the world, the
/// reversed world (2+ ranks), and {1, 3}, {3, 1} (4+ ranks).
inline std::vector<Shape> baseGroups(int size) {
  std::vector<Shape> groups;
  Shape world, reversed;
  for (int i = 0; i < size; ++i) {
    world.push_back(i);
    reversed.insert(reversed.begin(), i);
  }
  groups.push_back(world);
  if (size > 1)
    groups.push_back(reversed);
  if (size >= 4) {
    groups.push_back({1, 3});
    groups.push_back({3, 1});
  }
  return groups;
}

/// n fresh floats in [lo, hi): pt_value(seed, tag, salt, i) mapped onto the
/// range (a test's tag per vector, a salt per rank where ranks differ).
inline std::vector<float> uniformValues(uint64_t seed, uint64_t tag,
                                        uint64_t salt, int64_t n, float lo,
                                        float hi) {
  std::vector<float> v(static_cast<size_t>(n > 0 ? n : 0));
  for (int64_t i = 0; i < n; ++i)
    v[size_t(i)] =
        lo + (hi - lo) * 0.5f * (pt_value(seed, tag, salt, uint64_t(i)) + 1.0f);
  return v;
}

/// The pools' cases (N C H W KH KW sh sw ph pw) that pfrt-test-k-pool
/// checks against NumPy and pfrt-test-cuda-bodies against the CPU kernels.
constexpr int64_t kPoolCases[][10] = {
    {2, 3, 8, 8, 2, 2, 2, 2, 0, 0},    {2, 3, 9, 11, 3, 3, 2, 2, 1, 1},
    {1, 4, 7, 10, 3, 2, 1, 1, 1, 1},   {3, 2, 13, 9, 5, 3, 3, 2, 2, 1},
    {1, 1, 5, 5, 5, 5, 1, 1, 2, 2},    {2, 2, 6, 7, 1, 1, 2, 3, 0, 0},
    {2, 5, 12, 12, 3, 3, 2, 2, 1, 1},  {1, 3, 4, 37, 2, 4, 1, 3, 1, 2},
    {1, 2, 3, 70, 1, 66, 1, 1, 0, 33}, // a very wide window
};

/// The whole content of a file; a missing file is a failed CHECK.
inline std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  CHECK(in.good(), "cannot open %s", path.c_str());
  return std::string(std::istreambuf_iterator<char>(in),
                     std::istreambuf_iterator<char>());
}

} // namespace pt
#endif

#endif /* PFRT_TEST_TESTUTIL_H */
