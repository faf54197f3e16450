//===- test_memory.cpp - Step arena, persistent memory, named scalars -----===//
//
// Arena: every block is 64-byte aligned, non-NULL, and live blocks never
// overlap (each is filled with its own pattern and verified after all
// allocations of the step); a step larger than the first chunk grows it;
// after the reset that follows, a step with the same allocation sequence
// gets exactly the same addresses again (the memory is reused, nothing is
// allocated). Persistent blocks are aligned, zeroed and distinct. Scalars
// start at 0 and keep their address.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <string>
#include <vector>

namespace {

bool aligned64(const void *p) {
  return (reinterpret_cast<uintptr_t>(p) & 63) == 0;
}

/// One "step": allocates sizes[i] bytes for each i, fills, verifies.
std::vector<void *> runStep(const std::vector<int64_t> &sizes, int round) {
  std::vector<void *> ptrs;
  for (size_t i = 0; i < sizes.size(); ++i) {
    void *p = pfrt_arena_alloc(sizes[i]);
    CHECK(p != NULL, "round %d block %zu: NULL", round, i);
    CHECK(aligned64(p), "round %d block %zu: %p is not 64-byte aligned", round,
          i, p);
    memset(p, int((i * 7 + round) & 0xff), size_t(sizes[i]));
    ptrs.push_back(p);
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    const unsigned char *b = static_cast<const unsigned char *>(ptrs[i]);
    unsigned char want = (unsigned char)((i * 7 + round) & 0xff);
    for (int64_t j = 0; j < sizes[i]; ++j)
      CHECK(b[j] == want,
            "round %d block %zu byte %lld was overwritten: blocks overlap",
            round, i, (long long)j);
  }
  for (size_t i = 0; i < sizes.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      CHECK(ptrs[i] != ptrs[j], "round %d: blocks %zu and %zu share %p", round,
            j, i, ptrs[i]);
  return ptrs;
}

} // namespace

int main(int argc, char **argv) {
  pfrt_init(&argc, &argv);
  uint64_t seed = pt_seed("memory"), st = seed;

  // --- arena -----------------------------------------------------------------
  std::vector<int64_t> sizes;
  int64_t total = 0;
  for (int i = 0; i < 300; ++i) {
    int64_t kind = pt_randint(&st, 0, 9);
    int64_t s = kind == 0  ? 0
                : kind < 6 ? pt_randint(&st, 1, 200)
                : kind < 9 ? pt_randint(&st, 201, 50000)
                           : pt_randint(&st, 500000, 3000000);
    sizes.push_back(s);
    total += s;
  }
  CHECK(total > (4 << 20), "the step must outgrow the first 1 MiB chunk");
  pfrt_arena_reset();
  std::vector<void *> r0 = runStep(sizes, 0); // grows: several chunks
  pfrt_arena_reset();                         // merges them into one
  std::vector<void *> r1 = runStep(sizes, 1);
  pfrt_arena_reset();
  std::vector<void *> r2 = runStep(sizes, 2);
  for (size_t i = 0; i < sizes.size(); ++i)
    CHECK(r1[i] == r2[i],
          "block %zu moved between identical steps (%p then %p): the arena "
          "did not reuse its memory after reset",
          i, r1[i], r2[i]);
  // A smaller step after reset starts at the same address.
  pfrt_arena_reset();
  void *first = pfrt_arena_alloc(100);
  CHECK(first == r1[0], "after reset the arena restarts at %p, not %p", first,
        r1[0]);
  pfrt_arena_reset();

  // --- persistent
  // --------------------------------------------------------------
  std::vector<void *> keep;
  for (int i = 0; i < 50; ++i) {
    int64_t s = i == 0 ? 0 : pt_randint(&st, 1, 100000);
    unsigned char *p = static_cast<unsigned char *>(pfrt_alloc_persistent(s));
    CHECK(p != NULL && aligned64(p), "persistent block %d: %p", i, (void *)p);
    for (int64_t j = 0; j < s; ++j)
      CHECK(p[j] == 0, "persistent block %d byte %lld is not zeroed", i,
            (long long)j);
    memset(p, 0xab, size_t(s));
    for (void *q : keep)
      CHECK(q != p, "persistent block %d repeats an address", i);
    keep.push_back(p);
  }
  // Arena resets must not touch persistent memory.
  pfrt_arena_reset();
  runStep(sizes, 3);
  pfrt_arena_reset();

  // --- scalars
  // -------------------------------------------------------------------
  float *lr = pfrt_scalar("lr");
  CHECK(lr && *lr == 0.0f, "a new scalar must start at 0");
  *lr = 0.125f;
  std::vector<float *> many;
  for (int i = 0; i < 2000; ++i) // force the table to rehash
    many.push_back(pfrt_scalar(("s" + std::to_string(i)).c_str()));
  CHECK(pfrt_scalar("lr") == lr && *lr == 0.125f,
        "scalar 'lr' moved or changed");
  for (int i = 0; i < 2000; ++i) {
    CHECK(pfrt_scalar(("s" + std::to_string(i)).c_str()) == many[size_t(i)],
          "scalar s%d moved", i);
    CHECK(many[size_t(i)] != lr, "distinct names share a scalar");
  }

  // --- losses: a report per micro-batch per step
  // -------------------------------
  float l = 1.5f;
  pfrt_report_loss(&l, 0);
  pfrt_arena_reset(); // new step: micro-batch 0 may be reported again
  pfrt_report_loss(&l, 0);
  pfrt_arena_reset();

  printf("memory: arena %zu blocks, %lld bytes per step; OK\n", sizes.size(),
         (long long)total);
  pfrt_finalize();
  return 0;
}
