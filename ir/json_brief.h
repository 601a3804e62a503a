// Untrusted JSON in error messages: a value's, a name's or a parser message's text cut
// short, so that a hostile config.json or safetensors header cannot make an error message
// as large as itself. kMaxParserMessage: a JSON parser's message quotes the last token.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace mpk {

inline constexpr size_t kMaxParserMessage = 240;

// S itself when at most MAX bytes, else its first MAX - 4 bytes and " ...".
inline std::string text_brief(const std::string& s, size_t max = 64) {
  return s.size() <= max ? s : s.substr(0, max - 4) + " ...";
}

// The JSON text of V (strings quoted), cut as text_brief cuts.
inline std::string json_brief(const nlohmann::json& v) { return text_brief(v.dump()); }

}  // namespace mpk
