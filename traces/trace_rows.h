// The checked read path of trace.db. A trace.db is untrusted input: every row that
// TraceReader returns (runs, devices, graphs with their operators, tasks, events and event
// ends, executions, bubbles, steps, operator statistics) is decoded here, and each field is
// checked for its type, against the bounds of traces/trace_limits.h and against the run's
// graph (ids in range, a task on its scheduled worker, steps of the run, times inside the
// run) before any analysis sees it. A whole table read also checks the table: ids dense from
// 0, each (task, step) once, counts matching the run row, sums that fit int64. Errors name the
// file, the run or graph, the table's row and the field:
//   "t.db: run 3: execution row 17: task 100000000 is not a task of the run's graph (0..453)"
// The writer reads a new run back through the same checks before it commits it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/module.h"
#include "ir/task_graph_index.h"
#include "traces/run_derive.h"
#include "traces/sqlite_db.h"
#include "traces/trace_db.h"

namespace mpk {

// A stored graph, read back and checked; the runs of the graph share it.
struct CheckedGraph {
  int64_t id = 0;
  Module module;  // operators, tasks, events, schedule; no tensors, regions or machine
  std::vector<SchedulePlace> places;  // of each task
  std::optional<TaskGraphIndex> index;  // of module.graph, once it is read

  CheckedGraph() = default;
  CheckedGraph(const CheckedGraph&) = delete;  // the index points at this module
  CheckedGraph& operator=(const CheckedGraph&) = delete;
};

// What the rows of one run are checked against.
struct CheckedRun {
  RunRecord run;
  std::shared_ptr<const CheckedGraph> graph;
  std::string where;  // "<path>: run <id>", the start of every message about the run
};

// The run rows (all, or the one with id `id` when id >= 0), each with its device, checked;
// `schema`: the file's schema version.
std::vector<RunRecord> read_run_rows(SqliteDb& db, int64_t id = -1, int schema = kTraceSchemaVersion);

// Graph `id` with all its rows, checked: ids dense from 0 in every table, references in
// range, known kinds, each task at one place of one worker's list with no holes, events
// whose target is their number of producers and whose distance is 0 or 1.
std::shared_ptr<const CheckedGraph> read_graph(SqliteDb& db, int64_t id);

// Checks the run row against its graph (worker count; the index sizes that its tasks,
// events and steps imply against its executions).
CheckedRun check_run(SqliteDb& db, const RunRecord& run, std::shared_ptr<const CheckedGraph> graph);

// The run's graph as a Module with the machine model of the run's device.
Module run_module(const CheckedRun& r);

// The module stored with the run's graph (schema 2), parsed, verified and checked against
// the graph's rows; nullopt when the graph has none (written by schema 1, or the file
// is of schema 1 and has no table of modules). Throws
// "<where>: its stored module: <problem>".
std::optional<Module> read_stored_module(SqliteDb& db, const CheckedRun& r);

// Whole tables of one run, with the table checks.
std::vector<ExecutionRecord> read_executions(SqliteDb& db, const CheckedRun& r);
std::vector<Bubble> read_bubbles(SqliteDb& db, const CheckedRun& r);
std::vector<StepRecord> read_steps(SqliteDb& db, const CheckedRun& r);
std::vector<OperatorStat> read_operator_stats(SqliteDb& db, const CheckedRun& r);

// Decoders of one row of a window query; the query's columns are kExecutionColumns or
// kBubbleColumns. `row`: the row's number in the query, for messages.
extern const char* const kExecutionColumns;
extern const char* const kBubbleColumns;
ExecutionRecord execution_row(const SqliteStmt& q, const CheckedRun& r, int64_t row);
Bubble bubble_row(const SqliteStmt& q, const CheckedRun& r, int64_t row);

// Reads run `id` back through the checks above (the writer's last step before it commits
// a run): its run row, graph, steps and operator statistics from the file, and its
// executions and bubbles as they were bound for storing (`stored`: by (worker, start), as
// the file orders them), decoded by the same rules as a stored row, their count checked
// against the file's.
void check_stored_run(SqliteDb& db, int64_t id, const std::vector<Execution>& executions,
                      const std::vector<Bubble>& bubbles);

// ---- the field decoding both files share

// Throws "<where>: <table> row <row>: <problem>" ("<where>: <problem>" without a table).
[[noreturn]] void row_error(const std::string& where, const char* table, int64_t row,
                            const std::string& problem);

// One row being decoded: typed fields, checked; errors start "<where>: <table> row <n>: ".
// `Row` is a query's current row (SqliteStmt) or the values of a row about to be stored
// (the writer checks a new run's executions and bubbles with the reader's rules): anything
// with col_type, col_int, col_null and col_str.
template <class Row>
class BasicRowFields {
 public:
  BasicRowFields(const Row& q, const std::string& where, const char* table, int64_t row)
      : q_(q), where_(where), table_(table), row_(row) {}
  // An integer column in lo..hi.
  int64_t get(int col, const char* field, int64_t lo, int64_t hi) const {
    const int64_t v = integer(col, field);
    if (v < lo || v > hi)
      fail(std::string(field) + " must be in " + std::to_string(lo) + ".." + std::to_string(hi) +
           ", got " + std::to_string(v));
    return v;
  }
  // An id that must name one of `count` things: "FIELD V is not WHAT (0..count-1)".
  int64_t ref(int col, const char* field, int64_t count, const char* what) const {
    const int64_t v = integer(col, field);
    if (v < 0 || v >= count)
      fail(std::string(field) + " " + std::to_string(v) + " is not " + what +
           (count > 0 ? " (0.." + std::to_string(count - 1) + ")" : " (there are none)"));
    return v;
  }
  // ref(), or -1 for NULL.
  int64_t ref_or_null(int col, const char* field, int64_t count, const char* what) const {
    return q_.col_null(col) ? -1 : ref(col, field, count, what);
  }
  std::string text(int col) const { return q_.col_str(col); }
  [[noreturn]] void fail(const std::string& problem) const { row_error(where_, table_, row_, problem); }

 private:
  int64_t integer(int col, const char* field) const {
    switch (q_.col_type(col)) {
      case SQLITE_INTEGER: return q_.col_int(col);
      case SQLITE_NULL: fail(std::string(field) + " is NULL, not an integer");
      case SQLITE_FLOAT: fail(std::string(field) + " is a real number, not an integer");
      default: fail(std::string(field) + " is text or a blob, not an integer");
    }
  }
  const Row& q_;
  const std::string& where_;
  const char* table_;
  int64_t row_;
};
using RowFields = BasicRowFields<SqliteStmt>;

}  // namespace mpk
