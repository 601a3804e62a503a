// Bottom levels and the schedule timing model.
#include "passes/policies/timing_model.h"

#include <algorithm>
#include <string>

#include "ir/deadlock.h"
#include "ir/error.h"

namespace mpk {
std::vector<double> task_costs(const TaskGraph& g, const CostParams& c, int32_t sm_count) {
  std::vector<double> cost(g.tasks.size());
  for (size_t i = 0; i < g.tasks.size(); ++i) cost[i] = estimate_task_ns(c, g.tasks[i], sm_count);
  return cost;
}

std::vector<double> bottom_levels(const TaskGraphIndex& g, const std::vector<double>& cost,
                                  double latency_ns) {
  const std::vector<TaskId> order = same_step_order(g);
  if (static_cast<int32_t>(order.size()) != g.num_tasks())
    throw Error("the same-step events form a cycle: " + print_cycle(WaitCheck(g).cycle()));
  std::vector<double> level(g.num_tasks(), 0);
  std::vector<double> event_level(g.num_events(), -1);  // max level of its consumers
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const TaskId t = *it;
    double after = 0;
    for (EventId e : g.same_step_triggers(t)) {
      if (event_level[e] < 0) {
        double m = 0;
        for (TaskId c : g.consumers(e)) m = std::max(m, level[c]);
        event_level[e] = m;
      }
      if (!g.consumers(e).empty()) after = std::max(after, latency_ns + event_level[e]);
    }
    level[t] = cost[t] + after;
  }
  return level;
}

void EventReady::add(int32_t worker, double finish) {
  if (worker == worker_) {
    latest_ = std::max(latest_, finish);
  } else if (finish > latest_) {
    // The previous latest was on another worker and bounds every other finish.
    other_ = latest_;
    latest_ = finish;
    worker_ = worker;
  } else {
    other_ = std::max(other_, finish);
  }
}

double EventReady::ready_on(int32_t worker, double latency_ns) const {
  if (worker_ < 0) return 0;
  if (worker != worker_) return latest_ + latency_ns;
  return std::max(latest_, other_ + latency_ns);
}

double EventReady::ready_elsewhere(double latency_ns) const {
  return worker_ < 0 ? 0 : latest_ + latency_ns;
}

ScheduleTiming simulate_schedule(const TaskGraphIndex& g, const std::vector<std::vector<TaskId>>& workers,
                                 const std::vector<double>& cost, double latency_ns) {
  const int32_t n = g.num_tasks();
  const auto num_workers = static_cast<int32_t>(workers.size());
  const std::vector<int32_t> worker_of = list_workers(g, workers, true);

  SameStepCounts counts = same_step_counts(g);  // named, not bound: lambdas below use them
  std::vector<int32_t>& remaining = counts.remaining;
  std::vector<int32_t>& pending = counts.pending;

  ScheduleTiming timing;
  timing.start_ns.assign(n, 0);
  timing.finish_ns.assign(n, 0);
  std::vector<EventReady> ready(g.num_events());
  std::vector<size_t> head(num_workers, 0);
  std::vector<double> free_at(num_workers, 0);
  std::vector<int32_t> runnable;
  auto head_runnable = [&](int32_t w) {
    return head[w] < workers[w].size() && pending[workers[w][head[w]]] == 0;
  };
  for (int32_t w = 0; w < num_workers; ++w)
    if (head_runnable(w)) runnable.push_back(w);
  int32_t done = 0;
  while (!runnable.empty()) {
    const int32_t w = runnable.back();
    runnable.pop_back();
    const TaskId t = workers[w][head[w]++];
    double start = free_at[w];
    for (EventId e : g.same_step_waits(t)) start = std::max(start, ready[e].ready_on(w, latency_ns));
    timing.start_ns[t] = start;
    timing.finish_ns[t] = free_at[w] = start + cost[t];
    timing.makespan_ns = std::max(timing.makespan_ns, free_at[w]);
    ++done;
    for (EventId e : g.same_step_triggers(t)) {
      ready[e].add(w, timing.finish_ns[t]);
      if (--remaining[e] > 0) continue;
      for (TaskId c : g.consumers(e)) {
        if (--pending[c] > 0) continue;
        const int32_t cw = worker_of[c];
        if (cw != w && workers[cw][head[cw]] == c) runnable.push_back(cw);
      }
    }
    if (head_runnable(w)) runnable.push_back(w);
  }
  if (done != n) {
    for (int32_t w = 0; w < num_workers; ++w) {
      if (head[w] == workers[w].size()) continue;
      const TaskId t = workers[w][head[w]];
      for (EventId e : g.same_step_waits(t))
        if (remaining[e] > 0)
          throw Error("the schedule can deadlock: worker " + std::to_string(w) +
                      " blocks at task " + std::to_string(t) + " waiting on event " +
                      std::to_string(e) + " (" + std::to_string(n - done) +
                      " tasks can never start)");
    }
    throw Error("the schedule can deadlock");
  }
  return timing;
}

}  // namespace mpk
