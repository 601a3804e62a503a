// Tokens as they are produced and the stop at EOS (driver/token_stream.h) on the cpu
// executor: the sink sees every step once, in order, equal to the final list; a stop
// token ends the run at the step that produced it, and no task of a later step runs (the
// recorded executions say so), in schedule order and in random order.
#include <gtest/gtest.h>

#include <algorithm>

#include "driver/executor.h"
#include "driver_test_util.h"

namespace mpk {
namespace {

using testing::DriverTest;

struct Seen {
  std::vector<int64_t> steps;
  std::vector<std::vector<int32_t>> tokens;
};

ExecRequest request(int64_t steps, Seen& seen) {
  ExecRequest req;
  req.steps = steps;
  req.prompt = {1, 2, 3};
  req.record = true;
  req.on_step = [&seen](int64_t step, const std::vector<int32_t>& tokens) {
    seen.steps.push_back(step);
    seen.tokens.push_back(tokens);
  };
  return req;
}

TEST_F(DriverTest, StreamedTokensEqualTheFinalList) {
  const Compiled c = testing::tiny();
  ExecutorOptions o;
  o.threads = 2;
  const std::unique_ptr<Executor> cpu = make_executor("cpu", c.module, o);
  Seen seen;
  const ExecResult r = cpu->run(request(12, seen));
  EXPECT_TRUE(r.streamed);
  EXPECT_EQ(r.stopped_at, -1);
  ASSERT_EQ(r.steps, 12);
  ASSERT_EQ(seen.steps.size(), 12u);
  for (int64_t s = 0; s < 12; ++s) EXPECT_EQ(seen.steps[s], s);
  EXPECT_EQ(seen.tokens, r.tokens);
}

// The step of the stop: the last generated step whose token is new, so the stop comes
// there and not before.
int64_t new_token_step(const std::vector<std::vector<int32_t>>& tokens, int64_t from) {
  int64_t k = -1;
  for (int64_t s = from; s < static_cast<int64_t>(tokens.size()); ++s) {
    bool seen_before = false;
    for (int64_t e = from; e < s; ++e) seen_before = seen_before || tokens[e] == tokens[s];
    if (!seen_before) k = s;
  }
  return k;
}

TEST_F(DriverTest, StopTokenEndsTheRunAtItsStepWithNoLaterTask) {
  const Compiled c = testing::tiny();
  for (const char* order : {"schedule", "random"}) {
    ExecutorOptions o;
    o.threads = 2;
    o.order = order;
    o.seed = 3;
    const std::unique_ptr<Executor> cpu = make_executor("cpu", c.module, o);
    Seen full_seen;
    ExecRequest req = request(24, full_seen);
    req.record = std::string(order) == "schedule";
    const ExecResult full = cpu->run(req);
    const int64_t k = new_token_step(full.tokens, 2);  // steps 2.. are generated (prompt of 3)
    ASSERT_GT(k, 2) << order << ": the tokens repeat from the first generated one";
    Seen seen;
    req = request(24, seen);
    req.record = std::string(order) == "schedule";
    req.stop = {{full.tokens[k][0]}, 2};
    const ExecResult r = cpu->run(req);
    EXPECT_EQ(r.stopped_at, k) << order;
    EXPECT_EQ(r.steps, k + 1) << order;
    EXPECT_EQ(r.tokens, std::vector<std::vector<int32_t>>(full.tokens.begin(), full.tokens.begin() + k + 1));
    EXPECT_EQ(seen.tokens, r.tokens);
    int32_t last_step = 0;
    for (const Execution& e : r.executions) last_step = std::max(last_step, e.step);
    if (req.record) {
      EXPECT_EQ(last_step, k) << "a task of a step after the stop ran";
    }
  }
}

TEST(StepFeedTest, EveryRowMustReachAStopTokenFromTheFirstGeneratedStep) {
  int64_t sunk = 0;
  const TokenSink sink = [&](int64_t, const std::vector<int32_t>&) { ++sunk; };
  const StopCondition stop{{7, 9}, 2};
  StepFeed feed(sink, stop);
  EXPECT_TRUE(feed(0, {7, 7}));   // a prompt step: not generated
  EXPECT_TRUE(feed(1, {9, 9}));
  EXPECT_TRUE(feed(2, {7, 1}));   // row 0 done
  EXPECT_TRUE(feed(3, {2, 3}));
  EXPECT_FALSE(feed(4, {5, 9}));  // row 1 done: stop
  EXPECT_EQ(feed.stopped_at(), 4);
  EXPECT_EQ(sunk, 5);
  StepFeed none(sink, StopCondition{});
  EXPECT_TRUE(none(0, {7}));
  EXPECT_EQ(none.stopped_at(), -1);
}

}  // namespace
}  // namespace mpk
