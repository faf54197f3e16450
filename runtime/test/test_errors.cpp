//===- test_errors.cpp - Programs that must fail, fast and loudly ---------===//
//
// pfrt-test-errors MODE [ARGS]. Each mode provokes one error; run_tests.sh
// checks for a non-zero exit within a timeout and for the expected message
// on stderr. In the multi-rank modes the other ranks are left blocked in a
// call that would never return, so a pass also proves the abort reaches
// the whole job.
//
//   npy PATH DTYPE SHAPE   read PATH whole (DTYPE f4|i8|i4, SHAPE "3,4" or
//                          "" for a scalar); exits 0 if the file is good
//   fatal                  rank min(2, n-1) calls pfrt_fatal
//   not_member             rank 0 joins a collective of a group without it
//   dup_group              a group that lists a rank twice
//   bad_root               broadcast from a root outside the group
//   overlap                all_gather whose input lies inside its output
//   box_not_member         rank 0 joins a boxing all_gather without it
//   box_indivisible        box_reduce_scatter of 5 rows over 4 ranks
//   box_sum_dtype          box_reduce_scatter_dtype of int64 elements
//   copy_box_bounds        copy_box whose box sticks out of dst
//   recv_truncate          rank 1 receives 5 of the 10 floats rank 0 sent
//   recv_short             rank 1 expects 10 floats, rank 0 sends 5
//   bad_shard              init_param with a shard outside the tensor
//   trace_end              pfrt_trace_end without a begin (PF_TRACE set)
//   xent_label             softmax cross-entropy with a label out of range
//   softmax_mask_rows      fused softmax whose mask rows do not divide
//                          its rows
//   conv_dims              conv2d whose OH does not match its input
//   pool_dims              max_pool2d with padding above kernel / 2
//   matmul_batch           matmul with batch_b neither 1 nor batch
//   transpose_perm         transpose with a perm that repeats an axis
//   async_twice            pfrt_all_reduce_start twice in one slot
//   async_idle             pfrt_all_reduce_wait on a slot never started
//   async_range            pfrt_all_reduce_start in slot 64
//   async_unwaited         a started all-reduce never waited for, then
//                          pfrt_finalize
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <string>
#include <vector>

namespace {

/// Blocks forever unless the job is aborted (nobody sends this message).
void blockForever() {
  float x;
  pfrt_recv(&x, 1, 0, 999);
  pfrt_fatal("blockForever returned");
}

std::vector<int64_t> parseShape(const std::string &s) {
  std::vector<int64_t> v;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = s.find(',', i);
    if (j == std::string::npos)
      j = s.size();
    v.push_back(std::stoll(s.substr(i, j - i)));
    i = j + 1;
  }
  return v;
}

} // namespace

int main(int argc, char **argv) {
  pfrt_init(&argc, &argv);
  CHECK(argc >= 2, "usage: pfrt-test-errors MODE [ARGS]");
  std::string mode = argv[1];
  int r = pfrt_rank(), n = pfrt_world_size();
  std::vector<int64_t> world(n);
  for (int i = 0; i < n; ++i)
    world[i] = i;

  if (mode == "npy") {
    CHECK(argc == 5, "usage: npy PATH DTYPE SHAPE");
    std::string dt = argv[3];
    int32_t code = dt == "f4"   ? PFRT_DTYPE_F32
                   : dt == "i8" ? PFRT_DTYPE_I64
                                : PFRT_DTYPE_I32;
    std::vector<int64_t> shape = parseShape(argv[4]);
    int64_t elems = 1;
    for (int64_t d : shape)
      elems *= d;
    std::vector<char> buf(elems * 8 + 8);
    pfrt_npy_read_shard(argv[2], code, int64_t(shape.size()), shape.data(),
                        nullptr, nullptr, buf.data());
    printf("read %s ok\n", argv[2]);
  } else if (mode == "fatal") {
    int culprit = n > 2 ? 2 : n - 1;
    pfrt_barrier();
    if (r == culprit)
      pfrt_fatal("deliberate failure from rank %d", r);
    blockForever();
  } else if (mode == "not_member") {
    CHECK(n >= 2, "needs 2 ranks");
    std::vector<int64_t> rest(world.begin() + 1, world.end());
    float x = 1, y;
    pfrt_all_reduce_sum(&x, &y, 1, rest.data(), int64_t(rest.size()));
    blockForever(); // ranks 1.. get here
  } else if (mode == "async_twice" || mode == "async_idle" ||
             mode == "async_range" || mode == "async_unwaited") {
    float x[4] = {1, 2, 3, 4}, y[4], z[4];
    if (mode == "async_idle")
      pfrt_all_reduce_wait(4);
    int64_t slot = mode == "async_range" ? 64 : 3;
    pfrt_all_reduce_start(x, y, 4, world.data(), n, slot);
    if (mode == "async_twice")
      pfrt_all_reduce_start(x, z, 4, world.data(), n, 3);
    pfrt_finalize();
    return 0;
  } else if (mode == "dup_group") {
    int64_t g[2] = {0, 0};
    float x = 1, y;
    pfrt_all_reduce_sum(&x, &y, 1, g, 2);
  } else if (mode == "bad_root") {
    std::vector<int64_t> g(world.begin(), world.end() - 1);
    float x = 1;
    if (r == n - 1)
      blockForever();
    pfrt_broadcast(&x, 1, n - 1, g.data(), int64_t(g.size()));
  } else if (mode == "overlap") {
    std::vector<float> buf(4 * n + 4, 1.0f);
    pfrt_all_gather(buf.data() + 1, buf.data(), 4, world.data(), n);
  } else if (mode == "box_not_member") {
    CHECK(n >= 2, "needs 2 ranks");
    std::vector<int64_t> rest(world.begin() + 1, world.end());
    float x[2] = {1, 2}, y[64];
    int64_t shape[1] = {2};
    pfrt_box_all_gather(x, y, PFRT_DTYPE_F32, 1, shape, 0, rest.data(),
                        int64_t(rest.size()));
    blockForever(); // ranks 1.. get here
  } else if (mode == "box_indivisible") {
    CHECK(n == 4, "needs 4 ranks");
    float x[5 * 4] = {0}, y[5 * 4];
    int64_t shape[2] = {5, 4};
    pfrt_box_reduce_scatter(x, y, 2, shape, 0, world.data(), n);
  } else if (mode == "box_sum_dtype") {
    int64_t x[4] = {1, 2, 3, 4}, y[4];
    int64_t shape[1] = {4};
    pfrt_box_reduce_scatter_dtype(x, y, PFRT_DTYPE_I64, 1, shape, 0,
                                  world.data(), n);
  } else if (mode == "copy_box_bounds") {
    float src[3 * 4] = {0}, dst[2 * 5] = {0};
    int64_t ss[2] = {3, 4}, so[2] = {1, 1}, ds[2] = {2, 5}, dof[2] = {0, 3},
            sz[2] = {2, 3};
    pfrt_copy_box(src, ss, so, dst, ds, dof, sz, 2, PFRT_DTYPE_F32);
  } else if (mode == "recv_truncate" || mode == "recv_short") {
    CHECK(n >= 2, "needs 2 ranks");
    bool truncate = mode == "recv_truncate";
    float buf[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    if (r == 0)
      pfrt_send(buf, truncate ? 10 : 5, 1, 3);
    if (r == 1)
      pfrt_recv(buf, truncate ? 5 : 10, 0, 3);
    blockForever();
  } else if (mode == "bad_shard") {
    int64_t logical[2] = {4, 6}, off[2] = {1, 3}, shp[2] = {2, 4};
    float out[8];
    pfrt_init_param(out, PFRT_INIT_NORMAL, 0, 1, 1, 2, 2, logical, off, shp);
  } else if (mode == "trace_end") {
    CHECK(pfrt_trace_enabled(), "set PF_TRACE for this mode");
    pfrt_trace_begin("outer", "compute", 0, 0);
    pfrt_trace_end();
    pfrt_trace_end();
  } else if (mode == "xent_label") {
    float logits[4 * 5] = {0}, loss = 0;
    int64_t labels[4] = {0, 4, 7, 1};
    pfrt_k_softmax_xent(logits, labels, &loss, 4, 5);
  } else if (mode == "softmax_mask_rows") {
    float x[6 * 4] = {0}, y[6 * 4];
    int64_t mask[4 * 4] = {0};
    pfrt_k_softmax_masked(x, mask, 1, 4, 1.0, -1e9, y, 6, 4, 0);
  } else if (mode == "conv_dims") {
    float x[2 * 3 * 8 * 8] = {0}, w[4 * 3 * 3 * 3] = {0}, y[2 * 4 * 8 * 8];
    const int64_t dims[16] = {2, 3, 8, 8, 4, 3, 3, 7, 8, 1, 1, 1, 1, 1, 1, 1};
    pfrt_k_conv2d(x, w, y, dims);
  } else if (mode == "pool_dims") {
    float x[16] = {0}, y[64];
    const int64_t dims[12] = {1, 1, 4, 4, 6, 6, 2, 2, 1, 1, 2, 2};
    pfrt_k_max_pool2d(x, y, dims);
  } else if (mode == "matmul_batch") {
    float a[6] = {0}, b[6] = {0}, c[6];
    pfrt_k_matmul(a, b, c, 3, 2, 1, 1, 2, 0, 0);
  } else if (mode == "transpose_perm") {
    float x[6] = {0}, y[6];
    int64_t shape[3] = {1, 2, 3}, perm[3] = {0, 2, 0};
    pfrt_k_transpose(x, y, 3, shape, perm);
  } else {
    CHECK(false, "unknown mode '%s'", mode.c_str());
  }
  pfrt_finalize();
  return 0;
}
