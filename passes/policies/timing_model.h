// The timing model the policies and the summary share, over the task-graph index's
// same-step (step_distance 0) events: a task costs estimate_task_ns of the cost model
// (ir/cost_params.h); a dependency between tasks on different workers adds the event
// latency. Distance-1 events order a task after the previous step and cannot delay
// one step of a steady state beyond what its same-step events do in this model.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "ir/cost_params.h"
#include "ir/module.h"
#include "ir/task_graph_index.h"

namespace mpk {

// estimate_task_ns of every task, with `sm_count` SMs sharing the bandwidth.
std::vector<double> task_costs(const TaskGraph& g, const CostParams& c, int32_t sm_count);

// Per task: its cost plus the longest chain of costs and latencies after it (the
// bottom level). The largest is the critical path estimate. Throws mpk::Error naming a
// task on a cycle of distance-0 events.
std::vector<double> bottom_levels(const TaskGraphIndex& g, const std::vector<double>& cost,
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
// a task is missing, listed twice or out of range, or when the lists can deadlock (give
// it lists that the deadlock check, ir/deadlock.h, passed).
ScheduleTiming simulate_schedule(const TaskGraphIndex& g, const std::vector<std::vector<TaskId>>& workers,
                                 const std::vector<double>& cost, double latency_ns);

}  // namespace mpk
