// The byte-level alphabet of GPT-2-style BPE (Llama 3, Qwen): every byte 0..255 is shown
// as one printable code point, so that a token of the vocabulary is a string of those code
// points. Printable Latin-1 bytes stand for themselves; the other 68 map to U+0100.. in
// byte order (the table of tokenizers' ByteLevel, bytes_to_unicode).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mpk::text {

// The code point that shows byte `b`.
uint32_t byte_to_code_point(uint8_t b);
// `bytes` as a string of byte-level code points (UTF-8).
std::string bytes_to_byte_level(std::string_view bytes);
// The bytes a byte-level string stands for; nullopt when it holds a code point outside
// the alphabet (an added token's text, say) or is not UTF-8.
std::optional<std::string> byte_level_to_bytes(std::string_view symbols);

}  // namespace mpk::text
