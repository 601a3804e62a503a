// CompareModel: deltas between two schedules of one graph with known makespans, runs
// from one file or two.
#include "studio/model/compare_model.h"

#include <gtest/gtest.h>

#include "tests/studio/panel_test_runs.h"

namespace mpk::studio {
namespace {

using mpk::testing::TempPath;

const DeltaRow& row(const CompareModel& c, const std::string& group, const std::string& label) {
  for (const DeltaRow& r : c.deltas())
    if (r.group == group && r.label == label) return r;
  throw std::runtime_error("no delta row " + group + "/" + label);
}

// Spread over two workers a step takes 700 ns (norm 100, q1 500, residual 100); all on
// one worker it takes 900 ns (every task in turn). 3 steps each.
TEST(CompareModel, TwoSchedulesOfOneGraph) {
  TempPath path("compare_same.db");
  const CostParams c = mpk::testing::unit_costs();
  const int64_t spread = mpk::testing::store_run(path.str(), mpk::testing::fork_join(true), c, 3, "fj");
  const int64_t serial = mpk::testing::store_run(path.str(), mpk::testing::fork_join(false), c, 3, "fj");
  TraceReader reader(path.str());
  CompareModel m(reader, spread, reader, serial);

  const DeltaRow& median = row(m, "step", "makespan per step (median)");
  EXPECT_DOUBLE_EQ(median.a, 700);
  EXPECT_DOUBLE_EQ(median.b, 900);
  EXPECT_DOUBLE_EQ(median.delta(), 200);
  EXPECT_NEAR(median.relative(), 200.0 / 700.0, 1e-12);
  EXPECT_DOUBLE_EQ(row(m, "step", "makespan per step (mean)").b, 900);
  EXPECT_DOUBLE_EQ(row(m, "step", "steps").a, 3);
  // The same work: 2700 ns busy; over 2 workers for 2100 ns against 2700 ns.
  EXPECT_DOUBLE_EQ(row(m, "step", "busy time").a, 2700);
  EXPECT_DOUBLE_EQ(row(m, "step", "busy time").b, 2700);
  EXPECT_NEAR(row(m, "step", "utilization").a, 2700.0 / (2 * 2100), 1e-12);
  EXPECT_NEAR(row(m, "step", "utilization").b, 2700.0 / (2 * 2700), 1e-12);
  // Idle time by cause adds up to the SM time minus the busy time.
  double idle_a = 0, idle_b = 0;
  for (const char* cause : {"wait", "queue_empty", "step_tail", "overhead"}) {
    idle_a += row(m, "idle", cause).a;
    idle_b += row(m, "idle", cause).b;
  }
  EXPECT_DOUBLE_EQ(idle_a, 2 * 2100 - 2700);
  EXPECT_DOUBLE_EQ(idle_b, 2 * 2700 - 2700);
  // Per-kind time is unchanged by the schedule.
  EXPECT_DOUBLE_EQ(row(m, "kind", "linear").a, 2100);
  EXPECT_DOUBLE_EQ(row(m, "kind", "linear").delta(), 0);
  // The wait's two parts add up to it (unit costs: no signalling latency, all "running").
  EXPECT_DOUBLE_EQ(row(m, "idle", "wait: producer running").a + row(m, "idle", "wait: after release").a,
                   row(m, "idle", "wait").a);
  EXPECT_DOUBLE_EQ(row(m, "idle", "wait: after release").b, 0);
  EXPECT_EQ(m.deltas()[5 + 4 + 2].label, "linear");  // kinds follow the idle rows, most time first
  // Critical path of the median step: norm -> q1 -> residual against all four tasks.
  EXPECT_DOUBLE_EQ(row(m, "critical path", "tasks").a, 3);
  EXPECT_DOUBLE_EQ(row(m, "critical path", "tasks").b, 4);
  EXPECT_DOUBLE_EQ(row(m, "critical path", "busy").a, 700);
  EXPECT_DOUBLE_EQ(row(m, "critical path", "busy").b, 900);
  EXPECT_DOUBLE_EQ(row(m, "critical path", "length (median step)").b, 900);

  // The shared axis spans the longer run; run b is loaded for drawing.
  EXPECT_EQ(m.duration_ns(), 2700);
  EXPECT_EQ(m.model().run().id, serial);
  EXPECT_EQ(m.model().worker_range(0).size(), 12);
  EXPECT_TRUE(m.model().worker_range(1).empty());
  // All on worker 0: 900 ns of work a step.
  EXPECT_EQ(m.model().busy_ns(0, 0, 900), 900);
  EXPECT_EQ(m.model().busy_ns(0, 0, 2700), 2700);
  EXPECT_EQ(m.model().busy_ns(1, 0, 2700), 0);
}

TEST(CompareModel, RunsFromTwoFilesAndErrors) {
  TempPath pa("compare_a.db"), pb("compare_b.db");
  const CostParams c = mpk::testing::unit_costs();
  const int64_t a = mpk::testing::store_run(pa.str(), mpk::testing::fork_join(false), c, 2, "fj");
  const int64_t b = mpk::testing::store_run(pb.str(), mpk::testing::fork_join(true), c, 2, "fj");
  TraceReader ra(pa.str()), rb(pb.str());
  CompareModel m(ra, a, rb, b);
  EXPECT_DOUBLE_EQ(row(m, "step", "makespan per step (median)").delta(), -200);
  EXPECT_EQ(describe_run(ra.run(a)), "run 1: sim serial (fj)");
  EXPECT_THROW(CompareModel(ra, a, rb, 99), Error);
  // Either run's model can be the one loaded (the other is the current run's).
  const CompareModel loads_a(ra, a, rb, b, CompareSide::kA);
  EXPECT_EQ(loads_a.loaded(), CompareSide::kA);
  EXPECT_EQ(loads_a.model().run().graph, ra.run(a).graph);
  EXPECT_TRUE(loads_a.model().worker_range(1).empty());  // serial: all on worker 0
  EXPECT_TRUE(loads_a.same_kind());
  EXPECT_EQ(costs_of(ra.run(a)), "costs: machine-model");
}

}  // namespace
}  // namespace mpk::studio
