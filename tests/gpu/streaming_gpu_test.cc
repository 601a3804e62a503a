// Streaming and stopping in the megakernel (runtime/device/publish.cuh): each step's
// tokens reach the host while the kernel runs, equal to those of a run that does not
// stream, and a stop token ends the kernel after the step that produced it, with no later
// step run. Skipped without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>

#include "tests/gpu/gpu_test_util.h"

namespace mpk {
namespace {

using namespace gputest;
using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

constexpr int64_t kSteps = 128;  // the tiny preset's max_seq_len
const std::vector<int64_t> kPrompt = {1, 2, 3};

// The tiny preset's megakernel (default pipeline, random weights) and a run of kSteps.
class GpuStreaming : public ::testing::Test {
 protected:
  void SetUp() override {
    MPK_REQUIRE_GPU();
    module_ = scheduled("tiny", pipeline_for("critical-path", "decompose", true));
    kernel_ = std::make_unique<GpuMegakernel>(module_, random_weights(module_, 1));
    o_.steps = kSteps;
    o_.prompt = kPrompt;
  }
  Module module_;
  std::unique_ptr<GpuMegakernel> kernel_;
  GpuRunOptions o_;
};

TEST_F(GpuStreaming, TokensArriveInOrderWhileTheKernelRuns) {
  GpuMegakernel& g = *kernel_;
  GpuRunOptions& o = o_;
  g.run(o);  // warm-up
  const GpuRunResult plain = g.run(o);
  std::vector<std::vector<int32_t>> seen;
  Clock::time_point first;
  o.on_step = [&](int64_t step, const std::vector<int32_t>& tokens) {
    EXPECT_EQ(step, static_cast<int64_t>(seen.size()));
    if (seen.empty()) first = Clock::now();
    seen.push_back(tokens);
  };
  const Clock::time_point t0 = Clock::now();
  const GpuRunResult r = g.run(o);
  const Clock::time_point t1 = Clock::now();
  EXPECT_TRUE(same_tokens(seen, plain.tokens));
  EXPECT_TRUE(same_tokens(r.tokens, plain.tokens));
  EXPECT_EQ(r.logits, plain.logits);
  EXPECT_EQ(r.stopped_at, -1);
  EXPECT_EQ(r.steps, kSteps);
  // The first step reached the host while most of the kernel was still to run.
  ASSERT_FALSE(seen.empty());
  EXPECT_LT(ms_between(t0, first), 0.5 * ms_between(t0, t1))
      << "first token after " << ms_between(t0, first) << " ms of " << ms_between(t0, t1) << " ms";
}

TEST_F(GpuStreaming, AStopTokenEndsTheKernelAfterItsStep) {
  GpuMegakernel& g = *kernel_;
  GpuRunOptions& o = o_;
  o.trace = true;
  o.logits_history = true;
  const GpuRunResult plain = g.run(o);
  const int64_t first_generated = static_cast<int64_t>(kPrompt.size()) - 1;
  // k: a generated step whose token no generated step before it produced.
  int64_t k = -1;
  for (int64_t s = first_generated + 3; s < kSteps && k < 0; ++s) {
    bool seen_before = false;
    for (int64_t t = first_generated; t < s; ++t) seen_before = seen_before || plain.tokens[t] == plain.tokens[s];
    if (!seen_before) k = s;
  }
  ASSERT_GE(k, 0) << "the model repeats one token: pick another seed";
  o.stop_ids = {plain.tokens[k][0]};
  o.first_generated = first_generated;
  std::vector<std::vector<int32_t>> seen;
  o.on_step = [&](int64_t, const std::vector<int32_t>& tokens) { seen.push_back(tokens); };
  const GpuRunResult r = g.run(o);
  EXPECT_EQ(r.stopped_at, k);
  EXPECT_EQ(r.steps, k + 1);
  const std::vector<std::vector<int32_t>> prefix(plain.tokens.begin(), plain.tokens.begin() + k + 1);
  EXPECT_TRUE(same_tokens(r.tokens, prefix));
  EXPECT_TRUE(same_tokens(seen, prefix));
  // The logits are the stop step's, and the trace holds every task of steps 0..k and
  // nothing later.
  const size_t width = r.logits.size();
  EXPECT_TRUE(std::equal(r.logits.begin(), r.logits.end(), plain.logits_history.begin() + k * width));
  int32_t last = -1;
  for (const abi::TraceRecord& e : r.trace) last = std::max(last, e.step);
  EXPECT_EQ(last, k);
  const auto upto_k = std::count_if(plain.trace.begin(), plain.trace.end(),
                                    [&](const abi::TraceRecord& e) { return e.step <= k; });
  EXPECT_EQ(static_cast<int64_t>(r.trace.size()), upto_k);
  EXPECT_LT(r.kernel_ms, plain.kernel_ms * (static_cast<double>(k + 1) / kSteps) * 1.5 + 0.5);

  // A stop token that only the prompt's steps produce, or none, does not stop it.
  o.stop_ids = {-5};
  const GpuRunResult all = g.run(o);
  EXPECT_EQ(all.stopped_at, -1);
  EXPECT_EQ(all.steps, kSteps);
  o.stop_ids = {plain.tokens[0][0]};
  o.first_generated = kSteps;  // no generated step
  EXPECT_EQ(g.run(o).stopped_at, -1);
}

}  // namespace
}  // namespace mpk
