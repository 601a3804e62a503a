// The streaming decoder hands out whole characters only, holding a character's first bytes
// until the token that completes it, and all it hands out adds up to decode().
#include <gtest/gtest.h>

#include "text/stream_decoder.h"
#include "text/utf8.h"
#include "tiny_tokenizer.h"

namespace mpk::text::testing {
namespace {

Tokenizer tiny() {
  TokenizerSources s;
  s.tokenizer_json = tiny_tokenizer_json().dump();
  s.config_json = tiny_tokenizer_config().dump();
  return Tokenizer::parse(s);
}

TEST(StreamDecoderTest, PiecesAreWholeCharactersAndAddUpToDecode) {
  const Tokenizer t = tiny();
  // The tiny vocabulary has no multi-byte merges: every non-ASCII character is cut into
  // byte tokens, so each arrives over several pushes.
  const std::string text = "hello 你好 😀 and <|im_end|> caf\xC3\xA9 \xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9";
  const std::vector<int32_t> ids = t.encode(text, false);
  StreamDecoder d(t);
  std::string streamed;
  size_t held = 0;
  for (int32_t id : ids) {
    const std::string piece = d.push(id);
    EXPECT_EQ(first_invalid_utf8(piece), std::string::npos) << "a piece cut a character";
    held += piece.empty();
    streamed += piece;
  }
  streamed += d.finish();
  EXPECT_EQ(streamed, t.decode(ids));
  EXPECT_EQ(streamed, text);
  EXPECT_GE(held, 8u);  // the first bytes of each multi-byte character were held
}

TEST(StreamDecoderTest, UnknownIdsAreNoTextAndAnUnfinishedCharacterEndsAsReplacement) {
  const Tokenizer t = tiny();
  StreamDecoder d(t);
  EXPECT_EQ(d.push(0xF0), "");
  EXPECT_EQ(d.push(511), "");  // the model's vocabulary is larger than the tokenizer's
  EXPECT_EQ(d.push(0x9F), "");
  EXPECT_EQ(d.push('x'), std::string(kReplacementChar) + "x");  // F0 9F never completed
  EXPECT_EQ(d.push(0xE4), "");
  EXPECT_EQ(d.finish(), std::string(kReplacementChar));
  EXPECT_EQ(d.finish(), "");
}

}  // namespace
}  // namespace mpk::text::testing
