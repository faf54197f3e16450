//===- test_split_boxing.cpp - the split all-gather and reduce-scatter ----===//
//
// pfrt-test-split-boxing MODE, under mpiexec (1 to 4 ranks):
//   host    pfrt_box_all_gather_start / pfrt_box_reduce_scatter_start and
//           pfrt_box_collective_wait against the blocking host rows
//           (pfrt_box_all_gather, pfrt_box_reduce_scatter_dtype): every
//           group of pt::baseGroups and each rank alone, every axis of a
//           3-D tensor, gathers of f32, i64 and bf16 bits, scatters of f32,
//           bf16 and f16; a gather and a scatter in flight at once (slots 5
//           and 9), waited for in the other order. Byte for byte.
//   device  the device twins (PFRT_CUDA_FAKE=1 with a GPU a rank: NCCL, the
//           emulation's) against the blocking twins and the host rows, the
//           same cases, then a CUDA graph capturing a split gather and a
//           split scatter around a kernel on the compute stream, replayed
//           over new data 3 times against the host rows. Byte for byte.
//   device_staged the device twins where the ranks share a GPU (the start
//                 runs the host-staged blocking twin), without the graph.
//   unjoined      a capture ended with a split gather not waited for: the
//                 capture must fail (CUDA_ERROR_STREAM_CAPTURE_UNJOINED).
//   double_start  a slot started twice: fatal.
//   wait_idle     a wait on a slot with nothing in flight: fatal.
//   leak          a start never waited for: pfrt_finalize is fatal.
// The data are fresh random multiples of 1/4 in [-16, 16), never zero
// everywhere: sums of up to 4 of them are exact in f32, bf16 and f16, so the
// sums are the same bits whatever order MPI adds them in (MPICH's
// nonblocking reduce-scatter need not use its blocking algorithm).
//
//===----------------------------------------------------------------------===//

#include "CudaTestUtil.h"
#include "TestUtil.h"
#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace {

uint64_t gSeed, gTag;
int gRank, gSize;
bool gDevice = false;
const int64_t kArena = int64_t(16) << 20;
pt::DeviceArena gArena(kArena);

/// `n` elements of `es` bytes for dtype: random quarters in [-16, 16) as
/// f32, bf16 or f16 bits, or random int64s.
std::vector<char> randomData(int32_t dtype, int64_t n, uint64_t salt) {
  std::vector<float> v = pt::uniformValues(gSeed, ++gTag, salt, n, -16, 16);
  int64_t es = dtype == PFRT_DTYPE_I64 ? 8 : dtype == PFRT_DTYPE_F32 ? 4 : 2;
  std::vector<char> out(static_cast<size_t>(n * es));
  for (int64_t i = 0; i < n; ++i) {
    float q = std::floor(v[size_t(i)] * 4) / 4;
    uint32_t b;
    std::memcpy(&b, &q, 4);
    char *at = out.data() + i * es;
    if (dtype == PFRT_DTYPE_I64) {
      int64_t x = int64_t(v[size_t(i)] * 1e6) * 977 + i;
      std::memcpy(at, &x, 8);
    } else if (dtype == PFRT_DTYPE_F32) {
      std::memcpy(at, &q, 4);
    } else if (dtype == PFRT_DTYPE_BF16) {
      uint16_t h = uint16_t(b >> 16); // exact: a quarter has few bits
      std::memcpy(at, &h, 2);
    } else {
      uint16_t h = uint16_t((b >> 16) & 0x8000);
      if (q != 0) {
        int e = int((b >> 23) & 0xff) - 127 + 15;
        h = uint16_t(h | (e << 10) | ((b >> 13) & 0x3ff));
      }
      std::memcpy(at, &h, 2);
    }
  }
  return out;
}

int64_t esOf(int32_t dtype) {
  return dtype == PFRT_DTYPE_I64 ? 8 : dtype == PFRT_DTYPE_F32 ? 4 : 2;
}

std::string what(const char *fn, const pt::Shape &g, int32_t dtype,
                 int64_t axis) {
  std::string s = std::string(fn) + " group [";
  for (size_t i = 0; i < g.size(); ++i)
    s += (i ? "," : "") + std::to_string(g[i]);
  return s + "] dtype " + std::to_string(dtype) + " axis " +
         std::to_string(axis);
}

void expectBytes(const std::vector<char> &got, const std::vector<char> &want,
                 const std::string &at) {
  CHECK(got.size() == want.size(), "%s: %zu bytes, want %zu", at.c_str(),
        got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    CHECK(got[i] == want[i], "%s: byte %zu differs from the blocking row's",
          at.c_str(), i);
}

void *devCopy(const std::vector<char> &h) {
  void *d = gArena.alloc(int64_t(h.size()));
  if (!h.empty())
    pfrt_cuda_h2d(d, h.data(), int64_t(h.size()));
  return d;
}

void *devPoisoned(int64_t bytes) {
  void *d = gArena.alloc(bytes);
  if (bytes > 0)
    pfrt_cuda_memset(d, 0xff, bytes);
  return d;
}

std::vector<char> devRead(const void *d, int64_t bytes) {
  std::vector<char> h(static_cast<size_t>(bytes));
  if (bytes > 0)
    pfrt_cuda_d2h(h.data(), d, bytes);
  return h;
}

/// One gather (gd, shape gs along ga) and one scatter (sd, ss along sa) in
/// group g, started together and waited for in the other order, against
/// the blocking rows (and on the device the blocking twins too).
void pair(const pt::Shape &g, int32_t gd, const pt::Shape &gs, int64_t ga,
          int32_t sd, const pt::Shape &ss, int64_t sa) {
  const int64_t *r = g.data();
  int64_t n = int64_t(g.size());
  int64_t gBytes = pt::numel(gs) * esOf(gd), sBytes = pt::numel(ss) * esOf(sd);
  std::vector<char> gin = randomData(gd, pt::numel(gs), uint64_t(gRank)),
                    sin = randomData(sd, pt::numel(ss), uint64_t(gRank));
  std::vector<char> gwant(static_cast<size_t>(n * gBytes)),
      swant(static_cast<size_t>(sBytes / n));
  CHECK(pfrt_box_all_gather(gin.data(), gwant.data(), gd, 3, gs.data(), ga, r,
                            n) == 0,
        "rc");
  CHECK(pfrt_box_reduce_scatter_dtype(sin.data(), swant.data(), sd, 3,
                                      ss.data(), sa, r, n) == 0,
        "rc");
  std::string gw = what("all_gather_start", g, gd, ga);
  std::string sw = what("reduce_scatter_start", g, sd, sa);
  if (!gDevice) {
    std::vector<char> gout(gwant.size(), char(0x7f)),
        sout(swant.size(), char(0x7f));
    pfrt_box_all_gather_start(gin.data(), gout.data(), gd, 3, gs.data(), ga, r,
                              n, 5);
    pfrt_box_reduce_scatter_start(sin.data(), sout.data(), sd, 3, ss.data(), sa,
                                  r, n, 9);
    pfrt_box_collective_wait(9);
    pfrt_box_collective_wait(5);
    expectBytes(gout, gwant, gw);
    expectBytes(sout, swant, sw);
    return;
  }
  void *dgin = devCopy(gin), *dsin = devCopy(sin);
  void *dgout = devPoisoned(n * gBytes), *dsout = devPoisoned(sBytes / n);
  void *bgout = devPoisoned(n * gBytes), *bsout = devPoisoned(sBytes / n);
  pfrt_cuda_box_all_gather(dgin, bgout, gd, 3, gs.data(), ga, r, n);
  pfrt_cuda_box_reduce_scatter_dtype(dsin, bsout, sd, 3, ss.data(), sa, r, n);
  pfrt_cuda_box_all_gather_start(dgin, dgout, gd, 3, gs.data(), ga, r, n, 5);
  pfrt_cuda_box_reduce_scatter_start(dsin, dsout, sd, 3, ss.data(), sa, r, n,
                                     9);
  pfrt_cuda_box_collective_wait(9);
  pfrt_cuda_box_collective_wait(5);
  pfrt_cuda_synchronize();
  expectBytes(devRead(dgout, n * gBytes), gwant, gw);
  expectBytes(devRead(dsout, sBytes / n), swant, sw);
  expectBytes(devRead(dgout, n * gBytes), devRead(bgout, n * gBytes),
              gw + " (the blocking twin)");
  expectBytes(devRead(dsout, sBytes / n), devRead(bsout, sBytes / n),
              sw + " (the blocking twin)");
}

void allCases() {
  std::vector<pt::Shape> groups = pt::baseGroups(gSize);
  if (gSize > 1)
    groups.push_back({int64_t(gRank)});
  const int32_t gathers[] = {PFRT_DTYPE_F32, PFRT_DTYPE_I64, PFRT_DTYPE_BF16};
  const int32_t sums[] = {PFRT_DTYPE_F32, PFRT_DTYPE_BF16, PFRT_DTYPE_F16};
  for (const pt::Shape &g : groups) {
    bool member = false;
    for (int64_t x : g)
      member |= x == gRank;
    if (!member)
      continue;
    int64_t n = int64_t(g.size());
    for (int k = 0; k < 3; ++k)
      for (int64_t axis = 0; axis < 3; ++axis) {
        pt::Shape gs = {3, 2, 5};
        pt::Shape ss = {3, 5, 2};
        ss[size_t(axis)] = 12 * n / (n == 3 ? 3 : 1); // divisible by n
        pair(g, gathers[k], gs, axis, sums[k], ss, axis);
      }
  }
}

/// A graph capturing a split gather and a split scatter of the world around
/// a memset on the compute stream, replayed over new data.
void graphReplay() {
  pt::Shape world;
  for (int r = 0; r < gSize; ++r)
    world.push_back(r);
  const int64_t *r = world.data();
  int64_t n = gSize;
  pt::Shape gs = {4, 3, 2}, ss = {4, 12, 2};
  int64_t gBytes = pt::numel(gs) * 4, sBytes = pt::numel(ss) * 4;
  void *gin = gArena.alloc(gBytes), *sin = gArena.alloc(sBytes);
  void *gout = gArena.alloc(n * gBytes), *sout = gArena.alloc(sBytes / n);
  void *other = gArena.alloc(4096);
  // Once uncaptured first, as a step is: the slots' repack buffers are
  // made then (allocating inside a capture fails).
  for (int captured = 0; captured < 2; ++captured) {
    pfrt_cuda_synchronize();
    if (captured)
      pfrt_cuda_graph_begin();
    pfrt_cuda_box_all_gather_start(gin, gout, PFRT_DTYPE_F32, 3, gs.data(), 1,
                                   r, n, 0);
    pfrt_cuda_box_reduce_scatter_start(sin, sout, PFRT_DTYPE_F32, 3, ss.data(),
                                       1, r, n, 1);
    pfrt_cuda_memset(other, 0x11, 4096); // compute between start and wait
    pfrt_cuda_box_collective_wait(0);
    pfrt_cuda_box_collective_wait(1);
  }
  pfrt_cuda_graph_end();
  for (int replay = 0; replay < 3; ++replay) {
    std::vector<char> hg = randomData(PFRT_DTYPE_F32, pt::numel(gs), gRank),
                      hs = randomData(PFRT_DTYPE_F32, pt::numel(ss), gRank);
    pfrt_cuda_h2d(gin, hg.data(), gBytes);
    pfrt_cuda_h2d(sin, hs.data(), sBytes);
    pfrt_cuda_memset(gout, 0xff, n * gBytes);
    pfrt_cuda_memset(sout, 0xff, sBytes / n);
    pfrt_cuda_graph_launch();
    pfrt_cuda_synchronize();
    std::vector<char> wg(static_cast<size_t>(n * gBytes)),
        ws(static_cast<size_t>(sBytes / n));
    pfrt_box_all_gather(hg.data(), wg.data(), PFRT_DTYPE_F32, 3, gs.data(), 1,
                        r, n);
    pfrt_box_reduce_scatter(reinterpret_cast<const float *>(hs.data()),
                            reinterpret_cast<float *>(ws.data()), 3, ss.data(),
                            1, r, n);
    std::string at = " (graph replay " + std::to_string(replay) + ")";
    expectBytes(devRead(gout, n * gBytes), wg, "captured all_gather" + at);
    expectBytes(devRead(sout, sBytes / n), ws, "captured reduce_scatter" + at);
  }
}

} // namespace

int main(int argc, char **argv) {
  std::string mode = argc > 1 ? argv[1] : "host";
  gDevice = mode == "device" || mode == "device_staged";
  bool device = gDevice || mode == "unjoined";
  if (device)
    pt::skipWithoutDevice("split-boxing");
  gSeed = pt_start(&argc, &argv, "split-boxing", &gRank, &gSize);
  if (device)
    pfrt_cuda_arena_plan(kArena);
  pt::Shape world;
  for (int r = 0; r < gSize; ++r)
    world.push_back(r);
  pt::Shape shape = {2, 3, 4};
  if (mode == "unjoined") {
    void *in = gArena.alloc(96), *out = gArena.alloc(96 * gSize);
    for (int captured = 0; captured < 2; ++captured) {
      if (captured)
        pfrt_cuda_graph_begin(); // the first round makes the communicator
      pfrt_cuda_box_all_gather_start(in, out, PFRT_DTYPE_F32, 3, shape.data(),
                                     0, world.data(), gSize, 3);
      if (!captured)
        pfrt_cuda_box_collective_wait(3);
    }
    pfrt_cuda_graph_end();
    return 0;
  }
  if (mode == "double_start" || mode == "wait_idle" || mode == "leak") {
    std::vector<float> in(24, 1.5f), out(size_t(24 * gSize));
    if (mode != "wait_idle")
      pfrt_box_all_gather_start(in.data(), out.data(), PFRT_DTYPE_F32, 3,
                                shape.data(), 0, world.data(), gSize, 3);
    if (mode == "double_start")
      pfrt_box_all_gather_start(in.data(), out.data(), PFRT_DTYPE_F32, 3,
                                shape.data(), 0, world.data(), gSize, 3);
    if (mode == "wait_idle")
      pfrt_box_collective_wait(4);
    pfrt_finalize();
    return 0;
  }
  allCases();
  if (gDevice) {
    if (mode == "device") // host-staged steps are not captured
      graphReplay();
    pfrt_cuda_finalize();
  }
  return pt_finish(gRank, "split-boxing %s: PASS\n", mode.c_str());
}
