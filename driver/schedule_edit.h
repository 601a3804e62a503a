// Hand edits of a schedule (mpk-studio's timeline and pipeline view edit through it): an
// edit session on a scheduled module moves one or more tasks to another worker or another
// place in a worker's order. Each edit is checked by the deadlock check (ir/deadlock.h,
// the verifier's schedule.deadlock) before it is kept: a move that can deadlock (or breaks
// a dependency: a consumer ahead of its producer on one worker) is refused with a message
// naming the tasks and events of the cycle. A kept edit re-simulates the schedule at once
// (traces/simulator.h). Edits undo and redo; their moves are pinned-policy moves, written
// in its grammar (`13>w2@after:10;5>w0@first`, docs/optimizer.md), so the edited module is
// saved as `assign-sm{policy=pinned,base=<policy>,moves=...}` over the schedule it started
// from, and `mpk run --graph edited.mpk` runs it on any backend.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ir/module.h"
#include "ir/serialize.h"
#include "ir/cost_params.h"
#include "traces/trace_db.h"

namespace mpk {

// One kept edit: its moves in order and, for undo and redo, the lists of the workers
// it touched before and after.
struct ScheduleEdit {
  std::string label;  // "task 12 (L0.q_proj:linear) to worker 3 after task 40"
  std::string moves;  // pinned-policy moves, e.g. "12>w3@after:40"
  std::vector<std::pair<int32_t, std::vector<TaskId>>> before, after;
  int64_t duration_ns = 0;  // the simulated run with this edit
};

struct EditOutcome {
  bool accepted = false;
  // Accepted: what moved and the simulated step time before and after. Refused: why,
  // naming the tasks, workers and events of the cycle when it can deadlock.
  std::string message;
};

// Gives `m`, whose schedule is `original`'s lists with `moves` (pinned-policy text)
// applied in order, the schedule the pinned policy makes of them: runs assign-sm with
// pinned_options(original, moves) on m, checks that it gives the same lists, and puts
// that pass in place of the last assign-sm of m's provenance pipeline. Throws mpk::Error
// when the replay differs (a schedule that its recorded policy does not reproduce) or
// the moves do not parse.
void pin_schedule(Module& m, const Schedule& original, const std::string& moves);

class ScheduleEditor {
 public:
  // `scheduled` must carry a deadlock-free schedule (throws mpk::Error otherwise). It
  // is simulated for `steps` steps, unless `simulated` gives its executions already.
  ScheduleEditor(Module scheduled, const CostParams& costs, int32_t steps,
                 std::vector<Execution> simulated = {});
  ~ScheduleEditor();
  ScheduleEditor(const ScheduleEditor&) = delete;
  ScheduleEditor& operator=(const ScheduleEditor&) = delete;

  // The module with the current schedule, and that schedule simulated.
  const Module& module() const { return module_; }
  const std::vector<Execution>& executions() const { return execs_; }
  int32_t steps() const { return steps_; }
  int64_t duration_ns() const { return duration_ns_; }
  int64_t original_duration_ns() const { return original_duration_ns_; }
  const Schedule& original_schedule() const { return original_; }
  int32_t worker_of(TaskId t) const;
  int32_t position_of(TaskId t) const;

  // Moves `tasks`, in this order and one after another, onto `worker` right after
  // `after` (-1: first in its list). All or nothing: refused when a task or the worker
  // does not exist, the anchor is not on the worker or is moved too, nothing would
  // change, or the verifier finds that a step of it can deadlock.
  EditOutcome move(const std::vector<TaskId>& tasks, int32_t worker, TaskId after);
  // Moves `t` to `worker`, placed among its tasks by simulated start time (after every
  // task that started before t did in step 0), which keeps the order consistent with a
  // valid execution.
  EditOutcome move_to_worker(TaskId t, int32_t worker);
  // Moves `t` `delta` places later (negative: earlier) in its worker's list.
  EditOutcome shift(TaskId t, int32_t delta);

  bool can_undo() const { return applied_ > 0; }
  bool can_redo() const { return applied_ < edits_.size(); }
  bool undo();  // false when there is nothing to undo
  bool redo();
  // Every edit kept; the first applied() are in effect, the rest can be redone.
  const std::vector<ScheduleEdit>& edits() const { return edits_; }
  size_t applied() const { return applied_; }

  // The moves of the applied edits, in order, as pinned-policy text ("" when none).
  std::string moves() const;
  // The module as saved: the current lists as a pinned schedule over the original one
  // (pin_schedule); the module itself when no edit is applied.
  Module edited_module() const;
  // Writes edited_module() (atomically; ir/serialize.h). Throws mpk::Error.
  void save(const std::string& path, Format format = Format::kBinary) const;

 private:
  struct Lists;  // the task-graph index and the worker lists the moves edit

  void resimulate();
  void set_lists(const std::vector<std::pair<int32_t, std::vector<TaskId>>>& lists);
  // After a change to the module's schedule: touches its graph (older indexes of it are
  // stale) and builds the index and the lists over it again.
  void reindex();
  std::string describe(TaskId t) const;
  std::string step_change(int64_t before_ns) const;
  int32_t num_tasks() const { return static_cast<int32_t>(module_.graph.tasks.size()); }

  Module module_;
  Schedule original_;
  CostParams costs_;
  int32_t steps_;
  std::unique_ptr<Lists> lists_;
  std::vector<Execution> execs_;
  std::vector<int64_t> start0_;  // per task: its simulated start in step 0
  int64_t duration_ns_ = 0, original_duration_ns_ = 0;
  std::vector<ScheduleEdit> edits_;
  size_t applied_ = 0;
};

}  // namespace mpk
