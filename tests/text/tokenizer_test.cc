// The tokenizer on a small hand-made byte-level BPE (tiny_tokenizer.h): merge order, added
// tokens, NFC, the post-processor, invalid UTF-8, BOS/EOS from the configs; and every
// refusal: unsupported parts named, malformed or oversized files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "ir/error.h"
#include "text/tokenizer.h"
#include "tiny_tokenizer.h"

namespace mpk::text::testing {
namespace {

using nlohmann::json;

Tokenizer tiny(const json& tok = tiny_tokenizer_json(), const json& config = tiny_tokenizer_config()) {
  TokenizerSources s;
  s.tokenizer_json = tok.dump();
  s.config_json = config.dump();
  s.extra_eos = {kTinyEndOfText};
  return Tokenizer::parse(s);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(TokenizerTest, MergesLowestRankFirstAndLeftmostAmongEqual) {
  const Tokenizer t = tiny();
  // "hello": he (0), ll (12), hell (13), hello (14); " the": he, Ġt, Ġthe; " world": Ġw.
  EXPECT_EQ(t.encode("hello the world", false), (std::vector<int32_t>{270, 258, 271, 'o', 'r', 'l', 'd'}));
  EXPECT_EQ(t.encode("lll", false), (std::vector<int32_t>{268, 'l'}));  // ll is taken leftmost
  EXPECT_EQ(t.decode(t.encode("hello the world", false)), "hello the world");
}

TEST(TokenizerTest, PostProcessorAddsBosAndTheConfigsNameEos) {
  const Tokenizer t = tiny();
  EXPECT_EQ(t.encode("hi", true), (std::vector<int32_t>{kTinyBos, 'h', 'i'}));
  EXPECT_EQ(t.bos_token(), "<|bos|>");
  EXPECT_EQ(t.eos_ids(), (std::vector<int32_t>{kTinyEndOfText, kTinyImEnd}));
  EXPECT_EQ(t.id_of("<|im_start|>"), kTinyImStart);
  EXPECT_EQ(t.id_of("he"), 256);
  EXPECT_EQ(t.id_limit(), 504);
}

TEST(TokenizerTest, AddedTokensAreFoundInTextLongestFirst) {
  json tok = tiny_tokenizer_json();
  tok["added_tokens"].push_back({{"id", 504}, {"content", "<|im"}, {"special", false}});
  const Tokenizer t = tiny(tok);
  EXPECT_EQ(t.encode("<|im_start|>x<|im_end|><|imy", false),
            (std::vector<int32_t>{kTinyImStart, 'x', kTinyImEnd, 504, 'y'}));
  EXPECT_EQ(t.token_bytes(kTinyImEnd), "<|im_end|>");
  EXPECT_EQ(t.decode({kTinyImStart, 'x'}), "<|im_start|>x");
}

TEST(TokenizerTest, NormalizesToNfcAndReadsInvalidUtf8AsReplacementCharacters) {
  const Tokenizer t = tiny();
  EXPECT_EQ(t.encode("e\xCC\x81", false), t.encode("\xC3\xA9", false));  // é decomposed -> composed
  EXPECT_EQ(t.encode("\xC3\xA9", false), (std::vector<int32_t>{0xC3, 0xA9}));
  EXPECT_EQ(t.encode("\xFF", false), (std::vector<int32_t>{0xEF, 0xBF, 0xBD}));  // U+FFFD's bytes
  EXPECT_EQ(t.decode({0xF0, 0x9F}), "\xEF\xBF\xBD");  // a character cut short
}

TEST(TokenizerTest, UnsupportedPartsAreRefusedByName) {
  const auto refuse = [](const std::function<void(json&)>& edit) {
    json tok = tiny_tokenizer_json();
    edit(tok);
    return error_of([&] { tiny(tok); });
  };
  EXPECT_NE(refuse([](json& t) { t["model"]["type"] = "WordPiece"; }).find("tokenizer model 'WordPiece' is not supported"), std::string::npos);
  EXPECT_NE(refuse([](json& t) { t["pre_tokenizer"] = {{"type", "Whitespace"}}; }).find("pre-tokenizer 'Whitespace' is not supported"), std::string::npos);
  EXPECT_NE(refuse([](json& t) { t["pre_tokenizer"]["pretokenizers"].erase(1); }).find("no ByteLevel step"), std::string::npos);
  EXPECT_NE(refuse([](json& t) { t["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "MergedWithNext"; }).find("behavior 'MergedWithNext' is not supported"), std::string::npos);
  EXPECT_NE(refuse([](json& t) { t["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(unclosed"; }).find("does not compile"), std::string::npos);
  EXPECT_NE(refuse([](json& t) { t["normalizer"] = {{"type", "Lowercase"}}; }).find("normalizer 'Lowercase' is not supported"), std::string::npos);
  EXPECT_NE(refuse([](json& t) { t["decoder"] = {{"type", "Metaspace"}}; }).find("decoder \"Metaspace\" is not supported"), std::string::npos);
  EXPECT_NE(refuse([](json& t) { t["post_processor"] = {{"type", "RobertaProcessing"}}; }).find("post-processor 'RobertaProcessing' is not supported"), std::string::npos);
  EXPECT_NE(refuse([](json& t) { t["model"]["byte_fallback"] = true; }).find("\"byte_fallback\""), std::string::npos);
  EXPECT_NE(refuse([](json& t) { t["added_tokens"][0]["lstrip"] = true; }).find("sets \"lstrip\""), std::string::npos);
  EXPECT_NE(refuse([](json& t) { t["model"]["merges"].push_back(json::array({"zz", "q"})); }).find("names a token the vocabulary lacks"), std::string::npos);
  EXPECT_NE(refuse([](json& t) { t["model"]["vocab"]["extra"] = 65; }).find("is given to two tokens"), std::string::npos);
  EXPECT_NE(refuse([](json& t) { t["model"]["vocab"].erase("A"); }).find("lacks the byte-level token of byte 65"), std::string::npos);
  EXPECT_NE(refuse([](json& t) { t["added_tokens"][0]["id"] = "x"; }).find("needs an \"id\""), std::string::npos);
  EXPECT_NE(refuse([](json& t) { t["model"]["vocab"] = 7; }).find("no \"vocab\" object"), std::string::npos);
}

TEST(TokenizerTest, MalformedConfigsAreRefused) {
  json config = tiny_tokenizer_config();
  config["eos_token"] = "<|nope|>";
  EXPECT_NE(error_of([&] { tiny(tiny_tokenizer_json(), config); }).find("eos_token \"<|nope|>\" is no token"), std::string::npos);
  config = tiny_tokenizer_config();
  config["bos_token"] = 12;
  EXPECT_NE(error_of([&] { tiny(tiny_tokenizer_json(), config); }).find("\"bos_token\" is 12"), std::string::npos);
  TokenizerSources s;
  s.tokenizer_json = "{\"model\": [1, 2";
  EXPECT_NE(error_of([&] { Tokenizer::parse(s); }).find("tokenizer.json: malformed JSON at byte"), std::string::npos);
  s.tokenizer_json = std::string(100, '[') + std::string(100, ']');
  EXPECT_NE(error_of([&] { Tokenizer::parse(s); }).find("nested deeper than"), std::string::npos);
  s.tokenizer_json = "[1]";
  EXPECT_NE(error_of([&] { Tokenizer::parse(s); }).find("not a tokenizer"), std::string::npos);
}

class TokenizerFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("mpk_text_" + std::to_string(::getpid()) + "_" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(TokenizerFileTest, LoadsAFolderWithItsModelConfigsEosIds) {
  write_tiny_tokenizer(dir_.string());
  std::ofstream(dir_ / "generation_config.json") << R"({"eos_token_id": [500, 77]})";
  const Tokenizer t = Tokenizer::load(dir_.string());
  EXPECT_EQ(t.eos_ids(), (std::vector<int32_t>{77, kTinyEndOfText, kTinyImEnd}));
  EXPECT_EQ(t.chat_template_source(), (dir_ / "tokenizer_config.json").string());
  std::ofstream(dir_ / "config.json") << R"({"eos_token_id": "x"})";
  EXPECT_NE(error_of([&] { Tokenizer::load(dir_.string()); }).find("eos_token_id \"x\" is not an id"), std::string::npos);
}

TEST_F(TokenizerFileTest, MissingAndOversizedFilesAreRefused) {
  EXPECT_NE(error_of([&] { Tokenizer::load(dir_.string()); }).find("has no tokenizer.json"), std::string::npos);
  std::filesystem::create_directory(dir_ / "tokenizer.json");
  EXPECT_NE(error_of([&] { Tokenizer::load(dir_.string()); }).find("tokenizer.json"), std::string::npos);
  std::filesystem::remove(dir_ / "tokenizer.json");
  { std::ofstream(dir_ / "tokenizer.json") << "{}"; }
  std::filesystem::resize_file(dir_ / "tokenizer.json", kMaxTokenizerJsonBytes + 1);  // sparse
  EXPECT_NE(error_of([&] { Tokenizer::load(dir_.string()); }).find("is larger than"), std::string::npos);
}

}  // namespace
}  // namespace mpk::text::testing
