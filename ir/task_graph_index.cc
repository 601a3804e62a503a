// Building the task-graph index: compressed rows per event and per task, then the
// schedule's places and order edges.
#include "ir/task_graph_index.h"

#include <algorithm>
#include <functional>
#include <queue>

#include "ir/error.h"

namespace mpk {
namespace {

// Rows of `n` lists from (row, item) pairs given row by row in any order: counts, then
// fills, so each row keeps the order its items came in.
class RowsBuilder {
 public:
  explicit RowsBuilder(size_t n) : count_(n + 1, 0) {}
  void count(int32_t row) { ++count_[static_cast<size_t>(row) + 1]; }
  // After every count(): fix the row starts.
  void start(std::vector<int32_t>& begin, std::vector<int32_t>& items) {
    for (size_t i = 1; i < count_.size(); ++i) count_[i] += count_[i - 1];
    begin = count_;
    items.assign(static_cast<size_t>(count_.back()), 0);
    fill_.assign(count_.begin(), count_.end() - 1);
  }
  void add(std::vector<int32_t>& items, int32_t row, int32_t item) {
    items[static_cast<size_t>(fill_[static_cast<size_t>(row)]++)] = item;
  }

 private:
  std::vector<int32_t> count_, fill_;
};

}  // namespace

TaskGraphIndex::TaskGraphIndex(const TaskGraph& g)
    : graph_(&g), generation_(g.generation), num_tasks_(g.tasks.size()),
      num_events_(g.events.size()) {
  index_events();
  index_schedule();
}

void TaskGraphIndex::require_valid() const {
  if (!problem_.empty()) throw Error(problem_);
}

void TaskGraphIndex::stale() const {
  throw Error("stale task-graph index: the graph changed since the index was built (" +
              std::to_string(num_tasks_) + " tasks and " + std::to_string(num_events_) +
              " events then, " + std::to_string(graph_->tasks.size()) + " and " +
              std::to_string(graph_->events.size()) + " now); build a new one after TaskGraph::touch()");
}

void TaskGraphIndex::index_events() {
  const auto& events = graph_->events;
  // Per event, its existing tasks sorted and unique.
  auto members = [&](Rows& rows, bool producers) {
    RowsBuilder b(num_events_);
    std::vector<std::vector<TaskId>> lists(num_events_);
    for (size_t e = 0; e < num_events_; ++e) {
      for (TaskId t : producers ? events[e].producers : events[e].consumers) {
        if (valid_task(t)) {
          lists[e].push_back(t);
        } else if (problem_.empty()) {
          problem_ = "event " + std::to_string(e) + " names " + (producers ? "producer" : "consumer") +
                     " task " + std::to_string(t) + ", which does not exist";
        }
      }
      std::vector<TaskId>& l = lists[e];
      if (!std::is_sorted(l.begin(), l.end())) std::sort(l.begin(), l.end());
      l.erase(std::unique(l.begin(), l.end()), l.end());
      for (size_t i = 0; i < l.size(); ++i) b.count(static_cast<int32_t>(e));
    }
    b.start(rows.begin, rows.items);
    for (size_t e = 0; e < num_events_; ++e)
      for (TaskId t : lists[e]) b.add(rows.items, static_cast<int32_t>(e), t);
  };
  members(producers_, true);
  members(consumers_, false);

  // Per task, the events naming it; events ascending, so each row is ascending.
  auto per_task = [&](const Rows& by_event, Rows& all, Rows& same_step) {
    RowsBuilder b_all(num_tasks_), b_step(num_tasks_);
    for (size_t e = 0; e < num_events_; ++e)
      for (int32_t k = by_event.begin[e]; k < by_event.begin[e + 1]; ++k) {
        b_all.count(by_event.items[static_cast<size_t>(k)]);
        if (events[e].step_distance == 0) b_step.count(by_event.items[static_cast<size_t>(k)]);
      }
    b_all.start(all.begin, all.items);
    b_step.start(same_step.begin, same_step.items);
    for (size_t e = 0; e < num_events_; ++e)
      for (int32_t k = by_event.begin[e]; k < by_event.begin[e + 1]; ++k) {
        const TaskId t = by_event.items[static_cast<size_t>(k)];
        b_all.add(all.items, t, static_cast<EventId>(e));
        if (events[e].step_distance == 0) b_step.add(same_step.items, t, static_cast<EventId>(e));
      }
  };
  per_task(consumers_, waits_, step_waits_);
  per_task(producers_, triggers_, step_triggers_);
}

void TaskGraphIndex::index_schedule() {
  const auto& lists = graph_->schedule.workers;
  num_workers_ = static_cast<int32_t>(lists.size());
  worker_.assign(num_tasks_, -1);
  position_.assign(num_tasks_, -1);
  next_.assign(num_tasks_, -1);
  prev_.assign(num_tasks_, -1);
  RowsBuilder b(num_tasks_);
  for (size_t w = 0; w < lists.size(); ++w) {
    for (size_t i = 0; i < lists[w].size(); ++i) {
      const TaskId t = lists[w][i];
      if (!valid_task(t)) {
        if (problem_.empty())
          problem_ = "worker " + std::to_string(w) + " lists task " + std::to_string(t) +
                     ", which does not exist";
        continue;
      }
      b.count(t);
      if (worker_[t] < 0) {
        worker_[t] = static_cast<int32_t>(w);
        position_[t] = static_cast<int32_t>(i);
      }
      if (i + 1 < lists[w].size()) {
        const TaskId u = lists[w][i + 1];
        if (valid_task(u) && next_[t] < 0 && prev_[u] < 0) {
          next_[t] = u;
          prev_[u] = t;
        }
      }
    }
  }
  b.start(listings_.begin, listings_.items);
  for (size_t w = 0; w < lists.size(); ++w)
    for (TaskId t : lists[w])
      if (valid_task(t)) b.add(listings_.items, t, static_cast<int32_t>(w));
}

SameStepCounts same_step_counts(const TaskGraphIndex& g) {
  SameStepCounts c;
  c.remaining.assign(static_cast<size_t>(g.num_events()), 0);
  c.pending.assign(static_cast<size_t>(g.num_tasks()), 0);
  for (EventId e = 0; e < g.num_events(); ++e)
    if (g.distance(e) == 0) c.remaining[e] = static_cast<int32_t>(g.producers(e).size());
  for (TaskId t = 0; t < g.num_tasks(); ++t)
    for (EventId e : g.same_step_waits(t)) c.pending[t] += c.remaining[e] > 0;
  return c;
}

std::vector<TaskId> same_step_order(const TaskGraphIndex& g) {
  const int32_t n = g.num_tasks();
  auto [remaining, pending] = same_step_counts(g);
  std::priority_queue<TaskId, std::vector<TaskId>, std::greater<>> ready;
  for (TaskId t = 0; t < n; ++t)
    if (pending[t] == 0) ready.push(t);
  std::vector<TaskId> order;
  order.reserve(static_cast<size_t>(n));
  while (!ready.empty()) {
    const TaskId t = ready.top();
    ready.pop();
    order.push_back(t);
    for (EventId e : g.same_step_triggers(t))
      if (--remaining[e] == 0)
        for (TaskId c : g.consumers(e))
          if (--pending[c] == 0) ready.push(c);
  }
  if (static_cast<int32_t>(order.size()) != n) order.clear();
  return order;
}

}  // namespace mpk
