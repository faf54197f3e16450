//===- HalfMath.h - bfloat16 and float16 <-> float32, bit by bit -*- C++
//-*-===//
//
// The conversions of PFRT_DTYPE_BF16 and PFRT_DTYPE_F16 storage to and from
// float32 (pfrt_k_cast, common/LogicalMath.h's castAt), written as integer
// operations on the bits so that the CPU, the emulation and the GPU (nvcc
// reads this header through LogicalMath.h) give the same bytes whatever
// the host's or the device's half-precision support:
//   - float32 -> bf16 / f16 rounds to nearest, ties to even; a NaN stays a
//     NaN (quiet: the top mantissa bit set, the sign and the top payload
//     bits kept), +-inf stays +-inf; f16 overflows to +-inf (from 65520 on,
//     half-way above its largest finite 65504) and has subnormals (down to
//     2^-24; below 2^-25 and 2^-25 itself, a tie, round to +-0);
//   - bf16 / f16 -> float32 is exact (f16 subnormals are normal floats).
// A uint16_t holds one element's bits (little-endian in memory, as the
// float's bits are).
//
// Not installed; nothing here is part of the ABI.
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_COMMON_HALFMATH_H
#define PFRT_SRC_COMMON_HALFMATH_H

#include "KernelMath.h"

#include <stdint.h>

namespace pfrt {
namespace half {

using kern::bitCast;

/// The float whose bits are `bf16`'s followed by 16 zero bits (exact).
PFRT_HD_INLINE float bf16ToFloat(uint16_t bf16) {
  return bitCast<float>(static_cast<uint32_t>(bf16) << 16);
}

/// `f` to bfloat16, round to nearest even (NaN quiet, inf kept).
PFRT_HD_INLINE uint16_t floatToBf16(float f) {
  uint32_t u = bitCast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) // NaN: keep sign and top payload
    return static_cast<uint16_t>((u >> 16) | 0x0040u);
  // Adding 0x7fff plus the kept lowest bit carries exactly when the
  // dropped half is above a tie, or a tie with an odd kept part; a carry
  // out of the mantissa bumps the exponent (to inf past the largest).
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

/// The float equal to the float16 `h` (exact).
PFRT_HD_INLINE float f16ToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) // inf or NaN (the payload kept)
    return bitCast<float>(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    if (mant == 0)
      return bitCast<float>(sign);
    // A subnormal mant * 2^-24: shift the leading one up to bit 10.
    exp = 1;
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --exp;
    }
    mant &= 0x3ffu;
  }
  // Rebias 15 -> 127 (exp is at least -9 here, so the sum is positive).
  return bitCast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

/// `f` to float16, round to nearest even (NaN quiet, inf kept, overflow
/// to inf, subnormals rounded at 2^-24).
PFRT_HD_INLINE uint16_t floatToF16(float f) {
  uint32_t u = bitCast<uint32_t>(f);
  auto sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) // NaN: quiet, the top payload bits kept
    return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a >= 0x477ff000u) // 65520 and above (inf too) round to inf
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (a >= 0x38800000u) {           // 2^-14 and above: a normal float16
    uint32_t m = a - (112u << 23);  // rebias 127 -> 15
    m += 0xfffu + ((m >> 13) & 1u); // round the 13 dropped bits
    return static_cast<uint16_t>(sign | (m >> 13));
  }
  uint32_t exp = a >> 23;
  if (exp < 102) // below 2^-25: +-0
    return sign;
  // A subnormal: round (1.mant * 2^(exp-127)) * 2^24 = sig >> (126 - exp).
  uint32_t sig = (a & 0x7fffffu) | 0x800000u;
  uint32_t shift = 126 - exp; // 14 .. 24
  uint32_t r = sig >> shift;
  uint32_t rest = sig & ((1u << shift) - 1u);
  uint32_t halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (r & 1u) != 0))
    ++r; // may reach 0x400, the smallest normal: its bits exactly
  return static_cast<uint16_t>(sign | r);
}

} // namespace half
} // namespace pfrt

#endif // PFRT_SRC_COMMON_HALFMATH_H
