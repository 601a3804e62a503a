// TraceReader: the query side of trace.db shared by the CLI and the studio.
#include <unistd.h>

#include <map>

#include "ir/error.h"
#include "traces/sqlite_db.h"
#include "traces/trace_db.h"
#include "traces/trace_schema.h"

namespace mpk {
namespace {

// Opened read-write when the file allows it, so that SQLite can roll back a write
// that a crashed writer left behind; nothing is ever written.
SqliteDb open_for_reading(const std::string& path) {
  check_trace_file(path, false);
  return SqliteDb(path, ::access(path.c_str(), W_OK) != 0, false);
}

const char* kRunQuery =
    "SELECT r.id, r.kind, m.value, p.value, r.policy_params, pl.value, r.options, tv.value, "
    "r.batch, r.steps, r.started_at_ns, r.graph, r.num_workers, r.num_executions, "
    "r.duration_ns, r.max_task_ns, dn.value, d.sm_count, d.clock_khz, d.mem_clock_khz, "
    "d.mem_bandwidth, d.smem_per_sm "
    "FROM run r JOIN string m ON m.id = r.model JOIN string p ON p.id = r.policy "
    "JOIN graph g ON g.id = r.graph JOIN string pl ON pl.id = g.pipeline "
    "JOIN string tv ON tv.id = r.tool_version JOIN device d ON d.id = r.device "
    "JOIN string dn ON dn.id = d.name ";

RunRecord run_from_row(const SqliteStmt& q) {
  RunRecord r;
  r.id = q.col_int(0);
  r.kind = q.col_str(1);
  r.model = q.col_str(2);
  r.policy = q.col_str(3);
  r.policy_params = q.col_str(4);
  r.pipeline = q.col_str(5);
  r.options = q.col_str(6);
  r.tool_version = q.col_str(7);
  r.batch = q.col_int(8);
  r.steps = q.col_int(9);
  r.started_at_ns = q.col_int(10);
  r.graph = q.col_int(11);
  r.num_workers = static_cast<int32_t>(q.col_int(12));
  r.num_executions = q.col_int(13);
  r.duration_ns = q.col_int(14);
  r.max_task_ns = q.col_int(15);
  r.device.name = q.col_str(16);
  r.device.sm_count = static_cast<int32_t>(q.col_int(17));
  r.device.clock_khz = q.col_int(18);
  r.device.mem_clock_khz = q.col_int(19);
  r.device.mem_bandwidth = q.col_int(20);
  r.device.smem_per_sm = q.col_int(21);
  return r;
}

ExecutionRecord execution_from_row(const SqliteStmt& q) {
  ExecutionRecord e;
  e.worker = static_cast<int32_t>(q.col_int(0));
  e.start_ns = q.col_int(1);
  e.task = static_cast<TaskId>(q.col_int(2));
  e.step = static_cast<int32_t>(q.col_int(3));
  e.sm = static_cast<int32_t>(q.col_int(4));
  e.wait_begin_ns = q.col_int(5);
  e.end_ns = q.col_int(6);
  return e;
}

BubbleCause parse_cause(const std::string& s) {
  if (s == "wait") return BubbleCause::kWait;
  if (s == "queue_empty") return BubbleCause::kQueueEmpty;
  if (s == "step_tail") return BubbleCause::kStepTail;
  return BubbleCause::kOverhead;
}

Bubble bubble_from_row(const SqliteStmt& q) {
  Bubble b;
  b.worker = static_cast<int32_t>(q.col_int(0));
  b.start_ns = q.col_int(1);
  b.end_ns = q.col_int(2);
  b.cause = parse_cause(q.col_str(3));
  b.step = static_cast<int32_t>(q.col_int(4));
  b.task = q.col_null(5) ? -1 : static_cast<TaskId>(q.col_int(5));
  b.event = q.col_null(6) ? -1 : static_cast<EventId>(q.col_int(6));
  b.producer = q.col_null(7) ? -1 : static_cast<TaskId>(q.col_int(7));
  b.producer_worker = q.col_null(8) ? -1 : static_cast<int32_t>(q.col_int(8));
  return b;
}

const char* kExecCols = "SELECT worker, start_ns, task, step, sm, wait_begin_ns, end_ns FROM execution ";
const char* kBubbleCols =
    "SELECT worker, start_ns, end_ns, cause, step, task, event, producer, producer_worker "
    "FROM bubble ";

}  // namespace

struct TraceReader::Impl {
  explicit Impl(const std::string& p) : path(p), db(open_for_reading(p)) {
    prepare_trace_db(db, false);
  }
  std::string path;
  SqliteDb db;
};

TraceReader::TraceReader(const std::string& db_path)
    : impl_(std::make_unique<Impl>(db_path)) {}
TraceReader::~TraceReader() = default;

const std::string& TraceReader::path() const { return impl_->path; }

std::vector<RunRecord> TraceReader::runs() const {
  SqliteStmt q(impl_->db, (std::string(kRunQuery) + "ORDER BY r.id").c_str());
  std::vector<RunRecord> out;
  while (q.step()) out.push_back(run_from_row(q));
  return out;
}

RunRecord TraceReader::run(int64_t id) const {
  SqliteStmt q(impl_->db, (std::string(kRunQuery) + "WHERE r.id = ?").c_str());
  q.bind(1, id);
  if (!q.step()) {
    std::string known;
    for (const RunRecord& r : runs()) known += (known.empty() ? "" : ", ") + std::to_string(r.id);
    throw Error(impl_->path + ": no run " + std::to_string(id) +
                (known.empty() ? " (the file holds no runs)" : " (runs: " + known + ")"));
  }
  return run_from_row(q);
}

int64_t TraceReader::last_run() const {
  SqliteStmt q(impl_->db, "SELECT max(id) FROM run");
  if (!q.step() || q.col_null(0)) throw Error(impl_->path + ": the file holds no runs");
  return q.col_int(0);
}

std::vector<ExecutionRecord> TraceReader::executions(int64_t run) const {
  SqliteStmt q(impl_->db, (std::string(kExecCols) + "WHERE run = ? ORDER BY worker, start_ns").c_str());
  q.bind(1, run);
  std::vector<ExecutionRecord> out;
  while (q.step()) out.push_back(execution_from_row(q));
  return out;
}

std::vector<ExecutionRecord> TraceReader::executions(int64_t run, int32_t worker, int64_t t0,
                                                     int64_t t1) const {
  // An execution overlapping [t0, t1) started at or after t0 - max_task_ns, which
  // keeps the scan on the (run, worker, start_ns) key short.
  int64_t max_task = 0;
  {
    SqliteStmt m(impl_->db, "SELECT max_task_ns FROM run WHERE id = ?");
    m.bind(1, run);
    if (m.step()) max_task = m.col_int(0);
  }
  SqliteStmt q(impl_->db,
               (std::string(kExecCols) +
                "WHERE run = ? AND worker = ? AND start_ns >= ? AND start_ns < ? AND end_ns > ? "
                "ORDER BY start_ns")
                   .c_str());
  q.bind(1, run).bind(2, int64_t{worker}).bind(3, t0 - max_task).bind(4, t1).bind(5, t0);
  std::vector<ExecutionRecord> out;
  while (q.step()) out.push_back(execution_from_row(q));
  return out;
}

std::optional<ExecutionRecord> TraceReader::execution_of(int64_t run, TaskId task,
                                                         int32_t step) const {
  // The task's worker comes from its graph; then one scan of that worker's rows.
  SqliteStmt q(impl_->db,
               (std::string(kExecCols) +
                "WHERE run = ?1 AND worker = (SELECT t.worker FROM task t JOIN run r ON "
                "r.graph = t.graph WHERE r.id = ?1 AND t.id = ?2) AND task = ?2 AND step = ?3")
                   .c_str());
  q.bind(1, run).bind(2, int64_t{task}).bind(3, int64_t{step});
  if (!q.step()) return std::nullopt;
  return execution_from_row(q);
}

std::vector<Bubble> TraceReader::bubbles(int64_t run) const {
  SqliteStmt q(impl_->db, (std::string(kBubbleCols) + "WHERE run = ? ORDER BY worker, start_ns").c_str());
  q.bind(1, run);
  std::vector<Bubble> out;
  while (q.step()) out.push_back(bubble_from_row(q));
  return out;
}

std::vector<Bubble> TraceReader::bubbles(int64_t run, int32_t worker, int64_t t0,
                                         int64_t t1) const {
  // Bubbles of one worker do not overlap, so the one starting before t0 is the only
  // earlier one that can reach into the window.
  SqliteStmt q(impl_->db,
               (std::string(kBubbleCols) +
                "WHERE run = ?1 AND worker = ?2 AND start_ns < ?4 AND start_ns >= "
                "coalesce((SELECT max(start_ns) FROM bubble WHERE run = ?1 AND worker = ?2 "
                "AND start_ns <= ?3), ?3) AND end_ns > ?3 ORDER BY start_ns")
                   .c_str());
  q.bind(1, run).bind(2, int64_t{worker}).bind(3, t0).bind(4, t1);
  std::vector<Bubble> out;
  while (q.step()) out.push_back(bubble_from_row(q));
  return out;
}

std::vector<StepRecord> TraceReader::steps(int64_t run) const {
  SqliteStmt q(impl_->db,
               "SELECT step, start_ns, end_ns, busy_ns FROM step WHERE run = ? ORDER BY step");
  q.bind(1, run);
  std::vector<StepRecord> out;
  while (q.step())
    out.push_back({static_cast<int32_t>(q.col_int(0)), q.col_int(1), q.col_int(2), q.col_int(3)});
  return out;
}

std::vector<OperatorStat> TraceReader::operator_stats(int64_t run) const {
  SqliteStmt q(impl_->db,
               "SELECT op, name, kind, layer, executions, total_ns, max_ns, wait_ns "
               "FROM operator_stat_named WHERE run = ? ORDER BY op");
  q.bind(1, run);
  std::vector<OperatorStat> out;
  while (q.step()) {
    OperatorStat s;
    s.op = static_cast<OpId>(q.col_int(0));
    s.name = q.col_str(1);
    s.kind = q.col_str(2);
    s.layer = static_cast<int32_t>(q.col_int(3));
    s.executions = q.col_int(4);
    s.total_ns = q.col_int(5);
    s.max_ns = q.col_int(6);
    s.wait_ns = q.col_int(7);
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<OperatorRecord> TraceReader::operators(int64_t graph) const {
  SqliteStmt q(impl_->db,
               "SELECT o.id, n.value, k.value, o.layer FROM operator o "
               "JOIN string n ON n.id = o.name JOIN string k ON k.id = o.kind "
               "WHERE o.graph = ? ORDER BY o.id");
  q.bind(1, graph);
  std::vector<OperatorRecord> out;
  while (q.step())
    out.push_back({static_cast<OpId>(q.col_int(0)), q.col_str(1), q.col_str(2),
                   static_cast<int32_t>(q.col_int(3))});
  return out;
}

std::vector<TaskRecord> TraceReader::tasks(int64_t graph) const {
  SqliteStmt q(impl_->db,
               "SELECT t.id, t.op, k.value, t.worker, t.position, t.bytes, t.flops FROM task t "
               "JOIN string k ON k.id = t.kind WHERE t.graph = ? ORDER BY t.id");
  q.bind(1, graph);
  std::vector<TaskRecord> out;
  while (q.step()) {
    TaskRecord t;
    t.id = static_cast<TaskId>(q.col_int(0));
    t.op = static_cast<OpId>(q.col_int(1));
    t.kind = q.col_str(2);
    t.worker = static_cast<int32_t>(q.col_int(3));
    t.position = static_cast<int32_t>(q.col_int(4));
    t.bytes = q.col_int(5);
    t.flops = q.col_int(6);
    out.push_back(std::move(t));
  }
  return out;
}

namespace {

// The tasks across the events of `task`: its producers (through the events it consumes)
// or its consumers (through the events it produces).
std::vector<DependencyRecord> linked_tasks(SqliteDb& db, int64_t graph, TaskId task,
                                           bool producers) {
  const std::string mine = producers ? "event_consumer" : "event_producer";
  const std::string other = producers ? "event_producer" : "event_consumer";
  const std::string sql = "SELECT a.event, e.step_distance, b.task FROM " + mine +
                          " a JOIN event e ON e.graph = a.graph AND e.id = a.event JOIN " + other +
                          " b ON b.graph = a.graph AND b.event = a.event "
                          "WHERE a.graph = ? AND a.task = ? ORDER BY a.event, b.task";
  SqliteStmt q(db, sql.c_str());
  q.bind(1, graph).bind(2, int64_t{task});
  std::vector<DependencyRecord> out;
  while (q.step())
    out.push_back({static_cast<EventId>(q.col_int(0)), static_cast<int32_t>(q.col_int(1)),
                   static_cast<TaskId>(q.col_int(2))});
  return out;
}

}  // namespace

std::vector<DependencyRecord> TraceReader::producers_of(int64_t graph, TaskId task) const {
  return linked_tasks(impl_->db, graph, task, true);
}

std::vector<DependencyRecord> TraceReader::consumers_of(int64_t graph, TaskId task) const {
  return linked_tasks(impl_->db, graph, task, false);
}

Module TraceReader::load_graph(int64_t run_id) const {
  const RunRecord r = run(run_id);
  Module m;
  {
    SqliteStmt q(impl_->db,
                 "SELECT n.value, s.value, pl.value, tv.value, p.value, g.event_latency_ns, "
                 "g.task_overhead_ns, g.num_workers FROM graph g "
                 "JOIN string n ON n.id = g.name JOIN string s ON s.id = g.source "
                 "JOIN string pl ON pl.id = g.pipeline JOIN string tv ON tv.id = g.tool_version "
                 "JOIN string p ON p.id = g.policy WHERE g.id = ?");
    q.bind(1, r.graph);
    if (!q.step()) throw Error(impl_->path + ": run " + std::to_string(run_id) + " has no graph");
    m.name = q.col_str(0);
    m.provenance = {q.col_str(1), q.col_str(2), q.col_str(3)};
    m.graph.schedule.policy = q.col_str(4);
    m.machine.event_latency_ns = static_cast<double>(q.col_int(5));
    m.machine.task_overhead_ns = static_cast<double>(q.col_int(6));
    m.graph.schedule.workers.resize(static_cast<size_t>(q.col_int(7)));
  }
  m.attrs["batch"] = r.batch;
  m.machine.name = r.device.name;
  m.machine.sm_count = r.device.sm_count;
  m.machine.clock_ghz = static_cast<double>(r.device.clock_khz) * 1e-6;
  m.machine.mem_bandwidth = static_cast<double>(r.device.mem_bandwidth);
  m.machine.smem_per_sm = r.device.smem_per_sm;

  for (const OperatorRecord& o : operators(r.graph)) {
    Operator op;
    op.name = o.name;
    auto kind = parse_op_kind(o.kind);
    if (!kind) throw Error(impl_->path + ": operator '" + o.name + "' has unknown kind '" + o.kind + "'");
    op.kind = *kind;
    op.layer = o.layer;
    m.program.ops.push_back(std::move(op));
  }
  std::vector<TaskRecord> tasks_in = tasks(r.graph);
  auto& workers = m.graph.schedule.workers;
  for (const TaskRecord& t : tasks_in) {
    Task task;
    task.op = t.op;
    auto kind = parse_task_kind(t.kind);
    if (!kind) throw Error(impl_->path + ": task " + std::to_string(t.id) + " has unknown kind '" + t.kind + "'");
    task.kind = *kind;
    task.bytes = t.bytes;
    task.flops = t.flops;
    m.graph.tasks.push_back(std::move(task));
    if (t.worker < 0 || static_cast<size_t>(t.worker) >= workers.size() || t.position < 0)
      throw Error(impl_->path + ": task " + std::to_string(t.id) + " has a bad schedule place");
    auto& list = workers[t.worker];
    if (list.size() <= static_cast<size_t>(t.position)) list.resize(t.position + 1, -1);
    list[t.position] = t.id;
  }
  for (const auto& list : workers)
    for (TaskId t : list)
      if (t < 0) throw Error(impl_->path + ": the schedule of run " + std::to_string(run_id) + " has holes");
  {
    SqliteStmt q(impl_->db, "SELECT id, target, step_distance FROM event WHERE graph = ? ORDER BY id");
    q.bind(1, r.graph);
    while (q.step()) {
      Event e;
      e.target = q.col_int(1);
      e.step_distance = static_cast<int32_t>(q.col_int(2));
      m.graph.events.push_back(std::move(e));
    }
  }
  auto load_ends = [&](const char* table, bool producers) {
    SqliteStmt q(impl_->db, (std::string("SELECT event, task FROM ") + table +
                             " WHERE graph = ? ORDER BY event, task").c_str());
    q.bind(1, r.graph);
    while (q.step()) {
      const int64_t e = q.col_int(0);
      const int64_t t = q.col_int(1);
      if (e < 0 || static_cast<size_t>(e) >= m.graph.events.size() || t < 0 ||
          static_cast<size_t>(t) >= m.graph.tasks.size())
        throw Error(impl_->path + ": corrupt trace.db (dangling event endpoint)");
      Event& ev = m.graph.events[e];
      (producers ? ev.producers : ev.consumers).push_back(static_cast<TaskId>(t));
    }
  };
  load_ends("event_producer", true);
  load_ends("event_consumer", false);
  m.graph.rebuild_use_lists();
  return m;
}

}  // namespace mpk
