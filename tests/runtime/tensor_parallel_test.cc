// Tensor parallel on the CPU (docs/ir.md "Tensor parallel"): modules sharded by shard-tp
// run as ranks (run_cpu_tp) with their slices of the whole model's weights. One rank is
// bit-identical to the unsharded module; more ranks add the partial products in another
// order, so they are held to the fidelity gate against the unsharded module's f64
// interpreter, and are bit-identical across policies and runs.
#include <gtest/gtest.h>

#include "ir/import/import.h"
#include "ir/verifier.h"
#include "passes/pipeline.h"
#include "runtime/cpu/executor.h"
#include "runtime/weights/weights.h"
#include "tests/runtime/fidelity_gate.h"
#include "tests/runtime/runtime_test_util.h"

namespace mpk {
namespace {

CpuExecResult run_ranks(const Module& whole, const Weights& full, int64_t ranks, const std::string& policy,
                        const std::vector<int64_t>& prompt, int64_t steps, const std::string& pipeline = "") {
  const Module m = test::compile(whole, "shard-tp{ranks=" + std::to_string(ranks) + "}," +
                                            (pipeline.empty() ? default_pipeline_with(policy) : pipeline));
  std::vector<Weights> weights;
  for (int64_t r = 0; r < ranks; ++r) weights.push_back(shard_weights(m, full, r));
  CpuRunOptions o;
  o.steps = steps;
  o.prompt = prompt;
  o.threads = 2;
  return run_cpu_tp(m, weights, o);
}

fidelity::Observed observed(const CpuExecResult& r) {
  return {r.tokens, r.logits, static_cast<int64_t>(r.tokens.size()) - 1};
}

TEST(TensorParallel, OneRankIsBitIdenticalToTheUnshardedModule) {
  for (const char* preset : {"tiny", "tiny-qwen2", "tiny-qwen3"}) {
    const Module whole = test::preset_module(preset);
    const Weights w = random_weights(whole, 7);
    CpuRunOptions o;
    o.steps = 12;
    o.prompt = {5, 17, 3};
    const CpuExecResult ref = run_cpu(test::compile(whole, kDefaultPipeline), w, o);
    const CpuExecResult one = run_ranks(whole, w, 1, "critical-path", o.prompt, o.steps);
    EXPECT_EQ(one.tokens, ref.tokens) << preset;
    EXPECT_EQ(one.logits, ref.logits) << preset;
  }
}

TEST(TensorParallel, TwoRanksPassTheFidelityGateAndAgreeAcrossPoliciesAndRuns) {
  for (const char* preset : {"tiny", "tiny-qwen2", "tiny-qwen3"}) {
    const Module whole = test::preset_module(preset);
    const Weights w = random_weights(whole, 11);
    const std::vector<int64_t> prompt = {9, 4, 250};
    const int64_t steps = 64;
    const CpuExecResult first = run_ranks(whole, w, 2, "critical-path", prompt, steps);
    fidelity::check(whole, w, prompt, 1, observed(first), std::string(preset) + " at tp 2");
    for (const char* policy : {"round-robin", "locality", "critical-path"}) {
      const CpuExecResult again = run_ranks(whole, w, 2, policy, prompt, steps);
      EXPECT_EQ(again.tokens, first.tokens) << preset << " " << policy;
      EXPECT_EQ(again.logits, first.logits) << preset << " " << policy;
    }
  }
}

TEST(TensorParallel, FourAndEightRanksPassTheFidelityGate) {
  const Module whole = test::tiny_with_eight_heads();
  const Weights w = random_weights(whole, 3);
  const std::vector<int64_t> prompt = {1, 2, 3, 4};
  for (int64_t ranks : {2, 4, 8}) {
    const CpuExecResult r = run_ranks(whole, w, ranks, "critical-path", prompt, 64);
    fidelity::check(whole, w, prompt, 1, observed(r), "tp " + std::to_string(ranks));
  }
}

TEST(TensorParallel, UnfusedShardedGraphsMatchTheFusedOnesExactly) {
  const Module whole = test::preset_module("tiny-qwen3");
  const Weights w = random_weights(whole, 5);
  const CpuExecResult fused = run_ranks(whole, w, 2, "critical-path", {3}, 16);
  const CpuExecResult plain = run_ranks(whole, w, 2, "", {3}, 16, test::policy_pipeline("critical-path"));
  EXPECT_EQ(plain.tokens, fused.tokens);
  EXPECT_EQ(plain.logits, fused.logits);
}

TEST(TensorParallel, ShardedModulesRefuseTheOneRankRunAndTheWrongRankCount) {
  const Module whole = test::preset_module("tiny");
  const Weights w = random_weights(whole, 1);
  const Module m = test::compile(whole, "shard-tp{ranks=2}," + std::string(kDefaultPipeline));
  CpuRunOptions o;
  try {
    run_cpu(m, shard_weights(m, w, 0), o);
    FAIL() << "run_cpu ran a module sharded for 2 ranks";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sharded for 2 tensor-parallel ranks"), std::string::npos) << e.what();
  }
  std::vector<Weights> one;
  one.push_back(shard_weights(m, w, 0));
  EXPECT_THROW(run_cpu_tp(m, one, o), Error);
  EXPECT_THROW(shard_weights(m, w, 2), Error);
}

TEST(TensorParallel, WeightsOfTheWrongShapeAreNamed) {
  const Module whole = test::preset_module("tiny");
  const Module m = test::compile(whole, "shard-tp{ranks=2}," + std::string(kDefaultPipeline));
  const Weights other = random_weights(test::tiny_with_eight_heads(), 1);  // q_proj rows: 256, as tiny's
  try {
    shard_weights(m, other, 0);
    FAIL() << "weights of another model were sharded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("k_proj.weight' has shape [256, 256]"), std::string::npos) << e.what();
  }
}

// A rank that fails is named.
TEST(TensorParallel, ARankThatFailsIsNamed) {
  const Module whole = test::preset_module("tiny");
  const Weights w = random_weights(whole, 1);
  const Module m = test::compile(whole, "shard-tp{ranks=2}," + std::string(kDefaultPipeline));
  std::vector<Weights> weights = {shard_weights(m, w, 0), shard_weights(m, w, 1)};
  // Rank 1's q_proj has the wrong shape: it cannot start.
  Weights broken;
  for (const auto& [name, t] : weights[1].tensors()) {
    WeightTensor copy = t;
    if (name == "model.layers.1.self_attn.q_proj.weight") copy.shape[0] += 1;
    broken.add(name, copy, nullptr);
  }
  weights[1] = std::move(broken);
  CpuRunOptions o;
  o.steps = 4;
  try {
    run_cpu_tp(m, weights, o);
    FAIL() << "a rank with broken weights ran";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("rank 1: ", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find("q_proj"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mpk
