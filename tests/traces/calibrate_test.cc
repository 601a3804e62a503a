// Calibration recovers the cost parameters from a trace that the simulator made with
// known parameters; cost files round-trip and reject bad keys.
#include "traces/calibrate.h"

#include <gtest/gtest.h>

#include <cmath>

#include "ir/error.h"
#include "tests/traces/test_graphs.h"
#include "traces/simulator.h"

namespace mpk {
namespace {

using testing::GraphBuilder;

// Layers of linear tasks (varied sizes and counts, so that the number of busy SMs
// varies) separated by one rms_norm task each, on 8 workers, with a cross-step edge.
Module layered_graph() {
  GraphBuilder g(8);
  OpId lin = g.op("linear"), norm = g.op("norm", OpKind::kRmsNorm);
  std::vector<std::vector<TaskId>> lists(8);
  std::vector<TaskId> prev;
  TaskId first = -1, last = -1;
  for (int layer = 0; layer < 12; ++layer) {
    const TaskId n = g.task(norm, 2000 + 500 * (layer % 5), TaskKind::kRmsNorm);
    lists[layer % 8].push_back(n);
    if (first < 0) first = n;
    if (!prev.empty()) g.event(prev, {n});
    const int width = 3 + (layer * 5) % 8;  // 3..10 tasks
    std::vector<TaskId> cur;
    for (int i = 0; i < width; ++i) {
      const TaskId t = g.task(lin, 5000 + 3000 * ((i + layer) % 4));
      lists[(layer + i + 1) % 8].push_back(t);
      cur.push_back(t);
    }
    g.event({n}, cur);
    prev = cur;
    last = cur.back();
  }
  g.event({last}, {first}, 1);
  return g.schedule(lists);
}

CostParams truth() {
  CostParams c;
  c.mem_bandwidth = 4e9;  // 4 bytes/ns shared: more than 4 busy SMs slow each other
  c.sm_bandwidth = 1e9;
  c.event_latency_ns = 700;
  c.dispatch_ns = 40;
  c.defaults = {0, 1, 0};
  c.kinds[static_cast<size_t>(TaskKind::kLinear)] = {300.0, 1.3, std::nullopt, std::nullopt};
  c.kinds[static_cast<size_t>(TaskKind::kRmsNorm)] = {800.0, 0.9, std::nullopt, std::nullopt};
  return c;
}

TEST(Calibrate, RecoversParametersOfASimulatedRun) {
  const Module m = layered_graph();
  const CostParams known = truth();
  const auto execs = simulate(m, known, 6);
  CostParams base = known;
  base.kinds = {};
  base.event_latency_ns = 0;
  base.dispatch_ns = 0;
  const Calibration cal = calibrate(m, execs, base);
  EXPECT_NEAR(cal.params.event_latency_ns, 700, 1.0);
  EXPECT_NEAR(cal.params.dispatch_ns, 40, 1.0);
  ASSERT_EQ(cal.fits.size(), 2u);
  const KindCost lin = cal.params.cost_of(TaskKind::kLinear);
  const KindCost norm = cal.params.cost_of(TaskKind::kRmsNorm);
  EXPECT_NEAR(lin.fixed_ns, 300, 300 * 0.02);
  EXPECT_NEAR(lin.bytes_scale, 1.3, 1.3 * 0.02);
  EXPECT_NEAR(norm.fixed_ns, 800, 800 * 0.02);
  EXPECT_NEAR(norm.bytes_scale, 0.9, 0.9 * 0.02);
  for (const KindFit& f : cal.fits) EXPECT_LT(f.rms_error_ns, 0.01 * f.mean_ns) << name_of(f.kind);

  // Re-simulating with the fitted parameters reproduces the makespan.
  int64_t want = 0, got = 0;
  for (const Execution& e : execs) want = std::max(want, e.end_ns);
  for (const Execution& e : simulate(m, cal.params, 6)) got = std::max(got, e.end_ns);
  EXPECT_NEAR(static_cast<double>(got), static_cast<double>(want), 0.01 * want);
}

TEST(Calibrate, RecoversOneSmsBandwidthLimit) {
  const Module m = layered_graph();
  const CostParams known = truth();  // one SM: 1 byte/ns = 2x its fair share of 4/8
  const auto execs = simulate(m, known, 6);
  CostParams base = known;
  base.kinds = {};
  base.sm_bandwidth = 1.6e9;
  const Calibration cal = calibrate(m, execs, base);
  EXPECT_TRUE(cal.sm_bandwidth_fitted);
  EXPECT_NEAR(cal.params.sm_bandwidth, 1e9, 0.03e9);
  EXPECT_NEAR(cal.params.cost_of(TaskKind::kLinear).bytes_scale, 1.3, 1.3 * 0.03);
  EXPECT_NEAR(cal.params.cost_of(TaskKind::kLinear).fixed_ns, 300, 300 * 0.03);
}

// A tensor-parallel rank: the events into the odd layers' linears are all_ranks, released
// link_latency_ns later than a local one. Its peer (the same schedule, so the same times)
// decides those waits; calibration recovers both latencies from them.
TEST(Calibrate, RecoversTheLinkLatencyOfCrossRankEvents) {
  Module m = layered_graph();
  for (size_t e = 0; e < m.graph.events.size(); e += 4) m.graph.events[e].all_ranks = true;
  CostParams known = truth();
  known.link_latency_ns = 3000;
  CalibrationRun run;
  run.module = m;
  run.steps = 6;
  run.executions = simulate(m, known, 6);
  CostParams base = known;
  base.kinds = {};
  base.event_latency_ns = 0;
  base.link_latency_ns = 0;
  const Calibration alone = calibrate({run}, base);  // no peers: nothing to say about links
  EXPECT_EQ(alone.link_samples, 0);
  EXPECT_EQ(alone.params.link_latency_ns, 0);

  run.peers = run.executions;
  for (Execution& x : run.peers) x.rank = 1;
  const Calibration cal = calibrate({run}, base);
  EXPECT_GT(cal.link_samples, 0);
  EXPECT_NEAR(cal.params.event_latency_ns, 700, 1.0);
  EXPECT_NEAR(cal.params.link_latency_ns, 3000, 1.0);

  // The peer running 2 us late: every cross-rank wait is 2 us longer, and so is the link.
  for (Execution& x : run.peers) x.end_ns += 2000;
  EXPECT_NEAR(calibrate({run}, base).params.link_latency_ns, 1000, 1.0);
}

TEST(Calibrate, ToleratesTasksThatDoNotFollowTheModel) {
  // The "hardware" moves +-25 % more or fewer bytes per task than the graph says (a
  // fixed pseudo-random factor per task); calibrating on the graph as recorded still
  // predicts the makespan closely.
  const Module recorded = layered_graph();
  Module hardware = recorded;
  uint32_t x = 12345;
  for (Task& t : hardware.graph.tasks) {
    x = x * 1664525u + 1013904223u;
    t.bytes = static_cast<int64_t>(static_cast<double>(t.bytes) * (0.75 + 0.5 * (x >> 8) / 16777216.0));
  }
  const auto execs = simulate(hardware, truth(), 6);
  CostParams base = truth();
  base.kinds = {};
  const Calibration cal = calibrate(recorded, execs, base);
  int64_t measured = 0, predicted = 0;
  for (const Execution& e : execs) measured = std::max(measured, e.end_ns);
  for (const Execution& e : simulate(recorded, cal.params, 6)) predicted = std::max(predicted, e.end_ns);
  EXPECT_NEAR(static_cast<double>(predicted), static_cast<double>(measured), 0.05 * measured);
}

TEST(Calibrate, MatchMakespanFindsTheLatencyThatReproducesIt) {
  const Module m = layered_graph();
  const auto execs = simulate(m, truth(), 4);
  const double measured = mean_step_ns(execs, 4);
  CostParams p = truth();
  p.event_latency_ns = 200;
  const double err = match_makespan(m, 4, measured, p);
  EXPECT_LT(std::fabs(err), 0.002);
  EXPECT_NEAR(p.event_latency_ns, 700, 15);

  // Out of reach (the model is slower than the "measurement" even with no latency):
  // the closest end is kept and the error reported.
  CostParams slow = truth();
  slow.defaults.fixed_ns = 5000;
  slow.kinds = {};
  const double err2 = match_makespan(m, 4, measured, slow);
  EXPECT_GT(err2, 0.05);
  EXPECT_EQ(slow.event_latency_ns, 0);
}

TEST(Calibrate, KindsWithoutBytesGetTheirMeanDuration) {
  GraphBuilder g(2);
  OpId op = g.op("argmax", OpKind::kArgmax);
  TaskId a = g.task(op, 0, TaskKind::kArgmaxReduce), b = g.task(op, 0, TaskKind::kArgmaxReduce);
  Module m = g.schedule({{a}, {b}});
  std::vector<Execution> x = {{a, 0, 0, 0, 0, 0, 100}, {b, 0, 1, 1, 0, 0, 300}};
  const Calibration cal = calibrate(m, x, testing::unit_costs());
  ASSERT_EQ(cal.fits.size(), 1u);
  EXPECT_DOUBLE_EQ(cal.fits[0].fixed_ns, 200);
}

TEST(CostParams, JsonRoundTripAndOverrides) {
  CostParams p = truth();
  p.note = "calibrated from test";
  const CostParams q = parse_cost_params(format_cost_params(p), "costs.json", CostParams{});
  EXPECT_EQ(q.mem_bandwidth, p.mem_bandwidth);
  EXPECT_EQ(q.event_latency_ns, 700);
  EXPECT_EQ(q.note, p.note);
  EXPECT_EQ(q.cost_of(TaskKind::kLinear).fixed_ns, 300);
  EXPECT_EQ(q.cost_of(TaskKind::kRmsNorm).bytes_scale, 0.9);
  EXPECT_EQ(q.cost_of(TaskKind::kRope).fixed_ns, 0);  // falls back to the default

  // A partial file only replaces what it names.
  const CostParams r = parse_cost_params(
      R"({"event_latency_ns": 1500, "kinds": {"rope": {"fixed_ns": 77}}})", "partial.json", p);
  EXPECT_EQ(r.event_latency_ns, 1500);
  EXPECT_EQ(r.sm_bandwidth, p.sm_bandwidth);
  EXPECT_EQ(r.cost_of(TaskKind::kRope).fixed_ns, 77);
  EXPECT_EQ(r.cost_of(TaskKind::kRope).bytes_scale, 1);
  EXPECT_EQ(r.cost_of(TaskKind::kLinear).fixed_ns, 300);
}

TEST(CostParams, BadFilesNameTheProblem) {
  auto msg = [](const std::string& text) {
    try {
      parse_cost_params(text, "c.json", CostParams::from_machine(MachineModel{}));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(msg("{").find("c.json: not valid JSON"), std::string::npos);
  EXPECT_NE(msg(R"({"latency": 1})").find("c.json: latency: unknown key"), std::string::npos);
  EXPECT_NE(msg(R"({"kinds": {"matmul": {}}})").find("kinds.matmul: unknown task kind"),
            std::string::npos);
  EXPECT_NE(msg(R"({"default": {"fixed_ns": -3}})").find("default.fixed_ns"), std::string::npos);
  EXPECT_NE(msg(R"({"version": 2})").find("unsupported cost file version"), std::string::npos);
}

TEST(CostParams, DefaultsComeFromTheMachineModel) {
  MachineModel mm;
  const CostParams p = CostParams::from_machine(mm);
  EXPECT_EQ(p.mem_bandwidth, mm.mem_bandwidth);
  EXPECT_EQ(p.event_latency_ns, mm.event_latency_ns);
  EXPECT_EQ(p.defaults.fixed_ns, mm.task_overhead_ns);
  EXPECT_NEAR(p.sm_bandwidth, 3 * mm.mem_bandwidth / mm.sm_count, 1);
}

}  // namespace
}  // namespace mpk
