//===- test_k_logical.cpp - comparisons, boolean tensors, casts -----------===//
//
// pfrt-test-k-logical DIR; check_kernels.py DIR checks the results against
// NumPy: pfrt_k_compare (every dtype and predicate, with ties, NaN and
// infinities, and int64s beyond float64's integers), pfrt_k_logical (every
// kind), pfrt_k_where and pfrt_k_cast (every pair of dtypes, with NaN,
// infinities and out-of-range floats), pfrt_k_masked_fill with every mask
// dtype, and pfrt_k_broadcast / pfrt_copy_box of bools. Covers in-place
// calls, odd sizes and empty tensors. The argument errors and a bool byte
// other than 0 and 1 are checked here.
//
//===----------------------------------------------------------------------===//

#include "KernelTest.h"

#include <cmath>
#include <cstring>
#include <limits>

using kt::Shape;

namespace {

/// n values of each dtype, drawn from small sets (so that comparisons tie)
/// plus the extremes of each type.
struct Data {
  std::vector<float> f;
  std::vector<int64_t> i64;
  std::vector<int32_t> i32;
  std::vector<uint8_t> b;
};

Data draw(kt::Harness &h, int64_t n) {
  const float inf = std::numeric_limits<float>::infinity();
  const float fs[] = {-2.5f, -1.0f, -0.0f, 0.0f, 0.5f, 1.0f,
                      3e9f,  -3e9f, inf,   -inf, NAN,  7.75f};
  const int64_t is[] = {-3,
                        -1,
                        0,
                        1,
                        2,
                        int64_t(1) << 62,
                        (int64_t(1) << 62) + 1,
                        std::numeric_limits<int64_t>::min(),
                        std::numeric_limits<int64_t>::max()};
  Data d;
  auto uniform = h.uniform(n, -4, 4);
  for (int64_t k = 0; k < n; ++k) {
    // Half from the sets, half random (a few equal by chance).
    bool pick = h.randint(0, 1) == 0;
    d.f.push_back(pick ? fs[h.randint(0, 11)] : uniform[size_t(k)]);
    d.i64.push_back(pick ? is[h.randint(0, 8)] : h.randint(-5, 5));
    d.i32.push_back(pick ? int32_t(is[h.randint(0, 4)])
                         : (h.randint(0, 9) == 0
                                ? std::numeric_limits<int32_t>::min()
                                : int32_t(h.randint(-5, 5))));
    d.b.push_back(uint8_t(h.randint(0, 1)));
  }
  return d;
}

const void *ptrOf(const Data &d, int32_t dtype) {
  switch (dtype) {
  case PFRT_DTYPE_F32:
    return d.f.data();
  case PFRT_DTYPE_I64:
    return d.i64.data();
  case PFRT_DTYPE_I32:
    return d.i32.data();
  default:
    return d.b.data();
  }
}

void save(kt::Harness &h, const std::string &id, const std::string &prefix,
          const Data &d, int64_t n) {
  Shape sh{n};
  h.saveAs(id, (prefix + "f32").c_str(), PFRT_DTYPE_F32, sh, d.f.data());
  h.saveAs(id, (prefix + "i64").c_str(), PFRT_DTYPE_I64, sh, d.i64.data());
  h.saveAs(id, (prefix + "i32").c_str(), PFRT_DTYPE_I32, sh, d.i32.data());
  h.saveAs(id, (prefix + "bool").c_str(), PFRT_DTYPE_BOOL, sh, d.b.data());
}

const char *kNames[] = {"f32", "i64", "i32", "bool"};

void logicalKernels(kt::Harness &h) {
  for (int64_t n : {int64_t(0), int64_t(1), int64_t(7), int64_t(1003)}) {
    std::string id = h.newCase();
    Data a = draw(h, n), b = draw(h, n);
    // b ties a at random places.
    for (int64_t k = 0; k < n; ++k)
      if (h.randint(0, 3) == 0) {
        b.f[size_t(k)] = a.f[size_t(k)];
        b.i64[size_t(k)] = a.i64[size_t(k)];
        b.i32[size_t(k)] = a.i32[size_t(k)];
        b.b[size_t(k)] = a.b[size_t(k)];
      }
    save(h, id, "a_", a, n);
    save(h, id, "b_", b, n);
    Shape sh{n};
    std::vector<uint8_t> out(static_cast<size_t>(n));
    for (int32_t dt = 0; dt < 4; ++dt)
      for (int32_t p = 0; p < 6; ++p) {
        pfrt_k_compare(ptrOf(a, dt), ptrOf(b, dt), out.data(), n, dt, p);
        std::string name =
            std::string("cmp_") + kNames[dt] + "_" + std::to_string(p);
        h.saveAs(id, name.c_str(), PFRT_DTYPE_BOOL, sh, out.data());
      }
    for (int32_t kind = 0; kind < 4; ++kind) {
      pfrt_k_logical(a.b.data(), kind == 3 ? nullptr : b.b.data(), out.data(),
                     n, kind);
      std::string name = "logical_" + std::to_string(kind);
      h.saveAs(id, name.c_str(), PFRT_DTYPE_BOOL, sh, out.data());
    }
    // In place: a bool result over its first operand.
    std::vector<uint8_t> inplace = a.b;
    pfrt_k_logical(inplace.data(), b.b.data(), inplace.data(), n, 2);
    h.saveAs(id, "logical_inplace", PFRT_DTYPE_BOOL, sh, inplace.data());
    // where: the condition is a compare's result.
    std::vector<uint8_t> cond(static_cast<size_t>(n));
    pfrt_k_compare(a.f.data(), b.f.data(), cond.data(), n, PFRT_DTYPE_F32, 2);
    h.saveAs(id, "cond", PFRT_DTYPE_BOOL, sh, cond.data());
    std::vector<char> buf(size_t(n) * 8 + 1);
    for (int32_t dt = 0; dt < 4; ++dt) {
      pfrt_k_where(cond.data(), ptrOf(a, dt), ptrOf(b, dt), buf.data(), n, dt);
      h.saveAs(id, (std::string("where_") + kNames[dt]).c_str(), dt, sh,
               buf.data());
    }
    for (int32_t from = 0; from < 4; ++from)
      for (int32_t to = 0; to < 4; ++to) {
        pfrt_k_cast(ptrOf(a, from), from, buf.data(), to, n);
        std::string name =
            std::string("cast_") + kNames[from] + "_" + kNames[to];
        h.saveAs(id, name.c_str(), to, sh, buf.data());
      }
    // masked_fill of floats with a mask of every dtype (b's values).
    double v = h.uniform1(-10, 10);
    std::vector<float> filled(static_cast<size_t>(n));
    for (int32_t dt = 0; dt < 4; ++dt) {
      pfrt_k_masked_fill(a.f.data(), ptrOf(b, dt), filled.data(), n, dt, v);
      h.save(id, (std::string("fill_") + kNames[dt]).c_str(), sh, filled);
    }
    h.record("logical", id, "n=%lld v=%.17g", (long long)n, v);
  }
}

/// Bools through the data movement kernels: broadcast (1-byte elements)
/// and copy_box (PFRT_DTYPE_BOOL).
void boolMoves(kt::Harness &h) {
  std::string id = h.newCase();
  const int64_t rows = 5, cols = 7;
  std::vector<uint8_t> x(static_cast<size_t>(cols));
  for (auto &e : x)
    e = uint8_t(h.randint(0, 1));
  std::vector<uint8_t> y(static_cast<size_t>(rows * cols));
  const int64_t in[] = {1, cols}, out[] = {rows, cols};
  pfrt_k_broadcast(x.data(), y.data(), 2, in, out, 1);
  h.saveAs(id, "x", PFRT_DTYPE_BOOL, Shape{cols}, x.data());
  h.saveAs(id, "y", PFRT_DTYPE_BOOL, Shape{rows, cols}, y.data());
  // The box [1:4, 2:6] of y into the corner of a zeroed [4, 5].
  std::vector<uint8_t> z(20, 0);
  const int64_t src[] = {rows, cols}, srcOff[] = {1, 2}, dst[] = {4, 5},
                sizes[] = {3, 4};
  pfrt_copy_box(y.data(), src, srcOff, z.data(), dst, nullptr, sizes, 2,
                PFRT_DTYPE_BOOL);
  h.saveAs(id, "box", PFRT_DTYPE_BOOL, Shape{4, 5}, z.data());
  h.record("bool_moves", id, "rows=%lld cols=%lld", (long long)rows,
           (long long)cols);
}

/// Whether v[0..4) is (a, b, c, d).
template <typename T>
bool fourAre(const T *v, double a, double b, double c, double d) {
  return v[0] == a && v[1] == b && v[2] == c && v[3] == d;
}

/// Any non-zero byte is true, also where a bool is not 0 or 1.
void nonCanonicalBools() {
  const uint8_t a[] = {2, 0, 255, 1}, b[] = {1, 3, 0, 0};
  uint8_t out[4];
  pfrt_k_logical(a, b, out, 4, 0);
  CHECK(fourAre(out, 1, 0, 0, 0), "logical and of non-canonical bools");
  pfrt_k_logical(a, nullptr, out, 4, 3);
  CHECK(fourAre(out, 0, 1, 0, 0), "logical not of non-canonical bools");
  pfrt_k_compare(a, b, out, 4, PFRT_DTYPE_BOOL, 0);
  CHECK(fourAre(out, 1, 0, 0, 0), "bool == of non-canonical bools");
  float x[] = {1, 2, 3, 4}, y[4];
  pfrt_k_masked_fill(x, a, y, 4, PFRT_DTYPE_BOOL, -1.0);
  CHECK(fourAre(y, -1, 2, -1, -1),
        "masked_fill with a non-canonical bool mask");
}

} // namespace

int main(int argc, char **argv) {
  if (argc == 3) { // an argument error: run_tests.sh checks the message
    std::string what = argv[2];
    pfrt_init(&argc, &argv);
    float x[2] = {0, 0};
    uint8_t o[2];
    if (what == "predicate")
      pfrt_k_compare(x, x, o, 2, PFRT_DTYPE_F32, 6);
    else if (what == "dtype")
      pfrt_k_where(o, x, x, x, 2, 9);
    else if (what == "kind")
      pfrt_k_logical(o, o, o, 2, 4);
    else if (what == "b")
      pfrt_k_logical(o, nullptr, o, 2, 0);
    else if (what == "mask_dtype")
      pfrt_k_masked_fill(x, o, x, 2, -1, 0.0);
    return 0;
  }
  kt::Harness h("k-logical", argc, argv);
  logicalKernels(h);
  boolMoves(h);
  nonCanonicalBools();
  return 0;
}
