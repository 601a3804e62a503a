// mpk's tokenizer against the reference (transformers.js) with the real Llama 3 and Qwen3
// tokenizer files: identical ids on a corpus of about 2,400 strings (corpus.h), decoding
// that round-trips, and Llama 3's chat template equal to the reference's
// apply_chat_template. (Qwen3's template, which the reference cannot parse, is checked
// against its own format in chat_template_test.cc.)
#include <gtest/gtest.h>

#include "corpus.h"
#include "reference.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"
#include "text/utf8.h"

namespace mpk::text::testing {
namespace {

struct Family {
  std::string model;
  std::vector<std::string> specials;  // special tokens to embed in the corpus
};

std::string ids_text(const std::vector<int32_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size() && i < 40; ++i) s += (i ? "," : "") + std::to_string(ids[i]);
  return s + (ids.size() > 40 ? ",..." : "");
}

void check_corpus(const Family& f) {
  const Tokenizer tok = Tokenizer::load(reference_model_dir(f.model));
  const std::vector<CorpusEntry> corpus = make_corpus(f.specials);
  ASSERT_GE(corpus.size(), 2000u);
  std::vector<std::string> texts;
  for (const CorpusEntry& e : corpus) texts.push_back(e.bytes);
  const nlohmann::json ref = run_reference(f.model, texts, {});
  ASSERT_FALSE(ref.is_null());
  ASSERT_EQ(ref["ids"].size(), corpus.size());
  size_t id_mismatches = 0, decode_mismatches = 0, kinds_invalid = 0;
  for (size_t i = 0; i < corpus.size(); ++i) {
    const CorpusEntry& e = corpus[i];
    kinds_invalid += e.kind == "invalid";
    const std::vector<int32_t> ids = tok.encode(e.bytes, false);
    const auto want = ref["ids"][i].get<std::vector<int32_t>>();
    if (ids != want && ++id_mismatches <= 5)
      ADD_FAILURE() << f.model << " " << e.kind << " string " << i << " " << quoted(repair_utf8(e.bytes).text)
                    << "\n  mpk:       " << ids_text(ids) << "\n  reference: " << ids_text(want);
    EXPECT_EQ(tok.encode(e.bytes, true), ref["ids_special"][i].get<std::vector<int32_t>>()) << i;
    const std::string text = tok.decode(ids);
    if (text != ref["decoded"][i].get<std::string>() && ++decode_mismatches <= 5)
      ADD_FAILURE() << f.model << " decode of string " << i << ": " << quoted(text) << " vs the reference's "
                    << quoted(ref["decoded"][i].get<std::string>());
    // Decoding gives the text back: as it was (Llama 3), or in NFC (Qwen3) with the
    // added tokens as written; the reference's decode says the same (checked above).
    if (f.model == "llama3") {
      EXPECT_EQ(text, repair_utf8(e.bytes).text) << "round trip of string " << i;
    }
  }
  EXPECT_EQ(id_mismatches, 0u) << "strings whose ids differ from the reference's, of " << corpus.size();
  EXPECT_EQ(decode_mismatches, 0u);
  EXPECT_GE(kinds_invalid, 100u);
}

TEST(ReferenceTest, Llama3CorpusIdsMatchTheReference) {
  check_corpus({"llama3", {"<|begin_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>",
                           "<|reserved_special_token_7|>", "<|end_of_text|>"}});
}

TEST(ReferenceTest, Qwen3CorpusIdsMatchTheReference) {
  check_corpus({"qwen3", {"<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>", "<tool_call>"}});
}

TEST(ReferenceTest, Llama3ChatTemplateMatchesApplyChatTemplate) {
  const Tokenizer tok = Tokenizer::load(reference_model_dir("llama3"));
  const ChatTemplate tpl = ChatTemplate::recognise(tok.chat_template(), tok.chat_template_source());
  EXPECT_EQ(tpl.family(), "llama3");
  const std::vector<std::vector<ChatMessage>> chats = {
      {{"user", "Why is the sky blue?"}},
      {{"system", "You are a helpful assistant."}, {"user", "Why is the sky blue?"}},
      {{"system", "  Answer in French.\n"}, {"user", "\n\tWhat is 2+2?  "}},
      {{"system", "Use <|eot_id|> never."}, {"user", "日本語で答えて 😀"}},
      {{"user", ""}},
  };
  const nlohmann::json ref = run_reference("llama3", {}, chats);
  ASSERT_FALSE(ref.is_null());
  for (size_t i = 0; i < chats.size(); ++i) {
    ASSERT_FALSE(ref["chats"][i].contains("error")) << ref["chats"][i]["error"];
    const std::string text = tpl.render(chats[i], tok.bos_token(), today_for_chat());
    EXPECT_EQ(text, ref["chats"][i]["text"].get<std::string>()) << "chat " << i;
    EXPECT_EQ(tok.encode(text, false), ref["chats"][i]["ids"].get<std::vector<int32_t>>()) << "chat " << i;
  }
}

}  // namespace
}  // namespace mpk::text::testing
