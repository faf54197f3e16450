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

#include <algorithm>
#include <cstring>

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

/// Error cases of the planned arena, one per run (run_tests.sh checks the
/// message and the non-zero exit): asking for more than is available
/// (PFRT_ARENA_LIMIT), a buffer outside the plan, growing a plan.
int errorCase(const char *which) {
  if (!strcmp(which, "plan_too_large")) {
    pfrt_arena_plan(4096);
  } else if (!strcmp(which, "at_outside")) {
    pfrt_arena_plan(4096);
    pfrt_arena_at(4096 - 64, 128);
  } else if (!strcmp(which, "plan_grows")) {
    pfrt_arena_plan(4096);
    pfrt_arena_plan(8192);
  } else if (!strcmp(which, "at_unplanned")) {
    pfrt_arena_at(0, 64);
  }
  return 0; // reaching here is the failure run_tests.sh reports
}

/// The planned arena: offsets from the base, zeroed, aligned; the
/// high-water mark is the largest offset + bytes handed out; a second plan
/// no larger keeps the block.
void plannedArena(uint64_t &st) {
  CHECK(pfrt_arena_planned_bytes() == 0, "no plan yet, got %lld",
        (long long)pfrt_arena_planned_bytes());
  const int64_t bytes = 3 << 20;
  CHECK(pfrt_arena_plan(bytes) == 0, "pfrt_arena_plan failed");
  CHECK(pfrt_arena_planned_bytes() == bytes, "planned %lld, asked %lld",
        (long long)pfrt_arena_planned_bytes(), (long long)bytes);
  char *base = static_cast<char *>(pfrt_arena_at(0, 64));
  CHECK(base && aligned64(base), "arena base %p", (void *)base);
  int64_t high = 64;
  for (int i = 0; i < 200; ++i) {
    int64_t off = 64 * pt_randint(&st, 0, bytes / 64 - 1);
    int64_t len = pt_randint(&st, 0, bytes - off);
    char *p = static_cast<char *>(pfrt_arena_at(off, len));
    CHECK(p == base + off, "offset %lld maps to %p, not base + offset",
          (long long)off, (void *)p);
    for (int64_t j = 0; j < len; j += 4093)
      CHECK(p[j] == 0, "planned arena byte %lld is not zero",
            (long long)(off + j));
    high = std::max(high, off + len);
    CHECK(pfrt_arena_high_water() == high, "high-water %lld, expected %lld",
          (long long)pfrt_arena_high_water(), (long long)high);
  }
  CHECK(pfrt_arena_plan(bytes / 2) == 0, "a smaller second plan failed");
  CHECK(pfrt_arena_at(0, 64) == base, "a second plan moved the arena");
  CHECK(pfrt_peak_rss_bytes() > 0, "peak RSS %lld",
        (long long)pfrt_peak_rss_bytes());
}

int main(int argc, char **argv) {
  if (argc > 1)
    return errorCase(argv[1]);
  pfrt_init(&argc, &argv);
  uint64_t seed = pt_seed("memory"), st = seed;
  plannedArena(st);

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

  // --- step results (pfrt_report_output): copied at the call, readable
  // after pfrt_end_step, gone after the next step begins
  // -------------------------------------------------------------------
  {
    std::vector<int64_t> out0(7), out2(3);
    for (size_t i = 0; i < out0.size(); ++i)
      out0[i] = pt_randint(&st, -1000000, 1000000);
    for (size_t i = 0; i < out2.size(); ++i)
      out2[i] = pt_randint(&st, -1000, 1000);
    pfrt_begin_step(0);
    pfrt_report_output(2, out2.data(), int64_t(out2.size() * 8));
    pfrt_report_output(0, out0.data(), int64_t(out0.size() * 8));
    int64_t want0 = out0[0];
    out0[0] += 1; // copied at the call
    pfrt_end_step();
    CHECK(pfrt_output_count() == 3, "output count %d", pfrt_output_count());
    CHECK(pfrt_output_bytes(1) == -1, "result 1 was not reported");
    CHECK(pfrt_output_bytes(0) == 56 && pfrt_output_bytes(2) == 24,
          "output bytes %lld %lld", (long long)pfrt_output_bytes(0),
          (long long)pfrt_output_bytes(2));
    std::vector<int64_t> got0(7), got2(3);
    CHECK(pfrt_output_copy(0, got0.data(), 56) == 0, "copy 0");
    CHECK(pfrt_output_copy(2, got2.data(), 24) == 0, "copy 2");
    CHECK(got0[0] == want0, "result 0 not copied at the call");
    for (size_t i = 1; i < 7; ++i)
      CHECK(got0[i] == out0[i], "result 0 element %zu", i);
    for (size_t i = 0; i < 3; ++i)
      CHECK(got2[i] == out2[i], "result 2 element %zu", i);
    pfrt_begin_step(1);
    pfrt_end_step();
    CHECK(pfrt_output_count() == 0, "results outlive their step");
  }

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
