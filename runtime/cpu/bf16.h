// Scalar conversions between f32 and the 16-bit storage formats (bf16, f16), exactly as
// the GPU performs them: f32 -> bf16 and f32 -> f16 round to nearest, ties to even; NaN
// stays NaN. Plain integer code with no dependencies so the device side can mirror it
// line for line (runtime/gpu). Stored 16-bit values are uint16_t bit patterns.
#pragma once

#include <cstdint>
#include <cstring>

namespace mpk {

inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float f32_from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline float bf16_to_f32(uint16_t h) { return f32_from_bits(static_cast<uint32_t>(h) << 16); }

// Round to nearest even on the 16 dropped bits; a NaN keeps its sign and becomes quiet.
inline uint16_t f32_to_bf16(float f) {
  const uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);
  const uint32_t lsb = (u >> 16) & 1u;
  return static_cast<uint16_t>((u + 0x7fffu + lsb) >> 16);
}

// The f32 value a bf16 store of `f` reads back as.
inline float round_bf16(float f) { return bf16_to_f32(f32_to_bf16(f)); }

// IEEE binary16 -> f32 (exact: every f16 value is an f32 value).
inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return f32_from_bits(sign | 0x7f800000u | (mant << 13));  // inf, NaN
  if (exp != 0) return f32_from_bits(sign | ((exp + 112u) << 23) | (mant << 13));
  if (mant == 0) return f32_from_bits(sign);  // +-0
  // Subnormal: normalize the mantissa.
  uint32_t e = 113;
  while ((mant & 0x400u) == 0) {
    mant <<= 1;
    --e;
  }
  return f32_from_bits(sign | (e << 23) | ((mant & 0x3ffu) << 13));
}

// f32 -> IEEE binary16, round to nearest even, overflow to inf, underflow through the
// subnormals to zero.
inline uint16_t f32_to_f16(float f) {
  const uint32_t u = f32_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to >= 65520
  if (a >= 0x38800000u) {  // normal f16 range (>= 2^-14)
    const uint32_t lsb = (a >> 13) & 1u;
    const uint32_t r = a + 0xfffu + lsb;
    return static_cast<uint16_t>(sign | (((r >> 13) - (112u << 10)) & 0x7fffu));
  }
  if (a < 0x33000000u) return sign;  // below half the smallest subnormal (2^-25)
  // Subnormal: shift the 24-bit significand so that one unit is 2^-24.
  const uint32_t exp = a >> 23;
  const uint32_t sig = (a & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126u - exp;  // 14..24 here
  const uint32_t half = 1u << (shift - 1);
  const uint32_t rem = sig & ((1u << shift) - 1u);
  uint32_t q = sig >> shift;
  if (rem > half || (rem == half && (q & 1u))) ++q;
  return static_cast<uint16_t>(sign | q);
}

}  // namespace mpk
