//===- test_driver.cpp - A toy per-rank program run by pfrt_main ----------===//
//
// Linked like a compiled rank program (pfrt_main + pfrt). Its "parameter"
// is a persistent float initialised from the seed; each step checks the
// scalars pfrt_main sets and, on the LAST rank only, reports
//     loss(mb) = param + lr * step + 0.25 * mb      (step = k + 1)
// for NMB = 3 micro-batches, in the order 2, 0, 1 (pfrt_main must print
// them in micro-batch order). check_driver.py recomputes the expected
// output. PFRT_TEST_DRIVER_MODE=gap skips micro-batch 1 (pfrt_main must
// fail), =twice reports micro-batch 0 twice (pfrt_report_loss must fail).
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <string>

namespace {

float *gParam = nullptr;
std::string gMode;

void initParams(uint64_t seed) {
  gParam = static_cast<float *>(pfrt_alloc_persistent(sizeof(float) * 17));
  for (int i = 0; i < 17; ++i)
    CHECK(gParam[i] == 0.0f, "persistent memory is not zeroed");
  gParam[0] = float(seed % 1000) * 0.5f;
  const char *m = getenv("PFRT_TEST_DRIVER_MODE");
  gMode = m ? m : "";
}

void step(int64_t k) {
  float stepv = *pfrt_scalar("step"), lr = *pfrt_scalar("lr");
  CHECK(stepv == float(k + 1), "scalar step = %g at step %lld", stepv,
        (long long)k);
  // Temporaries come from the arena, reset by pfrt_main before each step.
  float *tmp = static_cast<float *>(pfrt_arena_alloc(3 * sizeof(float)));
  CHECK(((uintptr_t)tmp & 63) == 0, "arena block not aligned");
  if (pfrt_rank() != pfrt_world_size() - 1)
    return;
  for (int mb = 0; mb < 3; ++mb)
    tmp[mb] = gParam[0] + lr * stepv + 0.25f * float(mb);
  const int order[3] = {2, 0, 1};
  for (int i = 0; i < 3; ++i) {
    int mb = order[i];
    if (gMode == "gap" && mb == 1)
      continue;
    pfrt_report_loss(&tmp[mb], mb);
  }
  if (gMode == "twice")
    pfrt_report_loss(&tmp[0], 0);
}

} // namespace

int main(int argc, char **argv) {
  pfrt_program prog = {initParams, step};
  return pfrt_main(argc, argv, &prog);
}
