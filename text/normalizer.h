// Unicode normalization of the text between added tokens, as a tokenizer.json's
// "normalizer" asks: NFC, NFD, NFKC or NFKD (utf8proc), or a Sequence of them. Any other
// normalizer is refused by name when the tokenizer loads.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace mpk::text {

enum class NormalForm { kNfc, kNfd, kNfkc, kNfkd };

class Normalizer {
 public:
  Normalizer() = default;  // none
  // The "normalizer" value of a tokenizer.json (null: none). Throws mpk::Error naming
  // `source` and the unsupported type.
  static Normalizer from_json(const nlohmann::json& j, const std::string& source);

  bool empty() const { return forms_.empty(); }
  // `text` (valid UTF-8) in each form in turn.
  std::string apply(std::string_view text) const;

 private:
  std::vector<NormalForm> forms_;
};

}  // namespace mpk::text
