//===- test_interop.cpp - C side of the NumPy cross-check -----------------===//
//
// pfrt-test-interop DIR reads DIR/cases.txt written by check_interop.py.
// For every case it
//   1. computes the whole logical tensor and writes DIR/c_<id>.npy (the
//      Python side then compares it with pfrt_philox.py exactly, which also
//      proves NumPy reads what pfrt_npy_write writes);
//   2. reads the case's shard out of DIR/py_<id>.npy (written by NumPy, v1
//      or v2 header) and checks it bit for bit against the shard computed
//      directly with the shard offset, i.e. C shard == NumPy full[slice].
//
// A line: id func a b seed stream step dtype ndim L... O... S...
//   func: init:<kind> | batch | labels:<num_classes>; dtype: f4 | i8 | i4.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Case {
  std::string id, func, dtype;
  double a = 0, b = 0;
  uint64_t seed = 0, stream = 0, step = 0;
  int64_t ndim = 0;
  std::vector<int64_t> logical, offset, shape;
};

int64_t numel(const std::vector<int64_t> &s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

/// Computes the given shard as raw bytes of the case's dtype.
std::vector<char> compute(const Case &c, const int64_t *off, const int64_t *shp,
                          int64_t n) {
  std::vector<char> out;
  if (c.func == "batch") {
    out.resize(n * 4);
    pfrt_synthetic_batch(reinterpret_cast<float *>(out.data()), c.seed,
                         c.stream, c.step, c.ndim, c.logical.data(), off, shp);
  } else if (c.func.rfind("init:", 0) == 0) {
    out.resize(n * 4);
    pfrt_init_param(reinterpret_cast<float *>(out.data()),
                    int32_t(std::stoi(c.func.substr(5))), c.a, c.b, c.seed,
                    c.stream, c.ndim, c.logical.data(), off, shp);
  } else if (c.func.rfind("labels:", 0) == 0) {
    std::vector<int64_t> lab(n);
    pfrt_synthetic_labels(lab.data(), std::stoll(c.func.substr(7)), c.seed,
                          c.stream, c.step, c.ndim, c.logical.data(), off, shp);
    if (c.dtype == "i8") {
      out.resize(n * 8);
      memcpy(out.data(), lab.data(), n * 8);
    } else {
      out.resize(n * 4);
      for (int64_t i = 0; i < n; ++i) {
        int32_t v = int32_t(lab[i]);
        memcpy(out.data() + i * 4, &v, 4);
      }
    }
  } else {
    CHECK(false, "unknown func '%s'", c.func.c_str());
  }
  return out;
}

int32_t dtypeCode(const std::string &d) {
  if (d == "f4")
    return PFRT_DTYPE_F32;
  if (d == "i8")
    return PFRT_DTYPE_I64;
  CHECK(d == "i4", "unknown dtype '%s'", d.c_str());
  return PFRT_DTYPE_I32;
}

} // namespace

int main(int argc, char **argv) {
  pfrt_init(&argc, &argv);
  CHECK(argc == 2, "usage: pfrt-test-interop DIR");
  std::string dir = argv[1];
  std::ifstream in(dir + "/cases.txt");
  CHECK(in.good(), "cannot open %s/cases.txt", dir.c_str());
  int count = 0;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty())
      continue;
    std::istringstream ls(line);
    Case c;
    ls >> c.id >> c.func >> c.a >> c.b >> c.seed >> c.stream >> c.step >>
        c.dtype >> c.ndim;
    c.logical.resize(c.ndim);
    c.offset.resize(c.ndim);
    c.shape.resize(c.ndim);
    for (auto *v : {&c.logical, &c.offset, &c.shape})
      for (int64_t d = 0; d < c.ndim; ++d)
        ls >> (*v)[d];
    CHECK(!ls.fail(), "bad case line: %s", line.c_str());
    int32_t dt = dtypeCode(c.dtype);
    int64_t elem = c.dtype == "i8" ? 8 : 4;

    int64_t n = numel(c.logical);
    std::vector<char> full = compute(c, nullptr, nullptr, n);
    std::string cpath = dir + "/c_" + c.id + ".npy";
    pfrt_npy_write(cpath.c_str(), dt, c.ndim, c.logical.data(), full.data());

    // Whole NumPy tensor == whole C tensor.
    std::string ppath = dir + "/py_" + c.id + ".npy";
    std::vector<char> pyFull(n * elem + 1);
    pfrt_npy_read_shard(ppath.c_str(), dt, c.ndim, c.logical.data(), nullptr,
                        nullptr, pyFull.data());
    CHECK(memcmp(pyFull.data(), full.data(), n * elem) == 0,
          "case %s: NumPy tensor differs from C tensor", c.id.c_str());

    // Shard read from the NumPy file == shard computed directly.
    int64_t m = numel(c.shape);
    std::vector<char> shard = compute(c, c.offset.data(), c.shape.data(), m);
    std::vector<char> fromFile(m * elem + 1);
    pfrt_npy_read_shard(ppath.c_str(), dt, c.ndim, c.logical.data(),
                        c.offset.data(), c.shape.data(), fromFile.data());
    CHECK(memcmp(fromFile.data(), shard.data(), m * elem) == 0,
          "case %s: shard of the NumPy file differs from the C shard",
          c.id.c_str());
    ++count;
  }
  CHECK(count >= 10, "only %d cases in cases.txt", count);
  pfrt_finalize();
  printf("interop C side ok: %d cases\n", count);
  return 0;
}
