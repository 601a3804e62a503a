// The studio's headless view of one stored run (no ImGui): every execution in one array
// ordered by (worker, start) with per-worker ranges, bubbles per worker, the scheduled
// graph (operators, tasks, events) for names and kinds, and the steps. Answers what the
// panels ask every frame: time-window queries by binary search, the task or bubble under
// a time on a worker, producers and consumers of an execution, the blame of a wait and
// the critical-path walk (traces/critical_path.h's walker, whose BlameIndex answers the
// wait queries), busy time as a union per worker, and the coarse picture that zoomed-out
// drawing reads (studio/model/coarse_picture.h). A linear group (executions sharing worker,
// step, start and end: the megakernel runs q/k/v or gate/up as one unit) is one execution
// with members: they are adjacent, and every query treats them as one. Loading a run of
// 1M executions takes a second or two; every query after that is O(log n) or O(answer).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ir/module.h"
#include "studio/model/coarse_picture.h"
#include "traces/critical_path.h"
#include "traces/run_derive.h"
#include "traces/trace_db.h"

namespace mpk::studio {

// A half-open range [begin, end) of indices into TraceModel::executions() or into one
// worker's bubbles.
struct IndexRange {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
  bool empty() const { return end <= begin; }
};

// One side of a dependency of an execution: the other execution (-1 when the run does
// not have it, e.g. a producer of step -1), the event between them and its distance.
struct DepLink {
  int64_t exec = -1;
  TaskId task = -1;
  int32_t step = 0;
  EventId event = -1;
  int32_t step_distance = 0;
};

class TraceModel {
 public:
  // Loads run `run` of `reader`. Throws mpk::Error for an unknown run.
  TraceModel(const TraceReader& reader, int64_t run);
  ~TraceModel();
  TraceModel(const TraceModel&) = delete;
  TraceModel& operator=(const TraceModel&) = delete;

  const RunRecord& run() const { return run_; }
  const Module& graph() const { return graph_; }
  int32_t num_workers() const { return static_cast<int32_t>(worker_begin_.size()) - 1; }
  int32_t num_steps() const { return static_cast<int32_t>(steps_.size()); }
  int64_t duration_ns() const { return run_.duration_ns; }
  int64_t max_task_ns() const { return run_.max_task_ns; }
  const std::vector<StepRecord>& steps() const { return steps_; }

  // ---- executions: one array ordered by (worker, start, end, step, task); on a worker
  // starts never decrease (a worker runs one task, or one linear group, at a time).
  const std::vector<Execution>& executions() const { return execs_; }
  const Execution& execution(int64_t i) const { return execs_[static_cast<size_t>(i)]; }
  IndexRange worker_range(int32_t worker) const;
  // The SM a worker's executions ran on (the GPU places blocks where it likes: worker 0
  // may be SM 128), -1 for a worker without executions; its row label: "w0 SM 128".
  int32_t sm_of(int32_t worker) const;
  std::string row_label(int32_t worker) const;
  // Executions of `worker` overlapping [t0, t1), found by binary search (the lookback
  // is bounded by the run's longest execution).
  IndexRange executions_in(int32_t worker, int64_t t0, int64_t t1) const;
  // The execution of `worker` covering time t, or, when none does, the nearest one
  // within `slack_ns` of t. -1 when there is none.
  int64_t execution_at(int32_t worker, int64_t t, int64_t slack_ns = 0) const;
  // The execution of `task` at `step`; -1 when the run does not have it.
  int64_t find(TaskId task, int32_t step) const { return walker_->blames().executions().find(task, step); }

  // ---- linear groups: the members of `exec`'s group (itself alone when it has none),
  // adjacent in executions(), the group's lowest task first. O(members).
  IndexRange group_of(int64_t exec) const;

  // ---- busy time, the union of a worker's executions (traces/busy_time.h)
  // Busy time of `worker` in [t0, t1). O(log n).
  int64_t busy_ns(int32_t worker, int64_t t0, int64_t t1) const;
  // Busy time of `worker` before t. `hint` (an index into executions(), or -1) speeds up a
  // walk to the right: it is moved to where the next search with a later t starts.
  double busy_before(int32_t worker, double t, int64_t* hint = nullptr) const;
  // Where a walk of summarize() calls along a row is: the next searches start here.
  struct SpanCursor {
    int64_t exec = -1, bubble = -1;  // indices into executions() and the worker's bubbles
    double t = -1, busy_before = 0;  // busy_before(t) of the last span's end
  };
  // A span of `worker` summed exactly: busy time, the execution at its middle (or the
  // next to start within it) and the idle cause with the most time in it. With a cursor,
  // spans taken left to right cost O(log distance) each.
  SpanSummary summarize(int32_t worker, double t0, double t1, SpanCursor* cursor = nullptr) const;
  // The run cut into cells, for drawing zoomed out.
  const CoarsePicture& picture() const { return picture_; }

  // ---- bubbles, per worker, ordered by start, never overlapping.
  std::span<const Bubble> bubbles(int32_t worker) const;
  IndexRange bubbles_in(int32_t worker, int64_t t0, int64_t t1) const;  // indices into bubbles(worker)
  // The bubble of `worker` covering time t; nullptr when the worker was busy or t is
  // outside the run.
  const Bubble* bubble_at(int32_t worker, int64_t t) const;
  // Appends the indices (into bubbles(worker)) of the worker's bubbles overlapping
  // [t0, t1) that last at least min_ns, and possibly some down to min_ns / 2. Visits
  // O(answer + log n) bubbles through a level of detail: per power of two, the bubbles
  // lasting at least that long.
  void wide_bubbles(int32_t worker, int64_t t0, int64_t t1, int64_t min_ns,
                    std::vector<int64_t>& out) const;

  // ---- metadata
  const Task& task(TaskId t) const { return graph_.graph.tasks[static_cast<size_t>(t)]; }
  const Operator& op_of(TaskId t) const;
  OpKind kind_of(TaskId t) const { return kinds_[static_cast<size_t>(t)]; }
  // The label of an execution: "<operator> [task <id>]"; of a linear group's member, the
  // group's: "3 tasks: L0.q_proj+k_proj+v_proj [tasks 4, 5, 6]".
  std::string label(int64_t exec) const;
  // An execution's operator name; a linear group member's, the group's, its layer said
  // once: "L0.q_proj+k_proj+v_proj".
  std::string group_name(int64_t exec) const;
  // Bytes the execution's task streams (the task table's estimate).
  int64_t bytes_of(int64_t exec) const { return task_bytes_[static_cast<size_t>(execution(exec).task)]; }

  // ---- dependencies
  // Executions `exec` waited for (one per producer of every event it waits on, at step
  // exec.step - distance) and executions that waited for it.
  std::vector<DepLink> producers(int64_t exec) const;
  std::vector<DepLink> consumers(int64_t exec) const;
  // The waited event whose last producer finished last (BlameIndex semantics).
  Blame blame(int64_t exec) const { return walker_->blames().blame(execution(exec)); }
  // The critical-path walker over the executions (its nodes are linear groups).
  const CriticalPathWalker& walker() const { return *walker_; }
  // The worker's previous execution, -1 for its first.
  int64_t previous_on_worker(int64_t exec) const;

  // Time to load the run, for the status line.
  double load_seconds() const { return load_seconds_; }

 private:
  RunRecord run_;
  Module graph_;
  std::vector<Execution> execs_;
  std::vector<int64_t> worker_begin_;        // num_workers + 1 offsets into execs_
  std::vector<Bubble> bubbles_;              // ordered by (worker, start)
  std::vector<int64_t> bubble_begin_;        // num_workers + 1 offsets into bubbles_
  // wide_[w][l]: indices into bubbles(w) of those lasting >= 2^(l + kLodBase) ns.
  static constexpr int kLodBase = 8;
  std::vector<std::vector<std::vector<int32_t>>> wide_;
  std::vector<StepRecord> steps_;
  std::vector<OpKind> kinds_;                // operator kind of each task
  std::vector<int64_t> task_bytes_;          // bytes of each task (compact: hot in the lanes)
  std::vector<int64_t> busy_prefix_;         // busy_union_prefix of execs_
  std::vector<int64_t> cover_end_;           // latest end among the worker's execs up to i
  CoarsePicture picture_;
  std::unique_ptr<CriticalPathWalker> walker_;
  double load_seconds_ = 0;
};

}  // namespace mpk::studio
