// The task-graph index: the adjacency of a TaskGraph, built once from its events (the
// one authority on who waits for whom) and its schedule, and shared by the verifier,
// the policies, the simulator, codegen, the CPU executor and the trace analyses
// (docs/ir.md, "The task-graph index").
//
// Validity: an index answers for the graph object it was built from, at the generation
// it was built at (TaskGraph::generation). Whoever changes a graph's tasks, events or
// schedule calls TaskGraph::touch() (the pass manager does after every pass that
// reports a change); from then on every query of an older index throws mpk::Error
// ("stale task-graph index"), as does one whose graph's task or event count moved. An
// index is built by whoever needs it and passed down; nothing caches one behind the
// graph's back.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ir/module.h"

namespace mpk {

class TaskGraphIndex {
 public:
  // Indexes g's events and schedule; g must outlive the index. References to tasks or
  // workers that do not exist are skipped and duplicates dropped, so an unverified
  // graph indexes too; problem() names the first such reference.
  explicit TaskGraphIndex(const TaskGraph& g);

  // "" when every event names existing tasks and every listed task exists; else one
  // line naming the first reference that does not ("event 3 names producer task 9,
  // which does not exist"). An event's unsorted or repeated lists are the verifier's
  // business (structure.event-list), not counted here.
  const std::string& problem() const { return problem_; }
  // Throws mpk::Error(problem()) unless problem() is "".
  void require_valid() const;
  // Throws mpk::Error when the graph changed since the index was built (see above).
  void require_current() const {
    if (graph_->generation != generation_ || graph_->tasks.size() != num_tasks_ ||
        graph_->events.size() != num_events_)
      stale();
  }

  const TaskGraph& graph() const { return *graph_; }
  int32_t num_tasks() const { return static_cast<int32_t>(num_tasks_); }
  int32_t num_events() const { return static_cast<int32_t>(num_events_); }
  bool valid_task(TaskId t) const { return t >= 0 && static_cast<size_t>(t) < num_tasks_; }

  // The events task t waits on / triggers, ascending, each once: of any step distance,
  // or of distance 0 only (the ones that order one step).
  std::span<const EventId> waits(TaskId t) const { return slice(waits_, t); }
  std::span<const EventId> triggers(TaskId t) const { return slice(triggers_, t); }
  std::span<const EventId> same_step_waits(TaskId t) const { return slice(step_waits_, t); }
  std::span<const EventId> same_step_triggers(TaskId t) const { return slice(step_triggers_, t); }

  // An event's producers and consumers (existing tasks, ascending, each once) and its
  // step distance: a consumer at step k waits for the producers at step k - distance.
  std::span<const TaskId> producers(EventId e) const { return slice(producers_, e); }
  std::span<const TaskId> consumers(EventId e) const { return slice(consumers_, e); }
  int32_t distance(EventId e) const {
    require_current();
    return graph_->events[static_cast<size_t>(e)].step_distance;
  }

  // The schedule. A task listed more than once counts where it is listed first; two
  // tasks are worker-order neighbours when one follows the other in a list and neither
  // has such a neighbour on that side yet (so the order edges form chains).
  bool scheduled() const { return !graph_->schedule.empty(); }
  int32_t num_workers() const { return num_workers_; }
  int32_t worker_of(TaskId t) const { return at(worker_, t); }      // -1: on no worker
  int32_t position_of(TaskId t) const { return at(position_, t); }  // -1: on no worker
  TaskId next_on_worker(TaskId t) const { return at(next_, t); }    // -1: none
  TaskId prev_on_worker(TaskId t) const { return at(prev_, t); }    // -1: none
  // Every worker that lists t, in list order (more than one: scheduled twice).
  std::span<const int32_t> listings(TaskId t) const { return slice(listings_, t); }

 private:
  // Compressed rows: row i is items[begin[i], begin[i + 1]).
  struct Rows {
    std::vector<int32_t> begin, items;
  };
  std::span<const int32_t> slice(const Rows& r, int32_t i) const {
    require_current();
    const auto b = static_cast<size_t>(r.begin[static_cast<size_t>(i)]);
    const auto e = static_cast<size_t>(r.begin[static_cast<size_t>(i) + 1]);
    return {r.items.data() + b, e - b};
  }
  int32_t at(const std::vector<int32_t>& v, TaskId t) const {
    require_current();
    return v[static_cast<size_t>(t)];
  }
  [[noreturn]] void stale() const;
  void index_events();
  void index_schedule();

  const TaskGraph* graph_;
  uint64_t generation_;
  size_t num_tasks_, num_events_;
  std::string problem_;
  Rows waits_, triggers_, step_waits_, step_triggers_, producers_, consumers_, listings_;
  int32_t num_workers_ = 0;
  std::vector<int32_t> worker_, position_, next_, prev_;
};

// Where a walk of one step in dependency order starts: per event, its producers still
// to finish (distance-0 events; 0 for the others), and per task, its distance-0 events
// still incomplete (those with producers).
struct SameStepCounts {
  std::vector<int32_t> remaining;  // per event
  std::vector<int32_t> pending;    // per task
};
SameStepCounts same_step_counts(const TaskGraphIndex& g);

// The tasks in an order where every distance-0 event's producers come before its
// consumers, ties by the lowest task id; empty when distance-0 events form a cycle
// (ir/deadlock.h finds it).
std::vector<TaskId> same_step_order(const TaskGraphIndex& g);

}  // namespace mpk
