//===- test_trace.cpp - Chrome traces of nested events and communication --===//
//
// Run with PF_TRACE=DIR; check_trace.py then validates the files. Event
// names carry characters that need JSON escaping. Rank r records its
// micro-batches as stage r so the checker can tell the ranks apart.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <vector>

int main(int argc, char **argv) {
  pfrt_init(&argc, &argv);
  int r = pfrt_rank(), n = pfrt_world_size();
  uint64_t seed = pt_seed("trace");
  CHECK(pfrt_trace_enabled(), "run with PF_TRACE=<dir>");
  std::vector<int64_t> world(n);
  for (int i = 0; i < n; ++i)
    world[i] = i;

  std::vector<float> buf(1000), out(1000);
  for (size_t i = 0; i < buf.size(); ++i)
    buf[i] = pt_value(seed, 1, r, i);
  for (int mb = 0; mb < 3; ++mb) {
    pfrt_trace_begin("forward \"mb\"\\", "compute", mb, r);
    pfrt_trace_begin("matmul", "compute", mb, r);
    usleep(200);
    pfrt_trace_end();
    pfrt_all_reduce_sum(buf.data(), out.data(), 1000, world.data(), n);
    if (n >= 2) {
      pfrt_p2p_op ops[2] = {{1, (r + 1) % n, mb, buf.data(), 100},
                            {0, (r + n - 1) % n, mb, out.data(), 100}};
      pfrt_p2p_batch(ops, 2);
    }
    pfrt_trace_end();
  }
  // Outside any event: comm events get microbatch -1.
  pfrt_broadcast(buf.data(), 10, 0, world.data(), n);
  pfrt_finalize();
  if (r == 0)
    printf("trace program done\n");
  return 0;
}
