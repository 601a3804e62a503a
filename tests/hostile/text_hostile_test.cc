// Hostile text input to `mpk run`: a text prompt without a tokenizer, missing, malformed,
// oversized or unsupported tokenizer files, a tokenizer that is not the model's, a prompt
// longer than max_seq_len, new tokens that do not fit, a chat without a template, and
// prompt bytes that are not UTF-8 (read as U+FFFD with one warning, as the reference
// tokenizers read them): one clear message each, never a crash.
#include <filesystem>

#include "tests/hostile/checkpoint_files.h"
#include "tests/hostile/hostile_fixture.h"
#include "tests/text/tiny_tokenizer.h"

namespace mpk::hostile {
namespace {

using nlohmann::json;
using text::testing::tiny_tokenizer_config;
using text::testing::tiny_tokenizer_json;
using text::testing::write_tiny_tokenizer;

class TextHostileTest : public HostileTest {
 protected:
  void SetUp() override {
    HostileTest::SetUp();
    ckpt_ = path("ckpt");
    std::filesystem::create_directories(ckpt_);
    write_tiny_checkpoint(ckpt_);
  }
  CliResult run_text(const std::string& extra) {
    return run("mpk", "run --backend cpu --threads 1 --model '" + ckpt_ + "' --max-new-tokens 2 " + extra);
  }
  std::string ckpt_;
};

TEST_F(TextHostileTest, TextPromptWithoutATokenizer) {
  expect_refused(run("mpk", "run --backend cpu --model tiny --prompt 'hello'"),
                 "--prompt TEXT needs a tokenizer: model 'preset:tiny' is not a checkpoint folder");
  expect_refused(run_text("--prompt hello"), "has no tokenizer.json");
  expect_refused(run_text("--prompt hello --tokenizer '" + path("nowhere") + "'"), "has no tokenizer.json");
}

TEST_F(TextHostileTest, MalformedTokenizerFiles) {
  write("ckpt/tokenizer.json", "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0");
  expect_refused(run_text("--prompt hello"), "tokenizer.json: malformed JSON at byte");
  write_tiny_tokenizer(ckpt_);
  write("ckpt/tokenizer_config.json", "[1, 2");
  expect_refused(run_text("--prompt hello"), "tokenizer_config.json: malformed JSON");
  write_tiny_tokenizer(ckpt_);
  json t = tiny_tokenizer_json();
  t["model"]["merges"] = "not a list";
  write_tiny_tokenizer(ckpt_, t);
  expect_refused(run_text("--prompt hello"), "the model has no \"merges\" list");
  write("ckpt/tokenizer.json", "{}");
  std::filesystem::resize_file(path("ckpt/tokenizer.json"), (int64_t{64} << 20) + 1);  // sparse
  expect_refused(run_text("--prompt hello"), "is larger than 64 MiB");
}

TEST_F(TextHostileTest, UnsupportedTokenizerPartsAreNamed) {
  json t = tiny_tokenizer_json();
  t["pre_tokenizer"]["pretokenizers"][0] = {{"type", "Metaspace"}};
  write_tiny_tokenizer(ckpt_, t);
  expect_refused(run_text("--prompt hello"), "pre-tokenizer 'Metaspace' is not supported");
  t = tiny_tokenizer_json();
  t["model"]["type"] = "Unigram";
  write_tiny_tokenizer(ckpt_, t);
  expect_refused(run_text("--prompt hello"), "tokenizer model 'Unigram' is not supported");
}

TEST_F(TextHostileTest, ATokenizerWithIdsBeyondTheModelsVocabulary) {
  json t = tiny_tokenizer_json();
  t["added_tokens"].push_back({{"id", 600}, {"content", "<|far|>"}, {"special", true}});
  write_tiny_tokenizer(ckpt_, t);
  expect_refused(run_text("--prompt hello"), "has ids up to 600 but the model's vocabulary has 512 tokens");
}

TEST_F(TextHostileTest, PromptsAndNewTokensBeyondMaxSeqLen) {
  write_tiny_tokenizer(ckpt_);
  expect_refused(run_text("--max-seq 8 --prompt 'one two three four five six seven eight nine ten'"),
                 "tokens but the model's max_seq_len is 8 (--max-seq raises it");
  expect_refused(run("mpk", "run --backend cpu --model '" + ckpt_ + "' --prompt hi --max-new-tokens 200"),
                 "--max-new-tokens 200 does not fit: a prompt of 3 tokens leaves room for 126 new tokens");
}

TEST_F(TextHostileTest, ChatNeedsATemplateAndATextPrompt) {
  json config = tiny_tokenizer_config();
  config.erase("chat_template");
  write_tiny_tokenizer(ckpt_, tiny_tokenizer_json(), config);
  expect_refused(run_text("--prompt hello --chat"), "--chat: the checkpoint has no chat template");
  config["chat_template"] = "{{ messages }}";
  write_tiny_tokenizer(ckpt_, tiny_tokenizer_json(), config);
  expect_refused(run_text("--prompt hello --chat"), "is of no family mpk renders");
  expect_refused(run_text("--prompt-ids 1,2 --chat"), "--chat and --system format a text --prompt");
  expect_refused(run_text("--prompt hi --system 'x'"), "--system adds a system turn to --chat");
  expect_refused(run_text("--prompt hi --prompt-ids 1"), "give --prompt TEXT or --prompt-ids 1,2,3, not both");
  expect_refused(run_text("--prompt hi --steps 3"), "give --steps or --max-new-tokens, not both");
}

TEST_F(TextHostileTest, InvalidUtf8InThePromptIsReadAsReplacementCharacters) {
  write_tiny_tokenizer(ckpt_);
  const CliResult r = run_text("--prompt 'ok\xFF\xFEok'");
  EXPECT_EQ(r.status, 0) << r.err;
  expect_clean(r);
  EXPECT_NE(r.err.find("warning: --prompt is not valid UTF-8 (byte 2); 2 invalid sequence(s) replaced by U+FFFD"),
            std::string::npos) << r.err;
  // "ok" + 2 x U+FFFD (3 bytes each) + "ok" after <|bos|>: the same ids as the repaired text.
  const CliResult same = run_text("--prompt 'ok\xEF\xBF\xBD\xEF\xBF\xBDok'");
  EXPECT_EQ(same.status, 0) << same.err;
  EXPECT_EQ(same.out, r.out);
}

}  // namespace
}  // namespace mpk::hostile
