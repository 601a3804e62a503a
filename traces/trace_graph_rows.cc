// Reading one stored graph back with every row checked, and its stored module
// (traces/trace_rows.h).
#include "ir/error.h"
#include "ir/serialize.h"
#include "traces/trace_limits.h"
#include "traces/trace_rows.h"

namespace mpk {
namespace {

// Row i of a table read in id order must have id i.
void check_dense(const RowFields& f, int64_t i, int64_t max_rows, const char* what) {
  if (i >= max_rows)
    f.fail("more than " + std::to_string(max_rows) + " " + what + " in one graph");
  const int64_t id = f.get(0, "id", 0, max_rows - 1);
  if (id != i)
    f.fail("id " + std::to_string(id) + " where " + std::to_string(i) + " was expected (" + what +
           " ids must be 0, 1, 2, ... without gaps)");
}

// A text column that joins the string table: NULL when the string row is missing.
std::string name(const SqliteStmt& q, const RowFields& f, int col, const char* field) {
  if (q.col_null(col)) f.fail(std::string(field) + " is not in the string table");
  return f.text(col);
}

void read_graph_row(SqliteDb& db, const std::string& where, Module& m, int64_t id) {
  SqliteStmt q(db,
               "SELECT g.num_workers, g.event_latency_ns, g.task_overhead_ns, n.value, s.value, "
               "pl.value, tv.value, p.value FROM graph g LEFT JOIN string n ON n.id = g.name "
               "LEFT JOIN string s ON s.id = g.source LEFT JOIN string pl ON pl.id = g.pipeline "
               "LEFT JOIN string tv ON tv.id = g.tool_version "
               "LEFT JOIN string p ON p.id = g.policy WHERE g.id = ?");
  q.bind(1, id);
  if (!q.step()) throw Error(where + ": no such graph");
  const RowFields f(q, where, nullptr, -1);
  m.graph.schedule.workers.resize(static_cast<size_t>(f.get(0, "num_workers", 1, kMaxWorkers)));
  m.machine.event_latency_ns = static_cast<double>(f.get(1, "event_latency_ns", 0, static_cast<int64_t>(kMaxCostNs)));
  m.machine.task_overhead_ns = static_cast<double>(f.get(2, "task_overhead_ns", 0, static_cast<int64_t>(kMaxCostNs)));
  m.name = name(q, f, 3, "name");
  m.provenance = {name(q, f, 4, "source"), name(q, f, 5, "pipeline"), name(q, f, 6, "tool_version")};
  m.graph.schedule.policy = name(q, f, 7, "policy");
}

void read_operators(SqliteDb& db, const std::string& where, Module& m, int64_t id) {
  SqliteStmt q(db,
               "SELECT o.id, n.value, k.value, o.layer FROM operator o "
               "LEFT JOIN string n ON n.id = o.name LEFT JOIN string k ON k.id = o.kind "
               "WHERE o.graph = ? ORDER BY o.id");
  q.bind(1, id);
  for (int64_t i = 0; q.step(); ++i) {
    const RowFields f(q, where, "operator", i);
    check_dense(f, i, kMaxOperators, "operator");
    Operator op;
    op.name = name(q, f, 1, "name");
    const std::string kind = name(q, f, 2, "kind");
    const auto k = parse_op_kind(kind);
    if (!k) f.fail("unknown operator kind '" + kind + "'");
    op.kind = *k;
    op.layer = static_cast<int32_t>(f.get(3, "layer", -1, kMaxTraceLayers - 1));
    m.program.ops.push_back(std::move(op));
  }
}

// Tasks, and each one's place in the schedule: every worker's positions are 0..n-1, each
// held by one task.
void read_tasks(SqliteDb& db, const std::string& where, CheckedGraph& g) {
  Module& m = g.module;
  SqliteStmt q(db,
               "SELECT t.id, t.op, k.value, t.worker, t.position, t.bytes, t.flops FROM task t "
               "LEFT JOIN string k ON k.id = t.kind WHERE t.graph = ? ORDER BY t.id");
  q.bind(1, g.id);
  const auto num_ops = static_cast<int64_t>(m.program.ops.size());
  auto& workers = m.graph.schedule.workers;
  const auto num_workers = static_cast<int64_t>(workers.size());
  std::vector<int64_t> list_size(workers.size(), 0);
  for (int64_t i = 0; q.step(); ++i) {
    const RowFields f(q, where, "task", i);
    check_dense(f, i, kMaxTasks, "task");
    Task t;
    t.op = static_cast<OpId>(f.ref(1, "op", num_ops, "an operator of the graph"));
    const std::string kind = name(q, f, 2, "kind");
    const auto k = parse_task_kind(kind);
    if (!k) f.fail("unknown task kind '" + kind + "'");
    t.kind = *k;
    SchedulePlace p;
    p.worker = static_cast<int32_t>(f.ref(3, "worker", num_workers, "a worker of the graph's schedule"));
    p.position = static_cast<int32_t>(f.get(4, "position", 0, kMaxTasks - 1));
    t.bytes = f.get(5, "bytes", 0, kMaxTaskBytes);
    t.flops = f.get(6, "flops", 0, kMaxTaskFlops);
    m.graph.tasks.push_back(std::move(t));
    g.places.push_back(p);
    list_size[static_cast<size_t>(p.worker)]++;
  }
  for (size_t w = 0; w < workers.size(); ++w) workers[w].assign(static_cast<size_t>(list_size[w]), -1);
  for (size_t i = 0; i < g.places.size(); ++i) {
    const SchedulePlace& p = g.places[i];
    auto& list = workers[static_cast<size_t>(p.worker)];
    const std::string at = "worker " + std::to_string(p.worker) + " position " + std::to_string(p.position);
    if (static_cast<size_t>(p.position) >= list.size())
      row_error(where, "task", static_cast<int64_t>(i),
                at + " is past the end of the worker's list (" + std::to_string(list.size()) + " tasks)");
    TaskId& slot = list[static_cast<size_t>(p.position)];
    if (slot >= 0)
      row_error(where, "task", static_cast<int64_t>(i), at + " also holds task " + std::to_string(slot));
    slot = static_cast<TaskId>(i);
  }
}

void read_events(SqliteDb& db, const std::string& where, Module& m, int64_t id) {
  SqliteStmt q(db, "SELECT id, target, step_distance FROM event WHERE graph = ? ORDER BY id");
  q.bind(1, id);
  for (int64_t i = 0; q.step(); ++i) {
    const RowFields f(q, where, "event", i);
    check_dense(f, i, kMaxEvents, "event");
    Event e;
    e.target = f.get(1, "target", 0, kMaxTasks);
    e.step_distance = static_cast<int32_t>(f.get(2, "step_distance", 0, 1));
    m.graph.events.push_back(std::move(e));
  }
  const auto num_events = static_cast<int64_t>(m.graph.events.size());
  const auto num_tasks = static_cast<int64_t>(m.graph.tasks.size());
  for (const bool producers : {true, false}) {
    const char* table = producers ? "event_producer" : "event_consumer";
    SqliteStmt ends(db, (std::string("SELECT event, task FROM ") + table +
                         " WHERE graph = ? ORDER BY event, task").c_str());
    ends.bind(1, id);
    int64_t last_event = -1, last_task = -1;
    for (int64_t i = 0; ends.step(); ++i) {
      const RowFields f(ends, where, table, i);
      const int64_t e = f.ref(0, "event", num_events, "an event of the graph");
      const int64_t t = f.ref(1, "task", num_tasks, "a task of the graph");
      if (e == last_event && t == last_task) f.fail("task " + std::to_string(t) + " is listed twice");
      last_event = e, last_task = t;
      Event& ev = m.graph.events[static_cast<size_t>(e)];
      (producers ? ev.producers : ev.consumers).push_back(static_cast<TaskId>(t));
    }
  }
  for (size_t e = 0; e < m.graph.events.size(); ++e) {
    const Event& ev = m.graph.events[e];
    if (ev.target != static_cast<int64_t>(ev.producers.size()))
      row_error(where, "event", static_cast<int64_t>(e),
                "target " + std::to_string(ev.target) + " is not its number of producers (" +
                    std::to_string(ev.producers.size()) + ")");
  }
}

}  // namespace

std::shared_ptr<const CheckedGraph> read_graph(SqliteDb& db, int64_t id) {
  auto g = std::make_shared<CheckedGraph>();
  g->id = id;
  const std::string where = db.path() + ": graph " + std::to_string(id);
  read_graph_row(db, where, g->module, id);
  read_operators(db, where, g->module, id);
  read_tasks(db, where, *g);
  read_events(db, where, g->module, id);
  g->index.emplace(g->module.graph);
  return g;
}

std::optional<Module> read_stored_module(SqliteDb& db, const CheckedRun& r) {
  {  // schema 1 has no table of modules (a writer may have added it since the file was opened)
    SqliteStmt t(db, "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'graph_module'");
    if (!t.step()) {
      SqliteStmt v(db, "SELECT value FROM meta WHERE key = 'schema_version'");
      if (v.step() && v.col_str(0) != "1")
        throw Error(db.path() + ": corrupt trace.db (schema " + v.col_str(0) + " without its graph_module table)");
      return std::nullopt;
    }
  }
  SqliteStmt q(db, "SELECT typeof(module), length(module) FROM graph_module WHERE graph = ?");
  q.bind(1, r.run.graph);
  if (!q.step()) return std::nullopt;
  const std::string what = r.where + ": its stored module";
  if (q.col_str(0) != "blob") throw Error(what + " is " + q.col_str(0) + ", not a blob");
  if (q.col_int(1) > kMaxModuleBytes)
    throw Error(what + " is " + std::to_string(q.col_int(1)) + " bytes, more than a module may be (" +
                std::to_string(kMaxModuleBytes) + ")");
  SqliteStmt b(db, "SELECT module FROM graph_module WHERE graph = ?");
  b.bind(1, r.run.graph);
  if (!b.step()) throw Error(what + " is gone");
  Module m = module_from_binary(b.col_blob(0), what);  // parses and verifies
  const TaskGraph& rows = r.graph->module.graph;
  const auto mismatch = [&](const std::string& part, size_t stored, size_t in_rows) {
    throw Error(what + " does not match the run's graph rows: " + std::to_string(stored) + " " + part +
                ", the rows hold " + std::to_string(in_rows));
  };
  if (m.graph.tasks.size() != rows.tasks.size()) mismatch("tasks", m.graph.tasks.size(), rows.tasks.size());
  if (m.graph.events.size() != rows.events.size())
    mismatch("events", m.graph.events.size(), rows.events.size());
  if (m.program.ops.size() != r.graph->module.program.ops.size())
    mismatch("operators", m.program.ops.size(), r.graph->module.program.ops.size());
  if (m.graph.schedule.workers != rows.schedule.workers)
    throw Error(what + " does not match the run's graph rows: another schedule");
  return m;
}

}  // namespace mpk
