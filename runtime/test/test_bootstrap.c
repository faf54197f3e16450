/* pfrt-test-bootstrap EXPECTED_WORLD_SIZE
 *
 * Plain C99 on purpose: proves pfrt.h is a valid C header. Checks rank and
 * size (also without mpiexec, where the world is 1), that every rank has a
 * distinct rank, the ABI version, barriers and the clock. */

#include "TestUtil.h"

int main(int argc, char **argv) {
  CHECK(pfrt_init(&argc, &argv) == 0, "init");
  CHECK(pfrt_init(&argc, &argv) == 0, "second init is a no-op");
  CHECK(argc == 2, "usage: pfrt-test-bootstrap EXPECTED_WORLD_SIZE");
  int expected = atoi(argv[1]);
  int n = pfrt_world_size();
  int r = pfrt_rank();
  CHECK(n == expected, "world size %d, expected %d", n, expected);
  CHECK(r >= 0 && r < n, "rank %d outside [0, %d)", r, n);
  CHECK(pfrt_abi_version() == PFRT_ABI_VERSION, "abi %d vs header %d",
        pfrt_abi_version(), PFRT_ABI_VERSION);
  CHECK(!pfrt_trace_enabled(), "PF_TRACE is not set in this test");

  /* Every rank reports its rank; the gathered list must be 0..n-1 in group
   * order. Floats represent small integers exactly. */
  int64_t world[64];
  float mine = (float)r, all[64];
  CHECK(n <= 64, "n too large");
  for (int i = 0; i < n; ++i) {
    world[i] = i;
    all[i] = -1.0f;
  }
  pfrt_all_gather(&mine, all, 1, world, n);
  for (int i = 0; i < n; ++i)
    CHECK(all[i] == (float)i, "gathered rank %d at position %d", (int)all[i],
          i);

  double t0 = pfrt_now_us();
  pfrt_barrier();
  usleep(2000);
  double t1 = pfrt_now_us();
  CHECK(t1 - t0 >= 1900.0, "clock advanced %.1f us over a 2 ms sleep", t1 - t0);
  /* The epoch is rank 0's clock at init, so all ranks read a small value. */
  CHECK(t0 >= 0.0 && t0 < 60e6, "now_us %.1f not relative to the job start",
        t0);

  pfrt_finalize();
  if (r == 0)
    printf("bootstrap ok (world %d)\n", n);
  return 0;
}
