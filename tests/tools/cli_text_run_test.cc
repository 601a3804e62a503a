// `mpk run` with text (tools/run_text.h, docs/text.md), through the built binary on the
// tiny preset's checkpoint with a hand-made tokenizer beside it: the text on stdout is the
// decode of the tokens an id run generates; a crafted EOS (the token the model produces at
// step k) stops the run there; --chat renders the template; ids keep working.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tests/hostile/checkpoint_files.h"
#include "tests/hostile/hostile_fixture.h"
#include "tests/text/tiny_tokenizer.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace mpk {
namespace {

using Result = hostile::CliResult;

class CliTextRun : public hostile::HostileTest {
 protected:
  void SetUp() override {
    HostileTest::SetUp();
    ckpt_ = path("ckpt");
    std::filesystem::create_directories(ckpt_);
    hostile::write_tiny_checkpoint(ckpt_);
    text::testing::write_tiny_tokenizer(ckpt_);
  }

  // The generated ids of an id run ("generated: 1 2 3").
  std::vector<int32_t> generated_ids(const std::vector<int32_t>& prompt, int64_t new_tokens) {
    std::string ids;
    for (int32_t id : prompt) ids += (ids.empty() ? "" : ",") + std::to_string(id);
    const Result r = run("mpk", "run --backend cpu --threads 1 --model '" + ckpt_ + "' --prompt-ids " + ids +
                                    " --max-new-tokens " + std::to_string(new_tokens));
    EXPECT_EQ(r.status, 0) << r.err;
    const size_t at = r.out.find("generated: ");
    EXPECT_NE(at, std::string::npos) << r.out;
    std::istringstream line(r.out.substr(at + 11, r.out.find('\n', at) - at - 11));
    std::vector<int32_t> out;
    for (int32_t id; line >> id;) out.push_back(id);
    return out;
  }

  // `extra`: more options of the text run (a prefill).
  // `prefilled`: the run prefills the prompt (an explicit chunk, or the gpu's auto).
  void expect_eos_stop(const std::string& backend, const std::string& extra, bool prefilled);

  std::string ckpt_;
};

TEST_F(CliTextRun, TextOnStdoutIsTheDecodeOfTheGeneratedTokens) {
  const text::Tokenizer tok = text::Tokenizer::load(ckpt_);
  const std::vector<int32_t> prompt = tok.encode("hello the world", true);
  const std::vector<int32_t> gen = generated_ids(prompt, 12);
  ASSERT_EQ(gen.size(), 12u);
  std::vector<int32_t> until_eos;
  for (int32_t id : gen) {
    if (std::binary_search(tok.eos_ids().begin(), tok.eos_ids().end(), id)) break;
    if (tok.has_id(id)) until_eos.push_back(id);
  }
  const Result r = run("mpk", "run --backend cpu --threads 1 --model '" + ckpt_ +
                                  "' --prompt 'hello the world' --max-new-tokens 12");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, tok.decode(until_eos) + (until_eos.empty() ? "" : "\n"));
  EXPECT_NE(r.err.find("prompt   " + std::to_string(prompt.size()) + " tokens of text; up to 12 new tokens"),
            std::string::npos) << r.err;
  EXPECT_NE(r.err.find("first token after"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("stopped  "), std::string::npos) << r.err;
}

// A crafted EOS (config.json's eos_token_id set to the token the model produces at a
// step k) stops a text run on `backend` at that step: the text before it on stdout, the
// stop in the summary, no later step in the trace.
void CliTextRun::expect_eos_stop(const std::string& backend, const std::string& extra, bool prefilled) {
  const text::Tokenizer tok = text::Tokenizer::load(ckpt_);
  const std::vector<int32_t> prompt = tok.encode("and the", true);
  const std::vector<int32_t> gen = generated_ids(prompt, 24);
  // k: the last new token that is a token of the tokenizer and not already an EOS.
  int64_t k = -1;
  for (int64_t s = 0; s < static_cast<int64_t>(gen.size()); ++s)
    if (std::find(gen.begin(), gen.begin() + s, gen[s]) == gen.begin() + s && tok.has_id(gen[s]) &&
        !std::binary_search(tok.eos_ids().begin(), tok.eos_ids().end(), gen[s]))
      k = s;
  ASSERT_GE(k, 2) << "the model repeats its first tokens: pick another prompt";
  for (int64_t s = 0; s < k; ++s)
    ASSERT_FALSE(std::binary_search(tok.eos_ids().begin(), tok.eos_ids().end(), gen[s])) << "an EOS before step k";
  nlohmann::json config = nlohmann::json::parse(read(ckpt_ + "/config.json"));
  config["eos_token_id"] = gen[k];
  write("ckpt/config.json", config.dump());
  const Result r = run("mpk", "run --backend " + backend + " --threads 1 --model '" + ckpt_ +
                                  "' --prompt 'and the' --max-new-tokens 24 --trace '" + path("t.db") + "' " + extra);
  ASSERT_EQ(r.status, 0) << r.err;
  std::vector<int32_t> before(gen.begin(), gen.begin() + k);
  std::erase_if(before, [&](int32_t id) { return !tok.has_id(id); });
  const std::string text = tok.decode(before);
  EXPECT_EQ(r.out, text + (text.empty() ? "" : "\n"));
  EXPECT_NE(r.err.find("stopped  at EOS: token " + std::to_string(gen[k])), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("after " + std::to_string(k) + " new tokens"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("first token after"), std::string::npos) << r.err;
  // The run stored in the trace took no step past the stop (after a prefill it is stored
  // from its first step, P - 1).
  const Result stats = run("mpk", "trace stats '" + path("t.db") + "'");
  ASSERT_EQ(stats.status, 0) << stats.err;
  const size_t steps = prefilled ? k + 1 : prompt.size() + k;
  EXPECT_EQ(r.err.find("a prefill of") != std::string::npos, prefilled) << r.err;
  EXPECT_NE(stats.out.find(" " + std::to_string(steps) + " steps"), std::string::npos) << stats.out;
}

TEST_F(CliTextRun, TheConfigsEosStopsTheRunAtTheStepThatProducesIt) { expect_eos_stop("cpu", "", false); }

TEST_F(CliTextRun, APrefilledRunStopsAtTheSameEos) { expect_eos_stop("cpu", "--prefill-chunk 3", true); }

// A prefill (--prefill-chunk) fills the caches with the prompt before decoding: the same
// generated ids and text as one decode step per prompt token, the time to the first token
// naming the prefill, and the prefill stored as a run of its own before the decode's.
TEST_F(CliTextRun, APrefillGivesTheSameTokensAndIsStoredAsARun) {
  const std::string base = "run --backend cpu --threads 1 --model tiny --prompt-ids 5,6,7,8,9,10,11,12 --steps 14";
  const Result plain = run("mpk", base), prefilled = run("mpk", base + " --prefill-chunk 3 --trace '" + path("p.db") + "'");
  ASSERT_EQ(plain.status, 0) << plain.err;
  ASSERT_EQ(prefilled.status, 0) << prefilled.err;
  const auto line = [](const std::string& out, const std::string& label) {
    const size_t at = out.find(label);
    return at == std::string::npos ? std::string("(none)") : out.substr(at, out.find('\n', at) - at);
  };
  EXPECT_EQ(line(prefilled.out, "generated: "), line(plain.out, "generated: "));
  EXPECT_NE(prefilled.out.find("prefill  positions 0..6 in 3 chunk steps"), std::string::npos) << prefilled.out;
  EXPECT_NE(prefilled.out.find("trace: run 2 (its prefill: run 1)"), std::string::npos) << prefilled.out;
  // auto: tiny's 32 rows fit a chunk whole, so the 7 positions take one step of 32.
  const Result automatic = run("mpk", base + " --prefill-chunk auto");
  ASSERT_EQ(automatic.status, 0) << automatic.err;
  EXPECT_EQ(line(automatic.out, "generated: "), line(plain.out, "generated: "));
  EXPECT_NE(automatic.out.find("prefill  positions 0..6 in 1 chunk steps"), std::string::npos) << automatic.out;
  const Result runs = run("mpk", "trace runs '" + path("p.db") + "'");
  ASSERT_EQ(runs.status, 0) << runs.err;
  EXPECT_NE(runs.out.find("prefill: positions 0..6"), std::string::npos) << runs.out;
  EXPECT_NE(runs.out.find("first_step=7 after the prefill of run 1"), std::string::npos) << runs.out;
  const Result text = run("mpk", "run --backend cpu --threads 1 --model '" + ckpt_ +
                                     "' --prompt 'hello the world' --max-new-tokens 6 --prefill-chunk 4");
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.err.find("first token after"), std::string::npos) << text.err;
  EXPECT_NE(text.err.find("a prefill of 7 positions in 2 chunk steps"), std::string::npos) << text.err;
  const Result text_plain = run("mpk", "run --backend cpu --threads 1 --model '" + ckpt_ +
                                           "' --prompt 'hello the world' --max-new-tokens 6");
  EXPECT_EQ(text.out, text_plain.out);
  for (const std::string& bad : {std::string(" --prefill-chunk 129"), std::string(" --prefill-chunk -1"),
                                 std::string(" --prefill-chunk 4 --tp 2")}) {
    const Result r = run("mpk", base + bad);
    EXPECT_EQ(r.status, 1) << bad;
    EXPECT_NE(r.err.find("prefill-chunk"), std::string::npos) << bad << ": " << r.err;
  }
}

// On the GPU the kernel streams the text and stops itself at the EOS step
// (runtime/device/publish.cuh).
class CliTextRunGpu : public CliTextRun {};

TEST_F(CliTextRunGpu, TheKernelStreamsTheTextAndStopsAtTheConfigsEos) {
  if (run("mpk", "run --backend gpu --model tiny --steps 1").status != 0)
    GTEST_SKIP() << "no CUDA GPU here (or built without CUDA): GPU test skipped";
  expect_eos_stop("gpu", "--prefill-chunk 0", false);
}

// A prefill launch fills the caches, then the decode launch streams the text and stops at
// the same EOS: with a chunk of 3, and by default (auto).
TEST_F(CliTextRunGpu, APrefilledKernelStopsAtTheSameEos) {
  if (run("mpk", "run --backend gpu --model tiny --steps 1").status != 0)
    GTEST_SKIP() << "no CUDA GPU here (or built without CUDA): GPU test skipped";
  expect_eos_stop("gpu", "--prefill-chunk 3", true);
  expect_eos_stop("gpu", "", true);
}

TEST_F(CliTextRun, ChatRendersTheTemplateWithASystemTurn) {
  const text::Tokenizer tok = text::Tokenizer::load(ckpt_);
  const std::string rendered = "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nhello<|im_end|>\n"
                               "<|im_start|>assistant\n";
  const size_t n = tok.encode(rendered, false).size();
  const Result r = run("mpk", "run --backend cpu --threads 1 --model '" + ckpt_ +
                                  "' --prompt hello --chat --system 'Be brief.' --max-new-tokens 2");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("prompt   " + std::to_string(n) + " tokens of text (chat template chatml)"), std::string::npos)
      << r.err;
}

TEST_F(CliTextRun, IdsStayIdsAndTheSimulatorTakesText) {
  Result r = run("mpk", "run --backend cpu --threads 1 --model tiny --prompt 1,2,3 --steps 4");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("generated: "), std::string::npos) << r.out;
  r = run("mpk", "run --backend cpu --threads 1 --model tiny --prompt-ids 5,6 --max-new-tokens 3");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("    3  "), std::string::npos) << "steps 0..3: " << r.out;
  EXPECT_EQ(r.out.find("    4  "), std::string::npos) << r.out;
  // With a tokenizer, "1,2,3" is text.
  r = run("mpk", "run --backend cpu --threads 1 --model '" + ckpt_ + "' --prompt 1,2,3 --max-new-tokens 1");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("tokens of text"), std::string::npos) << r.err;
  r = run("mpk", "run --backend sim --model '" + ckpt_ + "' --prompt 'hello the world' --max-new-tokens 5 --trace '" +
                     path("s.db") + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("8 tokens of text: 12 steps for up to 5 new tokens"), std::string::npos) << r.out;
}

// --prompt-ids with a row per batch row: row b of a batch-2 run generates what a batch-1
// run of row b's ids does (the CPU adds every row in the same order); rows that are
// neither one nor one per batch row, or differ in length, are refused by name.
TEST_F(CliTextRun, EachBatchRowCanHaveItsOwnPromptIds) {
  const auto generated = [&](const Result& r, const std::string& label) {
    const size_t at = r.out.find(label);
    EXPECT_NE(at, std::string::npos) << r.out;
    return at == std::string::npos ? std::string() : r.out.substr(at + label.size(), r.out.find('\n', at) - at - label.size());
  };
  const std::string base = "run --backend cpu --threads 1 --model tiny --steps 6 ";
  const Result both = run("mpk", base + "--batch 2 --prompt-ids '5,6;70,8'");
  ASSERT_EQ(both.status, 0) << both.err;
  const Result first = run("mpk", base + "--prompt-ids 5,6"), second = run("mpk", base + "--prompt-ids 70,8");
  ASSERT_EQ(first.status, 0) << first.err;
  ASSERT_EQ(second.status, 0) << second.err;
  EXPECT_EQ(generated(both, "generated [row 0]: "), generated(first, "generated: "));
  EXPECT_EQ(generated(both, "generated [row 1]: "), generated(second, "generated: "));
  EXPECT_NE(generated(first, "generated: "), generated(second, "generated: "));
  Result bad = run("mpk", base + "--batch 2 --prompt-ids '5,6;70'");
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.err.find("rows differ in length"), std::string::npos) << bad.err;
  bad = run("mpk", base + "--batch 2 --prompt-ids '5;6;7'");
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.err.find("3 rows; give one, or one per batch row (2)"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace mpk
