// Run statistics, the critical-path walk, reports and the Chrome trace export on small
// stored runs whose answers are known.
#include "traces/analysis.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "tests/traces/test_graphs.h"
#include "traces/chrome_export.h"
#include "traces/simulator.h"

namespace mpk {
namespace {

using testing::GraphBuilder;
using testing::TempPath;

// norm -> {q0 on w0, q1 on w1} -> merge on w1; merge -> norm of the next step.
// The longer q1 on worker 1 is on the critical path.
Module fork_join() {
  GraphBuilder g;
  OpId norm = g.op("L0.input_norm", OpKind::kRmsNorm, 0);
  OpId q = g.op("L0.q_proj", OpKind::kLinear, 0);
  OpId res = g.op("L0.attn_residual", OpKind::kResidualAdd, 0);
  TaskId n = g.task(norm, 100, TaskKind::kRmsNorm);
  TaskId q0 = g.task(q, 200), q1 = g.task(q, 500);
  TaskId r = g.task(res, 100, TaskKind::kResidualAdd);
  g.event({n}, {q0, q1});
  g.event({q0, q1}, {r});
  g.event({r}, {n}, 1);
  return g.schedule({{n, q0}, {q1, r}});
}

struct Stored {
  TempPath path{"analysis.db"};
  int64_t run = 0;
};

Stored store(const Module& m, const CostParams& c, int32_t steps) {
  Stored s;
  RunInfo info;
  info.kind = "sim";
  info.model = "fork-join";
  s.run = write_run(s.path.str(), m, info, simulate(m, c, steps));
  return s;
}

TEST(Analysis, StatsOfAKnownRun) {
  CostParams c = testing::unit_costs();
  c.event_latency_ns = 10;
  const Stored st = store(fork_join(), c, 3);
  TraceReader reader(st.path.str());
  const RunStats s = compute_stats(reader, st.run);
  // A step: norm 100, +10, q1 500, +10, residual 100; the next norm waits 10 more.
  ASSERT_EQ(s.steps.size(), 3u);
  EXPECT_EQ(s.steps[0].end_ns, 720);
  EXPECT_EQ(s.steps[1].end_ns - s.steps[1].start_ns, 730);
  EXPECT_DOUBLE_EQ(s.median_step_ns, 730);
  EXPECT_EQ(s.busy_ns, 3 * 900);
  EXPECT_NEAR(s.utilization, 2700.0 / (2 * 2180), 1e-9);
  int64_t idle = 0;
  for (int64_t v : s.bubble_ns) idle += v;
  EXPECT_EQ(idle + s.busy_ns, 2 * 2180);
  ASSERT_FALSE(s.longest_waits.empty());
  // The longest wait: q1 of steps 1 and 2 on worker 1 waits 120 ns (from the end of
  // the residual) for the norm on worker 0. Worker 0's idle time before the next norm
  // is queue-empty and step-tail time, not a wait.
  EXPECT_EQ(s.longest_waits[0].op, "L0.q_proj");
  EXPECT_EQ(s.longest_waits[0].producer_op, "L0.input_norm");
  EXPECT_EQ(s.longest_waits[0].producer_worker, 0);
  EXPECT_EQ(s.longest_waits[0].duration_ns, 120);
  EXPECT_EQ(s.bubble_ns[static_cast<size_t>(BubbleCause::kQueueEmpty)], 3 * 310);
  EXPECT_EQ(s.bubble_ns[static_cast<size_t>(BubbleCause::kStepTail)], 3 * 100);

  // Critical path of the median step: norm -> q1 -> residual.
  ASSERT_EQ(s.path.size(), 3u);
  EXPECT_EQ(s.path[0].name, "L0.input_norm");
  EXPECT_EQ(s.path[1].name, "L0.q_proj");
  EXPECT_EQ(s.path[1].busy_ns, 500);
  EXPECT_EQ(s.path[2].name, "L0.attn_residual");
  EXPECT_EQ(s.path_busy_ns, 700);
  EXPECT_EQ(s.path_busy_ns + s.path_gap_ns, s.steps[s.path_step].end_ns - s.steps[s.path_step].start_ns);
  ASSERT_FALSE(s.kinds.empty());
  EXPECT_EQ(s.kinds[0].kind, "linear");
  EXPECT_EQ(s.kinds[0].total_ns, 3 * 700);
}

TEST(Analysis, ReportsNameTheNumbers) {
  const Stored st = store(fork_join(), testing::unit_costs(), 2);
  TraceReader reader(st.path.str());
  const RunStats s = compute_stats(reader, st.run);
  const std::string text = format_stats(s, true);
  for (const char* needle : {"makespan per step", "SM utilization", "queue_empty", "step_tail",
                             "longest waits", "time per operator kind", "critical path of step",
                             "L0.q_proj", "L0.attn_residual"})
    EXPECT_NE(text.find(needle), std::string::npos) << needle << "\n" << text;
  const std::string diff = format_diff(s, s);
  EXPECT_NE(diff.find("makespan/step (mean)"), std::string::npos) << diff;
  EXPECT_NE(diff.find("+0.0 %"), std::string::npos) << diff;
  EXPECT_EQ(format_ns(1234567), "1.235 ms");
  EXPECT_EQ(format_ns(1500), "1.50 us");
  EXPECT_EQ(format_ns(12), "12 ns");
}

TEST(ChromeExport, TracksSlicesArgsAndFlows) {
  CostParams c = testing::unit_costs();
  c.event_latency_ns = 10;
  const Stored st = store(fork_join(), c, 2);
  TraceReader reader(st.path.str());
  std::ostringstream out;
  const ChromeExportStats stats = export_chrome_trace(reader, st.run, out, {FlowMode::kLast, 0, -1});
  const nlohmann::json j = nlohmann::json::parse(out.str());
  const auto& events = j.at("traceEvents");
  std::set<std::string> track_names;
  int slices = 0, starts = 0, finishes = 0, sort_indexes = 0;
  for (const auto& e : events) {
    const std::string ph = e.at("ph");
    if (ph == "M" && e.at("name") == "thread_name") track_names.insert(e.at("args").at("name"));
    if (ph == "M" && e.at("name") == "thread_sort_index") ++sort_indexes;
    if (ph == "X" && e.at("cat") != "step") {
      ++slices;
      const auto& a = e.at("args");
      EXPECT_TRUE(a.contains("task") && a.contains("op") && a.contains("layer") && a.contains("step"));
      EXPECT_EQ(e.at("name"), a.at("operator"));
    }
    if (ph == "s") ++starts;
    if (ph == "f") {
      ++finishes;
      EXPECT_EQ(e.at("bp"), "e");
    }
  }
  EXPECT_EQ(slices, 8);
  EXPECT_EQ(stats.slices, 8);
  EXPECT_TRUE(track_names.count("worker 0 (SM 0)"));
  EXPECT_TRUE(track_names.count("worker 1 (SM 1)"));
  EXPECT_TRUE(track_names.count("steps"));
  EXPECT_EQ(sort_indexes, 3);
  // Every execution but the first norm waited on something: 7 arrows.
  EXPECT_EQ(starts, 7);
  EXPECT_EQ(finishes, 7);
  EXPECT_EQ(stats.flows, 7);

  std::ostringstream all;
  const ChromeExportStats every = export_chrome_trace(reader, st.run, all, {FlowMode::kAll, 0, -1});
  EXPECT_EQ(every.flows, 9);  // the residual waits on two producers each step

  std::ostringstream one;
  const ChromeExportStats second = export_chrome_trace(reader, st.run, one, {FlowMode::kLast, 1, 1});
  EXPECT_EQ(second.slices, 4);
  EXPECT_EQ(second.flows, 3);  // the norm's arrow from step 0 is left out
}

TEST(RunStats, WaitsSplitAtTheProducersRelease) {
  // tests/traces/test_graphs.h's grouped run: five waits, each ending 10, 10, 10, 5 and
  // 20 ns after the producer it waited for had ended (q+k after the norm, o after q+k,
  // the next norm after o, the next q+k and o likewise).
  TempPath db("wait_split.db");
  const int64_t run = write_run(db.str(), testing::grouped_graph(), RunInfo{}, testing::grouped_execs());
  const TraceReader reader(db.str());
  const RunStats s = compute_stats(reader, run);
  EXPECT_EQ(s.wait_released_ns, 10 + 10 + 10 + 5 + 20);
  EXPECT_EQ(s.waits_released, 5);
  EXPECT_EQ(s.wait_running_ns + s.wait_released_ns, s.bubble_ns[static_cast<size_t>(BubbleCause::kWait)]);
  EXPECT_NE(format_stats(s, false).find("5 waits lasted past their producer's end, by 11 ns on average"),
            std::string::npos)
      << format_stats(s, false);
}

TEST(RunStats, SimulatedWaitsAfterReleaseAreTheEventLatencyAtMost) {
  TempPath db("wait_split_sim.db");
  const Module m = testing::grouped_graph();
  CostParams c = testing::unit_costs();
  c.event_latency_ns = 40;
  const int64_t run = write_run(db.str(), m, RunInfo{}, simulate(m, c, 3));
  const TraceReader reader(db.str());
  const RunStats s = compute_stats(reader, run);
  ASSERT_GT(s.waits_released, 0);
  EXPECT_LE(s.wait_released_ns, 40 * s.waits_released);
  EXPECT_EQ(s.wait_running_ns + s.wait_released_ns, s.bubble_ns[static_cast<size_t>(BubbleCause::kWait)]);
}

}  // namespace
}  // namespace mpk
