//===- test_generated.cpp - the generated kernels' table and launches -----===//
//
// pfrt-test-generated MODE SEED. The table a compiled rank registers
// (pfrt_generated_kernels) and launches through it (pfrt_launch_generated),
// with two host twins standing in for the compiler's kernels:
//   host      launches on the host rows over fresh random data, every
//             output bit for bit against the same arithmetic done here;
//   device    the device twins with PFRT_CUDA_FAKE=1 (the emulation runs a
//             launch through the kernel's host twin): uploads, launches,
//             downloads; then a captured graph replays the launch over new
//             input data;
//   unregistered, wrong_count, null_buffer, bad_index, bad_table,
//   device_wrong_count: the fatal errors run_tests.sh expects.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"
#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

/// out0 = a + b, out1 = a * b - out0 (two outputs, two inputs).
void twinSumProduct(void **p, int64_t n) {
  auto *s = static_cast<float *>(p[0]), *d = static_cast<float *>(p[1]);
  auto *a = static_cast<const float *>(p[2]),
       *b = static_cast<const float *>(p[3]);
  for (int64_t i = 0; i < n; ++i) {
    s[i] = a[i] + b[i];
    d[i] = a[i] * b[i] - s[i];
  }
}

/// out = -x (one output, one input).
void twinNegate(void **p, int64_t n) {
  auto *y = static_cast<float *>(p[0]);
  auto *x = static_cast<const float *>(p[1]);
  for (int64_t i = 0; i < n; ++i)
    y[i] = -x[i];
}

const char *const kNames[] = {"pf_ew_fused_0", "pf_ew_neg"};
const pfrt_host_kernel kTwins[] = {twinSumProduct, twinNegate};
const int64_t kPointers[] = {4, 2};
const unsigned char kImage[] = {1, 2, 3, 4}; // never read by these modes

uint64_t gSeed, gTag;

std::vector<float> fresh(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  uint64_t t = ++gTag;
  for (int64_t i = 0; i < n; ++i)
    v[size_t(i)] = 3.0f * pt_value(gSeed, t, 0, uint64_t(i));
  return v;
}

void expectBits(const std::vector<float> &got, const std::vector<float> &want,
                const char *what) {
  CHECK(got.size() == want.size(), "%s: size", what);
  for (size_t i = 0; i < got.size(); ++i)
    CHECK(std::memcmp(&got[i], &want[i], sizeof(float)) == 0,
          "%s: element %zu is %.9g, expected %.9g", what, i, got[i], want[i]);
}

void registerTable() {
  pfrt_generated_kernels(kImage, sizeof(kImage), 2, kNames, kTwins, kPointers);
}

void host() {
  registerTable();
  const int64_t n = 1000;
  std::vector<float> a = fresh(n), b = fresh(n), s(n), d(n), y(n);
  pfrt_launch_generated(0, n, 4, s.data(), d.data(), a.data(), b.data(),
                        nullptr, nullptr, nullptr, nullptr);
  pfrt_launch_generated(1, n, 2, y.data(), d.data(), nullptr, nullptr, nullptr,
                        nullptr, nullptr, nullptr);
  std::vector<float> ws(n), wd(n), wy(n);
  for (int64_t i = 0; i < n; ++i) {
    ws[i] = a[i] + b[i];
    wd[i] = a[i] * b[i] - ws[i];
    wy[i] = -wd[i];
  }
  expectBits(s, ws, "host sum");
  expectBits(d, wd, "host product");
  expectBits(y, wy, "host negate");
  // n = 0 touches nothing.
  float untouched = 7.0f;
  pfrt_launch_generated(1, 0, 2, &untouched, &untouched, nullptr, nullptr,
                        nullptr, nullptr, nullptr, nullptr);
  CHECK(untouched == 7.0f, "a launch over 0 elements wrote");
}

void runDevice() {
  const int64_t n = 777, bytes = n * int64_t(sizeof(float));
  pfrt_cuda_arena_plan(8 * bytes);
  pfrt_cuda_generated_kernels(kImage, sizeof(kImage), 2, kNames, kTwins,
                              kPointers);
  void *da = pfrt_cuda_arena_ptr(0, bytes),
       *db = pfrt_cuda_arena_ptr(bytes, bytes);
  void *ds = pfrt_cuda_arena_ptr(2 * bytes, bytes),
       *dd = pfrt_cuda_arena_ptr(3 * bytes, bytes);
  auto run = [&] {
    pfrt_cuda_launch_generated(0, n, 4, ds, dd, da, db, nullptr, nullptr,
                               nullptr, nullptr);
  };
  auto check = [&](const std::vector<float> &a, const std::vector<float> &b,
                   const char *what) {
    std::vector<float> s(n), d(n), ws(n), wd(n);
    pfrt_cuda_d2h(s.data(), ds, bytes);
    pfrt_cuda_d2h(d.data(), dd, bytes);
    for (int64_t i = 0; i < n; ++i) {
      ws[i] = a[i] + b[i];
      wd[i] = a[i] * b[i] - ws[i];
    }
    expectBits(s, ws, what);
    expectBits(d, wd, what);
  };
  std::vector<float> a = fresh(n), b = fresh(n);
  pfrt_cuda_h2d(da, a.data(), bytes);
  pfrt_cuda_h2d(db, b.data(), bytes);
  run();
  check(a, b, "device launch");
  // Captured, then replayed over new inputs.
  pfrt_cuda_graph_begin();
  run();
  pfrt_cuda_graph_end();
  a = fresh(n);
  b = fresh(n);
  pfrt_cuda_h2d(da, a.data(), bytes);
  pfrt_cuda_h2d(db, b.data(), bytes);
  pfrt_cuda_graph_launch();
  check(a, b, "replayed launch");
}

} // namespace

int main(int argc, char **argv) {
  CHECK(argc == 3, "usage: pfrt-test-generated MODE SEED");
  std::string mode = argv[1];
  gSeed = std::strtoull(argv[2], nullptr, 10);
  std::printf("seed %llu\n", (unsigned long long)gSeed);
  float x = 1.0f, y = 0.0f;
  // A GPU rank's device is picked by its rank: the device modes start MPI.
  bool device = mode.rfind("device", 0) == 0;
  if (device)
    pfrt_init(&argc, &argv);
  if (mode == "host")
    host();
  else if (mode == "device")
    runDevice();
  else if (mode == "unregistered")
    pfrt_launch_generated(0, 1, 2, &y, &x, nullptr, nullptr, nullptr, nullptr,
                          nullptr, nullptr);
  else if (mode == "wrong_count" || mode == "null_buffer" ||
           mode == "bad_index") {
    registerTable();
    if (mode == "wrong_count")
      pfrt_launch_generated(1, 1, 3, &y, &x, &x, nullptr, nullptr, nullptr,
                            nullptr, nullptr);
    else if (mode == "null_buffer")
      pfrt_launch_generated(0, 1, 4, &y, &y, nullptr, &x, nullptr, nullptr,
                            nullptr, nullptr);
    else
      pfrt_launch_generated(2, 1, 2, &y, &x, nullptr, nullptr, nullptr, nullptr,
                            nullptr, nullptr);
  } else if (mode == "bad_table") {
    const int64_t tooMany[] = {4, 9};
    pfrt_generated_kernels(kImage, sizeof(kImage), 2, kNames, kTwins, tooMany);
  } else if (mode == "device_wrong_count") {
    pfrt_cuda_arena_plan(64);
    pfrt_cuda_generated_kernels(kImage, sizeof(kImage), 2, kNames, kTwins,
                                kPointers);
    void *d = pfrt_cuda_arena_ptr(0, 16);
    pfrt_cuda_launch_generated(0, 4, 2, d, d, nullptr, nullptr, nullptr,
                               nullptr, nullptr, nullptr);
  } else {
    CHECK(false, "unknown mode %s", mode.c_str());
  }
  std::printf("generated %s: ok\n", mode.c_str());
  if (device)
    pfrt_finalize();
  return 0;
}
