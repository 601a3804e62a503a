// Decoding tokens as they arrive: a token may end in the middle of a UTF-8 character
// (byte-level BPE cuts text at bytes), so the decoder holds back an incomplete tail until
// the next token completes it, and hands out only whole characters. The concatenation of
// everything it hands out (finish() included) equals Tokenizer::decode of all the tokens.
#pragma once

#include <cstdint>
#include <string>

#include "text/tokenizer.h"

namespace mpk::text {

class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}
  // The text that token `id` completes (maybe ""), as valid UTF-8. An id the tokenizer
  // lacks (a model's padding rows) stands for no text, as in Hugging Face's decode.
  std::string push(int32_t id);
  // What is still held (a character never completed), as U+FFFD; "" when nothing is.
  std::string finish();

 private:
  const Tokenizer& tokenizer_;
  std::string pending_;
};

}  // namespace mpk::text
