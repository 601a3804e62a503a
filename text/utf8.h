// UTF-8 at the edges of the tokenizer: validating text, replacing what is not UTF-8 the
// way the reference tokenizers see it, and the byte-level tail a streaming decoder must
// hold back. Replacement follows the WHATWG Encoding Standard's UTF-8 decoder (Node's
// TextDecoder, Python's bytes.decode(errors="replace"), Unicode's "maximal subpart"
// practice): each maximal prefix of a valid sequence that cannot be completed, and each
// byte that starts none, becomes one U+FFFD.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace mpk::text {

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

// The byte offset of the first byte that is not part of valid UTF-8, or npos.
size_t first_invalid_utf8(std::string_view s);

struct Utf8Repair {
  std::string text;      // `s` with each invalid sequence replaced by U+FFFD
  size_t replaced = 0;   // how many replacements
  size_t first_bad = 0;  // byte offset of the first one in `s` (when replaced > 0)
};
Utf8Repair repair_utf8(std::string_view s);

// The length of the longest suffix of `s` that is a proper prefix of a valid UTF-8
// sequence (0..3): the bytes a streaming decoder holds until the next token completes
// them. A suffix that can never be completed counts 0 (it is emitted, then repaired).
size_t incomplete_utf8_tail(std::string_view s);

// Appends code point `cp` (<= 0x10FFFF, not a surrogate) as UTF-8.
void append_utf8(std::string& out, uint32_t cp);

}  // namespace mpk::text
