// The megakernel on the GPU against the CPU executor, under every scheduling policy, for
// the unfused and the default (fused) pipeline. At batch 1 greedy tokens and logits are
// bit-identical to the CPU's; above, where the linears run on tensor cores, the GPU's are
// bit-identical across policies and runs, and the GPU and the CPU each pass the fidelity
// gate (docs/ir.md, "Exactness"), every batch row with a prompt of its own. Skipped
// without a GPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <map>

#include "passes/policies/policy.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/runtime/fidelity_gate.h"

namespace mpk {
namespace {

using namespace gputest;

std::vector<std::string> policies() {
  std::vector<std::string> names;
  for (const PolicyInfo& p : all_policies()) names.push_back(p.name);
  return names;
}

struct Case {
  std::string model;
  std::string decompose = "decompose";
  int64_t batch = 1;
  int64_t steps = 64;
  std::vector<int64_t> prompt = {1, 7, 3};
};

// The prompt rows of a case: its prompt for every row at batch 1, else one row per
// batch row, row b's tokens shifted by 37 b (so that no two rows compute the same).
int64_t prompt_rows(const Case& c) { return c.batch == 1 ? 1 : c.batch; }
std::vector<int64_t> prompt_of(const Case& c, int64_t vocab) {
  std::vector<int64_t> p;
  for (int64_t b = 0; b < prompt_rows(c); ++b)
    for (int64_t t : c.prompt) p.push_back((t + 37 * b) % vocab);
  return p;
}

void check_against_cpu(const Case& c, bool fused);

// Runs every policy on the GPU and the CPU executor (default policy) and compares, for
// the unfused and the fused pipeline.
void check_against_cpu(const Case& c) {
  for (const bool fused : {false, true}) {
    SCOPED_TRACE(fused ? "default (fused) pipeline" : "unfused pipeline");
    check_against_cpu(c, fused);
  }
}

void check_against_cpu(const Case& c, bool fused) {
  const Module ref = scheduled(c.model, pipeline_for("critical-path", c.decompose, fused), c.batch);
  const Weights w = random_weights(ref, 11);
  const std::vector<int64_t> prompt = prompt_of(c, attr_int(ref.attrs, "vocab"));
  const CpuExecResult cpu = cpu_run(ref, w, c.steps, prompt, prompt_rows(c));
  std::map<std::string, GpuRunResult> runs;
  for (const std::string& policy : policies()) {
    SCOPED_TRACE("policy " + policy);
    const Module m = scheduled(c.model, pipeline_for(policy, c.decompose, fused), c.batch);
    GpuMegakernel g(m, w);
    GpuRunOptions o;
    o.steps = c.steps;
    o.prompt = prompt;
    o.prompt_rows = prompt_rows(c);
    o.logits_history = c.batch > 1 && runs.empty();  // for the fidelity gate
    GpuRunResult r = g.run(o);
    if (c.batch == 1) {
      EXPECT_TRUE(same_tokens(r.tokens, cpu.tokens));
      EXPECT_EQ(r.logits, cpu.logits);
    } else if (runs.empty()) {
      const std::string what = c.model + " batch " + std::to_string(c.batch) + (fused ? " fused" : " unfused");
      const fidelity::Verdict gpu =
          fidelity::check(ref, w, prompt, prompt_rows(c), {r.tokens, r.logits_history, 0}, what + " gpu");
      const fidelity::Verdict on_cpu =
          fidelity::check(ref, w, prompt, prompt_rows(c), {cpu.tokens, cpu.logits, c.steps - 1}, what + " cpu");
      if (gpu.near_ties == 0 && on_cpu.near_ties == 0) {
        EXPECT_TRUE(same_tokens(r.tokens, cpu.tokens));
      }
      std::printf("%-34s gpu %.2g (near ties %lld), cpu %.2g (near ties %lld) of the largest |logit|\n",
                  what.c_str(), gpu.worst, static_cast<long long>(gpu.near_ties), on_cpu.worst,
                  static_cast<long long>(on_cpu.near_ties));
    }
    // A second run of the same kernel: bit-identical.
    const GpuRunResult again = g.run(o);
    EXPECT_EQ(again.tokens, r.tokens);
    EXPECT_EQ(again.logits, r.logits);
    runs.emplace(policy, std::move(r));
  }
  for (const auto& [policy, r] : runs) {
    EXPECT_EQ(r.tokens, runs.begin()->second.tokens) << policy;
    EXPECT_EQ(r.logits, runs.begin()->second.logits) << policy;
  }
}

TEST(GpuMegakernel, TinyMatchesCpuUnderEveryPolicy) {
  MPK_REQUIRE_GPU();
  check_against_cpu({"tiny"});
}

TEST(GpuMegakernel, TinyQwen3MatchesCpuUnderEveryPolicy) {
  MPK_REQUIRE_GPU();
  check_against_cpu({"tiny-qwen3"});
}

// Qwen2's q/k/v biases: in task_linear and, fused, in the q/k/v linear group.
TEST(GpuMegakernel, TinyQwen2MatchesCpuUnderEveryPolicy) {
  MPK_REQUIRE_GPU();
  check_against_cpu({"tiny-qwen2"});
}

TEST(GpuMegakernel, SplitAttentionMatchesCpu) {
  MPK_REQUIRE_GPU();
  check_against_cpu({"tiny", "decompose{attention-splits=4}"});
}

// Long decodes: 300 steps over a cache of 512 positions, one split (its V ring wraps:
// more tiles than it holds) and two and eight splits following the step (at position 302
// the two attend 160 positions each, again past the ring), fused and unfused, against
// the CPU executor bit for bit.
TEST(GpuMegakernel, LongDecodeMatchesCpu) {
  MPK_REQUIRE_GPU();
  for (const char* preset : {"tiny", "tiny-qwen3"})
    for (const bool fused : {false, true})
      for (const char* decompose :
           {"decompose", "decompose{attention-splits=2}", "decompose{attention-splits=8}"}) {
        SCOPED_TRACE(std::string(preset) + (fused ? " fused, " : " unfused, ") + decompose);
        const Module m = scheduled(preset, pipeline_for("critical-path", decompose, fused), 1, 512);
        const Weights w = random_weights(m, 11);
        const std::vector<int64_t> prompt = {1, 7, 3};
        const CpuExecResult cpu = cpu_run(m, w, 300, prompt);
        GpuMegakernel g(m, w);
        GpuRunOptions o;
        o.steps = 300;
        o.prompt = prompt;
        const GpuRunResult r = g.run(o);
        EXPECT_TRUE(same_tokens(r.tokens, cpu.tokens));
        EXPECT_EQ(r.logits, cpu.logits);
      }
}

// Both forms of one-split attention: a kv head's whole group per task (the task appends),
// and one query head per task with kv_append tasks after them (each task prepares this
// position's k and v itself), on both families and at batch 2.
TEST(GpuMegakernel, AttentionPerQueryHeadMatchesCpu) {
  MPK_REQUIRE_GPU();
  for (const char* preset : {"tiny", "tiny-qwen3"}) {
    check_against_cpu({preset, "decompose{attention-heads=1}"});
    check_against_cpu({preset, "decompose{attention-heads=2}", 2, 32});
  }
}

// Cooperative linears (every eligible one, units of 8 rows): the SMs claim units at run
// time, and tokens and logits stay bit-identical to the CPU's static partition.
TEST(GpuMegakernel, CooperativeLinearsMatchCpu) {
  MPK_REQUIRE_GPU();
  check_against_cpu({"tiny", "decompose{coop=on,coop-unit=8}"});
  check_against_cpu({"tiny-qwen3", "decompose{coop=on,coop-unit=8}", 2, 32});
  check_against_cpu({"tiny-qwen2", "decompose{coop=on,coop-unit=8}", 4, 32});
}

// Batch 2..16 on tensor cores: odd sizes, a full n8 tile, two tiles.
TEST(GpuMegakernel, Batch3PassesTheFidelityGate) {
  MPK_REQUIRE_GPU();
  check_against_cpu({"tiny", "decompose", 3});
}

TEST(GpuMegakernel, Batch4PassesTheFidelityGate) {
  MPK_REQUIRE_GPU();
  check_against_cpu({"tiny-qwen2", "decompose", 4});
}

TEST(GpuMegakernel, Batch8Qwen3PassesTheFidelityGate) {
  MPK_REQUIRE_GPU();
  check_against_cpu({"tiny-qwen3", "decompose{attention-splits=2}", 8});
}

TEST(GpuMegakernel, Batch16PassesTheFidelityGate) {
  MPK_REQUIRE_GPU();
  check_against_cpu({"tiny", "decompose", 16});
}

TEST(GpuMegakernel, PerOpBaselineGivesTheSameTokensAndLogits) {
  MPK_REQUIRE_GPU();
  // The second: cooperative linears, whose shares take static units in per-op mode; the
  // third: batch 3 on tensor cores, a prompt per row.
  const std::pair<std::string, int64_t> cases[] = {
      {pipeline_for("critical-path"), 1},
      {pipeline_for("critical-path", "decompose{coop=on,coop-unit=8}", true), 1},
      {pipeline_for("critical-path", "decompose", true), 3}};
  for (const auto& [pipeline, batch] : cases) {
    SCOPED_TRACE(pipeline + " batch " + std::to_string(batch));
    const Module m = scheduled("tiny", pipeline, batch);
    const Weights w = random_weights(m, 5);
    GpuMegakernel g(m, w);
    GpuRunOptions o;
    o.steps = 48;
    o.prompt = batch == 1 ? std::vector<int64_t>{4, 2} : std::vector<int64_t>{4, 2, 9, 11, 30, 5};
    o.prompt_rows = batch == 1 ? 1 : batch;
    const GpuRunResult mk = g.run(o);
    const GpuRunResult po = g.run_per_op(o);
    EXPECT_EQ(po.tokens, mk.tokens);
    EXPECT_EQ(po.logits, mk.logits);
    const GpuRunResult po2 = g.run_per_op(o);  // graph replayed again
    EXPECT_EQ(po2.tokens, mk.tokens);
  }
}

TEST(GpuMegakernel, LogitsHistoryMatchesEveryStepsTopLogit) {
  MPK_REQUIRE_GPU();
  const Module m = scheduled("tiny", pipeline_for("critical-path"));
  const Weights w = random_weights(m, 3);
  const CpuExecResult cpu = cpu_run(m, w, 16, {1});
  GpuMegakernel g(m, w);
  GpuRunOptions o;
  o.steps = 16;
  o.logits_history = true;
  const GpuRunResult r = g.run(o);
  const int64_t V = g.kernel().vocab;
  ASSERT_EQ(r.logits_history.size(), static_cast<size_t>(16 * V));
  for (int64_t s = 0; s < 16; ++s) {
    const float* row = r.logits_history.data() + s * V;
    const int64_t best = std::max_element(row, row + V) - row;
    EXPECT_EQ(best, r.tokens[s][0]) << "step " << s;
    EXPECT_NEAR(row[best], cpu.top_logits[s][0], 1e-2 * std::abs(cpu.top_logits[s][0]) + 1e-3);
  }
}

TEST(GpuMegakernel, HuggingFaceCheckpointDecodesAsOnTheCpu) {
  MPK_REQUIRE_GPU();
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("mpk-gpu-ckpt-" + std::to_string(::getpid()));
  {
    const Module m = scheduled("tiny-qwen3", pipeline_for("critical-path"));
    write_checkpoint(m, random_weights(m, 21), dir.string(), 2);
  }
  const Module m = scheduled(dir.string(), pipeline_for("locality"));
  const Weights w = load_weights(m, dir.string());
  const CpuExecResult cpu = cpu_run(m, w, 32, {2, 5});
  GpuMegakernel g(m, w);
  GpuRunOptions o;
  o.steps = 32;
  o.prompt = {2, 5};
  const GpuRunResult r = g.run(o);
  EXPECT_TRUE(same_tokens(r.tokens, cpu.tokens));
  EXPECT_LT(rel_error(r.logits, cpu.logits), 1e-2);
  fs::remove_all(dir);
}

TEST(GpuMegakernel, RejectsStepsPastMaxSeqLen) {
  MPK_REQUIRE_GPU();
  const Module m = scheduled("tiny", pipeline_for("round-robin"));
  GpuMegakernel g(m, random_weights(m, 1));
  GpuRunOptions o;
  o.steps = g.kernel().max_seq_len + 1;
  EXPECT_THROW(g.run(o), Error);
}

}  // namespace
}  // namespace mpk
