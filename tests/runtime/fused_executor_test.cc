// The four block fusions (fuse-swiglu, fuse-attention, fuse-norm into the lm_head,
// fuse-argmax) change no bit: for tiny, tiny-qwen2 and tiny-qwen3, batch 1 and 4, 64
// steps, the fused graph's tokens, top logits and logits equal the unfused graph's under
// every policy, in schedule and random order, with one attention split and with 2 and 4
// (the fused kv_append + partials path), with all fusions and with each alone; and with
// cooperative linears.
#include <gtest/gtest.h>

#include <cstring>

#include "passes/pipeline.h"
#include "passes/policies/policy.h"
#include "runtime/cpu/executor.h"
#include "runtime/cpu/reference.h"
#include "tests/runtime/runtime_test_util.h"

namespace mpk {
namespace {

const std::vector<int64_t> kPrompt = {1, 2, 3};
constexpr int64_t kSteps = 64;
const std::string kAllFusions = kDefaultFusions;

void expect_identical(const CpuRunResult& a, const CpuRunResult& b, const std::string& what) {
  ASSERT_EQ(a.tokens, b.tokens) << what;
  ASSERT_EQ(a.top_logits, b.top_logits) << what;
  ASSERT_EQ(a.logits.size(), b.logits.size()) << what;
  ASSERT_EQ(std::memcmp(a.logits.data(), b.logits.data(), a.logits.size() * sizeof(float)), 0) << what;
}

CpuRunOptions options(CpuOrder order, uint64_t seed = 0) {
  CpuRunOptions o;
  o.steps = kSteps;
  o.prompt = kPrompt;
  o.order = order;
  o.seed = seed;
  o.threads = 2;
  return o;
}

int count_ops(const Module& m, OpKind kind) {
  int n = 0;
  for (const Operator& op : m.program.ops) n += op.kind == kind;
  return n;
}

class FusedExecutor : public ::testing::TestWithParam<std::tuple<std::string, int64_t>> {
 protected:
  void SetUp() override {
    m_ = test::preset_module(std::get<0>(GetParam()), std::get<1>(GetParam()));
    w_ = random_weights(m_, 11);
  }
  // The unfused graph decoded in schedule order, with `decompose_opts`.
  CpuRunResult unfused(const std::string& decompose_opts = "") const {
    return run_cpu(test::compile(m_, test::policy_pipeline("critical-path", decompose_opts)), w_,
                   options(CpuOrder::kSchedule));
  }
  Module m_;
  Weights w_;
};

TEST_P(FusedExecutor, AllFusionsChangeNoBitUnderEveryPolicy) {
  const Module fused = test::compile(m_, kAllFusions);
  const int64_t layers = attr_int(m_.attrs, "num_layers");
  // Seven operators per layer remain (q, k, v, attention, o, swiglu, down), and the
  // embedding and the lm_head: the norms, ropes, kv_appends, silu_muls, residual adds
  // and the argmax are gone.
  EXPECT_EQ(fused.program.ops.size(), static_cast<size_t>(1 + 7 * layers + 1));
  for (OpKind gone : {OpKind::kRmsNorm, OpKind::kQkNorm, OpKind::kRope, OpKind::kKvAppend, OpKind::kSiluMul,
                      OpKind::kResidualAdd, OpKind::kArgmax})
    EXPECT_EQ(count_ops(fused, gone), 0) << name_of(gone);
  expect_identical(run_reference(m_, w_, kSteps, kPrompt), run_reference(fused, w_, kSteps, kPrompt),
                   "whole-operator reference");
  const CpuRunResult base = unfused();
  for (const PolicyInfo& policy : all_policies()) {
    const Module g = test::compile(fused, test::policy_pipeline(policy.name));
    expect_identical(base, run_cpu(g, w_, options(CpuOrder::kSchedule)), policy.name + " schedule");
    expect_identical(base, run_cpu(g, w_, options(CpuOrder::kRandom, 5)), policy.name + " random order");
  }
}

TEST_P(FusedExecutor, SplitAttentionAppendsInItsOwnTasks) {
  for (int splits : {2, 4}) {
    const std::string opts = "attention-splits=" + std::to_string(splits) + ",attention-rows=1";
    const CpuRunResult base = unfused(opts);
    for (const PolicyInfo& policy : all_policies()) {
      const Module g = test::compile(m_, kAllFusions + "," + test::policy_pipeline(policy.name, opts));
      int appends = 0;
      for (const Task& t : g.graph.tasks)
        appends += t.kind == TaskKind::kKvAppend && g.program.ops[t.op].kind == OpKind::kAttention;
      EXPECT_EQ(appends, attr_int(m_.attrs, "num_layers") * attr_int(m_.attrs, "num_kv_heads") * attr_int(m_.attrs, "batch"));
      const std::string what = policy.name + " " + opts;
      expect_identical(base, run_cpu(g, w_, options(CpuOrder::kSchedule)), what);
      expect_identical(base, run_cpu(g, w_, options(CpuOrder::kRandom, 7)), what + " random order");
    }
  }
}

// Cooperative linears (docs/ir.md): every eligible linear (o_proj, the SwiGLU linear,
// down_proj, the LM head) split into shares of 8-row units, with 132 SMs (most shares
// get no unit) and with 5 (each gets several), change no bit, under every policy.
TEST_P(FusedExecutor, CooperativeSharesChangeNoBit) {
  const CpuRunResult base = unfused();
  for (const int32_t sms : {132, 5}) {
    Module m = m_;
    m.machine.sm_count = sms;
    for (const PolicyInfo& policy : all_policies()) {
      const Module g =
          test::compile(m, kAllFusions + "," + test::policy_pipeline(policy.name, "coop=on,coop-unit=8"));
      int shares = 0;
      for (const Task& t : g.graph.tasks) shares += coop_share(t).cooperative();
      EXPECT_EQ(shares, sms * (3 * attr_int(m_.attrs, "num_layers") + 1)) << "o_proj, swiglu, down, lm_head";
      const std::string what = policy.name + " with " + std::to_string(sms) + " SMs";
      expect_identical(base, run_cpu(g, w_, options(CpuOrder::kSchedule)), what);
      expect_identical(base, run_cpu(g, w_, options(CpuOrder::kRandom, 9)), what + " random order");
    }
  }
}

TEST_P(FusedExecutor, EachFusionAloneChangesNoBit) {
  const CpuRunResult base = unfused();
  for (const std::string fusion :
       {"fuse-swiglu", "fuse-norm,fuse-swiglu", "fuse-rope,fuse-attention", "fuse-norm",
        "fuse-argmax", "fuse-norm,fuse-argmax"}) {
    const Module fused = test::compile(m_, fusion);
    EXPECT_LT(fused.program.ops.size(), m_.program.ops.size()) << fusion << " fused nothing";
    const Module g = test::compile(fused, test::policy_pipeline("round-robin"));
    expect_identical(base, run_cpu(g, w_, options(CpuOrder::kSchedule)), fusion);
    expect_identical(base, run_cpu(g, w_, options(CpuOrder::kRandom, 3)), fusion + " random order");
  }
}

INSTANTIATE_TEST_SUITE_P(Presets, FusedExecutor,
                         ::testing::Combine(::testing::Values("tiny", "tiny-qwen2", "tiny-qwen3"),
                                            ::testing::Values(1, 4)),
                         [](const auto& info) {
                           std::string name =
                               std::get<0>(info.param) + "_batch" + std::to_string(std::get<1>(info.param));
                           for (char& c : name)
                             if (c == '-') c = '_';
                           return name;
                         });

}  // namespace
}  // namespace mpk
