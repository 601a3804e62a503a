// ListScheduler implementation.
#include "passes/policies/list_scheduler.h"

#include <algorithm>
#include <queue>
#include <utility>

namespace mpk {

ListScheduler::ListScheduler(const ScheduleRequest& r, double latency_ns)
    : graph_(r.index), latency_(latency_ns), cost_(task_costs(r.graph, r.costs, r.machine.sm_count)),
      level_(bottom_levels(graph_, cost_, latency_ns)), free_at_(r.workers, 0.0),
      finish_(r.graph.tasks.size(), 0.0), worker_of_(r.graph.tasks.size(), -1),
      ready_(r.graph.events.size()) {}

double ListScheduler::finish_on(TaskId t, int32_t worker) const {
  double start = free_at_[worker];
  for (EventId e : graph_.same_step_waits(t)) start = std::max(start, ready_[e].ready_on(worker, latency_));
  return start + cost_[t];
}

void ListScheduler::place(TaskId t, int32_t w) {
  const double finish = finish_on(t, w);
  worker_of_[t] = w;
  finish_[t] = free_at_[w] = finish;
  for (EventId e : graph_.same_step_triggers(t)) ready_[e].add(w, finish);
}

ListScheduler::Result ListScheduler::run(const Placement& place_hook) {
  const int32_t n = graph_.num_tasks();
  const int32_t num_workers = this->num_workers();
  Result result;
  result.workers.resize(num_workers);

  auto [remaining, pending] = same_step_counts(graph_);

  // Largest bottom level first, then the lowest task id.
  auto lower_priority = [&](TaskId a, TaskId b) {
    return level_[a] != level_[b] ? level_[a] < level_[b] : a > b;
  };
  std::priority_queue<TaskId, std::vector<TaskId>, decltype(lower_priority)> ready_tasks(
      lower_priority);
  for (TaskId t = 0; t < n; ++t)
    if (pending[t] == 0) ready_tasks.push(t);

  // Per worker, the data-ready time of the current task where it differs from the
  // common value (workers that ran the latest producer of one of its events).
  std::vector<double> special_ready(num_workers, 0);
  std::vector<int32_t> special_stamp(num_workers, -1);
  while (!ready_tasks.empty()) {
    const TaskId t = ready_tasks.top();
    ready_tasks.pop();
    double common = 0;
    for (EventId e : graph_.same_step_waits(t)) common = std::max(common, ready_[e].ready_elsewhere(latency_));
    for (EventId e : graph_.same_step_waits(t)) {
      const int32_t w = ready_[e].latest_worker();
      if (w < 0 || special_stamp[w] == t) continue;
      special_stamp[w] = t;
      double r = 0;
      for (EventId f : graph_.same_step_waits(t)) r = std::max(r, ready_[f].ready_on(w, latency_));
      special_ready[w] = r;
    }
    int32_t best = 0;
    double best_finish = 0;
    for (int32_t w = 0; w < num_workers; ++w) {
      const double data = special_stamp[w] == t ? special_ready[w] : common;
      const double finish = std::max(free_at_[w], data) + cost_[t];
      if (w == 0 || finish < best_finish) {
        best = w;
        best_finish = finish;
      }
    }
    const int32_t w = place_hook ? place_hook(*this, t, best, best_finish) : best;
    place(t, w);
    result.workers[w].push_back(t);
    result.order.push_back(t);
    result.makespan_ns = std::max(result.makespan_ns, finish_[t]);
    for (EventId e : graph_.same_step_triggers(t))
      if (--remaining[e] == 0)
        for (TaskId c : graph_.consumers(e))
          if (--pending[c] == 0) ready_tasks.push(c);
  }
  return result;
}

}  // namespace mpk
