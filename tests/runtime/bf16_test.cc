// bf16 / f16 conversions: round to nearest even, specials, exact round trips.
#include "runtime/cpu/bf16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace mpk {
namespace {

TEST(Bf16, RoundsToNearestEven) {
  // 1 + 2^-8 lies halfway between bf16 1.0 and 1 + 2^-7: ties go to the even 1.0.
  EXPECT_EQ(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  // 1 + 3*2^-8 lies halfway between 1 + 2^-7 (odd) and 1 + 2^-6: goes up.
  EXPECT_EQ(f32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  // Just above the halfway point rounds up.
  EXPECT_EQ(f32_to_bf16(std::nextafter(1.0f + std::ldexp(1.0f, -8), 2.0f)), 0x3f81);
  EXPECT_EQ(f32_to_bf16(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::infinity()), 0x7f80);
  // The largest finite values round to infinity when they pass the last bf16.
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::nanf("")))));
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(f32_from_bits(0x7f800001u)))));  // low-payload NaN
}

TEST(Bf16, EveryValueRoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = bf16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    EXPECT_EQ(f32_to_bf16(f), h) << h;
  }
}

TEST(F16, EveryValueRoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = f16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(f))));
      continue;
    }
    EXPECT_EQ(f32_to_f16(f), h) << h;
  }
}

TEST(F16, KnownValuesAndRounding) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);  // halfway to the next: ties to even = inf
  EXPECT_EQ(f32_to_f16(65519.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);  // half of it: tie to even 0
  EXPECT_EQ(f32_to_f16(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(f32_to_f16(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 units: tie to even 2
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_FLOAT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_FLOAT_EQ(f16_to_f32(0x03ff), std::ldexp(1023.0f, -24));
  // Rounding agrees with a double-precision reference on a sweep of values.
  for (int i = -3000; i <= 3000; ++i) {
    const float f = static_cast<float>(i) * 0.3337f + 1e-3f;
    const uint16_t h = f32_to_f16(f);
    const float back = f16_to_f32(h);
    const float next = f16_to_f32(static_cast<uint16_t>(h + 1)), prev = f16_to_f32(static_cast<uint16_t>(h - 1));
    EXPECT_LE(std::fabs(back - f), std::fabs(next - f)) << f;
    EXPECT_LE(std::fabs(back - f), std::fabs(prev - f)) << f;
  }
}

}  // namespace
}  // namespace mpk
