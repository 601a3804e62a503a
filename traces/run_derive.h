// What the writer derives from a run's executions before storing them: validation
// against the scheduled graph, step spans, bubbles with their causes, and per-operator
// statistics. Pure functions over in-memory data, so they are tested without SQLite.
//
// Bubble rules (docs/trace-schema.md): each worker's timeline [0, end of the run] is
// split into executions and idle pieces. An idle piece before a task of step k that
// follows the worker's step-j work (j < k, or the run's start) first covers, for every
// finished step j' in j..k-1, queue-empty time up to the last start of any step-j' task
// and then step-tail time up to the end of step j'. What is left before the task is a
// wait (blaming the waited event whose last producer finished last) when the task
// waited or its last producer finished after the worker was free, else overhead.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/module.h"
#include "ir/task_graph_index.h"
#include "traces/trace_db.h"

namespace mpk {

// Where each task sits in the schedule.
struct SchedulePlace {
  int32_t worker = -1;
  int32_t position = -1;
};
std::vector<SchedulePlace> schedule_places(const Module& m);

// Checks executions against the module (task and worker ids, a task on its scheduled
// worker, wait_begin <= start <= end, each (task, step) once, steps in [0, num_steps))
// and shifts all times so that the earliest wait_begin is 0. Returns the shift.
// Throws mpk::Error naming the first bad execution.
int64_t validate_and_normalize(const Module& m, std::vector<Execution>& execs,
                               int32_t num_steps);

// Index of executions by (task, step); -1 when missing.
class ExecutionIndex {
 public:
  ExecutionIndex(size_t num_tasks, int32_t num_steps, const std::vector<Execution>& execs);
  int64_t find(TaskId task, int32_t step) const {
    if (step < 0 || step >= num_steps_) return -1;
    return slots_[static_cast<size_t>(task) * num_steps_ + step];
  }

 private:
  int32_t num_steps_;
  std::vector<int64_t> slots_;
};

// The event whose release let execution `x` start last: the waited event whose
// producers (at step x.step - step_distance) finished latest. event -1 when none.
struct Blame {
  EventId event = -1;
  TaskId producer = -1;
  int32_t producer_worker = -1;
  int64_t producer_end_ns = 0;
  int64_t producer_exec = -1;  // index into the executions
};

// Answers blame queries in O(events waited on): the latest-ending producer execution
// of every (event, step) is found once. Keeps references to `m` and `execs`; throws
// mpk::Error naming an event's task that does not exist.
class BlameIndex {
 public:
  BlameIndex(const Module& m, const std::vector<Execution>& execs, int32_t num_steps);
  Blame blame(const Execution& x) const;
  const ExecutionIndex& executions() const { return index_; }
  // The index of m's graph (who waits on and triggers what).
  const TaskGraphIndex& graph() const { return graph_; }

 private:
  const Module& m_;
  const std::vector<Execution>& execs_;
  int32_t num_steps_;
  ExecutionIndex index_;
  TaskGraphIndex graph_;
  std::vector<int64_t> last_;  // [event * num_steps + step] -> execution index, -1 if none
};

struct DerivedRun {
  int32_t num_steps = 0;
  int32_t num_workers = 0;
  int64_t duration_ns = 0;
  int64_t max_task_ns = 0;
  std::vector<StepRecord> steps;
  std::vector<Bubble> bubbles;           // ordered by (worker, start)
  std::vector<OperatorStat> op_stats;    // one per operator with executions, by op id
};

// What the run row says of a run's extent: its workers, its duration (the last end)
// and its longest execution. `execs` must have passed validate_and_normalize.
struct RunExtent {
  int32_t num_workers = 0;
  int64_t duration_ns = 0;
  int64_t max_task_ns = 0;
};
RunExtent run_extent(const Module& m, const std::vector<Execution>& execs);

// `execs` must have passed validate_and_normalize.
DerivedRun derive_run(const Module& m, const std::vector<Execution>& execs, int32_t num_steps);

}  // namespace mpk
