// The deadlock check: Kahn's algorithm for what can never complete, a walk back to a
// cycle, and a breadth-first search for the shortest cycle through a task.
#include "ir/deadlock.h"

#include <algorithm>
#include <cstdint>
#include <memory>

#include "ir/error.h"

namespace mpk {

NextOnWorker schedule_order(const TaskGraphIndex& g) {
  return [&g](TaskId t) { return g.next_on_worker(t); };
}

std::vector<int32_t> list_workers(const TaskGraphIndex& g, const std::vector<std::vector<TaskId>>& lists,
                                  bool every_task) {
  std::vector<int32_t> worker_of(static_cast<size_t>(g.num_tasks()), -1);
  for (size_t w = 0; w < lists.size(); ++w)
    for (TaskId t : lists[w]) {
      if (!g.valid_task(t))
        throw Error("worker " + std::to_string(w) + " lists task " + std::to_string(t) +
                    ", which does not exist");
      if (worker_of[t] >= 0)
        throw Error("task " + std::to_string(t) + " is listed twice (workers " +
                    std::to_string(worker_of[t]) + " and " + std::to_string(w) + ")");
      worker_of[t] = static_cast<int32_t>(w);
    }
  if (every_task)
    for (TaskId t = 0; t < g.num_tasks(); ++t)
      if (worker_of[t] < 0) throw Error("task " + std::to_string(t) + " is not scheduled");
  return worker_of;
}

NextOnWorker list_order(const TaskGraphIndex& g, const std::vector<std::vector<TaskId>>& lists) {
  // Chains as TaskGraphIndex makes them of the schedule (ir/task_graph_index.h).
  auto next = std::make_shared<std::vector<TaskId>>(static_cast<size_t>(g.num_tasks()), -1);
  std::vector<char> has_prev(static_cast<size_t>(g.num_tasks()), 0);
  for (const auto& list : lists)
    for (size_t i = 0; i + 1 < list.size(); ++i) {
      const TaskId t = list[i], u = list[i + 1];
      if (g.valid_task(t) && g.valid_task(u) && (*next)[t] < 0 && !has_prev[u]) {
        (*next)[t] = u;
        has_prev[u] = 1;
      }
    }
  return [next](TaskId t) { return (*next)[static_cast<size_t>(t)]; };
}

WaitCheck::WaitCheck(const TaskGraphIndex& g, const NextOnWorker& next) : g_(g) {
  const auto n = static_cast<size_t>(g.num_tasks());
  next_.assign(n, -1);
  prev_.assign(n, -1);
  if (next)
    for (TaskId t = 0; t < g.num_tasks(); ++t) {
      const TaskId u = next(t);
      if (g.valid_task(u)) {
        next_[t] = u;
        prev_[u] = t;
      }
    }
  left_.assign(n + static_cast<size_t>(g.num_events()), 0);
  for (TaskId t = 0; t < g.num_tasks(); ++t)
    left_[t] = static_cast<int64_t>(g.same_step_waits(t).size()) + (prev_[t] >= 0);
  for (EventId e = 0; e < g.num_events(); ++e)
    if (g.distance(e) == 0) left_[n + e] = static_cast<int64_t>(g.producers(e).size());
  std::vector<size_t> ready;
  for (size_t v = 0; v < left_.size(); ++v)
    if (left_[v] == 0) ready.push_back(v);
  auto release = [&](size_t v) {
    if (--left_[v] == 0) ready.push_back(v);
  };
  while (!ready.empty()) {
    const size_t v = ready.back();
    ready.pop_back();
    if (v < n) {
      for (EventId e : g.same_step_triggers(static_cast<TaskId>(v))) release(n + e);
      if (next_[v] >= 0) release(static_cast<size_t>(next_[v]));
    } else if (g.distance(static_cast<EventId>(v - n)) == 0) {
      for (TaskId c : g.consumers(static_cast<EventId>(v - n))) release(static_cast<size_t>(c));
    }
  }
  for (size_t t = 0; t < n; ++t) stuck_tasks_ += left_[t] > 0;
}

std::vector<CycleLink> WaitCheck::cycle(TaskId through) const {
  if (!deadlocks()) return {};
  if (g_.valid_task(through) && stuck(through)) {
    std::vector<CycleLink> c = shortest_cycle_through(through);
    if (!c.empty()) return c;
  }
  return shortest_cycle_through(task_on_a_cycle());
}

// Every stuck node has a stuck predecessor: walking back from the lowest stuck task
// repeats a node, and the walk from there is a cycle.
TaskId WaitCheck::task_on_a_cycle() const {
  const size_t n = task_count();
  auto stuck_pred = [&](size_t v) -> size_t {
    if (v < n) {
      for (EventId e : g_.same_step_waits(static_cast<TaskId>(v)))
        if (stuck_event(e)) return n + static_cast<size_t>(e);
      return static_cast<size_t>(prev_[v]);
    }
    for (TaskId p : g_.producers(static_cast<EventId>(v - n)))
      if (stuck(p)) return static_cast<size_t>(p);
    return 0;  // unreachable: a stuck event has a stuck producer
  };
  size_t v = 0;
  while (!stuck(static_cast<TaskId>(v))) ++v;
  std::vector<size_t> seen_at(left_.size(), SIZE_MAX);
  std::vector<size_t> walk;
  while (seen_at[v] == SIZE_MAX) {
    seen_at[v] = walk.size();
    walk.push_back(v);
    v = stuck_pred(v);
  }
  TaskId lowest = -1;
  for (size_t i = seen_at[v]; i < walk.size(); ++i)
    if (walk[i] < n && (lowest < 0 || static_cast<TaskId>(walk[i]) < lowest))
      lowest = static_cast<TaskId>(walk[i]);
  return lowest;
}

// Breadth-first search forward from t over worker order and distance-0 events until it
// comes back to t; the search tree gives the shortest such cycle.
std::vector<CycleLink> WaitCheck::shortest_cycle_through(TaskId t) const {
  struct Node {
    TaskId task;
    int32_t parent;  // index into `nodes`; -1 for t
    EventId via;     // how `task` was reached from its parent (-1: worker order)
  };
  std::vector<char> seen_task(task_count(), 0), seen_event(static_cast<size_t>(g_.num_events()), 0);
  std::vector<Node> nodes = {{t, -1, -1}};
  seen_task[t] = 1;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const TaskId u = nodes[i].task;
    auto cycle_from = [&](EventId closing) {
      std::vector<CycleLink> cycle;
      for (int32_t j = static_cast<int32_t>(i); j > 0; j = nodes[j].parent)
        cycle.push_back({nodes[j].task, nodes[j].via});
      cycle.push_back({t, closing});
      std::reverse(cycle.begin(), cycle.end());
      return cycle;
    };
    // True when v is t: the cycle is closed.
    auto reach = [&](TaskId v, EventId via) {
      if (v == t) return true;
      if (!seen_task[v]) {
        seen_task[v] = 1;
        nodes.push_back({v, static_cast<int32_t>(i), via});
      }
      return false;
    };
    if (next_[u] >= 0 && reach(next_[u], -1)) return cycle_from(-1);
    for (EventId e : g_.same_step_triggers(u)) {
      if (seen_event[e]) continue;
      seen_event[e] = 1;
      for (TaskId c : g_.consumers(e))
        if (reach(c, e)) return cycle_from(e);
    }
  }
  return {};
}

std::string print_cycle(const std::vector<CycleLink>& cycle,
                        const std::function<std::string(TaskId)>& name) {
  auto task = [&](TaskId t) { return name ? name(t) : "task " + std::to_string(t); };
  auto via = [](EventId e) {
    return e < 0 ? std::string(" -[worker order]-> ") : " -[event " + std::to_string(e) + "]-> ";
  };
  if (cycle.empty()) return "";
  std::string s = task(cycle.front().task);
  for (size_t i = 1; i < cycle.size(); ++i) s += via(cycle[i].event) + task(cycle[i].task);
  return s + via(cycle.front().event) + task(cycle.front().task);
}

}  // namespace mpk
