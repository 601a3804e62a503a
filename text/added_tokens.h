// The added tokens of a tokenizer.json (special ones such as <|begin_of_text|> and others
// such as Qwen's <think>): they are found in the raw text before anything else (leftmost,
// longest first, as Hugging Face's tokenizers and transformers.js do), so "<|eot_id|>"
// typed in a prompt is that one token, and the text between them is normalized,
// pre-tokenized and encoded.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace mpk::text {

class AddedTokens {
 public:
  // Adds `content` (non-empty) as token `id`; a later content equal to an earlier one
  // replaces its id.
  void add(const std::string& content, int32_t id);

  struct Segment {
    std::string_view text;  // the text between added tokens (id < 0), or the token's text
    int32_t id = -1;
  };
  // `text` cut into the added tokens it holds and the text around them, in order.
  std::vector<Segment> split(std::string_view text) const;

 private:
  struct Node {
    std::map<uint8_t, int32_t> children;  // byte -> node index
    int32_t id = -1;                      // a token ends here
  };
  std::vector<Node> trie_ = {Node{}};
};

}  // namespace mpk::text
