// A small byte-level BPE tokenizer written by the tests (it fits the tiny presets'
// vocabulary of 512): the 256 byte tokens, a few merges, special tokens from id 500, the
// Qwen3 pre-tokenizer regex, NFC, a TemplateProcessing post-processor that adds <|bos|>,
// and a tokenizer_config.json with a ChatML chat template. Tests change the JSON to make
// it hostile.
#pragma once

#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

#include "text/byte_level.h"

namespace mpk::text::testing {

inline constexpr int32_t kTinyEndOfText = 500, kTinyImStart = 501, kTinyImEnd = 502, kTinyBos = 503;

inline nlohmann::json tiny_tokenizer_json() {
  using nlohmann::json;
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[bytes_to_byte_level(std::string(1, static_cast<char>(b)))] = b;
  // Merges in rank order; each result gets the next id.
  const std::vector<std::pair<std::string, std::string>> merges = {
      {"h", "e"}, {"Ġ", "t"}, {"Ġt", "he"}, {"i", "n"}, {"e", "r"}, {"a", "n"}, {"o", "n"}, {"Ġ", "a"},
      {"r", "e"}, {"Ġ", "s"}, {"Ġa", "n"}, {"Ġan", "d"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}, {"Ġ", "w"}};
  json merge_list = json::array();
  int32_t next = 256;
  for (const auto& [a, b] : merges) {
    vocab[a + b] = next++;
    merge_list.push_back(json::array({a, b}));
  }
  const json added = json::array({
      {{"id", kTinyEndOfText}, {"content", "<|endoftext|>"}, {"special", true}},
      {{"id", kTinyImStart}, {"content", "<|im_start|>"}, {"special", true}},
      {{"id", kTinyImEnd}, {"content", "<|im_end|>"}, {"special", true}},
      {{"id", kTinyBos}, {"content", "<|bos|>"}, {"special", true}},
  });
  return {
      {"version", "1.0"},
      {"added_tokens", added},
      {"normalizer", {{"type", "NFC"}}},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         json::array({{{"type", "Split"},
                       {"pattern", {{"Regex", R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"}}},
                       {"behavior", "Isolated"},
                       {"invert", false}},
                      {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}})}}},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", json::array({{{"SpecialToken", {{"id", "<|bos|>"}, {"type_id", 0}}}},
                                {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
        {"special_tokens", {{"<|bos|>", {{"id", "<|bos|>"}, {"ids", {kTinyBos}}, {"tokens", {"<|bos|>"}}}}}}}},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model", {{"type", "BPE"}, {"dropout", nullptr}, {"ignore_merges", false}, {"vocab", vocab}, {"merges", merge_list}}},
  };
}

inline nlohmann::json tiny_tokenizer_config() {
  return {{"bos_token", "<|bos|>"},
          {"eos_token", "<|im_end|>"},
          {"chat_template",
           "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + message.content + "
           "'<|im_end|>' + '\\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' "
           "}}{%- endif %}"}};
}

// Writes dir/tokenizer.json and dir/tokenizer_config.json.
inline void write_tiny_tokenizer(const std::string& dir, const nlohmann::json& tokenizer = tiny_tokenizer_json(),
                                 const nlohmann::json& config = tiny_tokenizer_config()) {
  std::ofstream(dir + "/tokenizer.json") << tokenizer.dump();
  std::ofstream(dir + "/tokenizer_config.json") << config.dump();
}

}  // namespace mpk::text::testing
