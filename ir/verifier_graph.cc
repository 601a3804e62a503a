// The verifier's graph and schedule layers (semantics in docs/ir.md, "Events" and
// "Schedule"):
//   graph:    distance-0 events form no cycle; every read of a region that an earlier
//             task writes (same step), or that a later task wrote (previous step), is
//             ordered after that write by a chain of events (once the graph has events
//             or a schedule: before infer-deps it has neither); every task is scheduled
//             exactly once on at most sm_count workers;
//   schedule: distance-0 event edges plus same-worker order edges form no cycle.
// Overlapping accesses come from a RegionIndex, never from comparing all pairs.
#include <algorithm>
#include <cstdint>

#include "ir/region_index.h"
#include "ir/verifier.h"

namespace mpk {
namespace {

// Task/event adjacency, built from the events only (never from the tasks' use lists,
// which may be stale). Ids out of range are skipped: the structure layer reports them.
struct EventGraph {
  int32_t num_tasks = 0;
  std::vector<std::vector<EventId>> waits;     // per task: events it waits on (any distance)
  std::vector<std::vector<EventId>> triggers;  // per task: distance-0 events it triggers

  explicit EventGraph(const Module& m) : num_tasks(static_cast<int32_t>(m.graph.tasks.size())) {
    waits.resize(num_tasks);
    triggers.resize(num_tasks);
    for (size_t e = 0; e < m.graph.events.size(); ++e) {
      const Event& ev = m.graph.events[e];
      for (TaskId c : ev.consumers)
        if (valid(c)) waits[c].push_back(static_cast<EventId>(e));
      if (ev.step_distance == 0)
        for (TaskId p : ev.producers)
          if (valid(p)) triggers[p].push_back(static_cast<EventId>(e));
    }
  }
  bool valid(TaskId t) const { return t >= 0 && t < num_tasks; }
};

// Finds a cycle among tasks joined by distance-0 events and, when `workers` is given,
// same-worker order edges. Returns the tasks on one cycle in order (empty
// when acyclic). Nodes: tasks [0, n), events [n, n + E).
std::vector<TaskId> find_cycle(const Module& m, const EventGraph& g,
                               const std::vector<std::vector<TaskId>>* workers) {
  const int32_t n = g.num_tasks;
  const auto& events = m.graph.events;
  const size_t total = n + events.size();
  std::vector<TaskId> worker_next(n, -1), worker_prev(n, -1);
  if (workers)
    for (const auto& list : *workers)
      for (size_t i = 0; i + 1 < list.size(); ++i)
        if (g.valid(list[i]) && g.valid(list[i + 1]) && worker_next[list[i]] < 0 &&
            worker_prev[list[i + 1]] < 0) {
          worker_next[list[i]] = list[i + 1];
          worker_prev[list[i + 1]] = list[i];
        }

  // Kahn's algorithm over distance-0 edges.
  std::vector<int64_t> indeg(total, 0);
  for (int32_t t = 0; t < n; ++t) {
    for (EventId e : g.waits[t])
      if (events[e].step_distance == 0) ++indeg[t];
    if (worker_prev[t] >= 0) ++indeg[t];
  }
  for (size_t e = 0; e < events.size(); ++e)
    if (events[e].step_distance == 0)
      for (TaskId p : events[e].producers)
        if (g.valid(p)) ++indeg[n + e];
  std::vector<size_t> stack;
  for (size_t v = 0; v < total; ++v)
    if (indeg[v] == 0) stack.push_back(v);
  size_t done = 0;
  auto release = [&](size_t v) {
    if (--indeg[v] == 0) stack.push_back(v);
  };
  while (!stack.empty()) {
    const size_t v = stack.back();
    stack.pop_back();
    ++done;
    if (v < static_cast<size_t>(n)) {
      for (EventId e : g.triggers[v]) release(n + e);
      if (worker_next[v] >= 0) release(worker_next[v]);
    } else if (events[v - n].step_distance == 0) {
      for (TaskId c : events[v - n].consumers)
        if (g.valid(c)) release(c);
    }
  }
  if (done == total) return {};

  // Every node left has a predecessor that is left too: walk backwards until a node
  // repeats; the walk from there is a cycle (reversed).
  auto left_pred = [&](size_t v) -> size_t {
    if (v < static_cast<size_t>(n)) {
      for (EventId e : g.waits[v])
        if (events[e].step_distance == 0 && indeg[n + e] > 0) return n + e;
      return static_cast<size_t>(worker_prev[v]);
    }
    for (TaskId p : events[v - n].producers)
      if (g.valid(p) && indeg[p] > 0) return p;
    return 0;  // unreachable: a left event has a left producer
  };
  size_t v = 0;
  while (indeg[v] == 0 || v >= static_cast<size_t>(n)) ++v;
  std::vector<size_t> seen_at(total, SIZE_MAX);
  std::vector<size_t> walk;
  while (seen_at[v] == SIZE_MAX) {
    seen_at[v] = walk.size();
    walk.push_back(v);
    v = left_pred(v);
  }
  std::vector<TaskId> cycle;
  for (size_t i = walk.size(); i-- > seen_at[v];)
    if (walk[i] < static_cast<size_t>(n)) cycle.push_back(static_cast<TaskId>(walk[i]));
  // Start at the lowest task id, so that the message does not depend on the walk.
  std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
  return cycle;
}

std::string cycle_text(const Module& m, const std::vector<TaskId>& cycle,
                       const std::vector<int32_t>* worker_of) {
  constexpr size_t kShown = 12;
  auto one = [&](TaskId t) {
    std::string s = describe_task(m, t);
    if (worker_of) s += " on worker " + std::to_string((*worker_of)[t]);
    return s;
  };
  std::string s;
  for (size_t i = 0; i < cycle.size() && i < kShown; ++i) s += one(cycle[i]) + " -> ";
  if (cycle.size() > kShown) s += "... (" + std::to_string(cycle.size()) + " tasks) -> ";
  return s + one(cycle.front());
}

// Checks that reads are ordered after the writes they depend on.
class ReadOrderChecker {
 public:
  ReadOrderChecker(const Module& m, const EventGraph& g, DiagnosticSink& sink)
      : m_(m), g_(g), sink_(sink) {}

  void run() {
    const auto num_tensors = static_cast<int32_t>(m_.program.tensors.size());
    const auto& tasks = m_.graph.tasks;
    auto usable = [&](const Region& r) {
      return r.tensor >= 0 && r.tensor < num_tensors &&
             r.dims.size() == m_.program.tensors[r.tensor].shape.size();
    };
    std::vector<Region> universe;
    for (const Task& t : tasks)
      for (const auto* list : {&t.reads, &t.writes})
        for (const Region& r : *list)
          if (usable(r)) universe.push_back(r);
    RegionIndex writes(num_tensors, universe);
    universe.clear();
    universe.shrink_to_fit();
    for (int32_t i = 0; i < g_.num_tasks; ++i)
      for (const Region& w : tasks[i].writes)
        if (usable(w)) writes.insert(w, i);

    const int32_t n = g_.num_tasks;
    checked_.assign(n, -1);
    reach0_.assign(n, 0);
    reach1_.assign(n, 0);
    ev_seen_.assign(m_.graph.events.size(), 0);
    for (TaskId c = 0; c < n; ++c) {
      have0_ = have1_ = false;
      for (const Region& r : tasks[c].reads) {
        if (!usable(r)) continue;
        writes.for_each_overlap(r, [&](int32_t, int32_t p, const Region& w) {
          if (p == c || checked_[p] == c) return;
          checked_[p] = c;
          if (!ordered(p, c)) report(p, c, r, w);
        });
      }
    }
  }

 private:
  bool direct(TaskId p, TaskId c, bool any_distance) const {
    for (EventId e : g_.waits[c]) {
      const Event& ev = m_.graph.events[e];
      if (ev.step_distance != 0 && !any_distance) continue;
      if (std::binary_search(ev.producers.begin(), ev.producers.end(), p)) return true;
    }
    return false;
  }

  // p writes earlier in the step (p < c): a distance-0 chain p -> c is needed. p writes
  // later (p > c), so c reads what p wrote in the previous step: a chain of total
  // distance <= 1 is needed.
  bool ordered(TaskId p, TaskId c) {
    const bool cross = p > c;
    if (direct(p, c, cross)) return true;
    reach_from(c, cross);
    return reach0_[p] == stamp_ || (cross && reach1_[p] == stamp_);
  }

  // Backward reachability from c (cached per reader): reach0_ marks tasks with a
  // distance-0 chain to c, reach1_ those with a chain of total distance 1.
  void reach_from(TaskId c, bool need1) {
    if (!have0_) {
      ++stamp_;
      seen0_.clear();
      walk(c, 0, reach0_, seen0_);
      have0_ = true;
    }
    if (need1 && !have1_) {
      std::vector<TaskId> seen1;
      for (size_t i = 0; i < seen0_.size(); ++i)
        for (EventId e : g_.waits[seen0_[i]]) {
          const Event& ev = m_.graph.events[e];
          if (ev.step_distance != 1) continue;
          for (TaskId p : ev.producers)
            if (g_.valid(p) && reach0_[p] != stamp_ && reach1_[p] != stamp_) walk(p, 1, reach1_, seen1);
        }
      have1_ = true;
    }
  }

  // Marks `start` and every task with a distance-0 chain to it (skipping tasks already
  // reached at distance 0) with stamp_ in `mark`, appending them to `seen`.
  void walk(TaskId start, int layer, std::vector<uint32_t>& mark, std::vector<TaskId>& seen) {
    const uint32_t ev_stamp = 2 * stamp_ + static_cast<uint32_t>(layer);
    mark[start] = stamp_;
    size_t head = seen.size();
    seen.push_back(start);
    while (head < seen.size()) {
      const TaskId t = seen[head++];
      for (EventId e : g_.waits[t]) {
        const Event& ev = m_.graph.events[e];
        if (ev.step_distance != 0 || ev_seen_[e] == ev_stamp) continue;
        ev_seen_[e] = ev_stamp;
        for (TaskId p : ev.producers) {
          if (!g_.valid(p) || mark[p] == stamp_ || reach0_[p] == stamp_) continue;
          mark[p] = stamp_;
          seen.push_back(p);
        }
      }
    }
  }

  void report(TaskId p, TaskId c, const Region& r, const Region& w) {
    const auto& tensors = m_.program.tensors;
    const std::string read = format_region(tensors[r.tensor].name, r);
    const std::string written = format_region(tensors[w.tensor].name, w);
    if (p < c)
      sink_.add("graph.unordered-read",
                describe_task(m_, c) + " reads " + read + ", which " + describe_task(m_, p) +
                    " writes earlier in the step (" + written +
                    "), and no chain of distance-0 events orders the write before the read");
    else
      sink_.add("graph.unordered-read",
                describe_task(m_, c) + " reads " + read + ", which " + describe_task(m_, p) +
                    " wrote in the previous step (" + written +
                    "), and no chain of events of total distance <= 1 orders the write before "
                    "the read");
  }

  const Module& m_;
  const EventGraph& g_;
  DiagnosticSink& sink_;
  std::vector<TaskId> checked_;  // per writer: the last reader it was checked against
  std::vector<uint32_t> reach0_, reach1_, ev_seen_;
  std::vector<TaskId> seen0_;
  uint32_t stamp_ = 0;
  bool have0_ = false, have1_ = false;
};

void check_schedule_cover(const Module& m, DiagnosticSink& sink) {
  const Schedule& s = m.graph.schedule;
  const auto n = static_cast<int32_t>(m.graph.tasks.size());
  if (static_cast<int64_t>(s.workers.size()) > m.machine.sm_count)
    sink.add("graph.bad-worker", "the schedule has " + std::to_string(s.workers.size()) +
                                     " workers, but machine '" + m.machine.name + "' has " +
                                     std::to_string(m.machine.sm_count) + " SMs (one worker each)");
  std::vector<std::vector<int32_t>> on(n);
  for (size_t w = 0; w < s.workers.size(); ++w)
    for (TaskId t : s.workers[w])
      if (t >= 0 && t < n) on[t].push_back(static_cast<int32_t>(w));
  for (TaskId t = 0; t < n; ++t) {
    if (on[t].empty()) {
      sink.add("graph.unscheduled-task", describe_task(m, t) + " is on no worker");
    } else if (on[t].size() > 1) {
      std::string where;
      for (size_t i = 0; i < on[t].size(); ++i) where += (i ? ", " : "") + std::to_string(on[t][i]);
      sink.add("graph.task-scheduled-twice", describe_task(m, t) + " is scheduled " +
                                                 std::to_string(on[t].size()) +
                                                 " times (workers " + where + ")");
    }
  }
}

}  // namespace

std::vector<Diagnostic> verify_graph(const Module& m) {
  DiagnosticSink sink;
  if (m.graph.tasks.empty()) return sink.finish();
  const EventGraph g(m);
  const std::vector<TaskId> cycle = find_cycle(m, g, nullptr);
  if (!cycle.empty())
    sink.add("graph.cycle", "distance-0 events form a cycle: " + cycle_text(m, cycle, nullptr));
  // A decomposed graph whose dependencies are not inferred yet (no events, no schedule)
  // is an intermediate state of the pipeline, not an unordered one.
  if (!m.graph.events.empty() || !m.graph.schedule.empty()) ReadOrderChecker(m, g, sink).run();
  if (!m.graph.schedule.empty()) check_schedule_cover(m, sink);
  return sink.finish();
}

std::vector<Diagnostic> verify_schedule(const Module& m) {
  DiagnosticSink sink;
  const Schedule& s = m.graph.schedule;
  if (s.empty() || m.graph.tasks.empty()) return sink.finish();
  const EventGraph g(m);
  const std::vector<TaskId> cycle = find_cycle(m, g, &s.workers);
  if (!cycle.empty()) {
    std::vector<int32_t> worker_of(g.num_tasks, -1);
    for (size_t w = 0; w < s.workers.size(); ++w)
      for (TaskId t : s.workers[w])
        if (g.valid(t) && worker_of[t] < 0) worker_of[t] = static_cast<int32_t>(w);
    sink.add("schedule.deadlock",
             "distance-0 events and worker order wait on each other in a cycle: " +
                 cycle_text(m, cycle, &worker_of));
  }
  return sink.finish();
}

}  // namespace mpk
