// The checked read path (traces/trace_rows.h): a stored run whose rows are edited one at a
// time, each edit refused by the reader with the table, the row and the field, before any
// analysis sees it; and the limits that keep memory proportional to the file.
#include "traces/trace_rows.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <functional>

#include "ir/error.h"
#include "tests/traces/test_graphs.h"
#include "traces/analysis.h"
#include "traces/simulator.h"

namespace mpk {
namespace {

using testing::GraphBuilder;
using testing::TempPath;

// norm (w0) -> q0 (w0), q1 (w1) -> residual (w1), three steps; the residual feeds the next
// step's norm. Tasks 0..3, events 0..2, operators 0..1.
int64_t store(const std::string& path) {
  GraphBuilder g(2);
  const OpId norm = g.op("L0.norm", OpKind::kRmsNorm, 0), lin = g.op("L0.q", OpKind::kLinear, 0);
  const TaskId n = g.task(norm, 100, TaskKind::kRmsNorm), q0 = g.task(lin, 200), q1 = g.task(lin, 300);
  const TaskId r = g.task(norm, 100, TaskKind::kRmsNorm);
  g.event({n}, {q0, q1});
  g.event({q0, q1}, {r});
  g.event({r}, {n}, 1);
  const Module m = g.schedule({{n, q0}, {q1, r}});
  return write_run(path, m, RunInfo{}, simulate(m, testing::unit_costs(), 3));
}

void exec_sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "") << sql;
  sqlite3_free(err);
  sqlite3_close(db);
}

// Every read a user's command makes of the run: its tables, its graph and the statistics.
void read_everything(const std::string& path, int64_t run) {
  const TraceReader r(path);
  r.runs();
  r.load_graph(run);
  r.executions(run);
  r.bubbles(run);
  r.steps(run);
  r.operator_stats(run);
  compute_stats(r, run);
}

struct Edit {
  const char* sql;
  const char* message;  // after "<path>: "
};

class TraceRows : public ::testing::TestWithParam<Edit> {};

TEST_P(TraceRows, AnEditedRowIsRefusedNamingTableRowAndField) {
  TempPath path("rows_edit.db");
  const int64_t run = store(path.str());
  ASSERT_NO_THROW(read_everything(path.str(), run));
  exec_sql(path.str(), GetParam().sql);
  try {
    read_everything(path.str(), run);
    FAIL() << "accepted: " << GetParam().sql;
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), path.str() + ": " + GetParam().message);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Tables, TraceRows,
    ::testing::Values(
        Edit{"UPDATE execution SET task = 100000000 WHERE task = 0 AND step = 0",
             "run 1: execution row 0: task 100000000 is not a task of the run's graph (0..3)"},
        Edit{"UPDATE execution SET step = 100000 WHERE task = 0 AND step = 0",
             "run 1: execution row 0: step 100000 is not a step of the run (0..2)"},
        Edit{"UPDATE execution SET worker = 1 WHERE task = 0 AND step = 0",
             "run 1: execution row 5: worker 1: the run's schedule puts task 0 on worker 0"},
        Edit{"UPDATE execution SET step = 1 WHERE task = 0 AND step = 0",
             "run 1: execution row 2: task 0 at step 1 is recorded twice"},
        Edit{"UPDATE execution SET wait_begin_ns = -1 WHERE task = 0 AND step = 0",
             "run 1: execution row 0: wait_begin_ns must be in 0..1500, got -1"},
        Edit{"DELETE FROM execution WHERE task = 3 AND step = 2",
             "run 1: the run row says 12 executions, the execution table holds 11"},
        Edit{"UPDATE bubble SET producer = 9 WHERE producer IS NOT NULL",
             "run 1: bubble row 6: producer 9 is not a task of the run's graph (0..3)"},
        Edit{"INSERT INTO bubble SELECT run, worker, start_ns + 1, end_ns, cause, step, task, event, "
             "producer, producer_worker FROM bubble WHERE worker = 1 AND end_ns - start_ns > 1 LIMIT 1",
             "run 1: bubble row 7: overlaps the bubble before it on worker 1"},
        Edit{"UPDATE step SET step = 7 WHERE step = 1",
             "run 1: step row 1: step 2 where 1 was expected (the run's steps are 0, 1, 2, ... without gaps)"},
        Edit{"UPDATE operator_stat SET total_ns = 9223372036854775807",
             "run 1: the summed operator total_ns overflows int64 (9223372036854775807 + 9223372036854775807)"},
        Edit{"UPDATE operator_stat SET op = 5 WHERE op = 1",
             "run 1: operator_stat row 1: op 5 is not an operator of the run's graph (0..1)"},
        Edit{"UPDATE run SET num_workers = 3", "run 1: num_workers 3 but its graph 1 has 2"},
        Edit{"UPDATE run SET batch = 0", "run 1: batch must be in 1..65536, got 0"},
        Edit{"UPDATE device SET sm_count = 2147483647", "run 1: device sm_count must be in 1..4096, got 2147483647"},
        Edit{"UPDATE graph SET num_workers = 2147483648", "graph 1: num_workers must be in 1..4096, got 2147483648"},
        Edit{"UPDATE task SET id = 100000 WHERE id = 3",
             "graph 1: task row 3: id 100000 where 3 was expected (task ids must be 0, 1, 2, ... without gaps)"},
        Edit{"UPDATE task SET position = 1 WHERE id = 0",
             "graph 1: task row 1: worker 0 position 1 also holds task 0"},
        Edit{"UPDATE task SET position = 2147483647 WHERE id = 0",
             "graph 1: task row 0: position must be in 0..16777215, got 2147483647"},
        Edit{"UPDATE task SET position = 5 WHERE id = 0",
             "graph 1: task row 0: worker 0 position 5 is past the end of the worker's list (2 tasks)"},
        Edit{"UPDATE task SET op = -1 WHERE id = 2",
             "graph 1: task row 2: op -1 is not an operator of the graph (0..1)"},
        Edit{"UPDATE task SET bytes = -5 WHERE id = 2", "graph 1: task row 2: bytes must be in 0..17592186044416, got -5"},
        Edit{"DELETE FROM string WHERE value = 'rms_norm'", "graph 1: operator row 0: kind is not in the string table"},
        Edit{"UPDATE event SET step_distance = 7 WHERE id = 2",
             "graph 1: event row 2: step_distance must be in 0..1, got 7"},
        Edit{"UPDATE event SET target = 5 WHERE id = 0",
             "graph 1: event row 0: target 5 is not its number of producers (1)"},
        Edit{"UPDATE event_producer SET event = 99 WHERE event = 0",
             "graph 1: event_producer row 3: event 99 is not an event of the graph (0..2)"},
        Edit{"ALTER TABLE step RENAME TO step_old; CREATE TABLE step(run, step, start_ns, end_ns, busy_ns); "
             "INSERT INTO step SELECT * FROM step_old; UPDATE step SET start_ns = 1.5 WHERE step = 1",
             "run 1: step row 1: start_ns is a real number, not an integer"}));

TEST(TraceRowsLimits, StepsOutOfProportionToTheExecutionsAreNotAllocated) {
  // 2000 tasks run once; the run row and 10000 step rows then claim 10000 steps: a
  // (task, step) index of 20 M slots for 2000 executions, refused before it is built.
  TempPath path("rows_steps.db");
  GraphBuilder g(2);
  const OpId op = g.op("x");
  std::vector<std::vector<TaskId>> workers(2);
  for (int i = 0; i < 2000; ++i) workers[static_cast<size_t>(i % 2)].push_back(g.task(op, 1));
  const Module m = g.schedule(workers);
  const int64_t run = write_run(path.str(), m, RunInfo{}, simulate(m, testing::unit_costs(), 1));
  exec_sql(path.str(),
           "WITH RECURSIVE k(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM k WHERE n < 9999) "
           "INSERT INTO step(run, step, start_ns, end_ns, busy_ns) SELECT 1, n, 1000, 1000, 0 FROM k; "
           "UPDATE run SET steps = 10000");
  const TraceReader r(path.str());
  try {
    r.executions(run);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), path.str() + ": run 1: 10000 steps of a graph of 2000 tasks and 0 events "
                                     "are out of proportion to its 2000 executions (20000000 index slots, at "
                                     "most 16785216)");
  }
}

TEST(TraceRowsLimits, TheWriterRefusesWhatTheReaderWouldRefuse) {
  TempPath path("rows_writer.db");
  GraphBuilder g(8192);
  const TaskId t = g.task(g.op("x"), 10);
  std::vector<std::vector<TaskId>> workers(5000);
  workers[0] = {t};
  const Module m = g.schedule(workers);
  try {
    write_run(path.str(), m, RunInfo{}, {});
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "trace: module 'hand-built': machine model: sm_count must be in 1..4096, got 8192");
  }
}

}  // namespace
}  // namespace mpk
