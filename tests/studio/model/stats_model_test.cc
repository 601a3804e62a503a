// StatsModel: statistics by kind, operator and layer, time ranges, sorting and histograms
// on a fork-join run worked out by hand, linear groups named after their members, and
// bookkeeping identities on the simulated tiny preset.
#include "studio/model/stats_model.h"

#include <gtest/gtest.h>

#include <map>

#include "tests/studio/panel_test_runs.h"

namespace mpk::studio {
namespace {

using mpk::testing::TempPath;

// Simulated with unit costs (1 byte/ns, no latency), 3 steps, spread over 2 workers:
//   worker 0: norm [0,100) q0 [100,300) | norm [700,800) q0 [800,1000) | norm [1400,1500) q0 [1500,1700)
//   worker 1: q1 [100,600) res [600,700) | q1 [800,1300) res [1300,1400) | q1 [1500,2000) res [2000,2100)
struct HandRun {
  TempPath path{"stats_hand.db"};
  int64_t run = mpk::testing::store_run(path.str(), mpk::testing::fork_join(true),
                                        mpk::testing::unit_costs(), 3, "fork-join");
};

const StatsRow& row_of(const StatsModel& s, const std::string& kind) {
  for (const StatsRow& r : s.rows())
    if (r.name == kind) return r;
  throw std::runtime_error("no row " + kind);
}

TEST(StatsModel, WholeRunByHand) {
  HandRun h;
  TraceReader reader(h.path.str());
  StatsModel s(TraceModel(reader, h.run));
  EXPECT_TRUE(s.whole_run());
  EXPECT_EQ(s.duration_ns(), 2100);
  ASSERT_EQ(s.rows().size(), 3u);
  // Default order: total time, descending; the tie between residual and norm by name.
  EXPECT_EQ(s.rows()[0].name, "linear");
  EXPECT_EQ(s.rows()[1].name, "residual_add");
  EXPECT_EQ(s.rows()[2].name, "rms_norm");

  const StatsRow& lin = row_of(s, "linear");
  EXPECT_EQ(lin.count, 6);
  EXPECT_EQ(lin.total_ns, 3 * 200 + 3 * 500);
  EXPECT_DOUBLE_EQ(lin.mean_ns, 350);
  EXPECT_EQ(lin.p50_ns, 200);  // nearest rank: the 3rd of 6
  EXPECT_EQ(lin.p99_ns, 500);
  EXPECT_DOUBLE_EQ(lin.share, 2100.0 / (2 * 2100));
  // q0 follows the norm at once; q1 starts 100 ns after worker 1 became free each step.
  EXPECT_EQ(lin.bubble_before_ns, 3 * 100);

  const StatsRow& norm = row_of(s, "rms_norm");
  EXPECT_EQ(norm.count, 3);
  EXPECT_EQ(norm.total_ns, 300);
  EXPECT_EQ(norm.p50_ns, 100);
  // Step 0's norm starts the run; the next two wait 400 ns after q0 for the residual.
  EXPECT_EQ(norm.bubble_before_ns, 2 * 400);
  EXPECT_EQ(row_of(s, "residual_add").bubble_before_ns, 0);

  EXPECT_EQ(s.total_count(), 12);
  EXPECT_EQ(s.total_busy_ns(), 2700);
  EXPECT_EQ(s.total_bubble_ns(), 1100);
  // The rest of the SM time is worker 0's idle tail after its last q0 (1700 -> 2100).
  EXPECT_EQ(s.capacity_ns() - s.total_busy_ns() - s.total_bubble_ns(), 400);
}

TEST(StatsModel, ALinearGroupIsOneExecution) {
  // q and k of each layer run as one group on worker 1 (tests/traces/test_graphs.h): 8 rows,
  // 6 executions, and busy time is the union, not the members' sum.
  TempPath db("stats_grouped.db");
  const int64_t run = write_run(db.str(), mpk::testing::grouped_graph(), RunInfo{}, mpk::testing::grouped_execs());
  TraceReader reader(db.str());
  StatsModel s(TraceModel(reader, run));
  EXPECT_EQ(s.total_count(), 6);
  EXPECT_EQ(s.total_busy_ns(), 745);
  EXPECT_LE(s.total_busy_ns() + s.total_bubble_ns(), s.capacity_ns());
  // By operator, each group is one row named after its members, its layer said once.
  s.set_grouping(StatsGrouping::kOperator);
  EXPECT_EQ(row_of(s, "L0.q_proj+k_proj").count, 1);
  EXPECT_EQ(row_of(s, "L0.q_proj+k_proj").total_ns, 190);
  EXPECT_EQ(row_of(s, "L1.q_proj+k_proj").total_ns, 240);
  EXPECT_EQ(row_of(s, "L0.input_norm").count, 1);
  EXPECT_EQ(s.rows().size(), 6u);
  EXPECT_EQ(s.total_busy_ns(), 745);
  // Across layers: the two groups are one row; by layer: two rows.
  s.set_grouping(StatsGrouping::kOperatorAllLayers);
  EXPECT_EQ(row_of(s, "q_proj+k_proj").count, 2);
  EXPECT_EQ(row_of(s, "q_proj+k_proj").total_ns, 430);
  EXPECT_EQ(row_of(s, "o_proj").count, 2);
  EXPECT_EQ(s.rows().size(), 3u);
  s.set_grouping(StatsGrouping::kLayer);
  ASSERT_EQ(s.rows().size(), 2u);
  EXPECT_EQ(row_of(s, "layer 0").count, 3);
  EXPECT_EQ(row_of(s, "layer 1").total_ns, 45 + 240 + 80);
  EXPECT_EQ(row_of(s, "layer 0").kind, static_cast<int>(OpKind::kLinear));
  EXPECT_EQ(s.histogram("layer 1", 4).counts.size(), 4u);
}

TEST(StatsModel, ByOperatorAndLayerOnTheTinyPreset) {
  TempPath path("stats_tiny_groupings.db");
  const int64_t run = mpk::testing::store_tiny(path.str(), 2);
  TraceReader reader(path.str());
  StatsModel s(TraceModel(reader, run));
  const int64_t busy = s.total_busy_ns(), count = s.total_count();
  // Every grouping covers the same executions and time.
  for (int g = 0; g < kNumStatsGroupings; ++g) {
    s.set_grouping(static_cast<StatsGrouping>(g));
    EXPECT_EQ(s.total_busy_ns(), busy) << name_of(static_cast<StatsGrouping>(g));
    EXPECT_EQ(s.total_count(), count);
  }
  // By layer, a layer mixes kinds (its colour is none); by operator each row has one.
  s.set_grouping(StatsGrouping::kLayer);
  EXPECT_EQ(row_of(s, "layer 0").kind, -1);
  EXPECT_NO_THROW(row_of(s, "outside layers"));
  s.set_grouping(StatsGrouping::kOperator);
  const TraceModel m(reader, run);
  EXPECT_EQ(s.rows().size(), m.graph().program.ops.size());
  for (const StatsRow& r : s.rows()) EXPECT_GE(r.kind, 0) << r.name;
}

TEST(StatsModel, RangeKeepsExecutionsStartingInside) {
  HandRun h;
  TraceReader reader(h.path.str());
  StatsModel s(TraceModel(reader, h.run));
  s.set_range(700, 1400);  // step 1: norm, q0, q1, res
  EXPECT_FALSE(s.whole_run());
  const StatsRow& lin = row_of(s, "linear");
  EXPECT_EQ(lin.count, 2);
  EXPECT_EQ(lin.total_ns, 700);
  EXPECT_EQ(lin.p50_ns, 200);
  EXPECT_EQ(lin.p99_ns, 500);
  EXPECT_DOUBLE_EQ(lin.share, 700.0 / (2 * 700));
  EXPECT_EQ(row_of(s, "rms_norm").bubble_before_ns, 400);
  EXPECT_EQ(s.total_count(), 4);

  s.set_range(1300, 1400);  // only step 1's residual starts here
  ASSERT_EQ(s.rows().size(), 1u);
  EXPECT_EQ(s.rows()[0].name, "residual_add");

  s.set_range(5000, 6000);  // after the run: nothing
  EXPECT_TRUE(s.rows().empty());
  EXPECT_EQ(s.total_count(), 0);

  s.set_range(0, 0);  // back to the whole run
  EXPECT_TRUE(s.whole_run());
  EXPECT_EQ(s.total_count(), 12);
}

TEST(StatsModel, SortIsStableAndKeptAcrossRanges) {
  HandRun h;
  TraceReader reader(h.path.str());
  StatsModel s(TraceModel(reader, h.run));
  s.sort(StatsColumn::kCount, true);
  // residual_add and rms_norm both ran 3 times: they keep their previous order.
  ASSERT_EQ(s.rows().size(), 3u);
  EXPECT_EQ(s.rows()[0].name, "residual_add");
  EXPECT_EQ(s.rows()[1].name, "rms_norm");
  EXPECT_EQ(s.rows()[2].name, "linear");
  s.sort(StatsColumn::kTotal, true);  // the same tie the other way round
  EXPECT_EQ(s.rows()[0].name, "residual_add");
  EXPECT_EQ(s.rows()[1].name, "rms_norm");
  s.sort(StatsColumn::kBubble, false);
  EXPECT_EQ(s.rows()[0].name, "rms_norm");
  EXPECT_EQ(s.rows()[1].name, "linear");
  EXPECT_EQ(s.rows()[2].name, "residual_add");
  s.sort(StatsColumn::kName, false);
  EXPECT_EQ(s.rows()[0].name, "rms_norm");
  EXPECT_EQ(s.rows()[2].name, "linear");
  s.set_range(0, 1400);
  EXPECT_EQ(s.sort_column(), StatsColumn::kName);
  EXPECT_FALSE(s.sort_ascending());
  EXPECT_EQ(s.rows()[0].name, "rms_norm");
}

TEST(StatsModel, Histogram) {
  HandRun h;
  TraceReader reader(h.path.str());
  StatsModel s(TraceModel(reader, h.run));
  const DurationHistogram lin = s.histogram("linear", 3);
  EXPECT_EQ(lin.lo_ns, 200);
  EXPECT_EQ(lin.bin_ns, 100);
  EXPECT_EQ(lin.counts, (std::vector<int64_t>{3, 0, 3}));
  EXPECT_EQ(lin.max_count, 3);
  // One duration only: one bin.
  const DurationHistogram norm = s.histogram("rms_norm", 10);
  EXPECT_EQ(norm.counts, (std::vector<int64_t>{3}));
  EXPECT_TRUE(s.histogram("attention", 10).counts.empty());
  s.set_range(700, 1400);
  EXPECT_EQ(s.histogram("linear", 3).counts, (std::vector<int64_t>{1, 0, 1}));
}

TEST(StatsModel, NearestRank) {
  EXPECT_EQ(nearest_rank({}, 0.5), 0);
  EXPECT_EQ(nearest_rank({7}, 0.99), 7);
  std::vector<int64_t> v;
  for (int64_t i = 1; i <= 100; ++i) v.push_back(i);
  EXPECT_EQ(nearest_rank(v, 0.5), 50);
  EXPECT_EQ(nearest_rank(v, 0.99), 99);
  v.push_back(101);
  EXPECT_EQ(nearest_rank(v, 0.99), 100);  // ceil(0.99 * 101) = 100
}

TEST(StatsModel, TinyPresetAddsUp) {
  TempPath path("stats_tiny.db");
  const int64_t run = mpk::testing::store_tiny(path.str(), 4);
  TraceReader reader(path.str());
  StatsModel s(TraceModel(reader, run));
  const RunRecord r = reader.run(run);
  EXPECT_EQ(s.total_count(), r.num_executions);
  // Per-kind totals agree with the writer's per-operator statistics.
  std::map<std::string, int64_t> by_kind;
  for (const OperatorStat& o : reader.operator_stats(run)) by_kind[o.kind] += o.total_ns;
  ASSERT_EQ(s.rows().size(), by_kind.size());
  for (const StatsRow& row : s.rows()) EXPECT_EQ(row.total_ns, by_kind[row.name]) << row.name;
  // Busy time, idle time before executions and each worker's idle tail fill the SM time.
  std::vector<int64_t> last_end(static_cast<size_t>(r.num_workers), 0);
  for (const ExecutionRecord& e : reader.executions(run))
    last_end[static_cast<size_t>(e.worker)] = std::max(last_end[static_cast<size_t>(e.worker)], e.end_ns);
  int64_t tails = 0;
  for (int64_t end : last_end) tails += r.duration_ns - end;
  EXPECT_EQ(s.total_busy_ns() + s.total_bubble_ns() + tails, s.capacity_ns());
  // p50 <= p99 <= the longest execution.
  for (const StatsRow& row : s.rows()) {
    EXPECT_LE(row.p50_ns, row.p99_ns);
    EXPECT_LE(row.p99_ns, r.max_task_ns);
  }
  // A range over the second half holds fewer executions.
  s.set_range(r.duration_ns / 2, r.duration_ns);
  EXPECT_GT(s.total_count(), 0);
  EXPECT_LT(s.total_count(), r.num_executions);
}

}  // namespace
}  // namespace mpk::studio
