// HEFT-like list scheduling, shared by the critical-path and locality policies: take
// the ready task with the largest bottom level (its cost plus the longest chain of costs
// and cross-worker latencies after it), put it on the worker where it finishes first,
// given when each worker is free and when its events are ready there. Tasks enter the
// worker lists in dependency order, so the lists are deadlock-free.
#pragma once

#include <functional>
#include <vector>

#include "passes/policies/policy.h"
#include "passes/policies/timing_model.h"

namespace mpk {

class ListScheduler {
 public:
  // Plans with the request's cost model and `latency_ns` between workers.
  ListScheduler(const ScheduleRequest& r, double latency_ns);

  // Chooses the worker of ready task t, given the earliest-finish worker and its finish
  // time; returns a worker index. The default keeps `best`.
  using Placement =
      std::function<int32_t(const ListScheduler& s, TaskId t, int32_t best, double best_finish)>;
  struct Result {
    std::vector<std::vector<TaskId>> workers;
    std::vector<TaskId> order;  // placement order, consistent with the dependencies
    double makespan_ns = 0;     // in the timing model of timing_model.h
  };
  // Runs once per ListScheduler.
  Result run(const Placement& place = nullptr);

  // For placement hooks, valid while run() is going on.
  double finish_on(TaskId t, int32_t worker) const;  // if t were placed on `worker` now
  int32_t worker_of(TaskId t) const { return worker_of_[t]; }  // -1: not placed yet
  double cost(TaskId t) const { return cost_[t]; }
  const TaskGraphIndex& graph() const { return graph_; }
  int32_t num_workers() const { return static_cast<int32_t>(free_at_.size()); }

 private:
  void place(TaskId t, int32_t w);

  const TaskGraphIndex& graph_;
  double latency_;
  std::vector<double> cost_, level_;
  std::vector<double> free_at_, finish_;
  std::vector<int32_t> worker_of_;
  std::vector<EventReady> ready_;
};

}  // namespace mpk
