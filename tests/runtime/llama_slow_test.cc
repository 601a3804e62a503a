// Llama-3.2-1B (random weights) decodes on the CPU: the scheduled task graph of the
// default pipeline against the whole-operator reference. Takes tens of seconds, so the
// suite is labelled slow.
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/cpu/executor.h"
#include "runtime/cpu/reference.h"
#include "tests/runtime/runtime_test_util.h"

namespace mpk {
namespace {

TEST(ExecutorSlow, Llama1bDecodesTwoStepsLikeTheReference) {
  const Module m = test::preset_module("llama-3.2-1b");
  const Weights w = random_weights(m, 1);
  const std::vector<int64_t> prompt = {128000, 791};
  const CpuRunResult ref = run_reference(m, w, 2, prompt);
  const Module g = test::compile(m, test::policy_pipeline("critical-path"));
  ASSERT_GT(g.graph.tasks.size(), 10000u);
  CpuRunOptions o;
  o.steps = 2;
  o.prompt = prompt;
  const CpuExecResult r = run_cpu(g, w, o);
  ASSERT_EQ(r.tokens, ref.tokens);
  ASSERT_EQ(r.logits_shape, (std::vector<int64_t>{1, 128256}));
  float scale = 0;
  for (float v : ref.logits) scale = std::max(scale, std::fabs(v));
  EXPECT_GT(scale, 1.0f);
  for (size_t i = 0; i < ref.logits.size(); ++i)
    ASSERT_LE(std::fabs(ref.logits[i] - r.logits[i]), 1e-5f * scale) << "logit " << i;
  for (double s : r.step_seconds) std::printf("llama-3.2-1b cpu step: %.1f ms\n", s * 1e3);
}

}  // namespace
}  // namespace mpk
