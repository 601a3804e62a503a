// Encoding and decoding (text/tokenizer.h); loading is in tokenizer_load.cc.
#include "text/tokenizer.h"

#include "ir/error.h"
#include "text/utf8.h"

namespace mpk::text {

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  const std::string valid = first_invalid_utf8(text) == std::string_view::npos ? std::string(text)
                                                                                : repair_utf8(text).text;
  std::vector<int32_t> ids;
  if (add_special_tokens) ids = prefix_;
  for (const AddedTokens::Segment& seg : added_.split(valid)) {
    if (seg.id >= 0) ids.push_back(seg.id);
    else encode_plain(seg.text, ids);
  }
  if (add_special_tokens) ids.insert(ids.end(), suffix_.begin(), suffix_.end());
  return ids;
}

void Tokenizer::encode_plain(std::string_view text, std::vector<int32_t>& out) const {
  const std::string normalized = normalizer_.empty() ? std::string(text) : normalizer_.apply(text);
  for (const std::string& piece : pre_tokenizer_->split(normalized)) model_->encode(piece, out);
}

const std::string& Tokenizer::token_bytes(int32_t id) const {
  if (!has_id(id))
    throw Error(source_ + ": no token has id " + std::to_string(id));
  return bytes_[id];
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string bytes;
  for (int32_t id : ids) bytes += token_bytes(id);
  return repair_utf8(bytes).text;
}

std::optional<int32_t> Tokenizer::id_of(std::string_view token) const {
  for (const auto& [content, id] : added_list_)
    if (content == token) return id;
  return model_->id_of(token);
}

}  // namespace mpk::text
