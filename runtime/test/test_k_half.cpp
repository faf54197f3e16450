//===- test_k_half.cpp - pfrt_k_cast to and from bf16 and f16 -------------===//
//
// pfrt-test-k-half: pfrt_k_cast between float32 (and the other dtypes) and
// PFRT_DTYPE_BF16 / PFRT_DTYPE_F16 against a reference computed another
// way: a half value decoded with ldexp from its fields, a float rounded in
// float64 by scaling to its quantum and nearbyint (ties to even). Widening:
// all 65536 bit patterns of each type. Narrowing: ties, one float ulp each
// side of them, NaN (signalling ones too), infinities, the largest finite
// values, f16's overflow threshold and its subnormal boundaries, float32
// subnormals, and random float32 bit patterns. Self-checking (no NumPy).
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"
#include "pfrt/pfrt.h"

#include <cfenv>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace {

uint64_t gSeed, gState;
int64_t gChecks = 0;

/// One half type's format: mantissa bits, exponent bias and field width.
struct Format {
  int32_t dtype;
  const char *name;
  int mantBits;
  int expBits;
  int bias() const { return (1 << (expBits - 1)) - 1; }
  int maxExp() const { return (1 << expBits) - 1; }
  /// The largest finite value.
  double maxFinite() const {
    return std::ldexp(2.0 - std::ldexp(1.0, -mantBits), maxExp() - 1 - bias());
  }
};

const Format kBF16{PFRT_DTYPE_BF16, "bf16", 7, 8};
const Format kF16{PFRT_DTYPE_F16, "f16", 10, 5};

/// The value of the half `bits` (NaN for a NaN), from its fields.
double decode(const Format &f, uint16_t bits) {
  int sign = (bits >> 15) & 1;
  int e = (bits >> f.mantBits) & f.maxExp();
  int m = bits & ((1 << f.mantBits) - 1);
  double v;
  if (e == f.maxExp())
    v = m ? std::numeric_limits<double>::quiet_NaN()
          : std::numeric_limits<double>::infinity();
  else if (e == 0)
    v = std::ldexp(double(m), 1 - f.bias() - f.mantBits);
  else
    v = std::ldexp(double(m + (1 << f.mantBits)), e - f.bias() - f.mantBits);
  return sign ? -v : v;
}

/// x rounded to the half format, to nearest even, in float64 (inf past the
/// largest finite value after rounding); x is not NaN.
double roundRef(const Format &f, double x) {
  if (std::isinf(x) || x == 0.0)
    return x;
  int e = 0;
  std::frexp(x, &e);       // |x| = m * 2^e, m in [0.5, 1)
  int minE = 2 - f.bias(); // frexp's exponent of the smallest normal
  int qe = std::max(e, minE) - 1 - f.mantBits;   // the quantum's exponent
  double r = std::nearbyint(std::ldexp(x, -qe)); // ties to even
  double y = std::ldexp(r, qe);
  if (std::fabs(y) > f.maxFinite())
    return std::copysign(std::numeric_limits<double>::infinity(), x);
  return std::copysign(y, x); // -0 stays -0
}

uint16_t narrow(const Format &f, float x) {
  uint16_t out = 0;
  pfrt_k_cast(&x, PFRT_DTYPE_F32, &out, f.dtype, 1);
  return out;
}

/// x narrowed by pfrt_k_cast is the reference's rounding (same value and
/// sign; a NaN a quiet NaN of x's sign).
void expectNarrowed(const Format &f, float x, uint16_t got) {
  ++gChecks;
  uint32_t xb = 0;
  std::memcpy(&xb, &x, 4);
  double v = decode(f, got);
  if (std::isnan(x)) {
    uint16_t quiet = uint16_t(1u << (f.mantBits - 1));
    bool ok = std::isnan(v) && (got & quiet) && ((got >> 15) == (xb >> 31));
    CHECK(ok, "%s: NaN 0x%08x gave 0x%04x (seed %llu)", f.name, xb, got,
          (unsigned long long)gSeed);
    return;
  }
  double want = roundRef(f, double(x));
  bool ok = v == want && std::signbit(v) == std::signbit(want);
  CHECK(ok, "%s: %a (0x%08x) gave 0x%04x = %a, want %a (seed %llu)", f.name,
        double(x), xb, got, v, want, (unsigned long long)gSeed);
}

/// Every half pattern widens exactly, and narrows back to itself.
void widenAll(const Format &f) {
  std::vector<uint16_t> all(65536), back(65536);
  std::vector<float> wide(65536);
  for (uint32_t b = 0; b < 65536; ++b)
    all[b] = uint16_t(b);
  pfrt_k_cast(all.data(), f.dtype, wide.data(), PFRT_DTYPE_F32, 65536);
  pfrt_k_cast(wide.data(), PFRT_DTYPE_F32, back.data(), f.dtype, 65536);
  for (uint32_t b = 0; b < 65536; ++b) {
    double want = decode(f, uint16_t(b));
    float got = wide[b];
    ++gChecks;
    if (std::isnan(want)) {
      bool ok = std::isnan(got) && std::signbit(got) == ((b >> 15) != 0);
      CHECK(ok, "%s 0x%04x: widened to %a, want a NaN", f.name, b, double(got));
      uint16_t quiet = uint16_t(1u << (f.mantBits - 1));
      // A quiet NaN's payload survives the round trip.
      if (b & quiet)
        CHECK(back[b] == b, "%s NaN 0x%04x came back as 0x%04x", f.name, b,
              back[b]);
      continue;
    }
    bool ok = double(got) == want && std::signbit(got) == std::signbit(want);
    CHECK(ok, "%s 0x%04x: widened to %a, want %a", f.name, b, double(got),
          want);
    CHECK(back[b] == b, "%s 0x%04x came back as 0x%04x", f.name, b, back[b]);
  }
}

float fromBits(uint32_t b) {
  float x = 0.0f;
  std::memcpy(&x, &b, 4);
  return x;
}

/// Narrowing: edge cases, ties and their neighbours, random patterns.
void narrowMany(const Format &f) {
  std::vector<float> xs = {
      0.0f,
      -0.0f,
      1.0f,
      -1.0f,
      std::numeric_limits<float>::infinity(),
      -std::numeric_limits<float>::infinity(),
      std::numeric_limits<float>::quiet_NaN(),
      -std::numeric_limits<float>::quiet_NaN(),
      fromBits(0x7f800001u), // signalling NaNs: must stay NaN
      fromBits(0xff800001u),
      fromBits(0x7fc12345u),
      std::numeric_limits<float>::max(),
      -std::numeric_limits<float>::max(),
      std::numeric_limits<float>::min(),
      std::numeric_limits<float>::denorm_min(),
      -std::numeric_limits<float>::denorm_min(),
      65504.0f,
      65519.0f,
      65519.996f,
      65520.0f, // f16: the tie above the largest finite -> inf
      -65520.0f,
      65536.0f,
      std::ldexp(1.0f, -14), // f16's smallest normal
      std::ldexp(1.0f, -14) - std::ldexp(1.0f, -25),
      std::ldexp(1.0f, -24), // f16's smallest subnormal
      std::ldexp(1.0f, -25), // the tie at half of it -> 0
      std::nextafter(std::ldexp(1.0f, -25), 1.0f),
      std::ldexp(3.0f, -25), // 1.5 subnormals: tie -> 2
      std::ldexp(5.0f, -26),
      std::ldexp(1.0f, -126),
      std::ldexp(1.0f, -133), // bf16's smallest subnormal
      std::ldexp(1.0f, -134),
      std::ldexp(3.0f, -135),
      fromBits(0x7f7f8000u), // bf16: the tie above its largest -> inf
      fromBits(0x7f7f7fffu),
      fromBits(0x3f808000u), // 1 + 2^-8: tie -> 1 (even)
      fromBits(0x3f818000u), // tie -> up (odd kept part)
      fromBits(0x3f808001u),
      1.0f + std::ldexp(1.0f, -11), // f16 ties at 1
      1.0f + std::ldexp(3.0f, -11),
  };
  // Every half value's neighbouring ties (half-way to the next), and one
  // float ulp either side, from random half patterns.
  for (int k = 0; k < 4000; ++k) {
    auto h = uint16_t(pt_randint(&gState, 0, 65535));
    double lo = decode(f, h);
    double hi = decode(f, uint16_t(h + 1));
    if (std::isnan(lo) || std::isnan(hi) || std::isinf(lo) || std::isinf(hi) ||
        (h & 0x7fff) == (1 << (f.mantBits + f.expBits)) - 1 ||
        (h & 0x7fff) == 0x7fff)
      continue;
    auto tie = float((lo + hi) / 2); // exact: a few more bits than the half
    xs.push_back(tie);
    xs.push_back(std::nextafter(tie, 0.0f));
    xs.push_back(std::nextafter(tie, std::numeric_limits<float>::infinity()));
    xs.push_back(float(lo));
  }
  for (int k = 0; k < 200000; ++k)
    xs.push_back(fromBits(uint32_t(pt_randint(&gState, 0, 0xffffffffll))));
  for (int k = 0; k < 20000; ++k) // around the half's range
    xs.push_back(float(
        std::ldexp(double(pt_randint(&gState, -(1 << 24), 1 << 24)),
                   int(pt_randint(&gState, -40 - f.bias(), f.bias() - 20)))));
  std::vector<uint16_t> got(xs.size());
  pfrt_k_cast(xs.data(), PFRT_DTYPE_F32, got.data(), f.dtype,
              int64_t(xs.size()));
  for (size_t i = 0; i < xs.size(); ++i) {
    expectNarrowed(f, xs[i], got[i]);
    CHECK(narrow(f, xs[i]) == got[i], "one element and many differ");
  }
}

/// The other dtypes: integers through float32, bools, truncation toward
/// zero from a half, and bf16 <-> f16.
void otherDtypes() {
  const int32_t ints[] = {
      0, 1, -1, 257, 65504, 65520, 70000, -2147483647 - 1, 16777217};
  for (const Format *f : {&kBF16, &kF16}) {
    for (int32_t v : ints) {
      uint16_t h = 0;
      pfrt_k_cast(&v, PFRT_DTYPE_I32, &h, f->dtype, 1);
      expectNarrowed(*f, float(v), h);
      int64_t back = 0;
      pfrt_k_cast(&h, f->dtype, &back, PFRT_DTYPE_I64, 1);
      double d = decode(*f, h);
      int64_t want = std::isinf(d)
                         ? (d > 0 ? std::numeric_limits<int64_t>::max()
                                  : std::numeric_limits<int64_t>::min())
                         : int64_t(std::trunc(d));
      CHECK(back == want, "%s %d -> i64 %lld, want %lld", f->name, v,
            (long long)back, (long long)want);
      ++gChecks;
    }
    uint8_t t = 1;
    uint16_t h = 0;
    pfrt_k_cast(&t, PFRT_DTYPE_BOOL, &h, f->dtype, 1);
    CHECK(decode(*f, h) == 1.0, "%s from true", f->name);
    // -0 and NaN to bool: false and true.
    uint16_t z[2] = {0x8000,
                     uint16_t(f->dtype == PFRT_DTYPE_BF16 ? 0x7fc0 : 0x7e00)};
    uint8_t bz[2] = {7, 7};
    pfrt_k_cast(z, f->dtype, bz, PFRT_DTYPE_BOOL, 2);
    bool ok = bz[0] == 0 && bz[1] == 1;
    CHECK(ok, "%s -0, NaN to bool: %d %d", f->name, bz[0], bz[1]);
  }
  // bf16 -> f16 is f16's rounding of the bf16 value (exact in float32).
  std::vector<uint16_t> all(65536), out(65536);
  for (uint32_t b = 0; b < 65536; ++b)
    all[b] = uint16_t(b);
  pfrt_k_cast(all.data(), PFRT_DTYPE_BF16, out.data(), PFRT_DTYPE_F16, 65536);
  for (uint32_t b = 0; b < 65536; ++b)
    expectNarrowed(kF16, float(decode(kBF16, uint16_t(b))), out[b]);
}

} // namespace

int main(int argc, char **argv) {
  pfrt_init(&argc, &argv);
  gSeed = pt_seed("k-half");
  gState = pt_mix(gSeed ^ 0x4a1f);
  std::fesetround(FE_TONEAREST);
  for (const Format *f : {&kBF16, &kF16}) {
    widenAll(*f);
    narrowMany(*f);
  }
  otherDtypes();
  return pt_finish(pfrt_rank(), "k-half: %lld checks passed\n",
                   (long long)gChecks);
}
