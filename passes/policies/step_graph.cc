// StepGraph, bottom levels and the schedule timing model.
#include "passes/policies/step_graph.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <string>
#include <utility>

#include "ir/cost_model.h"
#include "ir/error.h"

namespace mpk {
namespace {

// Builds CSR lists from (task, event) pairs, each pair once, events ascending.
void build_csr(std::vector<std::pair<TaskId, EventId>>& pairs, int32_t n,
               std::vector<int32_t>& begin, std::vector<EventId>& items) {
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  begin.assign(n + 1, 0);
  for (const auto& [t, e] : pairs) ++begin[t + 1];
  for (int32_t i = 0; i < n; ++i) begin[i + 1] += begin[i];
  items.resize(pairs.size());
  for (size_t i = 0; i < pairs.size(); ++i) items[i] = pairs[i].second;
}

}  // namespace

StepGraph::StepGraph(const TaskGraph& g)
    : graph_(&g), num_tasks_(static_cast<int32_t>(g.tasks.size())) {
  std::vector<std::pair<TaskId, EventId>> waits, triggers;
  for (size_t e = 0; e < g.events.size(); ++e) {
    const Event& ev = g.events[e];
    auto check = [&](TaskId t, const char* role) {
      if (t < 0 || t >= num_tasks_)
        throw Error("event " + std::to_string(e) + " names " + role + " task " +
                    std::to_string(t) + ", which does not exist");
    };
    for (TaskId t : ev.producers) check(t, "producer");
    for (TaskId t : ev.consumers) check(t, "consumer");
    if (ev.step_distance != 0) continue;
    for (TaskId t : ev.producers) triggers.emplace_back(t, static_cast<EventId>(e));
    for (TaskId t : ev.consumers) waits.emplace_back(t, static_cast<EventId>(e));
  }
  build_csr(waits, num_tasks_, wait_begin_, wait_events_);
  build_csr(triggers, num_tasks_, trigger_begin_, trigger_events_);
}

std::span<const EventId> StepGraph::waits(TaskId t) const {
  return {wait_events_.data() + wait_begin_[t],
          static_cast<size_t>(wait_begin_[t + 1] - wait_begin_[t])};
}

std::span<const EventId> StepGraph::triggers(TaskId t) const {
  return {trigger_events_.data() + trigger_begin_[t],
          static_cast<size_t>(trigger_begin_[t + 1] - trigger_begin_[t])};
}

std::vector<TaskId> StepGraph::topological_order() const {
  // Distinct producers per event (a task triggers each event at most once here).
  std::vector<int32_t> remaining(num_events(), 0);
  for (EventId e : trigger_events_) ++remaining[e];
  std::vector<int32_t> pending(num_tasks_, 0);
  for (TaskId t = 0; t < num_tasks_; ++t)
    for (EventId e : waits(t)) pending[t] += remaining[e] > 0;
  std::priority_queue<TaskId, std::vector<TaskId>, std::greater<>> ready;
  for (TaskId t = 0; t < num_tasks_; ++t)
    if (pending[t] == 0) ready.push(t);
  std::vector<TaskId> order;
  order.reserve(num_tasks_);
  while (!ready.empty()) {
    TaskId t = ready.top();
    ready.pop();
    order.push_back(t);
    for (EventId e : triggers(t))
      if (--remaining[e] == 0)
        for (TaskId c : consumers(e))
          if (--pending[c] == 0) ready.push(c);
  }
  if (static_cast<int32_t>(order.size()) != num_tasks_) {
    TaskId stuck = 0;
    while (pending[stuck] == 0) ++stuck;
    throw Error("the same-step events form a cycle through task " + std::to_string(stuck));
  }
  return order;
}

std::vector<double> task_costs(const TaskGraph& g, const MachineModel& m) {
  std::vector<double> cost(g.tasks.size());
  for (size_t i = 0; i < g.tasks.size(); ++i) cost[i] = estimate_task_ns(g.tasks[i], m);
  return cost;
}

std::vector<double> bottom_levels(const StepGraph& g, const std::vector<double>& cost,
                                  double latency_ns) {
  const std::vector<TaskId> order = g.topological_order();
  std::vector<double> level(g.num_tasks(), 0);
  std::vector<double> event_level(g.num_events(), -1);  // max level of its consumers
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const TaskId t = *it;
    double after = 0;
    for (EventId e : g.triggers(t)) {
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

ScheduleTiming simulate_schedule(const StepGraph& g, const std::vector<std::vector<TaskId>>& workers,
                                 const std::vector<double>& cost, double latency_ns) {
  const int32_t n = g.num_tasks();
  const auto num_workers = static_cast<int32_t>(workers.size());
  std::vector<int32_t> worker_of(n, -1);
  for (int32_t w = 0; w < num_workers; ++w) {
    for (TaskId t : workers[w]) {
      if (t < 0 || t >= n)
        throw Error("worker " + std::to_string(w) + " lists task " + std::to_string(t) +
                    ", which does not exist");
      if (worker_of[t] >= 0)
        throw Error("task " + std::to_string(t) + " is scheduled twice (workers " +
                    std::to_string(worker_of[t]) + " and " + std::to_string(w) + ")");
      worker_of[t] = w;
    }
  }
  for (TaskId t = 0; t < n; ++t)
    if (worker_of[t] < 0) throw Error("task " + std::to_string(t) + " is not scheduled");

  std::vector<int32_t> remaining(g.num_events(), 0);
  for (TaskId t = 0; t < n; ++t)
    for (EventId e : g.triggers(t)) ++remaining[e];
  std::vector<int32_t> pending(n, 0);
  for (TaskId t = 0; t < n; ++t)
    for (EventId e : g.waits(t)) pending[t] += remaining[e] > 0;

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
    for (EventId e : g.waits(t)) start = std::max(start, ready[e].ready_on(w, latency_ns));
    timing.start_ns[t] = start;
    timing.finish_ns[t] = free_at[w] = start + cost[t];
    timing.makespan_ns = std::max(timing.makespan_ns, free_at[w]);
    ++done;
    for (EventId e : g.triggers(t)) {
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
      for (EventId e : g.waits(t))
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
