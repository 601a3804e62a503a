// infer-deps: derives the events (counter + target) between tasks from the regions they
// read and write. RAW everywhere; WAR and WAW where a buffer is written again. The
// decode step repeats, so the task list is scanned twice (step k-1, then step k) and
// the dependencies of the second copy are kept: a producer found in the first copy is
// a cross-step dependency (step_distance 1). Consumers waiting on the same producer
// set at the same distance share one event. docs/passes.md describes it.
#include <algorithm>
#include <unordered_map>

#include "ir/error.h"
#include "ir/region_index.h"
#include "passes/registry.h"

namespace mpk {
namespace {

// Per consumer task: sorted, unique producers at step distance 0 and 1.
struct Dependencies {
  std::vector<std::vector<TaskId>> same_step;
  std::vector<std::vector<TaskId>> cross_step;
};

void sort_unique(std::vector<TaskId>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

void check_regions(const Module& m) {
  const auto num_tensors = static_cast<TensorId>(m.program.tensors.size());
  for (size_t i = 0; i < m.graph.tasks.size(); ++i) {
    const Task& t = m.graph.tasks[i];
    for (const auto* list : {&t.reads, &t.writes})
      for (const Region& r : *list)
        if (r.tensor < 0 || r.tensor >= num_tensors)
          throw Error("task " + std::to_string(i) + " accesses tensor id " +
                      std::to_string(r.tensor) + ", which does not exist");
  }
}

// Scans the task list twice with "last writer" semantics per tensor region: a record
// fully covered by a newer write stops producing dependencies; a partially covered one
// stays (conservative). Records carry payload copy * n + task.
Dependencies scan(const Module& m) {
  const TaskGraph& g = m.graph;
  const auto n = static_cast<int32_t>(g.tasks.size());
  const auto num_tensors = static_cast<int32_t>(m.program.tensors.size());

  // Reads of tensors that no task writes can take part in no dependency.
  std::vector<char> written(num_tensors, 0);
  std::vector<Region> universe;
  for (const Task& t : g.tasks)
    for (const Region& w : t.writes) {
      written[w.tensor] = 1;
      universe.push_back(w);
    }
  for (const Task& t : g.tasks)
    for (const Region& r : t.reads)
      if (written[r.tensor]) universe.push_back(r);
  RegionIndex reads(num_tensors, universe);
  RegionIndex writes(num_tensors, universe);
  universe.clear();
  universe.shrink_to_fit();

  Dependencies deps;
  deps.same_step.resize(n);
  deps.cross_step.resize(n);
  std::vector<int32_t> covered_reads, covered_writes;
  for (int32_t copy = 0; copy < 2; ++copy) {
    for (int32_t i = 0; i < n; ++i) {
      const Task& t = g.tasks[i];
      // Only the second copy's dependencies are kept. A record of the first copy is
      // the previous step; a task's own record there is implied by in-order execution.
      auto depend_on = [&](int32_t payload) {
        if (copy == 0) return;
        if (payload >= n)
          deps.same_step[i].push_back(payload - n);
        else if (payload != i)
          deps.cross_step[i].push_back(payload);
      };
      for (const Region& r : t.reads) {  // RAW; the first copy only builds the indexes
        if (copy == 0 || !written[r.tensor]) continue;
        writes.for_each_overlap(r, [&](int32_t, int32_t payload, const Region&) {
          depend_on(payload);
        });
      }
      covered_reads.clear();
      covered_writes.clear();
      for (const Region& w : t.writes) {
        reads.for_each_overlap(w, [&](int32_t id, int32_t payload, const Region& r) {
          depend_on(payload);
          if (w.contains(r)) covered_reads.push_back(id);
        });
        writes.for_each_overlap(w, [&](int32_t id, int32_t payload, const Region& r) {
          depend_on(payload);
          if (w.contains(r)) covered_writes.push_back(id);
        });
      }
      // Covered readers and writers are now ordered before this task, which later
      // accesses will depend on instead.
      for (int32_t id : covered_reads) reads.erase(id);
      for (int32_t id : covered_writes) writes.erase(id);
      const int32_t self = copy * n + i;
      for (const Region& r : t.reads)
        if (written[r.tensor]) reads.insert(r, self);
      for (const Region& w : t.writes) writes.insert(w, self);
    }
  }
  for (auto& v : deps.same_step) sort_unique(v);
  for (auto& v : deps.cross_step) sort_unique(v);
  return deps;
}

// Same-step successors of every task in CSR form.
struct Successors {
  std::vector<int32_t> begin;
  std::vector<TaskId> items;

  explicit Successors(const std::vector<std::vector<TaskId>>& preds) {
    const auto n = static_cast<int32_t>(preds.size());
    begin.assign(n + 1, 0);
    for (int32_t c = 0; c < n; ++c)
      for (TaskId p : preds[c]) ++begin[p + 1];
    for (int32_t i = 0; i < n; ++i) begin[i + 1] += begin[i];
    items.resize(begin[n]);
    std::vector<int32_t> fill(begin.begin(), begin.end() - 1);
    for (int32_t c = 0; c < n; ++c)
      for (TaskId p : preds[c]) items[fill[p]++] = c;
  }
};

// Marks everything reachable from `from` through `next(t, visit)`, `from` included.
template <typename Next>
void mark_reachable(TaskId from, std::vector<char>& mark, std::vector<TaskId>& stack, Next next) {
  if (mark[from]) return;
  mark[from] = 1;
  stack.assign(1, from);
  while (!stack.empty()) {
    const TaskId t = stack.back();
    stack.pop_back();
    next(t, [&](TaskId u) {
      if (!mark[u]) {
        mark[u] = 1;
        stack.push_back(u);
      }
    });
  }
}

// Drops the cross-step edges P->C implied by a kept cross-step edge X->Y, that is when
// P reaches X and Y reaches C through same-step edges (or P == X, Y == C). Same-step
// edges go from lower to higher task ids, so visiting edges by producer descending and
// consumer ascending, an edge can only be implied by one visited before it: the kept
// edges are exactly those no other edge implies. Per distinct anchor producer X, one
// backward search marks the ancestors of X and an incremental forward search the
// union of the descendants of its kept consumers.
void prune_cross_step(Dependencies& deps) {
  const auto n = static_cast<int32_t>(deps.same_step.size());
  const Successors succ(deps.same_step);
  const Successors cross(deps.cross_step);  // per producer, its consumers ascending

  struct Anchor {
    std::vector<char> ancestors;    // reach the anchor producer through same-step edges
    std::vector<char> descendants;  // reached from one of its kept consumers
  };
  std::vector<Anchor> anchors;
  std::vector<int32_t> anchor_of(n, -1);
  std::vector<TaskId> stack;
  std::vector<std::vector<TaskId>> kept(n);
  auto backward = [&](TaskId t, auto&& visit) {
    for (TaskId q : deps.same_step[t]) visit(q);
  };
  auto forward = [&](TaskId t, auto&& visit) {
    for (int32_t k = succ.begin[t]; k < succ.begin[t + 1]; ++k) visit(succ.items[k]);
  };

  for (TaskId p = n - 1; p >= 0; --p) {
    for (int32_t k = cross.begin[p]; k < cross.begin[p + 1]; ++k) {
      const TaskId c = cross.items[k];
      const bool implied = std::any_of(anchors.begin(), anchors.end(), [&](const Anchor& a) {
        return a.ancestors[p] && a.descendants[c];
      });
      if (implied) continue;
      kept[c].push_back(p);
      if (anchor_of[p] < 0) {
        anchor_of[p] = static_cast<int32_t>(anchors.size());
        anchors.push_back({std::vector<char>(n, 0), std::vector<char>(n, 0)});
        mark_reachable(p, anchors.back().ancestors, stack, backward);
      }
      mark_reachable(c, anchors[anchor_of[p]].descendants, stack, forward);
    }
  }
  for (auto& v : kept) std::sort(v.begin(), v.end());
  deps.cross_step = std::move(kept);
}

struct ProducerSetHash {
  size_t operator()(const std::vector<TaskId>& v) const {
    uint64_t h = 1469598103934665603ull;
    for (TaskId t : v) h = (h ^ static_cast<uint32_t>(t)) * 1099511628211ull;
    return static_cast<size_t>(h);
  }
};

// One event per distinct (producer set, distance), numbered by first consumer.
std::vector<Event> group_events(const Dependencies& deps) {
  std::vector<Event> events;
  std::unordered_map<std::vector<TaskId>, EventId, ProducerSetHash> by_set[2];
  for (size_t c = 0; c < deps.same_step.size(); ++c) {
    for (int32_t d = 0; d < 2; ++d) {
      const std::vector<TaskId>& producers = d == 0 ? deps.same_step[c] : deps.cross_step[c];
      if (producers.empty()) continue;
      auto [it, inserted] = by_set[d].try_emplace(producers, static_cast<EventId>(events.size()));
      if (inserted) {
        Event e;
        e.producers = producers;
        e.target = static_cast<int64_t>(producers.size());
        e.step_distance = d;
        events.push_back(std::move(e));
      }
      events[it->second].consumers.push_back(static_cast<TaskId>(c));
    }
  }
  return events;
}

bool same_events(const std::vector<Event>& a, const std::vector<Event>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].producers != b[i].producers || a[i].consumers != b[i].consumers ||
        a[i].target != b[i].target || a[i].step_distance != b[i].step_distance)
      return false;
  return true;
}

class InferDepsPass : public Pass {
 public:
  explicit InferDepsPass(bool prune) : prune_(prune) {}

  PassResult run(Module& m) override {
    if (m.graph.tasks.empty())
      return PassResult::failure("the module has no tasks (run decompose first)");
    try {
      check_regions(m);
    } catch (const Error& e) {
      return PassResult::failure(e.what());
    }
    Dependencies deps = scan(m);
    if (prune_) prune_cross_step(deps);
    std::vector<Event> events = group_events(deps);
    const bool changed = !same_events(events, m.graph.events);
    if (changed) {
      // A schedule was made for the previous events.
      m.graph.schedule = Schedule{};
      m.graph.events = std::move(events);
    }
    m.graph.rebuild_use_lists();
    return PassResult::ok(changed);
  }

 private:
  bool prune_;
};

}  // namespace

PassInfo infer_deps_pass_info() {
  PassInfo info;
  info.name = "infer-deps";
  info.summary = "derive events between tasks from overlapping regions (RAW, WAR, WAW), "
                 "within a step and across steps";
  info.options = {
      PassOptionInfo::boolean(
          "prune-cross-step", "true",
          "drop cross-step dependencies implied by the kept ones through same-step edges"),
  };
  info.create = [](const PassOptions& o) -> std::unique_ptr<Pass> {
    return std::make_unique<InferDepsPass>(
        option_bool(o, "infer-deps", "prune-cross-step", true));
  };
  return info;
}

}  // namespace mpk
