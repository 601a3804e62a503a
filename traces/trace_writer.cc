// TraceWriter: appends one run per transaction to a trace.db. Graphs and devices are
// stored once and shared by the runs that use them (a graph is keyed by a digest of
// its scheduled content and its serialized module, which is stored with it).
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <future>
#include <unordered_map>

#include "ir/checked.h"
#include "ir/error.h"
#include "ir/fnv1a.h"
#include "ir/machine_check.h"
#include "ir/ops/tensor_parallel.h"
#include "ir/serialize.h"
#include "traces/run_derive.h"
#include "traces/sqlite_db.h"
#include "traces/trace_db.h"
#include "traces/trace_limits.h"
#include "traces/trace_rows.h"
#include "traces/trace_schema.h"

namespace mpk {

const char* name_of(BubbleCause c) {
  switch (c) {
    case BubbleCause::kWait: return "wait";
    case BubbleCause::kQueueEmpty: return "queue_empty";
    case BubbleCause::kStepTail: return "step_tail";
    case BubbleCause::kOverhead: return "overhead";
  }
  return "overhead";
}

DeviceInfo device_from_machine(const MachineModel& m) {
  DeviceInfo d;
  d.name = m.name + " (model)";
  d.sm_count = m.sm_count;
  d.clock_khz = static_cast<int64_t>(m.clock_ghz * 1e6 + 0.5);
  d.mem_bandwidth = static_cast<int64_t>(m.mem_bandwidth + 0.5);
  d.smem_per_sm = m.smem_per_sm;
  return d;
}

namespace {

// FNV-1a over the scheduled graph's stored content: numbers as int64, text with its length.
struct Digest : Fnv1a {
  Digest() : Fnv1a(kFnvTruncatedOffset) {}
  void add(int64_t v) { value(v); }
  void add(const std::string& s) { sized(s); }
};

std::string graph_digest(const Module& m, const std::string& module_bytes) {
  Digest d;
  d.add(module_bytes);
  d.add(m.name);
  d.add(m.provenance.source);
  d.add(m.provenance.pipeline);
  d.add(format_attrs(m.attrs));
  d.add(m.graph.schedule.policy);
  d.add(format_attrs(m.graph.schedule.params));
  d.add(static_cast<int64_t>(m.machine.event_latency_ns));
  d.add(static_cast<int64_t>(m.machine.task_overhead_ns));
  for (const Operator& op : m.program.ops) {
    d.add(op.name);
    d.add(static_cast<int64_t>(op.kind));
    d.add(op.layer);
  }
  for (const Task& t : m.graph.tasks) {
    d.add(t.op);
    d.add(static_cast<int64_t>(t.kind));
    d.add(t.bytes);
    d.add(t.flops);
  }
  for (const Event& e : m.graph.events) {
    d.add(e.target);
    d.add(e.step_distance);
    d.add(static_cast<int64_t>(e.producers.size()));
    for (TaskId t : e.producers) d.add(t);
    d.add(static_cast<int64_t>(e.consumers.size()));
    for (TaskId t : e.consumers) d.add(t);
  }
  for (const auto& w : m.graph.schedule.workers) {
    d.add(static_cast<int64_t>(w.size()));
    for (TaskId t : w) d.add(t);
  }
  return d.hex();
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// One rank's executions, validated and moved to its own start (validate_and_normalize).
struct RankExecutions {
  std::vector<Execution> execs;
  int64_t origin = 0;  // its clock's value at its time 0
};

std::vector<RankExecutions> split_by_rank(const Module& m, const std::vector<Execution>& input, int32_t steps) {
  int32_t ranks = 1;
  for (const Execution& x : input) {
    if (x.rank < 0 || x.rank >= tp_ranks(m))
      throw Error("trace: execution of task " + std::to_string(x.task) + " at step " + std::to_string(x.step) +
                  " on rank " + std::to_string(x.rank) + ": the module has " + std::to_string(tp_ranks(m)) +
                  " tensor-parallel rank(s)");
    ranks = std::max(ranks, x.rank + 1);
  }
  std::vector<RankExecutions> out(static_cast<size_t>(ranks));
  for (const Execution& x : input) out[static_cast<size_t>(x.rank)].execs.push_back(x);
  for (RankExecutions& r : out) {
    r.origin = validate_and_normalize(m, r.execs, steps);
    std::sort(r.execs.begin(), r.execs.end(), [](const Execution& a, const Execution& b) {
      if (a.worker != b.worker) return a.worker < b.worker;
      if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
      if (a.task != b.task) return a.task < b.task;
      return a.step < b.step;
    });
  }
  return out;
}

}  // namespace

struct TraceWriter::Impl {
  explicit Impl(const std::string& path) : db((check_trace_file(path, true), path), false, true) {
    prepare_trace_db(db, true);
    db.exec("PRAGMA cache_size = -65536", "configure");
  }

  SqliteDb db;
  std::unordered_map<std::string, int64_t> strings;

  int64_t intern(const std::string& s) {
    auto it = strings.find(s);
    if (it != strings.end()) return it->second;
    if (!insert_string) {
      insert_string = std::make_unique<SqliteStmt>(
          db, "INSERT INTO string(value) VALUES(?) ON CONFLICT(value) DO UPDATE SET "
              "value = excluded.value RETURNING id");
    }
    insert_string->bind(1, std::string_view(s));
    if (!insert_string->step()) db.fail("intern a string");
    const int64_t id = insert_string->col_int(0);
    insert_string->reset();
    strings.emplace(s, id);
    return id;
  }

  int64_t device_id(const DeviceInfo& d);
  int64_t graph_id(const Module& m, const std::string& module_bytes,
                   const std::vector<SchedulePlace>& places);
  int64_t write(const Module& m, const RunInfo& info, const std::vector<Execution>& input,
                StoredRun* stored);
  // What the runs of one launch share, and the rank being stored.
  struct RunRows {
    int64_t device = 0, graph = 0, started_at = 0, batch = 0;
    std::string model, policy, params;
    int32_t steps = 0, rank = 0, ranks = 1;
    int64_t offset = 0;  // the rank's time 0 on rank 0's axis
  };
  // One rank's run row and rows, inside the launch's transaction.
  int64_t write_rank(const Module& m, const RunInfo& info, const RunRows& rows, int64_t rank0_run,
                     const RankExecutions& rank, std::future<DerivedRun>& deriving, DerivedRun& derived);

  std::unique_ptr<SqliteStmt> insert_string;
  std::function<void()> before_commit;
};

int64_t TraceWriter::Impl::device_id(const DeviceInfo& d) {
  const int64_t name = intern(d.name);
  SqliteStmt ins(db,
                 "INSERT OR IGNORE INTO device(name, sm_count, clock_khz, mem_clock_khz, "
                 "mem_bandwidth, smem_per_sm) VALUES(?, ?, ?, ?, ?, ?)");
  ins.bind(1, name).bind(2, int64_t{d.sm_count}).bind(3, d.clock_khz).bind(4, d.mem_clock_khz)
      .bind(5, d.mem_bandwidth).bind(6, d.smem_per_sm).run();
  SqliteStmt q(db,
               "SELECT id FROM device WHERE name = ? AND sm_count = ? AND clock_khz = ? AND "
               "mem_clock_khz = ? AND mem_bandwidth = ? AND smem_per_sm = ?");
  q.bind(1, name).bind(2, int64_t{d.sm_count}).bind(3, d.clock_khz).bind(4, d.mem_clock_khz)
      .bind(5, d.mem_bandwidth).bind(6, d.smem_per_sm);
  if (!q.step()) db.fail("store the device");
  return q.col_int(0);
}

int64_t TraceWriter::Impl::graph_id(const Module& m, const std::string& module_bytes,
                                    const std::vector<SchedulePlace>& places) {
  const std::string digest = graph_digest(m, module_bytes);
  {
    SqliteStmt q(db, "SELECT id FROM graph WHERE digest = ?");
    q.bind(1, std::string_view(digest));
    if (q.step()) return q.col_int(0);
  }
  SqliteStmt g(db,
               "INSERT INTO graph(digest, name, source, pipeline, tool_version, attrs, policy, "
               "policy_params, num_workers, event_latency_ns, task_overhead_ns) "
               "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id");
  g.bind(1, std::string_view(digest)).bind(2, intern(m.name)).bind(3, intern(m.provenance.source))
      .bind(4, intern(m.provenance.pipeline)).bind(5, intern(m.provenance.tool_version))
      .bind(6, std::string_view(format_attrs(m.attrs))).bind(7, intern(m.graph.schedule.policy))
      .bind(8, std::string_view(format_attrs(m.graph.schedule.params)))
      .bind(9, static_cast<int64_t>(m.graph.schedule.workers.size()))
      .bind(10, static_cast<int64_t>(m.machine.event_latency_ns))
      .bind(11, static_cast<int64_t>(m.machine.task_overhead_ns));
  if (!g.step()) db.fail("store the graph");
  const int64_t gid = g.col_int(0);
  g.reset();
  SqliteStmt mod(db, "INSERT INTO graph_module(graph, module) VALUES(?, ?)");
  mod.bind(1, gid).bind_blob(2, module_bytes).run();

  SqliteStmt op(db, "INSERT INTO operator(graph, id, name, kind, layer) VALUES(?, ?, ?, ?, ?)");
  for (size_t i = 0; i < m.program.ops.size(); ++i) {
    const Operator& o = m.program.ops[i];
    op.bind(1, gid).bind(2, static_cast<int64_t>(i)).bind(3, intern(o.name))
        .bind(4, intern(std::string(name_of(o.kind)))).bind(5, int64_t{o.layer}).run();
  }
  BatchInsert task(db, "INSERT INTO task(graph, id, op, kind, worker, position, bytes, flops)", 8);
  std::vector<int64_t> kind_ids(kNumTaskKinds, -1);
  for (size_t i = 0; i < m.graph.tasks.size(); ++i) {
    const Task& t = m.graph.tasks[i];
    int64_t& kind = kind_ids[static_cast<size_t>(t.kind)];
    if (kind < 0) kind = intern(std::string(name_of(t.kind)));
    task.value(gid).value(static_cast<int64_t>(i)).value(t.op).value(kind)
        .value(places[i].worker).value(places[i].position).value(t.bytes).value(t.flops);
  }
  task.finish();
  BatchInsert ev(db, "INSERT INTO event(graph, id, target, step_distance)", 4);
  BatchInsert prod(db, "INSERT OR IGNORE INTO event_producer(graph, event, task)", 3);
  BatchInsert cons(db, "INSERT OR IGNORE INTO event_consumer(graph, event, task)", 3);
  for (size_t i = 0; i < m.graph.events.size(); ++i) {
    const Event& e = m.graph.events[i];
    const int64_t id = static_cast<int64_t>(i);
    ev.value(gid).value(id).value(e.target).value(e.step_distance);
    for (TaskId t : e.producers) prod.value(gid).value(id).value(t);
    for (TaskId t : e.consumers) cons.value(gid).value(id).value(t);
  }
  ev.finish();
  prod.finish();
  cons.finish();
  return gid;
}

int64_t TraceWriter::Impl::write(const Module& m, const RunInfo& info,
                                 const std::vector<Execution>& input, StoredRun* stored) {
  if (info.kind != "gpu" && info.kind != "sim" && info.kind != "cpu")
    throw Error("trace: run kind '" + info.kind + "' is not one of gpu, sim, cpu");
  if (m.graph.schedule.empty()) throw Error("trace: module '" + m.name + "' has no schedule");
  // What the reader would refuse is refused before anything is written (a million workers
  // would write hundreds of MB first); the read-back before COMMIT checks the rest.
  check_machine_model(m.machine, "trace: module '" + m.name + "': machine model");
  checked_range(static_cast<int64_t>(m.graph.schedule.workers.size()), 1, kMaxWorkers,
                "trace: module '" + m.name + "': workers");
  checked_range(info.steps, 0, kMaxSteps, "trace: steps");
  int32_t steps = static_cast<int32_t>(info.steps);
  if (steps <= 0)
    for (const Execution& x : input) steps = std::max(steps, x.step + 1);
  std::vector<RankExecutions> ranks = split_by_rank(m, input, steps);
  // Bubbles, steps and operator statistics are derived on other threads while this one
  // serializes the module and stores the graph, the run rows and the executions (all only
  // read `m` and the executions); a run row needs its extent only.
  std::vector<std::future<DerivedRun>> deriving;
  for (const RankExecutions& r : ranks)
    deriving.push_back(std::async(std::launch::async, [&m, &r, steps] { return derive_run(m, r.execs, steps); }));
  const std::string module_bytes = module_to_binary(m);
  if (static_cast<int64_t>(module_bytes.size()) > kMaxModuleBytes)
    throw Error("trace: module '" + m.name + "' is " + std::to_string(module_bytes.size()) +
                " bytes serialized, more than a trace.db stores (" + std::to_string(kMaxModuleBytes) + ")");
  const std::vector<SchedulePlace> places = schedule_places(m);

  db.exec("BEGIN IMMEDIATE", "begin a run");
  try {
    const DeviceInfo device_info =
        info.device.name.empty() ? device_from_machine(m.machine) : info.device;
    RunRows rows;
    rows.device = device_id(device_info);
    rows.started_at = info.started_at_ns ? info.started_at_ns : now_ns();
    rows.graph = graph_id(m, module_bytes, places);
    rows.model = info.model.empty() ? m.provenance.source : info.model;
    rows.policy = info.policy.empty() ? m.graph.schedule.policy : info.policy;
    rows.params = info.policy_params.empty() ? format_attrs(m.graph.schedule.params) : info.policy_params;
    rows.batch = info.batch > 0 ? info.batch : attr_int_or(m.attrs, "batch", 1);
    rows.steps = steps;
    rows.ranks = static_cast<int32_t>(ranks.size());
    DerivedRun rank0;
    int64_t rank0_run = 0;
    for (size_t r = 0; r < ranks.size(); ++r) {
      rows.rank = static_cast<int32_t>(r);
      rows.offset = ranks[r].execs.empty() ? 0 : ranks[r].origin - ranks[0].origin;
      DerivedRun derived;
      const int64_t run = write_rank(m, info, rows, rank0_run, ranks[r], deriving[r], derived);
      if (r == 0) {
        rank0_run = run;
        rank0 = std::move(derived);
      }
    }
    if (before_commit) before_commit();
    db.exec("COMMIT", "commit the run");
    if (stored) {
      RunRecord& rec = stored->run;
      rec = RunRecord{};
      rec.id = rank0_run;
      rec.kind = info.kind;
      rec.model = rows.model;
      rec.policy = rows.policy;
      rec.policy_params = rows.params;
      rec.pipeline = m.provenance.pipeline;
      rec.options = info.options;
      rec.tool_version = tool_version();
      rec.batch = rows.batch;
      rec.steps = steps;
      rec.started_at_ns = rows.started_at;
      rec.graph = rows.graph;
      rec.num_workers = rank0.num_workers;
      rec.num_executions = static_cast<int64_t>(ranks[0].execs.size());
      rec.duration_ns = rank0.duration_ns;
      rec.max_task_ns = rank0.max_task_ns;
      rec.device = device_info;
      rec.ranks = rows.ranks;
      stored->steps = std::move(rank0.steps);
      stored->executions = std::move(ranks[0].execs);
      stored->bubbles = std::move(rank0.bubbles);
    }
    return rank0_run;
  } catch (...) {
    sqlite3_exec(db.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
    strings.clear();
    throw;
  }
}

int64_t TraceWriter::Impl::write_rank(const Module& m, const RunInfo& info, const RunRows& rows,
                                      int64_t rank0_run, const RankExecutions& rank,
                                      std::future<DerivedRun>& deriving, DerivedRun& derived) {
  const std::vector<Execution>& execs = rank.execs;
  const RunExtent extent = run_extent(m, execs);
  SqliteStmt r(db,
               "INSERT INTO run(kind, graph, device, model, policy, policy_params, options, "
               "batch, steps, started_at_ns, tool_version, num_workers, num_executions, "
               "duration_ns, max_task_ns, time_origin_ns, rank, ranks, rank0_run, rank_offset_ns) "
               "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id");
  r.bind(1, std::string_view(info.kind)).bind(2, rows.graph).bind(3, rows.device).bind(4, intern(rows.model))
      .bind(5, intern(rows.policy)).bind(6, std::string_view(rows.params))
      .bind(7, std::string_view(info.options)).bind(8, rows.batch).bind(9, int64_t{rows.steps})
      .bind(10, rows.started_at)
      .bind(11, intern(tool_version())).bind(12, int64_t{extent.num_workers})
      .bind(13, static_cast<int64_t>(execs.size())).bind(14, extent.duration_ns)
      .bind(15, extent.max_task_ns).bind(16, rank.origin).bind(17, int64_t{rows.rank})
      .bind(18, int64_t{rows.ranks}).bind(20, rows.offset);
  if (rows.rank > 0) r.bind(19, rank0_run);
  if (!r.step()) db.fail("store the run");
  const int64_t run = r.col_int(0);
  r.reset();

  BatchInsert x(db,
                "INSERT INTO execution(run, worker, start_ns, task, step, sm, wait_begin_ns, "
                "end_ns)",
                8);
  for (const Execution& e : execs)
    x.value(run).value(e.worker).value(e.start_ns).value(e.task).value(e.step).value(e.sm)
        .value(e.wait_begin_ns).value(e.end_ns);
  x.finish();

  derived = deriving.get();
  BatchInsert b(db,
                "INSERT INTO bubble(run, worker, start_ns, end_ns, cause, step, task, event, "
                "producer, producer_worker)",
                10);
  for (const Bubble& e : derived.bubbles) {
    b.value(run).value(e.worker).value(e.start_ns).value(e.end_ns).text(name_of(e.cause))
        .value(e.step);
    if (e.task >= 0) b.value(e.task);
    else b.null();
    if (e.event >= 0) b.value(e.event).value(e.producer).value(e.producer_worker);
    else b.null().null().null();
  }
  b.finish();
  SqliteStmt s(db,
               "INSERT INTO step(run, step, start_ns, end_ns, busy_ns) VALUES(?, ?, ?, ?, ?)");
  for (const StepRecord& e : derived.steps)
    s.bind(1, run).bind(2, int64_t{e.step}).bind(3, e.start_ns).bind(4, e.end_ns)
        .bind(5, e.busy_ns).run();
  SqliteStmt o(db,
               "INSERT INTO operator_stat(run, op, executions, total_ns, max_ns, wait_ns) "
               "VALUES(?, ?, ?, ?, ?, ?)");
  for (const OperatorStat& e : derived.op_stats)
    o.bind(1, run).bind(2, int64_t{e.op}).bind(3, e.executions).bind(4, e.total_ns)
        .bind(5, e.max_ns).bind(6, e.wait_ns).run();
  try {
    check_stored_run(db, run, execs, derived.bubbles);
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " (the new run does not read back; nothing was written)");
  }
  return run;
}

TraceWriter::TraceWriter(const std::string& db_path) : impl_(std::make_unique<Impl>(db_path)) {}
TraceWriter::~TraceWriter() = default;

int64_t TraceWriter::write_run(const Module& scheduled, const RunInfo& info,
                               const std::vector<Execution>& execs, StoredRun* stored) {
  return impl_->write(scheduled, info, execs, stored);
}

void TraceWriter::set_before_commit(std::function<void()> hook) {
  impl_->before_commit = std::move(hook);
}

int64_t write_run(const std::string& db_path, const Module& scheduled, const RunInfo& info,
                  const std::vector<Execution>& execs, StoredRun* stored) {
  TraceWriter w(db_path);
  return w.write_run(scheduled, info, execs, stored);
}

}  // namespace mpk
