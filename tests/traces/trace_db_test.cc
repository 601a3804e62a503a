// trace.db: schema round trip, several runs in one file, window queries, dependencies
// and the graph read back without the .mpk file.
#include "traces/trace_db.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include "ir/error.h"
#include "tests/traces/test_graphs.h"
#include "traces/simulator.h"

namespace mpk {
namespace {

using testing::GraphBuilder;
using testing::TempPath;

Module diamond() {
  GraphBuilder g;
  OpId norm = g.op("L0.input_norm", OpKind::kRmsNorm, 0);
  OpId proj = g.op("L0.q_proj", OpKind::kLinear, 0);
  TaskId a = g.task(norm, 64, TaskKind::kRmsNorm, 10);
  TaskId b = g.task(proj, 1000), c = g.task(proj, 2000), d = g.task(norm, 64, TaskKind::kRmsNorm);
  g.event({a}, {b, c});
  g.event({b, c}, {d});
  g.event({d}, {a}, 1);
  return g.schedule({{a, b}, {c, d}, {}}, "critical-path");
}

std::vector<Execution> diamond_execs() {
  // Step 0 then step 1; task ids a=0 b=1 c=2 d=3; workers {a,b} {c,d}.
  return {{0, 0, 0, 0, 0, 0, 10},     {1, 0, 0, 0, 10, 20, 100},  {2, 0, 1, 1, 0, 20, 200},
          {3, 0, 1, 1, 200, 200, 230}, {0, 1, 0, 0, 100, 240, 250}, {1, 1, 0, 0, 250, 260, 300},
          {2, 1, 1, 1, 230, 260, 400}, {3, 1, 1, 1, 400, 400, 420}};
}

TEST(TraceDb, RoundTripOfOneRun) {
  TempPath path("roundtrip.db");
  Module m = diamond();
  RunInfo info;
  info.kind = "gpu";
  info.model = "tiny";
  info.options = "decompose.tile=64";
  info.started_at_ns = 1234;
  info.device = {"NVIDIA H100 80GB HBM3", 132, 1980000, 2619000, 3350000000000, 232448};
  const int64_t id = write_run(path.str(), m, info, diamond_execs());

  TraceReader r(path.str());
  auto runs = r.runs();
  ASSERT_EQ(runs.size(), 1u);
  const RunRecord& run = runs[0];
  EXPECT_EQ(run.id, id);
  EXPECT_EQ(run.kind, "gpu");
  EXPECT_EQ(run.model, "tiny");
  EXPECT_EQ(run.policy, "critical-path");
  EXPECT_EQ(run.options, "decompose.tile=64");
  EXPECT_EQ(run.batch, 1);
  EXPECT_EQ(run.steps, 2);
  EXPECT_EQ(run.started_at_ns, 1234);
  EXPECT_EQ(run.num_workers, 3);
  EXPECT_EQ(run.num_executions, 8);
  EXPECT_EQ(run.duration_ns, 420);
  EXPECT_EQ(run.max_task_ns, 180);
  EXPECT_EQ(run.device.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(run.device.sm_count, 132);
  EXPECT_EQ(run.device.mem_bandwidth, 3350000000000);
  EXPECT_EQ(run.tool_version, tool_version());

  auto execs = r.executions(id);
  ASSERT_EQ(execs.size(), 8u);
  EXPECT_EQ(execs[0].worker, 0);
  EXPECT_EQ(execs[0].task, 0);
  EXPECT_EQ(execs.back().task, 3);
  EXPECT_EQ(execs.back().end_ns, 420);

  auto steps = r.steps(id);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].end_ns, 230);
  EXPECT_EQ(steps[1].start_ns, 230);
  EXPECT_EQ(steps[1].end_ns, 420);

  auto stats = r.operator_stats(id);
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_EQ(stats[1].name, "L0.q_proj");
  EXPECT_EQ(stats[1].kind, "linear");
  EXPECT_EQ(stats[1].executions, 4);
  EXPECT_EQ(stats[1].total_ns, 80 + 180 + 40 + 140);

  // Busy time + bubbles cover every worker's timeline.
  auto bubbles = r.bubbles(id);
  int64_t idle = 0, busy = 0;
  for (const Bubble& b : bubbles) idle += b.end_ns - b.start_ns;
  for (const ExecutionRecord& e : execs) busy += e.end_ns - e.start_ns;
  EXPECT_EQ(idle + busy, 3 * 420);

  auto ops = r.operators(run.graph);
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].name, "L0.input_norm");
  EXPECT_EQ(ops[0].layer, 0);
  auto tasks = r.tasks(run.graph);
  ASSERT_EQ(tasks.size(), 4u);
  EXPECT_EQ(tasks[3].worker, 1);
  EXPECT_EQ(tasks[3].position, 1);
  EXPECT_EQ(tasks[2].bytes, 2000);
  EXPECT_EQ(tasks[0].flops, 10);

  const auto x = r.execution_of(id, 2, 1);
  ASSERT_TRUE(x.has_value());
  EXPECT_EQ(x->worker, 1);
  EXPECT_EQ(x->start_ns, 260);
  EXPECT_EQ(x->end_ns, 400);
  EXPECT_FALSE(r.execution_of(id, 2, 5).has_value());

  auto prods = r.producers_of(run.graph, 3);
  ASSERT_EQ(prods.size(), 2u);
  EXPECT_EQ(prods[0].task, 1);
  EXPECT_EQ(prods[1].task, 2);
  auto cons = r.consumers_of(run.graph, 3);
  ASSERT_EQ(cons.size(), 1u);
  EXPECT_EQ(cons[0].task, 0);
  EXPECT_EQ(cons[0].step_distance, 1);
}

TEST(TraceDb, WindowQueriesPerWorker) {
  TempPath path("window.db");
  const int64_t id = write_run(path.str(), diamond(), RunInfo{}, diamond_execs());
  TraceReader r(path.str());
  // Worker 1: c [20,200) d [200,230) c [260,400) d [400,420).
  auto w = r.executions(id, 1, 150, 270);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0].start_ns, 20);
  EXPECT_EQ(w[1].start_ns, 200);
  EXPECT_EQ(w[2].start_ns, 260);
  EXPECT_TRUE(r.executions(id, 1, 231, 259).empty());
  EXPECT_EQ(r.executions(id, 0, 0, 1000).size(), 4u);
  auto b = r.bubbles(id, 1, 231, 259);
  ASSERT_EQ(b.size(), 1u);  // the gap [230, 260) on worker 1
  EXPECT_EQ(b[0].start_ns, 230);
  EXPECT_EQ(b[0].end_ns, 260);
  EXPECT_EQ(r.bubbles(id, 2, 0, 1000).size(), r.bubbles(id, 2, 0, 1000).size());
  for (const Bubble& x : r.bubbles(id, 2, 0, 1000)) EXPECT_EQ(x.worker, 2);
}

TEST(TraceDb, SeveralRunsShareOneFileAndOneGraph) {
  TempPath path("many.db");
  Module m = diamond();
  TraceWriter w(path.str());
  RunInfo gpu;
  gpu.kind = "gpu";
  const int64_t r1 = w.write_run(m, gpu, diamond_execs());
  RunInfo sim;
  sim.kind = "sim";
  const int64_t r2 = w.write_run(m, sim, simulate(m, testing::unit_costs(), 3));
  Module other = diamond();
  other.graph.schedule.policy = "round-robin";
  other.graph.schedule.workers = {{0, 1, 2, 3}, {}, {}};
  const int64_t r3 = w.write_run(other, sim, simulate(other, testing::unit_costs(), 1));
  TraceReader r(path.str());
  auto runs = r.runs();
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].graph, runs[1].graph);
  EXPECT_NE(runs[0].graph, runs[2].graph);
  EXPECT_EQ(r.run(r2).steps, 3);
  EXPECT_EQ(r.run(r3).policy, "round-robin");
  EXPECT_EQ(r.last_run(), r3);
  EXPECT_EQ(r.executions(r1).size(), 8u);
  EXPECT_EQ(r.executions(r2).size(), 12u);
  EXPECT_THROW(r.run(99), Error);
}

TEST(TraceDb, LoadGraphRebuildsTheScheduledGraph) {
  TempPath path("graph.db");
  Module m = diamond();
  const int64_t id = write_run(path.str(), m, RunInfo{}, diamond_execs());
  TraceReader r(path.str());
  Module g = r.load_graph(id);
  ASSERT_EQ(g.graph.tasks.size(), m.graph.tasks.size());
  ASSERT_EQ(g.graph.events.size(), m.graph.events.size());
  for (size_t e = 0; e < m.graph.events.size(); ++e) {
    EXPECT_EQ(g.graph.events[e].producers, m.graph.events[e].producers);
    EXPECT_EQ(g.graph.events[e].consumers, m.graph.events[e].consumers);
    EXPECT_EQ(g.graph.events[e].step_distance, m.graph.events[e].step_distance);
  }
  EXPECT_EQ(g.graph.schedule.workers, m.graph.schedule.workers);
  EXPECT_EQ(g.graph.tasks[2].bytes, 2000);
  EXPECT_EQ(g.graph.tasks[0].kind, TaskKind::kRmsNorm);
  EXPECT_EQ(g.program.ops[1].name, "L0.q_proj");
  // The simulator gives the same answer on the stored graph as on the original.
  auto a = simulate(m, testing::unit_costs(), 2);
  auto b = simulate(g, testing::unit_costs(), 2);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].end_ns, b[i].end_ns);
}

TEST(TraceDb, TablesAreStrictAndMetaCarriesVersions) {
  TempPath path("meta.db");
  write_run(path.str(), diamond(), RunInfo{}, diamond_execs());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.str().c_str(), &db), SQLITE_OK);
  auto scalar = [&](const char* sql) {
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &s, nullptr), SQLITE_OK) << sql;
    std::string v;
    if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
      v = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    return v;
  };
  EXPECT_EQ(scalar("SELECT value FROM meta WHERE key = 'schema_version'"),
            std::to_string(kTraceSchemaVersion));
  EXPECT_EQ(scalar("SELECT value FROM meta WHERE key = 'created_by'"), tool_version());
  // STRICT: a text time is refused.
  char* err = nullptr;
  EXPECT_NE(sqlite3_exec(db, "INSERT INTO step VALUES(9, 0, 'soon', 1, 1)", nullptr, nullptr, &err),
            SQLITE_OK);
  sqlite3_free(err);
  EXPECT_EQ(scalar("SELECT count(*) FROM dependency"), "5");
  EXPECT_EQ(scalar("SELECT policy FROM run_named"), "critical-path");
  sqlite3_close(db);
}

TEST(TraceDb, RejectsABadRunKind) {
  TempPath path("kind.db");
  RunInfo info;
  info.kind = "tpu";
  EXPECT_THROW(write_run(path.str(), diamond(), info, diamond_execs()), Error);
}

}  // namespace
}  // namespace mpk
