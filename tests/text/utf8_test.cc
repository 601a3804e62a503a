// UTF-8 repair as the WHATWG decoder does it (one U+FFFD per maximal subpart), the tail a
// streaming decoder holds back, and the byte-level alphabet.
#include <gtest/gtest.h>

#include "text/byte_level.h"
#include "text/utf8.h"

namespace mpk::text {
namespace {

const std::string R(kReplacementChar);

TEST(Utf8Test, RepairReplacesEachMaximalSubpart) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"plain ascii", "plain ascii"},
      {"caf\xC3\xA9 \xF0\x9F\x98\x80", "caf\xC3\xA9 \xF0\x9F\x98\x80"},
      {"\x80", R},
      {"a\xFFz", "a" + R + "z"},
      {"\xC0\xAF", R + R},                      // overlong: C0 never starts a sequence
      {"\xE0\x80\xAF", R + R + R},              // overlong 3-byte: E0 needs A0..BF next
      {"\xED\xA0\x80", R + R + R},              // a surrogate
      {"\xF4\x90\x80\x80", R + R + R + R},      // beyond U+10FFFF
      {"\xF0\x9F\x98", R},                      // a 4-byte sequence cut short: one subpart
      {"\xF0\x9F\x98x", R + "x"},
      {"\xE2\x28\xA1", R + "(" + R},
      {"\xC3", R},
  };
  for (const auto& [in, want] : cases) {
    const Utf8Repair r = repair_utf8(in);
    EXPECT_EQ(r.text, want) << testing::PrintToString(in);
    EXPECT_EQ(r.replaced == 0, first_invalid_utf8(in) == std::string::npos);
  }
  const Utf8Repair r = repair_utf8("ok\xFFok\xFE");
  EXPECT_EQ(r.replaced, 2u);
  EXPECT_EQ(r.first_bad, 2u);
}

TEST(Utf8Test, IncompleteTailIsWhatANextTokenCouldComplete) {
  EXPECT_EQ(incomplete_utf8_tail(""), 0u);
  EXPECT_EQ(incomplete_utf8_tail("abc"), 0u);
  EXPECT_EQ(incomplete_utf8_tail("a\xC3"), 1u);
  EXPECT_EQ(incomplete_utf8_tail("a\xE2\x82"), 2u);
  EXPECT_EQ(incomplete_utf8_tail("\xF0\x9F\x98"), 3u);
  EXPECT_EQ(incomplete_utf8_tail("\xF0\x9F\x98\x80"), 0u);  // complete
  EXPECT_EQ(incomplete_utf8_tail("\xE2\x28"), 0u);          // can never complete
  EXPECT_EQ(incomplete_utf8_tail("\x80\x80"), 0u);
  EXPECT_EQ(incomplete_utf8_tail("\xFF"), 0u);
}

TEST(Utf8Test, ByteLevelAlphabetRoundTripsEveryByte) {
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  const std::string shown = bytes_to_byte_level(all);
  EXPECT_EQ(byte_level_to_bytes(shown), all);
  EXPECT_EQ(bytes_to_byte_level(" "), "\xC4\xA0");   // U+0120 'Ġ'
  EXPECT_EQ(bytes_to_byte_level("\n"), "\xC4\x8A");  // U+010A 'Ċ'
  EXPECT_EQ(bytes_to_byte_level("A"), "A");
  EXPECT_EQ(byte_to_code_point(0xAD), 0x143u);       // soft hyphen is not printable
  EXPECT_EQ(byte_level_to_bytes("<|im_end|>"), "<|im_end|>");
  EXPECT_FALSE(byte_level_to_bytes("\xE4\xBD\xA0").has_value());  // 你 is not in the alphabet
}

}  // namespace
}  // namespace mpk::text
