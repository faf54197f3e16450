//===- KernelTest.h - Harness of the pfrt-test-k-* kernel tests -*- C++ -*-===//
//
// A kernel test program (pfrt-test-k-FAMILY DIR) draws fresh random inputs
// (PFRT_TEST_SEED replays a run), calls the kernels and writes every input
// and output as DIR/<case>_<tensor>.npy plus one line per case to
// DIR/manifest.txt:
//     kernel=<name> id=<case> key=value ...
// (values: integers, %.17g floats, or comma-separated integer lists).
// check_kernels.py DIR then recomputes every case in float64 NumPy.
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_TEST_KERNELTEST_H
#define PFRT_TEST_KERNELTEST_H

#include "TestUtil.h"

#include <algorithm>
#include <cstdarg>
#include <initializer_list>
#include <string>
#include <sys/stat.h>
#include <utility>
#include <vector>

namespace kt {

using pt::numel;
using pt::Shape;

inline std::string join(const Shape &s) {
  if (s.empty())
    return "-"; // rank 0
  std::string r;
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? "," : "") + std::to_string(s[i]);
  return r;
}

class Harness {
public:
  Harness(const char *name, int argc, char **argv) {
    pfrt_init(&argc, &argv);
    CHECK(argc == 2, "usage: %s DIR", argv[0]);
    dir = argv[1];
    for (size_t i = 1; i <= dir.size(); ++i) // mkdir -p
      if (i == dir.size() || dir[i] == '/')
        mkdir(dir.substr(0, i).c_str(), 0777);
    seed = pt_seed(name);
    state = pt_mix(seed ^ 0x5eed);
    std::string path = dir + "/manifest.txt";
    manifest = fopen(path.c_str(), "w");
    CHECK(manifest, "cannot create %s", path.c_str());
    fprintf(manifest, "# seed=%llu\n", (unsigned long long)seed);
    pfrt_set_num_threads(1);
  }
  ~Harness() {
    fclose(manifest);
    printf("%d cases written to %s\n", cases, dir.c_str());
    pfrt_finalize();
  }

  /// Uniform floats in [lo, hi), never all zero.
  std::vector<float> uniform(int64_t n, float lo = -1.0f, float hi = 1.0f) {
    std::vector<float> v(size_t(std::max<int64_t>(n, 0)));
    uint64_t t = ++tag;
    for (int64_t i = 0; i < n; ++i) {
      float u = 0.5f * (pt_value(seed, t, 0, uint64_t(i)) + 1.0f);
      v[size_t(i)] = lo + (hi - lo) * u;
    }
    return v;
  }
  /// n distinct values in [-1, 1) in random order (no ties anywhere).
  std::vector<float> distinct(int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      v[size_t(i)] = -1.0f + 2.0f * float(i) / float(n);
    for (int64_t i = n - 1; i > 0; --i)
      std::swap(v[size_t(i)], v[size_t(randint(0, i))]);
    return v;
  }
  int64_t randint(int64_t lo, int64_t hi) { return pt_randint(&state, lo, hi); }
  double uniform1(double lo, double hi) {
    state = pt_mix(state);
    return lo + (hi - lo) * double(state >> 11) * (1.0 / 9007199254740992.0);
  }

  std::string newCase() { return "c" + std::to_string(cases++); }

  void save(const std::string &id, const char *tensor, const Shape &shape,
            const float *data) {
    std::string p = dir + "/" + id + "_" + tensor + ".npy";
    pfrt_npy_write(p.c_str(), PFRT_DTYPE_F32, int64_t(shape.size()),
                   shape.data(), data);
  }
  void save(const std::string &id, const char *tensor, const Shape &shape,
            const std::vector<float> &data) {
    CHECK(int64_t(data.size()) >= numel(shape), "%s: short buffer", tensor);
    save(id, tensor, shape, data.data());
  }
  /// Float tensors of one shape, each under its name.
  void saveAll(
      const std::string &id, const Shape &shape,
      std::initializer_list<std::pair<const char *, const std::vector<float> &>>
          tensors) {
    for (const auto &[tensor, data] : tensors)
      save(id, tensor, shape, data);
  }
  void saveI64(const std::string &id, const char *tensor, const Shape &shape,
               const std::vector<int64_t> &data) {
    saveAs(id, tensor, PFRT_DTYPE_I64, shape, data.data());
  }
  /// A tensor of any PFRT_DTYPE_* (a bool one byte an element).
  void saveAs(const std::string &id, const char *tensor, int32_t dtype,
              const Shape &shape, const void *data) {
    std::string p = dir + "/" + id + "_" + tensor + ".npy";
    pfrt_npy_write(p.c_str(), dtype, int64_t(shape.size()), shape.data(), data);
  }

  /// Appends `kernel=<kernel> id=<id> <fmt...>` to the manifest.
  void record(const char *kernel, const std::string &id, const char *fmt, ...)
      __attribute__((format(printf, 4, 5))) {
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    fprintf(manifest, "kernel=%s id=%s %s\n", kernel, id.c_str(), buf);
  }

  uint64_t seed = 0;

private:
  std::string dir;
  FILE *manifest = nullptr;
  uint64_t state = 0, tag = 0;
  int cases = 0;
};

} // namespace kt

#endif // PFRT_TEST_KERNELTEST_H
