// The same-step dependency graph of infer-deps: distinct producer sets, their transitive
// reduction, and reachability marks. See same_step_graph.h.
#include "passes/same_step_graph.h"

#include <unordered_map>

namespace mpk {

size_t TaskListHash::operator()(const std::vector<TaskId>& v) const {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (TaskId t : v) h = (h ^ static_cast<uint32_t>(t)) * 1099511628211ull;
  return static_cast<size_t>(h);
}

SameStepGraph::SameStepGraph(const std::vector<std::vector<TaskId>>& producers) {
  const auto n = static_cast<int32_t>(producers.size());
  set_of_.assign(n, -1);
  std::unordered_map<std::vector<TaskId>, int32_t, TaskListHash> ids;
  // Consumers ascending: sets are numbered, and their consumers listed, in task order.
  for (int32_t c = 0; c < n; ++c) {
    if (producers[c].empty()) continue;
    auto [it, inserted] = ids.try_emplace(producers[c], static_cast<int32_t>(consumers_.size()));
    if (inserted) consumers_.emplace_back();
    set_of_[c] = it->second;
    consumers_[it->second].push_back(c);
  }
  producers_.resize(consumers_.size());
  while (!ids.empty()) {  // the keys become the sets, without a copy
    auto node = ids.extract(ids.begin());
    producers_[node.mapped()] = std::move(node.key());
  }
  index_producers();
}

void SameStepGraph::index_producers() {
  const auto n = static_cast<int32_t>(set_of_.size());
  sets_begin_.assign(n + 1, 0);
  for (const auto& set : producers_)
    for (TaskId p : set) ++sets_begin_[p + 1];
  for (int32_t t = 0; t < n; ++t) sets_begin_[t + 1] += sets_begin_[t];
  sets_items_.resize(sets_begin_[n]);
  std::vector<int32_t> fill(sets_begin_.begin(), sets_begin_.end() - 1);
  for (size_t s = 0; s < producers_.size(); ++s)
    for (TaskId p : producers_[s]) sets_items_[fill[p]++] = static_cast<int32_t>(s);
}

// For a set S with largest producer `last`, a forward search from P in S stops at tasks
// above `last` (edges go forward, so none of them reaches S) and at the first member of
// S it meets. Stamps mark S's members and what one search visited: nothing is cleared.
void SameStepGraph::reduce() {
  const auto n = static_cast<int32_t>(set_of_.size());
  std::vector<int32_t> member(n, 0), task_seen(n, 0), set_seen(producers_.size(), 0);
  int32_t set_stamp = 0, search_stamp = 0;
  std::vector<TaskId> stack;

  auto reaches_member = [&](TaskId from, TaskId last) {
    task_seen[from] = ++search_stamp;
    stack.assign(1, from);
    while (!stack.empty()) {
      const TaskId t = stack.back();
      stack.pop_back();
      for (int32_t k = sets_begin_[t]; k < sets_begin_[t + 1]; ++k) {
        const int32_t s = sets_items_[k];
        if (consumers_[s].front() > last) break;  // so are those of the later sets
        if (set_seen[s] == search_stamp) continue;
        set_seen[s] = search_stamp;
        for (TaskId c : consumers_[s]) {
          if (c > last) break;
          if (member[c] == set_stamp) return true;
          if (task_seen[c] != search_stamp) {
            task_seen[c] = search_stamp;
            stack.push_back(c);
          }
        }
      }
    }
    return false;
  };

  std::vector<TaskId> kept;
  for (std::vector<TaskId>& set : producers_) {
    if (set.size() < 2) continue;
    ++set_stamp;
    for (TaskId p : set) member[p] = set_stamp;
    const TaskId last = set.back();  // reaches no other member: they all come before it
    kept.clear();
    for (TaskId p : set)
      if (p == last || !reaches_member(p, last)) kept.push_back(p);
    if (kept.size() < set.size()) set = kept;
  }
  index_producers();
}

void SameStepGraph::write_back(std::vector<std::vector<TaskId>>& producers) const {
  for (size_t c = 0; c < set_of_.size(); ++c)
    if (set_of_[c] >= 0) producers[c] = producers_[set_of_[c]];
}

SameStepGraph::Marks SameStepGraph::no_marks() const {
  return {std::vector<char>(set_of_.size(), 0), std::vector<char>(producers_.size(), 0)};
}

// A set is expanded once: all its producers (or consumers) are then marked.
void SameStepGraph::mark_ancestors(TaskId from, Marks& marks, std::vector<TaskId>& stack) const {
  if (marks.tasks[from]) return;
  marks.tasks[from] = 1;
  stack.assign(1, from);
  while (!stack.empty()) {
    const int32_t s = set_of_[stack.back()];
    stack.pop_back();
    if (s < 0 || marks.sets[s]) continue;
    marks.sets[s] = 1;
    for (TaskId p : producers_[s])
      if (!marks.tasks[p]) {
        marks.tasks[p] = 1;
        stack.push_back(p);
      }
  }
}

void SameStepGraph::mark_descendants(TaskId from, Marks& marks, std::vector<TaskId>& stack) const {
  if (marks.tasks[from]) return;
  marks.tasks[from] = 1;
  stack.assign(1, from);
  while (!stack.empty()) {
    const TaskId t = stack.back();
    stack.pop_back();
    for (int32_t k = sets_begin_[t]; k < sets_begin_[t + 1]; ++k) {
      const int32_t s = sets_items_[k];
      if (marks.sets[s]) continue;
      marks.sets[s] = 1;
      for (TaskId c : consumers_[s])
        if (!marks.tasks[c]) {
          marks.tasks[c] = 1;
          stack.push_back(c);
        }
    }
  }
}

}  // namespace mpk
