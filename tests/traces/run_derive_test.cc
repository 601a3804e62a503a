// Bubble causes, step spans and validation on small hand-built traces whose answer is
// worked out by hand.
#include "traces/run_derive.h"

#include <gtest/gtest.h>

#include "ir/error.h"
#include "tests/traces/test_graphs.h"

namespace mpk {
namespace {

using testing::GraphBuilder;

void expect_bubble(const Bubble& b, int32_t worker, int64_t start, int64_t end, BubbleCause cause,
                   int32_t step) {
  EXPECT_EQ(b.worker, worker);
  EXPECT_EQ(b.start_ns, start);
  EXPECT_EQ(b.end_ns, end);
  EXPECT_EQ(b.cause, cause) << name_of(b.cause) << " at " << start;
  EXPECT_EQ(b.step, step);
}

std::vector<Bubble> of_worker(const DerivedRun& d, int32_t w) {
  std::vector<Bubble> out;
  for (const Bubble& b : d.bubbles)
    if (b.worker == w) out.push_back(b);
  return out;
}

TEST(RunDerive, WaitThenQueueEmptyThenTail) {
  GraphBuilder g;
  OpId op = g.op("op");
  TaskId a = g.task(op, 100), b = g.task(op, 100);
  EventId e = g.event({a}, {b});
  Module m = g.schedule({{a}, {b}});
  std::vector<Execution> x = {{a, 0, 0, 0, 0, 0, 100}, {b, 0, 1, 1, 0, 150, 250}};
  validate_and_normalize(m, x, 1);
  DerivedRun d = derive_run(m, x, 1);
  EXPECT_EQ(d.duration_ns, 250);
  auto w0 = of_worker(d, 0);
  ASSERT_EQ(w0.size(), 2u);
  expect_bubble(w0[0], 0, 100, 150, BubbleCause::kQueueEmpty, 0);
  expect_bubble(w0[1], 0, 150, 250, BubbleCause::kStepTail, 0);
  auto w1 = of_worker(d, 1);
  ASSERT_EQ(w1.size(), 1u);
  expect_bubble(w1[0], 1, 0, 150, BubbleCause::kWait, 0);
  EXPECT_EQ(w1[0].task, b);
  EXPECT_EQ(w1[0].event, e);
  EXPECT_EQ(w1[0].producer, a);
  EXPECT_EQ(w1[0].producer_worker, 0);
}

TEST(RunDerive, GapWithoutWaitIsOverhead) {
  GraphBuilder g;
  OpId op = g.op("op");
  TaskId a = g.task(op, 1), c = g.task(op, 1);
  Module m = g.schedule({{a, c}});
  std::vector<Execution> x = {{a, 0, 0, 0, 0, 0, 100}, {c, 0, 0, 0, 110, 110, 200}};
  validate_and_normalize(m, x, 1);
  DerivedRun d = derive_run(m, x, 1);
  ASSERT_EQ(d.bubbles.size(), 1u);
  expect_bubble(d.bubbles[0], 0, 100, 110, BubbleCause::kOverhead, 0);
  EXPECT_EQ(d.bubbles[0].task, c);
  EXPECT_EQ(d.bubbles[0].event, -1);
}

TEST(RunDerive, CrossStepWaitsAndIdleWorker) {
  GraphBuilder g;
  OpId op = g.op("op");
  TaskId a = g.task(op, 1), b = g.task(op, 1);
  EventId e0 = g.event({a}, {b}, 0);
  EventId e1 = g.event({b}, {a}, 1);
  Module m = g.schedule({{a}, {b}, {}});
  // Shifted by an arbitrary clock origin: the writer's normalization removes it.
  const int64_t o = 1'000'000'000;
  std::vector<Execution> x = {{a, 0, 0, 0, o + 0, o + 0, o + 100},
                              {b, 0, 1, 1, o + 0, o + 110, o + 200},
                              {a, 1, 0, 0, o + 100, o + 210, o + 300},
                              {b, 1, 1, 1, o + 200, o + 310, o + 400}};
  EXPECT_EQ(validate_and_normalize(m, x, 2), o);
  DerivedRun d = derive_run(m, x, 2);
  EXPECT_EQ(d.duration_ns, 400);
  ASSERT_EQ(d.steps.size(), 2u);
  EXPECT_EQ(d.steps[0].start_ns, 0);
  EXPECT_EQ(d.steps[0].end_ns, 200);
  EXPECT_EQ(d.steps[0].busy_ns, 190);
  EXPECT_EQ(d.steps[1].start_ns, 200);
  EXPECT_EQ(d.steps[1].end_ns, 400);
  EXPECT_EQ(d.steps[1].busy_ns, 180);

  auto w0 = of_worker(d, 0);
  ASSERT_EQ(w0.size(), 5u);
  expect_bubble(w0[0], 0, 100, 110, BubbleCause::kQueueEmpty, 0);
  expect_bubble(w0[1], 0, 110, 200, BubbleCause::kStepTail, 0);
  expect_bubble(w0[2], 0, 200, 210, BubbleCause::kWait, 1);
  EXPECT_EQ(w0[2].event, e1);
  EXPECT_EQ(w0[2].producer, b);
  EXPECT_EQ(w0[2].producer_worker, 1);
  expect_bubble(w0[3], 0, 300, 310, BubbleCause::kQueueEmpty, 1);
  expect_bubble(w0[4], 0, 310, 400, BubbleCause::kStepTail, 1);

  auto w1 = of_worker(d, 1);
  ASSERT_EQ(w1.size(), 2u);
  expect_bubble(w1[0], 1, 0, 110, BubbleCause::kWait, 0);
  EXPECT_EQ(w1[0].event, e0);
  expect_bubble(w1[1], 1, 200, 310, BubbleCause::kWait, 1);
  EXPECT_EQ(w1[1].producer, a);

  auto w2 = of_worker(d, 2);
  ASSERT_EQ(w2.size(), 4u);
  expect_bubble(w2[0], 2, 0, 110, BubbleCause::kQueueEmpty, 0);
  expect_bubble(w2[1], 2, 110, 200, BubbleCause::kStepTail, 0);
  expect_bubble(w2[2], 2, 200, 310, BubbleCause::kQueueEmpty, 1);
  expect_bubble(w2[3], 2, 310, 400, BubbleCause::kStepTail, 1);

  // Every worker's timeline is covered exactly: busy + bubbles == duration.
  for (int32_t w = 0; w < 3; ++w) {
    int64_t total = 0;
    for (const Bubble& bb : of_worker(d, w)) total += bb.end_ns - bb.start_ns;
    for (const Execution& e : x)
      if (e.worker == w) total += e.end_ns - e.start_ns;
    EXPECT_EQ(total, d.duration_ns) << "worker " << w;
  }
}

TEST(RunDerive, LimitingEventIsTheLastReleased) {
  GraphBuilder g;
  OpId op = g.op("op");
  TaskId p1 = g.task(op, 1), p2 = g.task(op, 1), p3 = g.task(op, 1), c = g.task(op, 1);
  g.event({p1}, {c});
  EventId late = g.event({p2, p3}, {c});
  Module m = g.schedule({{p1}, {p2}, {p3}, {c}});
  std::vector<Execution> x = {{p1, 0, 0, 0, 0, 0, 50},
                              {p2, 0, 1, 1, 0, 0, 80},
                              {p3, 0, 2, 2, 0, 0, 70},
                              {c, 0, 3, 3, 0, 90, 100}};
  validate_and_normalize(m, x, 1);
  DerivedRun d = derive_run(m, x, 1);
  auto w3 = of_worker(d, 3);
  ASSERT_EQ(w3.size(), 1u);
  EXPECT_EQ(w3[0].event, late);
  EXPECT_EQ(w3[0].producer, p2);
  EXPECT_EQ(w3[0].producer_worker, 1);
}

TEST(RunDerive, OperatorStatistics) {
  GraphBuilder g;
  OpId o1 = g.op("first"), o2 = g.op("second", OpKind::kRmsNorm, 3);
  TaskId a = g.task(o1, 1), b = g.task(o1, 1), c = g.task(o2, 1, TaskKind::kRmsNorm);
  Module m = g.schedule({{a, c}, {b}});
  std::vector<Execution> x = {
      {a, 0, 0, 0, 0, 0, 10}, {c, 0, 0, 0, 10, 15, 45}, {b, 0, 1, 1, 0, 0, 30}};
  validate_and_normalize(m, x, 1);
  DerivedRun d = derive_run(m, x, 1);
  ASSERT_EQ(d.op_stats.size(), 2u);
  EXPECT_EQ(d.op_stats[0].name, "first");
  EXPECT_EQ(d.op_stats[0].executions, 2);
  EXPECT_EQ(d.op_stats[0].total_ns, 40);
  EXPECT_EQ(d.op_stats[0].max_ns, 30);
  EXPECT_EQ(d.op_stats[1].kind, "rms_norm");
  EXPECT_EQ(d.op_stats[1].layer, 3);
  EXPECT_EQ(d.op_stats[1].wait_ns, 5);
  EXPECT_EQ(d.max_task_ns, 30);
}

TEST(RunDerive, RejectsExecutionsThatDoNotMatchTheSchedule) {
  GraphBuilder g;
  OpId op = g.op("op");
  TaskId a = g.task(op, 1), b = g.task(op, 1);
  Module m = g.schedule({{a}, {b}});
  auto check = [&](std::vector<Execution> x, const std::string& needle) {
    try {
      validate_and_normalize(m, x, 1);
      ADD_FAILURE() << "accepted; expected: " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  check({{a, 0, 1, 1, 0, 0, 1}}, "the schedule puts the task on worker 0");
  check({{a, 0, 0, 0, 5, 4, 6}}, "times out of order");
  check({{a, 0, 0, 0, 0, 0, 1}, {a, 0, 0, 0, 1, 1, 2}}, "recorded twice");
  check({{a, 1, 0, 0, 0, 0, 1}}, "step outside");
  check({{7, 0, 0, 0, 0, 0, 1}}, "no such task");
}

}  // namespace
}  // namespace mpk
