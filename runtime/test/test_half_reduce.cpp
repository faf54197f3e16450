//===- test_half_reduce.cpp - bf16/f16 all-reduce against a reference -----===//
//
// pfrt_all_reduce_sum_dtype and _start_dtype of PFRT_DTYPE_BF16 and
// PFRT_DTYPE_F16 (the gradient all-reduces of gradient-dtype=bf16|f16).
// The reference rounds with double arithmetic (nearbyint on the scaled
// significand, not the runtime's bit tricks). Two members must give
// exactly round(a + b) for every element; any group must give every member
// the same bits, within the rounding bound of one rounding per pairwise
// sum of the serial float64 sum; f32 through the dtype row equals
// pfrt_all_reduce_sum. Cases: blocking (out of place and in place), split
// (two slots in flight), ties to even, f16 overflow to inf.
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

/// The result against the serial sum: exact for two members, else within
/// one rounding per pairwise step.
void checkSum(const Kind &k, const Halves &out, const Group &g, uint64_t call,
              double scale, const char *what) {
  auto n = int64_t(g.size());
  int64_t count = int64_t(out.size());
  std::vector<Halves> in;
  for (int64_t m : g)
    in.push_back(inputOf(k, m, count, call, scale));
  double u = std::ldexp(1.0, -k.mant - 1);
  for (int64_t i = 0; i < count; ++i) {
    double got = valueOf(k, out[i]);
    if (n <= 2) {
      double exact = valueOf(k, in[0][i]) + (n == 2 ? valueOf(k, in[1][i]) : 0);
      double ref = round(k, exact);
      bool same = got == ref || (std::isnan(got) && std::isnan(ref));
      CHECK(same, "%s %s n=%lld element %lld: got %.9g, round(a + b) = %.9g",
            what, k.name, (long long)n, (long long)i, got, ref);
      continue;
    }
    double sum = 0, abs = 0;
    for (const Halves &h : in) {
      sum += valueOf(k, h[i]);
      abs += std::fabs(valueOf(k, h[i]));
    }
    double tol = double(n) * u * abs + std::ldexp(1.0, -24);
    CHECK(std::fabs(got - sum) <= tol,
          "%s %s n=%lld element %lld: got %.9g, sum %.9g (tol %.3g)", what,
          k.name, (long long)n, (long long)i, got, sum, tol);
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
    testEdges(g);
    pfrt_group_barrier(g.data(), int64_t(g.size()));
  }
  pfrt_barrier();
  return pt_finish(gRank, "half-reduce ok: %d cases on %d ranks\n", cases,
                   gSize);
}
