// TraceReader: the query side of trace.db shared by the CLI and the studio.
#include <unistd.h>

#include <map>

#include "ir/error.h"
#include "traces/sqlite_db.h"
#include "traces/trace_db.h"
#include "traces/trace_rows.h"
#include "traces/trace_schema.h"

namespace mpk {
namespace {

// Opened read-write when the file allows it, so that SQLite can roll back a write
// that a crashed writer left behind; nothing is ever written.
SqliteDb open_for_reading(const std::string& path) {
  check_trace_file(path, false);
  return SqliteDb(path, ::access(path.c_str(), W_OK) != 0, false);
}

}  // namespace

// Graphs and runs are checked once, when first used (runs are never changed once written).
struct TraceReader::Impl {
  explicit Impl(const std::string& p) : path(p), db(open_for_reading(p)), schema(prepare_trace_db(db, false)) {}
  std::string path;
  SqliteDb db;
  int schema;
  std::map<int64_t, std::shared_ptr<const CheckedGraph>> graphs;
  std::map<int64_t, CheckedRun> runs;

  const std::shared_ptr<const CheckedGraph>& graph(int64_t id) {
    auto it = graphs.find(id);
    if (it == graphs.end()) it = graphs.emplace(id, read_graph(db, id)).first;
    return it->second;
  }

  const CheckedRun& run(int64_t id) {
    auto it = runs.find(id);
    if (it != runs.end()) return it->second;
    const std::vector<RunRecord> rows = read_run_rows(db, id, schema);
    if (rows.empty()) {
      std::string known;
      for (const RunRecord& r : read_run_rows(db, -1, schema)) known += (known.empty() ? "" : ", ") + std::to_string(r.id);
      throw Error(path + ": no run " + std::to_string(id) +
                  (known.empty() ? " (the file holds no runs)" : " (runs: " + known + ")"));
    }
    return runs.emplace(id, check_run(db, rows[0], graph(rows[0].graph))).first->second;
  }
};

TraceReader::TraceReader(const std::string& db_path)
    : impl_(std::make_unique<Impl>(db_path)) {}
TraceReader::~TraceReader() = default;

const std::string& TraceReader::path() const { return impl_->path; }

std::vector<RunRecord> TraceReader::runs() const { return read_run_rows(impl_->db, -1, impl_->schema); }

RunRecord TraceReader::run(int64_t id) const { return impl_->run(id).run; }

int64_t TraceReader::last_run() const {
  SqliteStmt q(impl_->db, "SELECT max(id) FROM run");
  if (!q.step() || q.col_null(0)) throw Error(impl_->path + ": the file holds no runs");
  return q.col_int(0);
}

std::vector<RunRecord> TraceReader::rank_runs(int64_t id) const {
  const RunRecord first = run(id);
  if (first.ranks == 1) return {first};
  const int64_t rank0 = first.rank == 0 ? first.id : first.rank0_run;
  std::vector<RunRecord> out{run(rank0)};
  SqliteStmt q(impl_->db, "SELECT id FROM run WHERE rank0_run = ? ORDER BY rank");
  q.bind(1, rank0);
  std::vector<int64_t> ids;
  while (q.step()) ids.push_back(q.col_int(0));
  for (int64_t i : ids) out.push_back(run(i));
  const std::string where = impl_->path + ": the ranks of run " + std::to_string(rank0);
  for (size_t r = 0; r < out.size(); ++r) {
    const RunRecord& x = out[r];
    if (x.rank != static_cast<int32_t>(r))
      throw Error(where + ": rank " + std::to_string(r) + " is " +
                  (x.rank < static_cast<int32_t>(r) ? "stored twice" : "missing"));
    if (x.ranks != first.ranks || x.graph != out[0].graph)
      throw Error(where + ": run " + std::to_string(x.id) + " has another " +
                  (x.graph != out[0].graph ? "graph" : "rank count"));
  }
  if (static_cast<int32_t>(out.size()) != first.ranks)
    throw Error(where + ": " + std::to_string(out.size()) + " of its " + std::to_string(first.ranks) +
                " ranks are stored");
  return out;
}

std::vector<ExecutionRecord> TraceReader::executions(int64_t run) const {
  return read_executions(impl_->db, impl_->run(run));
}

std::vector<ExecutionRecord> TraceReader::executions(int64_t run, int32_t worker, int64_t t0,
                                                     int64_t t1) const {
  const CheckedRun& r = impl_->run(run);
  // An execution overlapping [t0, t1) started at or after t0 - max_task_ns, which
  // keeps the scan on the (run, worker, start_ns) key short.
  SqliteStmt q(impl_->db,
               (std::string(kExecutionColumns) +
                "WHERE run = ? AND worker = ? AND start_ns >= ? AND start_ns < ? AND end_ns > ? "
                "ORDER BY start_ns")
                   .c_str());
  q.bind(1, run).bind(2, int64_t{worker}).bind(3, t0 - r.run.max_task_ns).bind(4, t1).bind(5, t0);
  std::vector<ExecutionRecord> out;
  for (int64_t row = 0; q.step(); ++row) out.push_back(execution_row(q, r, row));
  return out;
}

std::optional<ExecutionRecord> TraceReader::execution_of(int64_t run, TaskId task,
                                                         int32_t step) const {
  const CheckedRun& r = impl_->run(run);
  if (task < 0 || static_cast<size_t>(task) >= r.graph->places.size()) return std::nullopt;
  // One scan of the task's worker's rows.
  SqliteStmt q(impl_->db, (std::string(kExecutionColumns) +
                           "WHERE run = ? AND worker = ? AND task = ? AND step = ?").c_str());
  q.bind(1, run).bind(2, int64_t{r.graph->places[static_cast<size_t>(task)].worker})
      .bind(3, int64_t{task}).bind(4, int64_t{step});
  if (!q.step()) return std::nullopt;
  return execution_row(q, r, 0);
}

std::vector<Bubble> TraceReader::bubbles(int64_t run) const {
  return read_bubbles(impl_->db, impl_->run(run));
}

std::vector<Bubble> TraceReader::bubbles(int64_t run, int32_t worker, int64_t t0,
                                         int64_t t1) const {
  const CheckedRun& r = impl_->run(run);
  // Bubbles of one worker do not overlap, so the one starting before t0 is the only
  // earlier one that can reach into the window.
  SqliteStmt q(impl_->db,
               (std::string(kBubbleColumns) +
                "WHERE run = ?1 AND worker = ?2 AND start_ns < ?4 AND start_ns >= "
                "coalesce((SELECT max(start_ns) FROM bubble WHERE run = ?1 AND worker = ?2 "
                "AND start_ns <= ?3), ?3) AND end_ns > ?3 ORDER BY start_ns")
                   .c_str());
  q.bind(1, run).bind(2, int64_t{worker}).bind(3, t0).bind(4, t1);
  std::vector<Bubble> out;
  for (int64_t row = 0; q.step(); ++row) out.push_back(bubble_row(q, r, row));
  return out;
}

std::vector<StepRecord> TraceReader::steps(int64_t run) const {
  return read_steps(impl_->db, impl_->run(run));
}

std::vector<OperatorStat> TraceReader::operator_stats(int64_t run) const {
  return read_operator_stats(impl_->db, impl_->run(run));
}

std::vector<OperatorRecord> TraceReader::operators(int64_t graph) const {
  const std::vector<Operator>& ops = impl_->graph(graph)->module.program.ops;
  std::vector<OperatorRecord> out;
  for (size_t i = 0; i < ops.size(); ++i)
    out.push_back({static_cast<OpId>(i), ops[i].name, std::string(name_of(ops[i].kind)), ops[i].layer});
  return out;
}

std::vector<TaskRecord> TraceReader::tasks(int64_t graph) const {
  const CheckedGraph& g = *impl_->graph(graph);
  std::vector<TaskRecord> out;
  for (size_t i = 0; i < g.module.graph.tasks.size(); ++i) {
    const Task& t = g.module.graph.tasks[i];
    out.push_back({static_cast<TaskId>(i), t.op, std::string(name_of(t.kind)), g.places[i].worker,
                   g.places[i].position, t.bytes, t.flops});
  }
  return out;
}

namespace {

// The tasks across the events of `task`: its producers (through the events it waits on)
// or its consumers (through the events it triggers), by event, then task.
std::vector<DependencyRecord> linked_tasks(const TaskGraphIndex& g, TaskId task, bool producers) {
  std::vector<DependencyRecord> out;
  if (!g.valid_task(task)) return out;
  for (EventId e : producers ? g.waits(task) : g.triggers(task))
    for (TaskId other : producers ? g.producers(e) : g.consumers(e))
      out.push_back({e, g.distance(e), other});
  return out;
}

}  // namespace

std::vector<DependencyRecord> TraceReader::producers_of(int64_t graph, TaskId task) const {
  return linked_tasks(*impl_->graph(graph)->index, task, true);
}

std::vector<DependencyRecord> TraceReader::consumers_of(int64_t graph, TaskId task) const {
  return linked_tasks(*impl_->graph(graph)->index, task, false);
}

Module TraceReader::load_graph(int64_t run) const { return run_module(impl_->run(run)); }

std::optional<Module> TraceReader::stored_module(int64_t run) const {
  return read_stored_module(impl_->db, impl_->run(run));
}

}  // namespace mpk
