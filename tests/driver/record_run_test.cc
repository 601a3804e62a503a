// Tests of driver/record.h and driver/run_module.h on real trace.db files: a recorded run
// keeps its exact module (the stored bytes are the module's ir/serialize.h binary form,
// and it reads back bit-identically); runs of one module share a graph; a trace of the
// previous schema (1, without stored modules) still opens, its runs rebuild from their
// model saying so, and a writer upgrades it; a damaged stored module is refused with one
// message naming the file, the run and the problem.
#include "driver/record.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "driver/run_module.h"
#include "driver_test_util.h"
#include "ir/error.h"
#include "ir/serialize.h"
#include "tests/traces/aged_trace.h"

namespace mpk {
namespace {

using testing::DriverTest;
using testing::error_of;

int64_t record_sim(const std::string& trace, const Module& m, const RunLabels& labels,
                   int64_t steps = 2) {
  const std::unique_ptr<Executor> sim = make_executor("sim", m, ExecutorOptions{});
  return record_run(trace, m, *sim, sim->run({steps, {1}, true}), labels);
}

// What reading the run's stored module says; reopening the run says the same, in one line.
std::string stored_module_error(const std::string& trace, int64_t run) {
  const std::string what = error_of([&] { TraceReader(trace).stored_module(run); });
  EXPECT_EQ(error_of([&] { load_run_module(trace, run); }), what);
  EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  return what;
}

TEST_F(DriverTest, RecordedRunKeepsItsExactModule) {
  const Compiled c = testing::tiny();
  const std::string trace = path("t.db");
  const int64_t run = record_sim(trace, c.module, {"tiny", "decompose.tile=64", "a note"});
  const TraceReader reader(trace);
  const RunRecord rec = reader.run(run);
  EXPECT_EQ(rec.model, "tiny");
  // The caller's settings, the executor's (the cost model: machine-model, or shipped:FILE
  // once the machine has a shipped calibration), the note.
  EXPECT_EQ(rec.options.rfind("decompose.tile=64 costs=", 0), 0u) << rec.options;
  EXPECT_EQ(rec.options.substr(rec.options.size() - 7), " a note") << rec.options;
  EXPECT_EQ(rec.pipeline, c.pipeline);

  const std::string bytes = module_to_binary(c.module);
  EXPECT_EQ(testing::scalar(trace, "SELECT module FROM graph_module WHERE graph = " +
                                       std::to_string(rec.graph)),
            bytes);  // the stored blob is the module's binary form
  const std::optional<Module> back = reader.stored_module(run);
  ASSERT_TRUE(back);
  EXPECT_EQ(module_to_binary(*back), bytes);
  const RunModule reopened = load_run_module(trace, run);
  EXPECT_EQ(module_to_binary(reopened.module), bytes);
  EXPECT_EQ(reopened.model, "tiny");
  EXPECT_EQ(reopened.note, "");
  EXPECT_EQ(testing::scalar(trace, "SELECT value FROM meta WHERE key = 'schema_version'"), "3");

  // The same module again shares the graph row; another schedule gets its own.
  const int64_t again = record_sim(trace, back.value(), {"tiny", "", ""});
  const int64_t other = record_sim(trace, testing::tiny("round-robin").module, {"tiny", "", ""});
  const TraceReader after(trace);
  EXPECT_EQ(after.run(again).graph, rec.graph);
  EXPECT_NE(after.run(other).graph, rec.graph);
  EXPECT_EQ(after.stored_module(other)->graph.schedule.policy, "round-robin");
}

TEST_F(DriverTest, OldSchemaTraceOpensAndRebuildsSayingSo) {
  // A trace.db written by schema 1 (the fuzz corpus keeps one): it opens, and its run
  // has no stored module.
  const std::string fixture = path("schema1.db");
  std::filesystem::copy_file(std::string(MPK_SOURCE_DIR) + "/fuzz/corpus/trace_db/tiny_sim_2steps.db",
                             fixture);
  {
    const TraceReader reader(fixture);
    ASSERT_EQ(reader.runs().size(), 1u);
    EXPECT_FALSE(reader.stored_module(1));
    EXPECT_FALSE(reader.load_graph(1).graph.tasks.empty());
  }

  // The same file as a schema-1 writer leaves it, made from today's run: the run is rebuilt
  // from its model and recorded pipeline, and the result says how.
  const Compiled c = testing::tiny("locality");
  const std::string trace = path("old.db");
  const int64_t run = record_sim(trace, c.module, {"tiny", "", ""});
  mpk::testing::age_to_schema(trace, 1);
  EXPECT_FALSE(TraceReader(trace).stored_module(run));
  const RunModule rebuilt = load_run_module(trace, run);
  EXPECT_EQ(rebuilt.module.graph.schedule.workers, c.module.graph.schedule.workers);
  EXPECT_EQ(module_to_binary(rebuilt.module), module_to_binary(c.module));
  EXPECT_NE(rebuilt.note.find("re-imported"), std::string::npos) << rebuilt.note;
  EXPECT_NE(rebuilt.note.find(trace), std::string::npos) << rebuilt.note;

  // A writer appends in schema 3: the old run still has no module, the new one has.
  const int64_t next = record_sim(trace, c.module, {"tiny", "", ""});
  EXPECT_EQ(testing::scalar(trace, "SELECT value FROM meta WHERE key = 'schema_version'"), "3");
  const TraceReader upgraded(trace);
  EXPECT_FALSE(upgraded.stored_module(run));
  ASSERT_TRUE(upgraded.stored_module(next));
  EXPECT_EQ(load_run_module(trace, next).note, "");
}

TEST_F(DriverTest, DamagedStoredModuleIsRefusedWithOneMessage) {
  const Compiled c = testing::tiny();
  const std::string trace = path("t.db");
  const int64_t run = record_sim(trace, c.module, {"tiny", "", ""});
  const std::string where = trace + ": run " + std::to_string(run) + ": its stored module";

  const std::string garbage = "\x0a\xff\xff\xff\x7f" + std::string(20, 'x');
  testing::sql(trace, "UPDATE graph_module SET module = ?", &garbage);
  EXPECT_EQ(stored_module_error(trace, run),
            where + ": not a valid mpk module (malformed protobuf, 25 bytes)");

  // Parses, but does not verify: a task writes outside its tensor.
  Module bad = c.module;
  Region& w = bad.graph.tasks.at(0).writes.at(0);
  w.dims.back().hi += 1000000;
  const std::string unverified = module_to_binary(bad);
  testing::sql(trace, "UPDATE graph_module SET module = ?", &unverified);
  const std::string verify_error = stored_module_error(trace, run);
  EXPECT_EQ(verify_error.rfind(where + ": verifier: ", 0), 0u) << verify_error;

  // Verifies, but is another graph than the run's rows.
  const std::string other = module_to_binary(testing::tiny("round-robin").module);
  testing::sql(trace, "UPDATE graph_module SET module = ?", &other);
  EXPECT_EQ(stored_module_error(trace, run), where + " does not match the run's graph rows: another schedule");

  // A table that is not STRICT any more (the file is untrusted) may hold text.
  testing::sql(trace, "DROP TABLE graph_module");
  testing::sql(trace, "CREATE TABLE graph_module(graph INTEGER PRIMARY KEY, module)");
  testing::sql(trace, "INSERT INTO graph_module VALUES(1, 'text')");
  EXPECT_EQ(stored_module_error(trace, run), where + " is text, not a blob");

  // Schema 3 without its table of modules is not a schema-1 file.
  testing::sql(trace, "DROP TABLE graph_module");
  EXPECT_EQ(stored_module_error(trace, run),
            trace + ": corrupt trace.db (schema 3 without its graph_module table)");
}

// mpk run's simulator path: the verifier runs while the run is simulated and stored, and
// the run commits only once it has passed; what the hook throws leaves no run behind.
TEST_F(DriverTest, ARunCommitsOnlyAfterItsModuleIsVerified) {
  CompileRequest req;
  req.model = "tiny";
  CompileInFlight compiling(req);
  EXPECT_EQ(module_to_binary(compiling.compiled().module), module_to_binary(testing::tiny().module));
  const std::unique_ptr<Executor> sim = make_executor("sim", compiling.compiled().module, ExecutorOptions{});
  const ExecResult r = sim->run({2, {1}, true});
  const std::string trace = path("t.db");
  bool waited = false;
  EXPECT_EQ(record_run(trace, compiling.compiled().module, *sim, r, {"tiny", "", ""}, nullptr,
                       [&] { compiling.wait_verified(), waited = true; }),
            1);
  EXPECT_TRUE(waited);
  EXPECT_EQ(testing::error_of([&] {
              record_run(trace, compiling.compiled().module, *sim, r, {"tiny", "", ""}, nullptr,
                         [] { throw Error("the verifier found a problem"); });
            }),
            "the verifier found a problem");
  EXPECT_EQ(TraceReader(trace).runs().size(), 1u);
}

}  // namespace
}  // namespace mpk
