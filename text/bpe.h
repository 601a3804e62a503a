// The BPE model of a tokenizer.json: the vocabulary (token string -> id) and the ranked
// merges, and the encoding of one pre-tokenized piece into ids: start from one symbol per
// character, repeatedly merge the adjacent pair of lowest rank (the leftmost of equal
// ranks), as Hugging Face tokenizers does. With "ignore_merges" (Llama 3) a piece that is
// itself in the vocabulary is that one token.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

namespace mpk::text {

// Bounds on an untrusted tokenizer.json's model (real ones: 128256 tokens and 280147
// merges for Llama 3, 151643 and 151387 for Qwen3).
inline constexpr int64_t kMaxTokenizerVocab = int64_t{1} << 20;
inline constexpr int64_t kMaxMerges = int64_t{1} << 22;
inline constexpr size_t kMaxTokenBytes = 4096;

class BpeModel {
 public:
  // The "model" object of a tokenizer.json. Throws mpk::Error naming `source` for a
  // model that is not BPE, an option mpk does not support (dropout, byte_fallback,
  // subword prefixes and suffixes), a duplicate id or a merge of unknown tokens.
  static BpeModel from_json(const nlohmann::json& model, const std::string& source);

  // Appends the ids of `piece` (a string of characters the vocabulary holds; throws
  // mpk::Error naming the first character it lacks).
  void encode(std::string_view piece, std::vector<int32_t>& out) const;

  std::optional<int32_t> id_of(std::string_view token) const;
  // The token string of `id`; nullptr for an id the vocabulary lacks.
  const std::string* token_of(int32_t id) const;
  // 1 + the largest id.
  int64_t id_limit() const { return static_cast<int64_t>(tokens_.size()); }

 private:
  struct Merge {
    int32_t rank;
    int32_t merged;
  };
  static uint64_t pair_key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  void add_token(const std::string& token, int32_t id, const std::string& source);
  void merge_symbols(std::vector<int32_t>& symbols) const;

  std::unordered_map<std::string, int32_t> vocab_;
  std::vector<std::string> tokens_;  // by id; "" where no token has that id
  std::vector<bool> has_token_;
  std::unordered_map<uint64_t, Merge> merges_;
  bool ignore_merges_ = false;
};

}  // namespace mpk::text
