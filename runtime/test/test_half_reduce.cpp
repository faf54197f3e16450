//===- test_half_reduce.cpp - bf16/f16 all-reduce against a reference -----===//
//
// pfrt_all_reduce_sum_dtype and _start_dtype of PFRT_DTYPE_BF16 and
// PFRT_DTYPE_F16 (the gradient all-reduces of gradient-dtype=bf16|f16), and
// pfrt_box_reduce_scatter_dtype (its reduce-scatters under ZeRO-2/3).
// The reference rounds with double arithmetic (nearbyint on the scaled
// significand, not the runtime's bit tricks). Two members must give
// exactly round(a + b) for every element; any group must give every member
// the same bits, within the rounding bound of one rounding per pairwise
// sum of the serial float64 sum; f32 through the dtype row equals
// pfrt_all_reduce_sum. Cases: blocking (out of place and in place), split
// (two slots in flight), ties to even, f16 overflow to inf; the
// reduce-scatter along each axis of a rank-3 tensor, each member's block
// against the same reference, f32 through it equal to
// pfrt_box_reduce_scatter.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <cmath>
#include <cstring>
#include <vector>

namespace {

int gRank, gSize;
uint64_t gSeed;

using Group = std::vector<int64_t>;
using Halves = std::vector<uint16_t>;

/// `x` rounded to nearest even with `mant` significand bits after the
/// point, exponents from `minExp` (subnormals below), +-inf from `maxAbs`
/// on (computed in double: exact for these widths).
double roundTo(double x, int mant, int minExp, double maxAbs) {
  if (x == 0 || std::isnan(x) || std::isinf(x))
    return x;
  int e = std::max(std::ilogb(x), minExp);
  double scale = std::ldexp(1.0, mant - e);
  double r = std::nearbyint(x * scale) / scale;
  return std::fabs(r) >= maxAbs ? std::copysign(INFINITY, x) : r;
}

struct Kind {
  int32_t dtype;
  const char *name;
  int mant, minExp;
  double overflow; // smallest magnitude rounding to inf
};
const Kind kBF16 = {PFRT_DTYPE_BF16, "bf16", 7, -126,
                    std::ldexp(2.0 - std::ldexp(1.0, -8), 127)};
const Kind kF16 = {PFRT_DTYPE_F16, "f16", 10, -14, 65520.0};

double round(const Kind &k, double x) {
  return roundTo(x, k.mant, k.minExp, k.overflow);
}

/// The bits of float `f` (already representable) in the kind's format.
uint16_t bitsOf(const Kind &k, float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (k.dtype == PFRT_DTYPE_BF16)
    return uint16_t(u >> 16);
  // f16: sign, exponent, 10 bits; f is an f16 value.
  auto sign = uint16_t((u >> 16) & 0x8000u);
  double a = std::fabs(double(f));
  if (std::isinf(a))
    return sign | 0x7c00u;
  if (a < std::ldexp(1.0, -14))
    return sign | uint16_t(a * std::ldexp(1.0, 24));
  int e = std::ilogb(a);
  auto m = uint16_t((a / std::ldexp(1.0, e) - 1.0) * 1024.0);
  return sign | uint16_t((e + 15) << 10) | m;
}

double valueOf(const Kind &k, uint16_t h) {
  if (k.dtype == PFRT_DTYPE_BF16) {
    uint32_t u = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  double s = (h & 0x8000u) ? -1.0 : 1.0;
  int e = (h >> 10) & 0x1f;
  int m = h & 0x3ff;
  if (e == 0x1f)
    return s * INFINITY;
  if (e == 0)
    return s * m * std::ldexp(1.0, -24);
  return s * (1.0 + m / 1024.0) * std::ldexp(1.0, e - 15);
}

/// Member `m`'s input: pt_value scaled to +-`scale`, rounded to the kind.
Halves inputOf(const Kind &k, int64_t m, int64_t count, uint64_t call,
               double scale) {
  Halves v(count);
  for (int64_t i = 0; i < count; ++i)
    v[i] = bitsOf(k, float(round(k, scale * pt_value(gSeed, call, m, i))));
  return v;
}

/// Every member's result, gathered (as uint16 pairs in floats' room).
void checkReplicated(const Halves &out, const Group &g, const char *what) {
  auto n = int64_t(g.size());
  int64_t count = int64_t(out.size());
  // Widened exactly to float for the float all-gather.
  std::vector<float> mine(count), all(count * n);
  for (int64_t i = 0; i < count; ++i) {
    uint32_t u = out[i];
    std::memcpy(&mine[i], &u, 4);
  }
  pfrt_all_gather(mine.data(), all.data(), count, g.data(), n);
  for (int64_t p = 0; p < n; ++p)
    CHECK(pt_bits_equal(all.data() + p * count, mine.data(), count),
          "%s: group position %lld holds other bits", what, (long long)p);
}

/// One summed element against its members' parts: exactly round(a + b) for
/// up to two members, else within one rounding per pairwise step of the
/// serial float64 sum.
void checkElement(const Kind &k, double got, const std::vector<double> &parts,
                  const char *what, int64_t i) {
  auto n = int64_t(parts.size());
  if (n <= 2) {
    double ref = round(k, parts[0] + (n == 2 ? parts[1] : 0));
    bool same = got == ref || (std::isnan(got) && std::isnan(ref));
    CHECK(same, "%s %s n=%lld element %lld: got %.9g, round(a + b) = %.9g",
          what, k.name, (long long)n, (long long)i, got, ref);
    return;
  }
  double sum = 0, abs = 0;
  for (double v : parts) {
    sum += v;
    abs += std::fabs(v);
  }
  double tol =
      double(n) * std::ldexp(1.0, -k.mant - 1) * abs + std::ldexp(1.0, -24);
  CHECK(std::fabs(got - sum) <= tol,
        "%s %s n=%lld element %lld: got %.9g, sum %.9g (tol %.3g)", what,
        k.name, (long long)n, (long long)i, got, sum, tol);
}

/// The result against the serial sum of the members' inputs (checkElement).
void checkSum(const Kind &k, const Halves &out, const Group &g, uint64_t call,
              double scale, const char *what) {
  int64_t count = int64_t(out.size());
  std::vector<Halves> in;
  for (int64_t m : g)
    in.push_back(inputOf(k, m, count, call, scale));
  std::vector<double> parts(g.size());
  for (int64_t i = 0; i < count; ++i) {
    for (size_t m = 0; m < g.size(); ++m)
      parts[m] = valueOf(k, in[m][i]);
    checkElement(k, valueOf(k, out[i]), parts, what, i);
  }
}

void testGroup(const Kind &k, const Group &g, int64_t count, uint64_t call,
               double scale) {
  auto n = int64_t(g.size());
  Halves in = inputOf(k, gRank, count, call, scale);
  Halves out(count, 0xffff), inPlace = in;
  pfrt_all_reduce_sum_dtype(in.data(), out.data(), count, k.dtype, g.data(), n);
  CHECK(in == inputOf(k, gRank, count, call, scale),
        "all_reduce_sum_dtype modified its input");
  checkSum(k, out, g, call, scale, "all_reduce_sum_dtype");
  checkReplicated(out, g, "all_reduce_sum_dtype");
  pfrt_all_reduce_sum_dtype(inPlace.data(), inPlace.data(), count, k.dtype,
                            g.data(), n);
  CHECK(inPlace == out, "%s in place differs from out of place", k.name);
  // Split: two in flight, waited for in the other order.
  Halves a = in, outA(count, 0xffff), b = in;
  pfrt_all_reduce_start_dtype(a.data(), outA.data(), count, k.dtype, g.data(),
                              n, 3);
  pfrt_all_reduce_start_dtype(b.data(), b.data(), count, k.dtype, g.data(), n,
                              40);
  pfrt_all_reduce_wait(40);
  pfrt_all_reduce_wait(3);
  CHECK(outA == out && b == out, "%s split all-reduce differs from blocking",
        k.name);
}

/// Two members: ties round to even, f16 overflows to inf.
void testEdges(const Group &g) {
  if (g.size() != 2)
    return;
  auto n = int64_t(g.size());
  // bf16: 1 + 2^-8 is a tie between 1 and 1 + 2^-7 (-> 1); 1 + 2^-7 plus
  // 2^-8 is a tie between 1 + 2^-7 and 1 + 2^-6 (-> 1 + 2^-6).
  float mineB[2] = {gRank == g[0] ? 1.0f : 0x1p-8f,
                    gRank == g[0] ? 1.0f + 0x1p-7f : 0x1p-8f};
  Halves hb = {bitsOf(kBF16, mineB[0]), bitsOf(kBF16, mineB[1])}, ob(2);
  pfrt_all_reduce_sum_dtype(hb.data(), ob.data(), 2, PFRT_DTYPE_BF16, g.data(),
                            n);
  bool ties =
      valueOf(kBF16, ob[0]) == 1.0 && valueOf(kBF16, ob[1]) == 1.0 + 0x1p-6;
  CHECK(ties, "bf16 ties: got %.9g %.9g", valueOf(kBF16, ob[0]),
        valueOf(kBF16, ob[1]));
  // f16: 65504 + 65504 overflows; 60000 + -60000 is 0.
  float mineH[2] = {65504.0f, gRank == g[0] ? 60000.0f : -60000.0f};
  Halves hh = {bitsOf(kF16, mineH[0]),
               bitsOf(kF16, float(round(kF16, mineH[1])))},
         oh(2);
  pfrt_all_reduce_sum_dtype(hh.data(), oh.data(), 2, PFRT_DTYPE_F16, g.data(),
                            n);
  bool edges = std::isinf(valueOf(kF16, oh[0])) && valueOf(kF16, oh[1]) == 0.0;
  CHECK(edges, "f16 edges: got %.9g %.9g", valueOf(kF16, oh[0]),
        valueOf(kF16, oh[1]));
}

/// dtype F32 through the dtype row: pfrt_all_reduce_sum's bits.
void testF32(const Group &g, int64_t count, uint64_t call) {
  auto n = int64_t(g.size());
  std::vector<float> in(count), a(count), b(count);
  for (int64_t i = 0; i < count; ++i)
    in[i] = pt_value(gSeed, call, gRank, i);
  pfrt_all_reduce_sum(in.data(), a.data(), count, g.data(), n);
  pfrt_all_reduce_sum_dtype(in.data(), b.data(), count, PFRT_DTYPE_F32,
                            g.data(), n);
  CHECK(pt_bits_equal(a.data(), b.data(), count), "f32 dtype row differs");
}

/// pfrt_box_reduce_scatter_dtype along `axis` of a rank-3 tensor whose
/// axis is n times `base`'s: this member's block (group position p: the
/// rows [p * base[axis], (p + 1) * base[axis]) along axis) against the
/// members' inputs (checkElement); f32 through it is
/// pfrt_box_reduce_scatter's bits.
void testBoxReduceScatter(const Kind &k, const Group &g, int64_t axis,
                          uint64_t call, double scale) {
  auto n = int64_t(g.size());
  int64_t pos = 0;
  while (g[size_t(pos)] != gRank)
    ++pos;
  // 420 elements a block: more than PFRT_MAX_MSG_ELEMS=300 (chunked).
  const int64_t base[3] = {3, 20, 7};
  int64_t shape[3] = {base[0], base[1], base[2]};
  shape[axis] *= n;
  int64_t count = shape[0] * shape[1] * shape[2], outCount = count / n;
  Halves in = inputOf(k, gRank, count, call, scale), out(outCount, 0xffff);
  pfrt_box_reduce_scatter_dtype(in.data(), out.data(), k.dtype, 3, shape, axis,
                                g.data(), n);
  CHECK(in == inputOf(k, gRank, count, call, scale),
        "box_reduce_scatter_dtype modified its input");
  std::vector<Halves> all;
  for (int64_t m : g)
    all.push_back(inputOf(k, m, count, call, scale));
  std::vector<double> parts(g.size());
  for (int64_t i = 0; i < outCount; ++i) {
    // Out index (a, b, c) of base's shape is in index (a, b, c) with
    // pos * base[axis] added along axis.
    int64_t idx[3] = {i / (base[1] * base[2]), i / base[2] % base[1],
                      i % base[2]};
    idx[axis] += pos * base[axis];
    int64_t at = (idx[0] * shape[1] + idx[1]) * shape[2] + idx[2];
    for (size_t m = 0; m < g.size(); ++m)
      parts[m] = valueOf(k, all[m][at]);
    checkElement(k, valueOf(k, out[i]), parts, "box_reduce_scatter_dtype", i);
  }
  // f32: the dtype row is the float32 row.
  std::vector<float> x(count), a(outCount), b(outCount);
  for (int64_t i = 0; i < count; ++i)
    x[i] = pt_value(gSeed, call, gRank, i);
  pfrt_box_reduce_scatter(x.data(), a.data(), 3, shape, axis, g.data(), n);
  pfrt_box_reduce_scatter_dtype(x.data(), b.data(), PFRT_DTYPE_F32, 3, shape,
                                axis, g.data(), n);
  CHECK(pt_bits_equal(a.data(), b.data(), outCount),
        "box_reduce_scatter_dtype f32 differs from box_reduce_scatter");
}

} // namespace

int main(int argc, char **argv) {
  gSeed = pt_start(&argc, &argv, "half-reduce", &gRank, &gSize);
  std::vector<Group> groups = pt::baseGroups(gSize);
  if (gSize >= 2)
    groups.push_back({1, 0});
  const int64_t counts[] = {1, 7, 1000, 4099, 0};
  int cases = 0;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const Group &g = groups[gi];
    bool member = false;
    for (int64_t r : g)
      member = member || r == gRank;
    if (!member)
      continue;
    for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ++ci) {
      uint64_t call = gi * 100 + ci;
      testGroup(kBF16, g, counts[ci], call, 1.0);
      testGroup(kF16, g, counts[ci], call, 1.0);
      testGroup(kBF16, g, counts[ci], call + 50, 1e30);
      if (g.size() <= 2) // more members: an inf partial sum may cancel
        testGroup(kF16, g, counts[ci], call + 50, 40000.0);
      testF32(g, counts[ci], call);
      ++cases;
    }
    for (int64_t axis = 0; axis < 3; ++axis) {
      uint64_t call = gi * 100 + 90 + uint64_t(axis);
      testBoxReduceScatter(kBF16, g, axis, call, 1.0);
      testBoxReduceScatter(kF16, g, axis, call, 1.0);
      ++cases;
    }
    testEdges(g);
    pfrt_group_barrier(g.data(), int64_t(g.size()));
  }
  pfrt_barrier();
  return pt_finish(gRank, "half-reduce ok: %d cases on %d ranks\n", cases,
                   gSize);
}
