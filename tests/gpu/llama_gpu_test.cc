// llama-3.2-1b with random weights on the GPU, under the default (fused) pipeline: tokens
// and logits bit-identical to the CPU executor for the first steps (the CPU needs a
// fraction of a second per step), then 64 steps bit-identical across every policy and
// across runs. Skipped without a GPU.
#include <gtest/gtest.h>

#include "passes/policies/policy.h"
#include "tests/gpu/gpu_test_util.h"

namespace mpk {
namespace {

using namespace gputest;

TEST(GpuLlama, MatchesCpuThenAgreesAcrossPolicies) {
  MPK_REQUIRE_GPU();
  const std::vector<int64_t> prompt = {128000, 791};
  const Module ref = scheduled("llama-3.2-1b", kDefaultPipeline);
  const Weights w = random_weights(ref, 7);
  const int64_t cpu_steps = 8;
  const CpuExecResult cpu = cpu_run(ref, w, cpu_steps, prompt);
  std::vector<std::vector<int32_t>> first;
  std::vector<float> first_logits;
  for (const PolicyInfo& p : all_policies()) {
    SCOPED_TRACE("policy " + p.name);
    const Module m = scheduled("llama-3.2-1b", default_pipeline_with(p.name));
    GpuMegakernel g(m, w);
    GpuRunOptions o;
    o.prompt = prompt;
    o.steps = cpu_steps;
    const GpuRunResult short_run = g.run(o);
    EXPECT_TRUE(same_tokens(short_run.tokens, cpu.tokens));
    EXPECT_EQ(short_run.logits, cpu.logits);
    o.steps = 64;
    const GpuRunResult r = g.run(o);
    const GpuRunResult again = g.run(o);
    EXPECT_EQ(again.tokens, r.tokens);
    EXPECT_EQ(again.logits, r.logits);
    if (first.empty()) {
      first = r.tokens;
      first_logits = r.logits;
    } else {
      EXPECT_EQ(r.tokens, first);
      EXPECT_EQ(r.logits, first_logits);
    }
  }
}

}  // namespace
}  // namespace mpk
