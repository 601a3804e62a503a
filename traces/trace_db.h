// trace.db: the SQLite file that records how scheduled task graphs ran (on the GPU, in
// the simulator, on the CPU). TraceWriter appends one run per transaction (device +
// graph with its exact serialized module + run row + task executions, with bubbles,
// steps and per-operator statistics computed on the way in); TraceReader is the small
// query API that the studio and the CLI share. docs/trace-schema.md describes the tables.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/module.h"

namespace mpk {

// The schema this build writes. Schema 2 added the stored module of each graph
// (graph_module), schema 3 the ranks of a tensor-parallel launch (run.rank, ranks,
// rank0_run, rank_offset_ns); older files are read as they are (their runs have no stored
// module, or are single-rank), and a writer upgrades one in place before it appends.
inline constexpr int kTraceSchemaVersion = 3;
inline constexpr int kOldestTraceSchemaVersion = 1;

// One task execution as a backend records it. Times are integer nanoseconds on any
// clock (e.g. %globaltimer); the writer shifts them so that a run starts at 0.
struct Execution {
  TaskId task = -1;
  int32_t step = 0;     // decode step, from 0
  int32_t worker = 0;   // index into the schedule's worker lists; must own `task`
  int32_t sm = 0;       // physical SM the worker ran on (== worker in the simulator)
  int64_t wait_begin_ns = 0;  // began waiting for the task's events
  int64_t start_ns = 0;       // events satisfied, task body started
  int64_t end_ns = 0;         // task body done (its events released after this)
  int32_t rank = 0;           // tensor-parallel rank (GPU) that ran it; clocks of all ranks
                              // must agree (traces/rank_clocks.h aligns GPU clocks)
};

struct DeviceInfo {
  std::string name;            // "NVIDIA H100 80GB HBM3", "H100-SXM (model)"
  int32_t sm_count = 0;
  int64_t clock_khz = 0;       // SM clock
  int64_t mem_clock_khz = 0;   // 0 when unknown
  int64_t mem_bandwidth = 0;   // bytes per second
  int64_t smem_per_sm = 0;     // bytes
};

// The device as the machine model describes it (what the simulator runs on).
DeviceInfo device_from_machine(const MachineModel& m);

struct RunInfo {
  std::string kind = "sim";  // "gpu" | "sim" | "cpu"
  std::string model;         // preset name or checkpoint path; "" = module's provenance source
  std::string policy;        // "" = the module schedule's policy
  std::string policy_params; // "" = the schedule's params as "{k=v, ...}"
  std::string options;       // free-form run settings, e.g. "decompose.tile=64 cost=costs.json"
  int64_t batch = 0;         // 0 = the module's `batch` attr
  int64_t steps = 0;         // 0 = 1 + the largest step among the executions
  int64_t started_at_ns = 0; // unix epoch ns; 0 = now
  DeviceInfo device;         // name "" = device_from_machine(module.machine)
};

enum class BubbleCause : uint8_t {
  kWait,        // the next task waited on an event (event, producer task, its worker)
  kQueueEmpty,  // this worker's list for the step was done while others still started work
  kStepTail,    // every task of the step had started; the step was draining
  kOverhead,    // a gap between tasks with no wait to blame (dispatch, event release)
};
const char* name_of(BubbleCause c);

struct Bubble {
  int32_t worker = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  BubbleCause cause = BubbleCause::kOverhead;
  int32_t step = 0;        // the step the idle time belongs to
  TaskId task = -1;        // kWait/kOverhead: the task that was about to run
  EventId event = -1;      // kWait: the event it waited on last
  TaskId producer = -1;    // kWait: the last producer of that event
  int32_t producer_worker = -1;
};

struct StoredRun;

// Opens or creates `db_path` and appends runs. Each write_run is one transaction; a
// crash while writing leaves the earlier runs intact. Executions of several ranks (a
// tensor-parallel launch) are stored as one run per rank 0..max rank, in the same
// transaction: each run holds its rank's executions from its own start, and says where
// that start lies on rank 0's time axis (RunRecord::rank_offset_ns). Throws mpk::Error for a file
// that is not a trace.db, a newer schema, or executions that do not match the module.
// The module is stored exactly as given (ir/serialize.h binary form), once per graph.
class TraceWriter {
 public:
  explicit TraceWriter(const std::string& db_path);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // `scheduled` must carry a schedule. Returns the new run's id (rank 0's). `stored`, when given,
  // receives the run as a reader would read it back (so a caller can analyse it without
  // reading the file again).
  int64_t write_run(const Module& scheduled, const RunInfo& info,
                    const std::vector<Execution>& execs, StoredRun* stored = nullptr);

  // Called inside each run's transaction just before COMMIT (crash tests kill the
  // process there; tools may report progress).
  void set_before_commit(std::function<void()> hook);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Convenience: open, write one run, close.
int64_t write_run(const std::string& db_path, const Module& scheduled, const RunInfo& info,
                  const std::vector<Execution>& execs, StoredRun* stored = nullptr);

// ---- reading ----

struct RunRecord {
  int64_t id = 0;
  std::string kind, model, policy, policy_params, pipeline, options, tool_version;
  int64_t batch = 0, steps = 0, started_at_ns = 0;
  int64_t graph = 0;          // graph id (runs of the same scheduled graph share it)
  int32_t num_workers = 0;
  int64_t num_executions = 0;
  int64_t duration_ns = 0;    // end of the last execution
  int64_t max_task_ns = 0;    // longest single execution (bounds window queries)
  DeviceInfo device;
  // A tensor-parallel launch is one run per rank: this run is rank `rank` of `ranks`;
  // rank0_run is rank 0's run (0 for rank 0 itself), and this run's time 0 lies at
  // rank_offset_ns on rank 0's time axis.
  int32_t rank = 0, ranks = 1;
  int64_t rank0_run = 0;
  int64_t rank_offset_ns = 0;
};

// Executions read back: times relative to the run's start.
using ExecutionRecord = Execution;

struct StepRecord {
  int32_t step = 0;
  int64_t start_ns = 0;   // end of the previous step (0 for step 0)
  int64_t end_ns = 0;     // end of the step's last execution
  int64_t busy_ns = 0;    // union of its executions per worker (traces/busy_time.h)
};

// One run's rows as stored: what compute_stats (traces/analysis.h) analyses.
struct StoredRun {
  RunRecord run;
  std::vector<StepRecord> steps;
  std::vector<Execution> executions;  // times from the run's start, by (worker, start)
  std::vector<Bubble> bubbles;        // by (worker, start)
};

struct OperatorStat {
  OpId op = -1;
  std::string name, kind;
  int32_t layer = -1;
  int64_t executions = 0, total_ns = 0, max_ns = 0, wait_ns = 0;
};

struct DependencyRecord {
  EventId event = -1;
  int32_t step_distance = 0;
  TaskId task = -1;  // the producer (for a task's inputs) or consumer (for its outputs)
};

struct TaskRecord {
  TaskId id = -1;
  OpId op = -1;
  std::string kind;
  int32_t worker = -1, position = -1;
  int64_t bytes = 0, flops = 0;
};

struct OperatorRecord {
  OpId id = -1;
  std::string name, kind;
  int32_t layer = -1;
};

// One thread at a time per reader (open one reader per thread; they share the file).
// A trace.db is untrusted: every row returned is checked against its run's graph first
// (traces/trace_rows.h), and a row that does not fit throws mpk::Error naming the file,
// the run or graph, the table, the row and the field.
class TraceReader {
 public:
  // Read-only. Throws mpk::Error naming the file when it is missing, not a trace.db,
  // truncated/corrupt, or written by a newer schema.
  explicit TraceReader(const std::string& db_path);
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  const std::string& path() const;
  std::vector<RunRecord> runs() const;
  RunRecord run(int64_t id) const;  // throws mpk::Error for an unknown id
  int64_t last_run() const;         // the newest run's id; throws when there is none
  // The runs of `run`'s launch, rank 0 first, one per rank (just `run` for a single-rank
  // run). Throws mpk::Error naming the file when the launch's runs disagree (a rank
  // missing or twice, another graph or rank count).
  std::vector<RunRecord> rank_runs(int64_t run) const;

  // All executions, ordered by (worker, start).
  std::vector<ExecutionRecord> executions(int64_t run) const;
  // Executions of one worker overlapping [t0, t1), ordered by start.
  std::vector<ExecutionRecord> executions(int64_t run, int32_t worker, int64_t t0,
                                          int64_t t1) const;
  // The execution of `task` at `step`, if the run has it.
  std::optional<ExecutionRecord> execution_of(int64_t run, TaskId task, int32_t step) const;
  std::vector<Bubble> bubbles(int64_t run) const;
  std::vector<Bubble> bubbles(int64_t run, int32_t worker, int64_t t0, int64_t t1) const;
  std::vector<StepRecord> steps(int64_t run) const;
  std::vector<OperatorStat> operator_stats(int64_t run) const;

  std::vector<OperatorRecord> operators(int64_t graph) const;
  std::vector<TaskRecord> tasks(int64_t graph) const;
  // Events `task` waits on, with their producers; events it triggers, with their consumers.
  std::vector<DependencyRecord> producers_of(int64_t graph, TaskId task) const;
  std::vector<DependencyRecord> consumers_of(int64_t graph, TaskId task) const;

  // The scheduled graph of a run as a Module without tensors or regions: operators,
  // tasks (kind, op, bytes, flops, waits/triggers), events, schedule, machine model
  // from the run's device. Enough for the simulator and the analyses.
  Module load_graph(int64_t run) const;

  // The exact module the run was made from, as the writer stored it: parsed and verified
  // (ir/serialize.h), and checked against the run's graph rows (tasks, events, schedule).
  // nullopt for a run written before trace.db stored modules (schema 1). Throws
  // mpk::Error naming the file and run when the stored module does not parse, verify
  // or match.
  std::optional<Module> stored_module(int64_t run) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mpk
