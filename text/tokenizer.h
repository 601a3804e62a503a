// A checkpoint's tokenizer: tokenizer.json (byte-level BPE: added tokens, normalizer,
// pre-tokenizer, BPE model, post-processor, decoder) with tokenizer_config.json (BOS and
// EOS tokens, chat template) and the EOS ids of config.json and generation_config.json.
// Text goes in as UTF-8 and comes out as bytes that are UTF-8 once every token of a
// character is there (text/stream_decoder.h prints it as it comes). What mpk supports and
// how it matches the reference tokenizers: docs/text.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "text/added_tokens.h"
#include "text/bpe.h"
#include "text/normalizer.h"
#include "text/pre_tokenizer.h"

namespace mpk::text {

// Files a checkpoint folder holds, read with these bounds (real tokenizer.json files are
// 7 to 12 MiB; a tokenizer_config.json with a chat template is under 100 KiB).
inline constexpr int64_t kMaxTokenizerJsonBytes = int64_t{64} << 20;
inline constexpr int64_t kMaxTokenizerConfigBytes = int64_t{4} << 20;

// The text of the three files (config: "" when absent), and the names errors give them.
struct TokenizerSources {
  std::string tokenizer_json, tokenizer_path = "tokenizer.json";
  std::string config_json, config_path = "tokenizer_config.json";
  std::vector<int32_t> extra_eos;  // ids from config.json / generation_config.json
};

class Tokenizer {
 public:
  // DIR/tokenizer.json, and DIR/tokenizer_config.json, DIR/config.json,
  // DIR/generation_config.json and DIR/chat_template.jinja where present. Throws
  // mpk::Error naming the file and the problem: missing, too large, malformed, or asking
  // for something mpk's tokenizer does not support (named).
  static Tokenizer load(const std::string& dir);
  static Tokenizer parse(const TokenizerSources& sources);

  // The ids of `text` (UTF-8; any invalid sequence is first replaced by U+FFFD, as
  // repair_utf8 does). add_special_tokens: the post-processor's tokens around them (e.g.
  // Llama 3's <|begin_of_text|>); a chat template's text carries its own.
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens) const;
  // Whether some token has id `id` (a model's vocabulary may be larger than its tokenizer's).
  bool has_id(int64_t id) const { return id >= 0 && id < id_limit() && known_[id]; }
  // The bytes token `id` stands for (an added token: its text). Throws for an unknown id.
  const std::string& token_bytes(int32_t id) const;
  // The text of `ids`, invalid UTF-8 (a character cut short) replaced by U+FFFD.
  std::string decode(const std::vector<int32_t>& ids) const;

  // 1 + the largest id (of the vocabulary and the added tokens).
  int64_t id_limit() const { return static_cast<int64_t>(bytes_.size()); }
  std::optional<int32_t> id_of(std::string_view token) const;
  // The BOS token's text ("" when the config names none), for chat templates.
  const std::string& bos_token() const { return bos_token_; }
  // The ids that end generation: the config's eos_token and every eos_token_id of
  // config.json and generation_config.json, sorted, without repeats.
  const std::vector<int32_t>& eos_ids() const { return eos_ids_; }
  // The chat template (Jinja text; "" when there is none) and the file it came from.
  const std::string& chat_template() const { return chat_template_; }
  const std::string& chat_template_source() const { return chat_template_source_; }
  // The tokenizer.json path, for messages.
  const std::string& source() const { return source_; }

 private:
  static Tokenizer parse_checked(const TokenizerSources& sources);
  void encode_plain(std::string_view text, std::vector<int32_t>& out) const;
  void parse_config(const TokenizerSources& s);
  void parse_post_processor(const nlohmann::json& j, int depth);

  std::string source_;
  AddedTokens added_;
  std::vector<std::pair<std::string, int32_t>> added_list_;
  Normalizer normalizer_;
  std::optional<PreTokenizer> pre_tokenizer_;
  std::optional<BpeModel> model_;
  std::vector<int32_t> prefix_, suffix_;  // the post-processor's tokens around a sequence
  std::vector<std::string> bytes_;       // by id
  std::vector<bool> known_;              // by id
  std::string bos_token_;
  std::vector<int32_t> eos_ids_;
  std::string chat_template_, chat_template_source_;
};

}  // namespace mpk::text
