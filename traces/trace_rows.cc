// The checked read path of a run's rows (traces/trace_rows.h); graphs are in
// trace_graph_rows.cc.
#include "traces/trace_rows.h"

#include <array>
#include <limits>
#include <optional>

#include "ir/checked.h"
#include "ir/error.h"
#include "ir/ops/tensor_parallel.h"
#include "traces/trace_limits.h"

namespace mpk {

const char* const kExecutionColumns =
    "SELECT worker, start_ns, task, step, sm, wait_begin_ns, end_ns FROM execution ";
const char* const kBubbleColumns =
    "SELECT worker, start_ns, end_ns, cause, step, task, event, producer, producer_worker "
    "FROM bubble ";

void row_error(const std::string& where, const char* table, int64_t row, const std::string& problem) {
  throw Error(where + (table ? ": " + std::string(table) + " row " + std::to_string(row) : "") +
              ": " + problem);
}

namespace {

constexpr int64_t kAnyInt = std::numeric_limits<int64_t>::max();

// Files of schema 2 and older have no rank columns: their runs are single-rank.
std::string run_query(int schema) {
  return std::string(
             "SELECT r.id, r.kind, m.value, p.value, r.policy_params, pl.value, r.options, tv.value, "
             "r.batch, r.steps, r.started_at_ns, r.graph, r.num_workers, r.num_executions, "
             "r.duration_ns, r.max_task_ns, d.id, dn.value, d.sm_count, d.clock_khz, d.mem_clock_khz, "
             "d.mem_bandwidth, d.smem_per_sm, ") +
         (schema >= 3 ? "r.rank, r.ranks, r.rank0_run, r.rank_offset_ns " : "0, 1, NULL, 0 ") +
         "FROM run r LEFT JOIN string m ON m.id = r.model LEFT JOIN string p ON p.id = r.policy "
    "LEFT JOIN graph g ON g.id = r.graph LEFT JOIN string pl ON pl.id = g.pipeline "
    "LEFT JOIN string tv ON tv.id = r.tool_version LEFT JOIN device d ON d.id = r.device "
    "LEFT JOIN string dn ON dn.id = d.name ";
}

RunRecord run_from_row(const SqliteStmt& q, const std::string& path, int64_t row) {
  RunRecord r;
  r.id = RowFields(q, path, "run", row).get(0, "id", 0, kAnyInt);
  const std::string where = path + ": run " + std::to_string(r.id);
  const RowFields f(q, where, nullptr, -1);
  const auto text = [&](int col, const char* field) {
    if (q.col_null(col)) f.fail(std::string(field) + " is not in the string table");
    return f.text(col);
  };
  r.kind = text(1, "kind");
  if (r.kind != "gpu" && r.kind != "sim" && r.kind != "cpu")
    f.fail("kind '" + r.kind + "' is not one of gpu, sim, cpu");
  r.model = text(2, "model");
  r.policy = text(3, "policy");
  r.policy_params = f.text(4);
  r.pipeline = text(5, "its graph (or the graph's pipeline)");
  r.options = f.text(6);
  r.tool_version = text(7, "tool_version");
  r.batch = f.get(8, "batch", 1, kMaxTraceBatch);
  r.steps = f.get(9, "steps", 0, kMaxSteps);
  r.started_at_ns = f.get(10, "started_at_ns", std::numeric_limits<int64_t>::min(), kAnyInt);
  r.graph = f.get(11, "graph", 0, kAnyInt);
  r.num_workers = static_cast<int32_t>(f.get(12, "num_workers", 1, kMaxWorkers));
  r.num_executions = f.get(13, "num_executions", 0, kMaxTasks * kMaxSteps);
  r.duration_ns = f.get(14, "duration_ns", 0, kMaxTraceNs);
  r.max_task_ns = f.get(15, "max_task_ns", 0, r.duration_ns);
  if (q.col_null(16)) f.fail("its device is not in the device table");
  r.device.name = text(17, "device name");
  r.device.sm_count = static_cast<int32_t>(f.get(18, "device sm_count", 1, kMaxWorkers));
  r.device.clock_khz = f.get(19, "device clock_khz", 0, kMaxClockKhz);
  r.device.mem_clock_khz = f.get(20, "device mem_clock_khz", 0, kMaxClockKhz);
  r.device.mem_bandwidth =
      f.get(21, "device mem_bandwidth", 0, static_cast<int64_t>(kMaxBandwidth));
  r.device.smem_per_sm = f.get(22, "device smem_per_sm", 0, kMaxSmemPerSm);
  r.ranks = static_cast<int32_t>(f.get(24, "ranks", 1, kMaxTpRanks));
  r.rank = static_cast<int32_t>(f.get(23, "rank", 0, r.ranks - 1));
  if (r.rank == 0 && !q.col_null(25)) f.fail("rank0_run is set for rank 0");
  if (r.rank > 0) {
    if (q.col_null(25)) f.fail("rank " + std::to_string(r.rank) + " has no rank0_run");
    r.rank0_run = f.get(25, "rank0_run", 0, kAnyInt);
  }
  r.rank_offset_ns = f.get(26, "rank_offset_ns", -kMaxTraceNs, kMaxTraceNs);
  return r;
}

std::optional<BubbleCause> parse_cause(const std::string& s) {
  for (BubbleCause c : {BubbleCause::kWait, BubbleCause::kQueueEmpty, BubbleCause::kStepTail,
                        BubbleCause::kOverhead})
    if (s == name_of(c)) return c;
  return std::nullopt;
}

int64_t num_tasks(const CheckedRun& r) {
  return static_cast<int64_t>(r.graph->module.graph.tasks.size());
}

// The number of rows of `table` that belong to run `id`.
int64_t count_rows(SqliteDb& db, const char* table, int64_t id) {
  SqliteStmt q(db, (std::string("SELECT count(*) FROM ") + table + " WHERE run = ?").c_str());
  q.bind(1, id);
  return q.step() ? q.col_int(0) : 0;
}

// The rows of one run's table, in the query's order.
template <class Decode>
void for_each_row(SqliteDb& db, const CheckedRun& r, const std::string& sql, Decode decode) {
  SqliteStmt q(db, sql.c_str());
  q.bind(1, r.run.id);
  for (int64_t row = 0; q.step(); ++row) decode(q, row);
}

}  // namespace

std::vector<RunRecord> read_run_rows(SqliteDb& db, int64_t id, int schema) {
  SqliteStmt q(db, (run_query(schema) + (id >= 0 ? "WHERE r.id = ?" : "ORDER BY r.id")).c_str());
  if (id >= 0) q.bind(1, id);
  std::vector<RunRecord> out;
  for (int64_t row = 0; q.step(); ++row) out.push_back(run_from_row(q, db.path(), row));
  return out;
}

CheckedRun check_run(SqliteDb& db, const RunRecord& run, std::shared_ptr<const CheckedGraph> graph) {
  CheckedRun r{run, std::move(graph), db.path() + ": run " + std::to_string(run.id)};
  const TaskGraph& g = r.graph->module.graph;
  if (static_cast<size_t>(run.num_workers) != g.schedule.workers.size())
    throw Error(r.where + ": num_workers " + std::to_string(run.num_workers) + " but its graph " +
                std::to_string(run.graph) + " has " + std::to_string(g.schedule.workers.size()));
  // The counts the run row claims must be the rows the file holds: memory for a run is then
  // bounded by the file's size, whatever the run row says.
  const int64_t executions = count_rows(db, "execution", run.id), steps = count_rows(db, "step", run.id);
  if (executions != run.num_executions)
    throw Error(r.where + ": the run row says " + std::to_string(run.num_executions) +
                " executions, the execution table holds " + std::to_string(executions));
  if (steps != run.steps)
    throw Error(r.where + ": the run row says " + std::to_string(run.steps) +
                " steps, the step table holds " + std::to_string(steps));
  // Both factors are below 2^25 and 2^21: no overflow.
  const int64_t tasks = static_cast<int64_t>(g.tasks.size());
  const int64_t slots = (tasks + static_cast<int64_t>(g.events.size())) * run.steps;
  const int64_t allowed = kIndexSlotsPerExecution * run.num_executions + kIndexSlotsFree;
  if (slots > allowed)
    throw Error(r.where + ": " + std::to_string(run.steps) + " steps of a graph of " +
                std::to_string(tasks) + " tasks and " + std::to_string(g.events.size()) +
                " events are out of proportion to its " + std::to_string(run.num_executions) +
                " executions (" + std::to_string(slots) + " index slots, at most " +
                std::to_string(allowed) + ")");
  if (run.num_executions > tasks * run.steps)
    throw Error(r.where + ": num_executions " + std::to_string(run.num_executions) +
                " exceeds its tasks x steps (" + std::to_string(tasks * run.steps) + ")");
  return r;
}

Module run_module(const CheckedRun& r) {
  Module m = r.graph->module;
  const DeviceInfo& d = r.run.device;
  m.attrs["batch"] = r.run.batch;
  m.machine.name = d.name;
  m.machine.sm_count = d.sm_count;
  m.machine.clock_ghz = static_cast<double>(d.clock_khz) * 1e-6;
  m.machine.mem_bandwidth = static_cast<double>(d.mem_bandwidth);
  m.machine.smem_per_sm = d.smem_per_sm;
  return m;
}

namespace {

// The values of one row as the writer binds them, for the stored rows' decoders.
class BoundRow {
 public:
  BoundRow& add(int64_t v) { return push({v, nullptr, SQLITE_INTEGER}); }
  BoundRow& add_or_null(int64_t v) { return v < 0 ? push({0, nullptr, SQLITE_NULL}) : add(v); }
  BoundRow& add_text(const char* s) { return push({0, s, SQLITE_TEXT}); }
  void clear() { n_ = 0; }
  int col_type(int i) const { return values_[static_cast<size_t>(i)].type; }
  int64_t col_int(int i) const { return values_[static_cast<size_t>(i)].i; }
  bool col_null(int i) const { return col_type(i) == SQLITE_NULL; }
  std::string col_str(int i) const {
    const char* s = values_[static_cast<size_t>(i)].s;
    return s ? s : "";
  }

 private:
  struct Value {
    int64_t i;
    const char* s;
    int type;
  };
  BoundRow& push(Value v) {
    values_[n_++] = v;
    return *this;
  }
  std::array<Value, 9> values_{};
  size_t n_ = 0;
};

// kExecutionColumns of `e`.
const BoundRow& execution_values(const Execution& e, BoundRow& v) {
  v.clear();
  v.add(e.worker).add(e.start_ns).add(e.task).add(e.step).add(e.sm).add(e.wait_begin_ns).add(e.end_ns);
  return v;
}

// kBubbleColumns of `b` (event, producer and producer_worker are NULL together).
const BoundRow& bubble_values(const Bubble& b, BoundRow& v) {
  v.clear();
  v.add(b.worker).add(b.start_ns).add(b.end_ns).add_text(name_of(b.cause)).add(b.step).add_or_null(b.task);
  if (b.event >= 0) v.add(b.event).add(b.producer).add(b.producer_worker);
  else v.add_or_null(-1).add_or_null(-1).add_or_null(-1);
  return v;
}

template <class Row>
ExecutionRecord decode_execution(const Row& q, const CheckedRun& r, int64_t row) {
  const BasicRowFields<Row> f(q, r.where, "execution", row);
  ExecutionRecord e;
  e.task = static_cast<TaskId>(f.ref(2, "task", num_tasks(r), "a task of the run's graph"));
  e.step = static_cast<int32_t>(f.ref(3, "step", r.run.steps, "a step of the run"));
  const int64_t worker = f.get(0, "worker", 0, kMaxWorkers - 1);
  const int32_t scheduled = r.graph->places[static_cast<size_t>(e.task)].worker;
  if (worker != scheduled)
    f.fail("worker " + std::to_string(worker) + ": the run's schedule puts task " +
           std::to_string(e.task) + " on worker " + std::to_string(scheduled));
  e.worker = scheduled;
  e.sm = static_cast<int32_t>(f.get(4, "sm", 0, kMaxWorkers - 1));
  e.wait_begin_ns = f.get(5, "wait_begin_ns", 0, r.run.duration_ns);
  e.start_ns = f.get(1, "start_ns", e.wait_begin_ns, r.run.duration_ns);
  e.end_ns = f.get(6, "end_ns", e.start_ns, r.run.duration_ns);
  return e;
}

template <class Row>
Bubble decode_bubble(const Row& q, const CheckedRun& r, int64_t row) {
  const BasicRowFields<Row> f(q, r.where, "bubble", row);
  const Module& m = r.graph->module;
  const int64_t tasks = num_tasks(r), workers = r.run.num_workers;
  Bubble b;
  b.worker = static_cast<int32_t>(f.ref(0, "worker", workers, "a worker of the run"));
  b.start_ns = f.get(1, "start_ns", 0, r.run.duration_ns);
  b.end_ns = f.get(2, "end_ns", b.start_ns, r.run.duration_ns);
  const auto cause = parse_cause(f.text(3));
  if (!cause) f.fail("cause '" + f.text(3) + "' is not one of wait, queue_empty, step_tail, overhead");
  b.cause = *cause;
  b.step = static_cast<int32_t>(f.ref(4, "step", r.run.steps, "a step of the run"));
  b.task = static_cast<TaskId>(f.ref_or_null(5, "task", tasks, "a task of the run's graph"));
  b.event = static_cast<EventId>(f.ref_or_null(6, "event", static_cast<int64_t>(m.graph.events.size()),
                                               "an event of the run's graph"));
  b.producer = static_cast<TaskId>(f.ref_or_null(7, "producer", tasks, "a task of the run's graph"));
  b.producer_worker =
      static_cast<int32_t>(f.ref_or_null(8, "producer_worker", workers, "a worker of the run"));
  return b;
}

}  // namespace

ExecutionRecord execution_row(const SqliteStmt& q, const CheckedRun& r, int64_t row) {
  return decode_execution(q, r, row);
}

Bubble bubble_row(const SqliteStmt& q, const CheckedRun& r, int64_t row) {
  return decode_bubble(q, r, row);
}

namespace {

// The stored rows of one run's table (kExecutionColumns or kBubbleColumns), each to
// decode(row, number).
struct StoredRows {
  SqliteDb& db;
  const char* columns;
  template <class Decode>
  void operator()(const CheckedRun& r, Decode decode) const {
    for_each_row(db, r, std::string(columns) + "WHERE run = ? ORDER BY worker, start_ns", decode);
  }
};

// Rows about to be stored, bound as the writer binds them.
template <class T>
struct BoundRows {
  const std::vector<T>& items;
  const BoundRow& (*values)(const T&, BoundRow&);
  template <class Decode>
  void operator()(const CheckedRun&, Decode decode) const {
    BoundRow v;
    for (size_t i = 0; i < items.size(); ++i) decode(values(items[i], v), static_cast<int64_t>(i));
  }
};

// The run's execution table, checked row by row and as a table; each row goes to `use`.
template <class Rows, class Use>
void scan_executions(const Rows& rows, const CheckedRun& r, Use use) {
  // check_run bounded tasks x steps by the rows' count.
  std::vector<bool> seen(static_cast<size_t>(num_tasks(r) * r.run.steps), false);
  int64_t busy = 0, waits = 0;
  const std::string busy_what = r.where + ": the summed execution times";
  const std::string waits_what = r.where + ": the summed waits";
  rows(r, [&](const auto& q, int64_t row) {
                 const ExecutionRecord e = decode_execution(q, r, row);
                 const size_t slot = static_cast<size_t>(e.task) * static_cast<size_t>(r.run.steps) +
                                     static_cast<size_t>(e.step);
                 if (seen[slot])
                   row_error(r.where, "execution", row,
                             "task " + std::to_string(e.task) + " at step " +
                                 std::to_string(e.step) + " is recorded twice");
                 seen[slot] = true;
                 busy = checked_add(busy, e.end_ns - e.start_ns, busy_what);
                 waits = checked_add(waits, e.start_ns - e.wait_begin_ns, waits_what);
                 use(e);
               });
}

// The run's bubble table, checked (a worker's bubbles never overlap); each row to `use`.
template <class Rows, class Use>
void scan_bubbles(const Rows& rows, const CheckedRun& r, Use use) {
  int64_t idle = 0;
  Bubble last;
  last.worker = -1;
  const std::string idle_what = r.where + ": the summed bubbles";
  rows(r, [&](const auto& q, int64_t row) {
                 const Bubble b = decode_bubble(q, r, row);
                 if (last.worker == b.worker && b.start_ns < last.end_ns)
                   row_error(r.where, "bubble", row,
                             "overlaps the bubble before it on worker " + std::to_string(b.worker));
                 idle = checked_add(idle, b.end_ns - b.start_ns, idle_what);
                 last = b;
                 use(b);
               });
}

}  // namespace

std::vector<ExecutionRecord> read_executions(SqliteDb& db, const CheckedRun& r) {
  std::vector<ExecutionRecord> out;
  out.reserve(static_cast<size_t>(r.run.num_executions));  // the rows' count (check_run)
  scan_executions(StoredRows{db, kExecutionColumns}, r, [&](const ExecutionRecord& e) { out.push_back(e); });
  return out;
}

std::vector<Bubble> read_bubbles(SqliteDb& db, const CheckedRun& r) {
  std::vector<Bubble> out;
  scan_bubbles(StoredRows{db, kBubbleColumns}, r, [&](const Bubble& b) { out.push_back(b); });
  return out;
}

std::vector<StepRecord> read_steps(SqliteDb& db, const CheckedRun& r) {
  std::vector<StepRecord> out;
  int64_t busy = 0;
  for_each_row(db, r, "SELECT step, start_ns, end_ns, busy_ns FROM step WHERE run = ? ORDER BY step",
               [&](const SqliteStmt& q, int64_t row) {
                 const RowFields f(q, r.where, "step", row);
                 const int64_t k = f.ref(0, "step", r.run.steps, "a step of the run");
                 if (k != row)
                   f.fail("step " + std::to_string(k) + " where " + std::to_string(row) +
                          " was expected (the run's steps are 0, 1, 2, ... without gaps)");
                 StepRecord s;
                 s.step = static_cast<int32_t>(k);
                 s.start_ns = f.get(1, "start_ns", 0, r.run.duration_ns);
                 s.end_ns = f.get(2, "end_ns", s.start_ns, r.run.duration_ns);
                 s.busy_ns = f.get(3, "busy_ns", 0, kAnyInt);
                 busy = checked_add(busy, s.busy_ns, r.where + ": the summed busy_ns of its steps");
                 out.push_back(s);
               });
  return out;
}

std::vector<OperatorStat> read_operator_stats(SqliteDb& db, const CheckedRun& r) {
  const std::vector<Operator>& ops = r.graph->module.program.ops;
  std::vector<OperatorStat> out;
  int64_t executions = 0, total = 0, waits = 0;
  for_each_row(
      db, r, "SELECT op, executions, total_ns, max_ns, wait_ns FROM operator_stat WHERE run = ? ORDER BY op",
      [&](const SqliteStmt& q, int64_t row) {
        const RowFields f(q, r.where, "operator_stat", row);
        OperatorStat s;
        s.op = static_cast<OpId>(f.ref(0, "op", static_cast<int64_t>(ops.size()), "an operator of the run's graph"));
        if (!out.empty() && s.op <= out.back().op) f.fail("operator " + std::to_string(s.op) + " is listed twice");
        const Operator& op = ops[static_cast<size_t>(s.op)];
        s.name = op.name;
        s.kind = name_of(op.kind);
        s.layer = op.layer;
        s.executions = f.get(1, "executions", 0, r.run.num_executions);
        s.total_ns = f.get(2, "total_ns", 0, kAnyInt);
        s.max_ns = f.get(3, "max_ns", 0, r.run.duration_ns);
        s.wait_ns = f.get(4, "wait_ns", 0, kAnyInt);
        executions = checked_add(executions, s.executions, r.where + ": the summed operator executions");
        total = checked_add(total, s.total_ns, r.where + ": the summed operator total_ns");
        waits = checked_add(waits, s.wait_ns, r.where + ": the summed operator wait_ns");
        out.push_back(std::move(s));
      });
  return out;
}

void check_stored_run(SqliteDb& db, int64_t id, const std::vector<Execution>& executions,
                      const std::vector<Bubble>& bubbles) {
  const std::vector<RunRecord> rows = read_run_rows(db, id);
  if (rows.size() != 1) throw Error(db.path() + ": run " + std::to_string(id) + " does not read back");
  const CheckedRun r = check_run(db, rows[0], read_graph(db, rows[0].graph));
  if (static_cast<int64_t>(executions.size()) != r.run.num_executions)
    throw Error(r.where + ": " + std::to_string(executions.size()) + " executions were stored, the "
                "file holds " + std::to_string(r.run.num_executions));
  if (static_cast<int64_t>(bubbles.size()) != count_rows(db, "bubble", id))
    throw Error(r.where + ": " + std::to_string(bubbles.size()) + " bubbles were stored, the file "
                "holds " + std::to_string(count_rows(db, "bubble", id)));
  scan_executions(BoundRows<Execution>{executions, execution_values}, r, [](const ExecutionRecord&) {});
  scan_bubbles(BoundRows<Bubble>{bubbles, bubble_values}, r, [](const Bubble&) {});
  read_steps(db, r);
  read_operator_stats(db, r);
}

}  // namespace mpk
