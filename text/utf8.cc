// UTF-8 validation and repair (text/utf8.h).
#include "text/utf8.h"

namespace mpk::text {
namespace {

// The length of the valid UTF-8 sequence at s[i], or 0 when none starts there; `*prefix`
// is set to the length of the maximal subpart that is a valid prefix (at least 1).
size_t sequence_at(std::string_view s, size_t i, size_t* prefix) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t c = b(i);
  *prefix = 1;
  if (c < 0x80) return 1;
  size_t need;
  uint8_t lo = 0x80, hi = 0xBF;  // the range of the second byte (Unicode Table 3-7)
  if (c >= 0xC2 && c <= 0xDF) {
    need = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    need = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  for (size_t k = 1; k < need; ++k) {
    if (i + k >= s.size()) return 0;
    const uint8_t x = b(i + k);
    if (x < (k == 1 ? lo : 0x80) || x > (k == 1 ? hi : 0xBF)) return 0;
    *prefix = k + 1;
  }
  return need;
}

}  // namespace

size_t first_invalid_utf8(std::string_view s) {
  size_t prefix = 0;
  for (size_t i = 0; i < s.size();) {
    const size_t n = sequence_at(s, i, &prefix);
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

Utf8Repair repair_utf8(std::string_view s) {
  Utf8Repair r;
  r.text.reserve(s.size());
  size_t prefix = 0;
  for (size_t i = 0; i < s.size();) {
    const size_t n = sequence_at(s, i, &prefix);
    if (n > 0) {
      r.text.append(s.substr(i, n));
      i += n;
      continue;
    }
    if (r.replaced++ == 0) r.first_bad = i;
    r.text.append(kReplacementChar);
    i += prefix;
  }
  return r;
}

size_t incomplete_utf8_tail(std::string_view s) {
  // A sequence is at most 4 bytes: look back at most 3 for its lead byte.
  for (size_t back = 1; back <= 3 && back <= s.size(); ++back) {
    const size_t i = s.size() - back;
    const auto c = static_cast<uint8_t>(s[i]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: the lead is further back
    size_t prefix = 0;
    if (sequence_at(s, i, &prefix) != 0) return 0;  // complete
    return prefix == back && c >= 0xC2 && c <= 0xF4 ? back : 0;
  }
  return 0;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace mpk::text
