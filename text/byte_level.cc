// The byte-level alphabet (text/byte_level.h).
#include "text/byte_level.h"

#include <array>

#include "text/utf8.h"

namespace mpk::text {
namespace {

struct Tables {
  std::array<uint32_t, 256> to_cp{};
  std::array<int16_t, 324> to_byte{};  // code points < 324 only; -1: not in the alphabet
};

const Tables& tables() {
  static const Tables t = [] {
    Tables x;
    x.to_byte.fill(-1);
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      x.to_cp[b] = printable ? b : next++;
      x.to_byte[x.to_cp[b]] = static_cast<int16_t>(b);
    }
    return x;
  }();
  return t;
}

}  // namespace

uint32_t byte_to_code_point(uint8_t b) { return tables().to_cp[b]; }

std::string bytes_to_byte_level(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) append_utf8(out, byte_to_code_point(static_cast<uint8_t>(c)));
  return out;
}

std::optional<std::string> byte_level_to_bytes(std::string_view s) {
  const Tables& t = tables();
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<uint8_t>(s[i]);
    uint32_t cp;
    if (c < 0x80) {
      cp = c;
      i += 1;
    } else if ((c & 0xE0) == 0xC0 && i + 1 < s.size() && (static_cast<uint8_t>(s[i + 1]) & 0xC0) == 0x80) {
      // the alphabet lies below U+0800: two bytes at most
      cp = ((c & 0x1Fu) << 6) | (static_cast<uint8_t>(s[i + 1]) & 0x3Fu);
      i += 2;
    } else {
      return std::nullopt;
    }
    if (cp >= t.to_byte.size() || t.to_byte[cp] < 0) return std::nullopt;
    out += static_cast<char>(t.to_byte[cp]);
  }
  return out;
}

}  // namespace mpk::text
