// The pre-tokenizer of a tokenizer.json: how normalized text is cut into pieces before
// BPE. Supported: Split (a Regex or String pattern, behavior Isolated or Removed, not
// inverted; the regex runs on PCRE2 with UTF and Unicode properties), ByteLevel (bytes
// shown as the byte-level alphabet, text/byte_level.h; optional GPT-2 regex and prefix
// space) and a Sequence of them. The chain must hold a ByteLevel step (mpk's tokenizer
// is byte-level BPE). Anything else is refused by name when the tokenizer loads.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/regex.h"

namespace mpk::text {

class PreTokenizer {
 public:
  // Throws mpk::Error naming `source` and the unsupported pre-tokenizer or option.
  static PreTokenizer from_json(const nlohmann::json& j, const std::string& source);

  // The pieces of `text` (valid UTF-8), each in the byte-level alphabet.
  std::vector<std::string> split(const std::string& text) const;

 private:
  enum class Kind { kSplitIsolated, kSplitRemoved, kByteLevel };
  struct Step {
    Kind kind;
    std::shared_ptr<const Regex> regex;  // Split; ByteLevel with use_regex
    bool add_prefix_space = false;       // ByteLevel
  };
  void add_steps(const nlohmann::json& j, const std::string& source, int depth);

  std::vector<Step> steps_;
};

}  // namespace mpk::text
