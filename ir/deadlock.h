// The one deadlock check (docs/ir.md, "Schedule"): static worker lists plus blocking
// waits can wait forever exactly when distance-0 dependency edges plus same-worker
// order edges form a cycle (distance-1 edges point into a later step and close none).
// The verifier (graph.cycle without worker order, schedule.deadlock with it), assign-sm's
// check of a policy's lists, the pinned policy's moves and mpk-studio's hand edits all
// ask it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/task_graph_index.h"

namespace mpk {

// Same-worker order: the task right after t on t's worker, -1 when none.
using NextOnWorker = std::function<TaskId(TaskId)>;
// The worker order of the index's own schedule.
NextOnWorker schedule_order(const TaskGraphIndex& g);
// Each task's worker in `lists` (-1: on none). Throws mpk::Error naming a listed task
// that does not exist, a task listed twice or, with `every_task`, the first task on no
// list.
std::vector<int32_t> list_workers(const TaskGraphIndex& g, const std::vector<std::vector<TaskId>>& lists,
                                  bool every_task);
// The worker order of `lists` (entries that are not tasks of g are skipped; a task
// listed twice follows its first listing).
NextOnWorker list_order(const TaskGraphIndex& g, const std::vector<std::vector<TaskId>>& lists);

// One link of a cycle: `task`, reached from the previous link's task through
// distance-0 `event` (the previous task triggers it, `task` waits on it), or through
// worker order (event -1: `task` comes right after the previous task on its worker).
// The first link's event closes the cycle (from the last link's task).
struct CycleLink {
  TaskId task = -1;
  EventId event = -1;
  bool operator==(const CycleLink&) const = default;
};

// Which tasks and events can never complete: Kahn's algorithm over the tasks and the
// distance-0 events (a task after its distance-0 events and, with `next`, after the
// task before it on its worker; an event after all its producers). O(tasks + event
// members).
class WaitCheck {
 public:
  explicit WaitCheck(const TaskGraphIndex& g, const NextOnWorker& next = nullptr);

  bool deadlocks() const { return stuck_tasks_ > 0; }
  int64_t stuck_tasks() const { return stuck_tasks_; }  // tasks that can never start
  bool stuck(TaskId t) const { return left_[static_cast<size_t>(t)] > 0; }
  bool stuck_event(EventId e) const { return left_[task_count() + static_cast<size_t>(e)] > 0; }

  // The shortest cycle through `through` when it lies on one; else the shortest cycle
  // through the lowest task of a cycle found by walking back from the lowest stuck
  // task. Empty when nothing deadlocks.
  std::vector<CycleLink> cycle(TaskId through = -1) const;

 private:
  size_t task_count() const { return next_.size(); }
  std::vector<CycleLink> shortest_cycle_through(TaskId t) const;
  TaskId task_on_a_cycle() const;

  const TaskGraphIndex& g_;
  std::vector<TaskId> next_, prev_;  // worker order, -1 none
  std::vector<int64_t> left_;        // tasks then events: unmet predecessors (0: done)
  int64_t stuck_tasks_ = 0;
};

// "task 12 -[event 7]-> task 40 -[worker order]-> task 12"; `name` names a task
// (default: "task <id>").
std::string print_cycle(const std::vector<CycleLink>& cycle,
                        const std::function<std::string(TaskId)>& name = nullptr);

}  // namespace mpk
