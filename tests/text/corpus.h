// The corpus the tokenizers are checked on against the reference (reference_test.cc):
// about 2,400 strings, fixed by a seed: English, code, CJK, emoji, combining marks, long
// whitespace and digit runs, special tokens inside text, mixed scripts, and byte strings
// that are not UTF-8. Each string is raw bytes.
#pragma once

#include <string>
#include <vector>

namespace mpk::text::testing {

struct CorpusEntry {
  std::string kind;   // "english", "code", ... (for failure messages)
  std::string bytes;  // may be invalid UTF-8 (kind "invalid")
};

// `specials`: special-token texts of the tokenizer under test, to embed in text.
std::vector<CorpusEntry> make_corpus(const std::vector<std::string>& specials);

}  // namespace mpk::text::testing
