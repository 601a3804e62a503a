// RoPE's numbers (ir/rope.h), which the CPU executor and the megakernel's tables share:
// default and llama3 inverse frequencies against values computed by hand, the (cos, sin)
// table against the per-position function, and an unknown scaling refused.
#include "ir/rope.h"

#include <gtest/gtest.h>

#include <cmath>

#include "ir/error.h"

namespace mpk {
namespace {

Attrs default_rope(int64_t head_dim, double theta) {
  return {{"head_dim", head_dim}, {"theta", theta}, {"rope_type", std::string("default")}};
}

TEST(Rope, DefaultFrequenciesArePowersOfTheta) {
  const std::vector<float> inv = rope_inverse_frequencies(default_rope(8, 10000.0));
  ASSERT_EQ(inv.size(), 4u);
  EXPECT_FLOAT_EQ(inv[0], 1.0f);
  EXPECT_FLOAT_EQ(inv[1], 0.1f);
  EXPECT_FLOAT_EQ(inv[2], 0.01f);
  EXPECT_FLOAT_EQ(inv[3], 0.001f);
}

TEST(Rope, Llama3KeepsHighFrequenciesDividesLowOnesAndBlendsBetween) {
  const Attrs d = default_rope(64, 500000.0);
  Attrs l = d;
  l["rope_type"] = std::string("llama3");
  l["factor"] = 32.0;
  l["low_freq_factor"] = 1.0;
  l["high_freq_factor"] = 4.0;
  l["original_max_position_embeddings"] = int64_t{8192};
  const std::vector<float> plain = rope_inverse_frequencies(d), scaled = rope_inverse_frequencies(l);
  for (size_t i = 0; i < plain.size(); ++i) {
    const double wavelen = 2 * M_PI / plain[i];
    SCOPED_TRACE("i = " + std::to_string(i) + ", wavelength " + std::to_string(wavelen));
    if (wavelen < 8192 / 4.0) EXPECT_EQ(scaled[i], plain[i]);
    else if (wavelen > 8192 / 1.0) EXPECT_FLOAT_EQ(scaled[i], plain[i] / 32);
    else EXPECT_TRUE(scaled[i] < plain[i] && scaled[i] > plain[i] / 32);
  }
  EXPECT_EQ(scaled[0], plain[0]);
  EXPECT_FLOAT_EQ(scaled[31], plain[31] / 32);
}

TEST(Rope, TableHoldsEveryPositionsCosAndSin) {
  const std::vector<float> inv = rope_inverse_frequencies(default_rope(16, 10000.0));
  const std::vector<float> table = rope_cos_sin_table(inv, 5);
  ASSERT_EQ(table.size(), 5u * 8 * 2);
  std::vector<float> at(16);
  for (int64_t pos = 0; pos < 5; ++pos) {
    rope_cos_sin_at(inv, pos, at.data());
    for (size_t j = 0; j < at.size(); ++j) EXPECT_EQ(table[pos * 16 + j], at[j]) << "pos " << pos << " j " << j;
  }
  EXPECT_EQ(table[0], 1.0f);  // pos 0: cos 1, sin 0
  EXPECT_EQ(table[1], 0.0f);
  EXPECT_FLOAT_EQ(table[16 * 3 + 1], static_cast<float>(std::sin(3.0)));  // pos 3, inv[0] = 1
}

TEST(Rope, UnknownScalingIsRefusedByName) {
  Attrs a = default_rope(8, 10000.0);
  a["rope_type"] = std::string("yarn");
  try {
    rope_inverse_frequencies(a);
    FAIL() << "yarn accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("yarn"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mpk
