// The same-step (step_distance 0) dependency structure of a task graph in compact form,
// and the timing model the policies, assign-sm and the summary share: a task costs
// estimate_task_ns; a dependency between tasks on different workers adds the event
// latency. Distance-1 events order a task after the previous step and cannot delay
// one step of a steady state beyond what its same-step events do in this model.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "ir/module.h"

namespace mpk {

class StepGraph {
 public:
  // Throws mpk::Error for an event naming a task that does not exist.
  explicit StepGraph(const TaskGraph& g);

  int32_t num_tasks() const { return num_tasks_; }
  // Distance-0 events that task t waits on / triggers, each once, ascending.
  std::span<const EventId> waits(TaskId t) const;
  std::span<const EventId> triggers(TaskId t) const;
  const std::vector<TaskId>& producers(EventId e) const { return graph_->events[e].producers; }
  const std::vector<TaskId>& consumers(EventId e) const { return graph_->events[e].consumers; }
  int32_t num_events() const { return static_cast<int32_t>(graph_->events.size()); }
  const TaskGraph& graph() const { return *graph_; }

  // Tasks in an order where every producer precedes its consumers (ties by task id);
  // throws mpk::Error naming a task on a cycle.
  std::vector<TaskId> topological_order() const;

 private:
  const TaskGraph* graph_;
  int32_t num_tasks_;
  std::vector<int32_t> wait_begin_, trigger_begin_;
  std::vector<EventId> wait_events_, trigger_events_;
};

// estimate_task_ns of every task.
std::vector<double> task_costs(const TaskGraph& g, const MachineModel& m);

// Per task: its cost plus the longest chain of costs and latencies after it (the
// bottom level). The largest is the critical path estimate.
std::vector<double> bottom_levels(const StepGraph& g, const std::vector<double>& cost,
                                  double latency_ns);

// The finish times of an event's producers, summarized for a consumer's data-ready
// time: the latest finish, its worker, and the latest finish on any other worker.
class EventReady {
 public:
  void add(int32_t worker, double finish);
  // When a consumer on `worker` may start as far as this event is concerned.
  double ready_on(int32_t worker, double latency_ns) const;
  // The same for a worker that runs none of the producers.
  double ready_elsewhere(double latency_ns) const;
  int32_t latest_worker() const { return worker_; }

 private:
  static constexpr double kNone = -std::numeric_limits<double>::infinity();
  int32_t worker_ = -1;
  double latest_ = kNone;
  double other_ = kNone;
};

struct ScheduleTiming {
  std::vector<double> start_ns, finish_ns;  // per task
  double makespan_ns = 0;
};

// Runs one step of `workers` in the timing model: each worker takes its tasks in order,
// each starts when its worker is free and its events are ready. Throws mpk::Error when
// a task is missing, listed twice or out of range, or when the lists can deadlock.
ScheduleTiming simulate_schedule(const StepGraph& g, const std::vector<std::vector<TaskId>>& workers,
                                 const std::vector<double>& cost, double latency_ns);

}  // namespace mpk
