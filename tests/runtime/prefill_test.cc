// Prefill on the CPU (docs/ir.md "Prefill chunks"): a prefill chunk fills the KV caches
// with a prompt's first P - 1 positions, C at a time, and decoding goes on from step
// P - 1. The CPU computes every row as a decode step does, so the tokens and logits
// after a prefill are the same bits as step-by-step decoding, whatever the chunk, the
// prompt's length against it, the fusions, the attention's form and the order.
#include <gtest/gtest.h>

#include "ir/verifier.h"
#include "passes/pipeline.h"
#include "runtime/cpu/executor.h"
#include "runtime/weights/weights.h"
#include "tests/runtime/runtime_test_util.h"

namespace mpk {
namespace {

struct Prefilled {
  CpuExecResult step_by_step;
  CpuPrefillResult prefilled;
};

Prefilled run_both(const Module& imported, const Weights& w, int64_t chunk, const std::vector<int64_t>& prompt,
                   int64_t steps, const std::string& pipeline = kDefaultPipeline, CpuOrder order = CpuOrder::kSchedule) {
  const Module decode = test::compile(imported, pipeline);
  const Module prefill = test::compile(imported, "prefill-chunk{rows=" + std::to_string(chunk) + "}," + pipeline);
  CpuRunOptions o;
  o.steps = steps;
  o.prompt = prompt;
  o.threads = 2;
  o.order = order;
  return {run_cpu(decode, w, o), run_cpu_prefilled(prefill, decode, w, o)};
}

std::vector<int64_t> prompt_of(int64_t n) {
  std::vector<int64_t> p;
  for (int64_t i = 0; i < n; ++i) p.push_back((i * 37 + 11) % 256);
  return p;
}

void expect_same_decode(const Prefilled& r, size_t prompt_len, const std::string& what) {
  const CpuExecResult& d = r.prefilled.decode;
  EXPECT_EQ(d.first_step, static_cast<int64_t>(prompt_len) - 1) << what;
  ASSERT_EQ(d.steps, r.step_by_step.steps) << what;
  for (int64_t s = d.first_step; s < d.steps; ++s) EXPECT_EQ(d.tokens[s], r.step_by_step.tokens[s]) << what << " step " << s;
  EXPECT_EQ(generated_tokens(d, prompt_len), generated_tokens(r.step_by_step, prompt_len)) << what;
  EXPECT_EQ(d.logits, r.step_by_step.logits) << what;
}

TEST(Prefill, TokensAndLogitsAreBitIdenticalToStepByStep) {
  for (const char* preset : {"tiny", "tiny-qwen2", "tiny-qwen3"}) {
    const Module m = test::preset_module(preset);
    const Weights w = random_weights(m, 21);
    for (int64_t chunk : {1, 5, 16})
      for (int64_t len : {2, 7, 16, 17, 40}) {
        const Prefilled r = run_both(m, w, chunk, prompt_of(len), len + 6);
        expect_same_decode(r, static_cast<size_t>(len),
                           std::string(preset) + " chunk " + std::to_string(chunk) + " prompt " + std::to_string(len));
        EXPECT_EQ(r.prefilled.prefill.steps, (len - 1 + chunk - 1) / chunk);
      }
  }
}

// Chunks of several sequences: row r of a chunk is chunk row r % C of sequence r / C, each
// with its own prompt and caches.
TEST(Prefill, ABatchOfSequencesWithTheirOwnPromptsGivesTheSameBits) {
  const Module m = test::preset_module("tiny-qwen3", 3);
  const Weights w = random_weights(m, 13);
  const Module decode = test::compile(m, kDefaultPipeline);
  const Module prefill = test::compile(m, std::string("prefill-chunk{rows=4},") + kDefaultPipeline);
  CpuRunOptions o;
  o.steps = 18;
  o.prompt_rows = 3;
  o.prompt.clear();
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t t : prompt_of(11)) o.prompt.push_back((t + 29 * b) % 256);
  o.threads = 2;
  const CpuExecResult step_by_step = run_cpu(decode, w, o);
  const CpuPrefillResult prefilled = run_cpu_prefilled(prefill, decode, w, o);
  for (int64_t b = 0; b < 3; ++b)
    EXPECT_EQ(generated_tokens(prefilled.decode, 11, b), generated_tokens(step_by_step, 11, b)) << "row " << b;
  EXPECT_NE(generated_tokens(step_by_step, 11, 0), generated_tokens(step_by_step, 11, 1));
  EXPECT_EQ(prefilled.decode.logits, step_by_step.logits);
}

TEST(Prefill, EveryAttentionFormAndTheRandomOrderGiveTheSameBits) {
  const Module m = test::preset_module("tiny-qwen3");
  const Weights w = random_weights(m, 5);
  const std::vector<int64_t> prompt = prompt_of(23);
  const std::string fused_splits = std::string(kDefaultFusions) + ",decompose{attention-splits=3},infer-deps,"
                                   "assign-sm{policy=round-robin}";
  for (const std::string& pipeline : {test::policy_pipeline("critical-path"),  // unfused: plain rope, kv_append
                                      test::policy_pipeline("locality", "attention-splits=2"), fused_splits}) {
    const Prefilled r = run_both(m, w, 8, prompt, 30, pipeline);
    expect_same_decode(r, prompt.size(), pipeline);
  }
  const Prefilled random = run_both(m, w, 6, prompt, 28, kDefaultPipeline, CpuOrder::kRandom);
  expect_same_decode(random, prompt.size(), "random order");
}

TEST(Prefill, APromptOfOneTokenOrLongerThanTheStepsNeedsNoDecodeBeyondIt) {
  const Module m = test::preset_module("tiny");
  const Weights w = random_weights(m, 3);
  const Prefilled one = run_both(m, w, 4, {42}, 5);
  EXPECT_EQ(one.prefilled.prefill.steps, 0);
  expect_same_decode(one, 1, "one token");
  // A prompt longer than the steps: the prefill covers the steps, no decode step runs.
  const Prefilled longer = run_both(m, w, 4, prompt_of(12), 6);
  EXPECT_EQ(longer.prefilled.prefill.steps, 2);
  EXPECT_EQ(longer.prefilled.decode.first_step, 6);
}

TEST(Prefill, OnStepSeesTheGeneratedStepsOnlyAndCanStopTheRun) {
  const Module m = test::preset_module("tiny");
  const Weights w = random_weights(m, 9);
  const Module decode = test::compile(m, kDefaultPipeline);
  const Module prefill = test::compile(m, std::string("prefill-chunk{rows=4},") + kDefaultPipeline);
  CpuRunOptions o;
  o.steps = 20;
  o.prompt = prompt_of(9);
  std::vector<int64_t> seen;
  o.on_step = [&](int64_t step, const std::vector<int32_t>&) {
    seen.push_back(step);
    return step < 11;
  };
  const CpuPrefillResult r = run_cpu_prefilled(prefill, decode, w, o);
  EXPECT_EQ(seen, (std::vector<int64_t>{8, 9, 10, 11}));
  EXPECT_EQ(r.decode.steps, 12);
}

TEST(Prefill, RefusesAModuleThatIsNotAChunkAndCachesThatDiffer) {
  const Module m = test::preset_module("tiny");
  const Weights w = random_weights(m, 1);
  const Module decode = test::compile(m, kDefaultPipeline);
  CpuRunOptions o;
  o.steps = 6;
  o.prompt = prompt_of(4);
  EXPECT_THROW(run_cpu_prefilled(decode, decode, w, o), Error);
  const Module chunk = test::compile(m, std::string("prefill-chunk{rows=2},") + kDefaultPipeline);
  try {
    run_cpu(chunk, w, o);
    FAIL() << "a prefill chunk ran as a decode";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is a prefill chunk"), std::string::npos) << e.what();
  }
  const Module other = test::compile(test::preset_module("tiny", 1, 64), std::string("prefill-chunk{rows=2},") +
                                                                           kDefaultPipeline);
  try {
    run_cpu_prefilled(other, decode, w, o);
    FAIL() << "caches of another length were accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("KV cache"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mpk
