// A pre-tokenizer's regular expression, compiled once with PCRE2 in UTF mode with Unicode
// properties (PCRE2_UTF | PCRE2_UCP: \p{L}, \p{N}, \s and case-insensitive groups over all
// of Unicode, from PCRE2's own tables), JIT-compiled where the platform allows.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace mpk::text {

struct Match {
  size_t begin = 0, end = 0;  // byte offsets
};

class Regex {
 public:
  // Throws mpk::Error naming `what` and the position of a syntax error.
  Regex(const std::string& pattern, const std::string& what);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Every non-overlapping match in `text` (valid UTF-8), left to right; after an empty
  // match the search moves on by one character. Throws mpk::Error when PCRE2 gives up
  // (its match limit on a pathological input).
  std::vector<Match> find_all(std::string_view text) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// `literal` with every regex metacharacter escaped (a Split pattern given as a String).
std::string escape_regex(std::string_view literal);

}  // namespace mpk::text
