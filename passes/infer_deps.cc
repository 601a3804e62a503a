// infer-deps: derives the events (counter + target) between tasks from the regions they
// read and write. RAW everywhere; WAR and WAW where a buffer is written again. The
// decode step repeats, so the task list is scanned twice (step k-1, then step k) and
// the dependencies of the second copy are kept: a producer found in the first copy is
// a cross-step dependency (step_distance 1). Dependencies implied by others are pruned
// (same_step_graph.h); consumers waiting on the same producer set at the same distance
// share one event. A dependency through a tensor that an all_reduce reads on every rank
// (docs/ir.md "Tensor parallel") is one between ranks: it gets an all_ranks event, kept
// apart: never pruned (a local path does not order another rank's copy), though they do
// imply local edges, since they order the local copies too.
// docs/passes.md describes it.
#include <algorithm>
#include <iterator>
#include <unordered_map>

#include "ir/error.h"
#include "ir/ops/tensor_parallel.h"
#include "ir/region_index.h"
#include "ir/row_positions.h"
#include "passes/options.h"
#include "passes/same_step_graph.h"

namespace mpk {
namespace {

// Per consumer, its same-step producers (sorted, unique); per producer, its cross-step
// consumers (ascending, unique: the order prune_cross_step visits them in); per
// consumer and distance, its producers on every rank (sorted, unique; never pruned).
struct Dependencies {
  std::vector<std::vector<TaskId>> same_step;
  std::vector<std::vector<TaskId>> cross_step_consumers;
  std::vector<std::vector<TaskId>> all_ranks[2];
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

  // The shares of a cooperative operator (docs/ir.md) declare the same whole regions
  // but write disjoint units at run time: within a step they never depend on each
  // other, and one share's access hides no other task's record.
  std::vector<OpId> coop_op(n, -1);
  for (int32_t i = 0; i < n; ++i)
    if (coop_share(g.tasks[i]).cooperative()) coop_op[i] = g.tasks[i].op;
  // Whether task i reads tensor t on every rank.
  const std::vector<bool> symmetric = symmetric_tensors(m);
  auto every_rank = [&](int32_t i, TensorId t) {
    return symmetric[t] && reads_every_rank(m.program.ops[g.tasks[i].op], t);
  };

  Dependencies deps;
  deps.same_step.resize(n);
  deps.cross_step_consumers.resize(n);
  for (auto& v : deps.all_ranks) v.resize(n);
  std::vector<int32_t> covered_reads, covered_writes;
  for (int32_t copy = 0; copy < 2; ++copy) {
    for (int32_t i = 0; i < n; ++i) {
      const Task& t = g.tasks[i];
      auto peer = [&](int32_t payload) {  // another share of i's operator, in this step
        return payload / n == copy && coop_op[i] >= 0 && coop_op[payload % n] == coop_op[i];
      };
      // Only the second copy's dependencies are kept. A record of the first copy is
      // the previous step; a task's own record there is implied by in-order execution.
      // Consumers come in ascending order, so a producer's list stays sorted and unique.
      auto depend_on = [&](int32_t payload, bool ranks) {
        if (copy == 0 || peer(payload)) return;
        if (ranks) {  // another rank's copy of the task itself too
          deps.all_ranks[payload >= n ? 0 : 1][i].push_back(payload % n);
        } else if (payload >= n) {
          deps.same_step[i].push_back(payload - n);
        } else if (payload != i) {
          std::vector<TaskId>& consumers = deps.cross_step_consumers[payload];
          if (consumers.empty() || consumers.back() != i) consumers.push_back(i);
        }
      };
      for (const Region& r : t.reads) {  // RAW; the first copy only builds the indexes
        if (copy == 0 || !written[r.tensor]) continue;
        writes.for_each_overlap(r, [&](int32_t, int32_t payload, const Region&) {
          depend_on(payload, every_rank(i, r.tensor));
        });
      }
      covered_reads.clear();
      covered_writes.clear();
      for (const Region& w : t.writes) {
        reads.for_each_overlap(w, [&](int32_t id, int32_t payload, const Region& r) {
          depend_on(payload, every_rank(payload % n, w.tensor));
          if (w.contains(r)) covered_reads.push_back(id);
        });
        writes.for_each_overlap(w, [&](int32_t id, int32_t payload, const Region& r) {
          depend_on(payload, false);
          if (w.contains(r)) covered_writes.push_back(id);
        });
      }
      // Covered readers and writers are now ordered before this task, which later
      // accesses will depend on instead. Not before a cooperative share's peers, which
      // do not depend on it: a share erases nothing (the extra edges later tasks get are
      // implied, and the reduction drops them).
      if (coop_op[i] < 0) {
        for (int32_t id : covered_reads) reads.erase(id);
        for (int32_t id : covered_writes) writes.erase(id);
      }
      const int32_t self = copy * n + i;
      for (const Region& r : t.reads)
        if (written[r.tensor]) reads.insert(r, self);
      for (const Region& w : t.writes) writes.insert(w, self);
    }
  }
  for (auto& v : deps.same_step) sort_unique(v);
  for (auto& d : deps.all_ranks)
    for (auto& v : d) sort_unique(v);
  return deps;
}

// Per consumer, its producers ascending, from per producer, its consumers.
std::vector<std::vector<TaskId>> producers_of(const std::vector<std::vector<TaskId>>& consumers) {
  std::vector<std::vector<TaskId>> producers(consumers.size());
  for (size_t p = 0; p < consumers.size(); ++p)
    for (TaskId c : consumers[p]) producers[c].push_back(static_cast<TaskId>(p));
  return producers;
}

// Drops the cross-step edges P->C implied by a kept cross-step edge X->Y, that is when
// P reaches X and Y reaches C through same-step edges (or P == X, Y == C). Same-step
// edges go from lower to higher task ids, so visiting edges by producer descending and
// consumer ascending, an edge can only be implied by one visited before it: the kept
// edges are exactly those no other edge implies. Per distinct anchor producer X, one
// backward search marks the ancestors of X and an incremental forward search the
// union of the descendants of its kept consumers. `same_step` holds the same-step edges
// (reduced or not: only reachability matters). Returns per consumer its kept producers.
std::vector<std::vector<TaskId>> prune_cross_step(
    const std::vector<std::vector<TaskId>>& cross_step_consumers, const SameStepGraph& same_step) {
  const auto n = static_cast<int32_t>(cross_step_consumers.size());

  struct Anchor {
    SameStepGraph::Marks ancestors;    // reach the anchor producer through same-step edges
    SameStepGraph::Marks descendants;  // reached from one of its kept consumers
  };
  std::vector<Anchor> anchors;
  std::vector<int32_t> anchor_of(n, -1);
  std::vector<TaskId> stack;
  std::vector<std::vector<TaskId>> kept(n);

  for (TaskId p = n - 1; p >= 0; --p) {
    for (TaskId c : cross_step_consumers[p]) {
      const bool implied = std::any_of(anchors.begin(), anchors.end(), [&](const Anchor& a) {
        return a.ancestors.tasks[p] && a.descendants.tasks[c];
      });
      if (implied) continue;
      kept[c].push_back(p);
      if (anchor_of[p] < 0) {
        anchor_of[p] = static_cast<int32_t>(anchors.size());
        anchors.push_back({same_step.no_marks(), same_step.no_marks()});
        same_step.mark_ancestors(p, anchors.back().ancestors, stack);
      }
      same_step.mark_descendants(c, anchors[anchor_of[p]].descendants, stack);
    }
  }
  for (auto& v : kept) std::reverse(v.begin(), v.end());  // visited descending
  return kept;
}

// A prefill chunk's cross-step dependencies as one step fence (docs/passes.md): the next
// step's sources (tasks with no same-step producer) wait for this step's sinks (tasks with
// no same-step consumer). Every task of a step reaches a sink and is reached from a
// source, so the fence implies every cross-step edge. In a chunk no token chain makes
// most of those edges implied, and pruning them one by one would take quadratic time.
std::vector<std::vector<TaskId>> step_fence(const Dependencies& deps) {
  const size_t n = deps.same_step.size();
  std::vector<std::vector<TaskId>> fence(n);
  if (std::all_of(deps.cross_step_consumers.begin(), deps.cross_step_consumers.end(),
                  [](const std::vector<TaskId>& c) { return c.empty(); }))
    return fence;
  std::vector<char> produces(n, 0);
  for (const std::vector<TaskId>& producers : deps.same_step)
    for (TaskId p : producers) produces[p] = 1;
  std::vector<TaskId> sinks;
  for (size_t t = 0; t < n; ++t)
    if (!produces[t]) sinks.push_back(static_cast<TaskId>(t));
  for (size_t c = 0; c < n; ++c)
    if (deps.same_step[c].empty()) fence[c] = sinks;
  return fence;
}

// One event per distinct (producer set, distance, all_ranks), numbered by first consumer.
std::vector<Event> group_events(const std::vector<std::vector<TaskId>>& same_step,
                                const std::vector<std::vector<TaskId>>& cross_step,
                                const std::vector<std::vector<TaskId>> (&all_ranks)[2]) {
  std::vector<Event> events;
  std::unordered_map<std::vector<TaskId>, EventId, TaskListHash> by_set[4];
  for (size_t c = 0; c < same_step.size(); ++c) {
    for (int32_t k = 0; k < 4; ++k) {  // distance k % 2, all ranks from k = 2
      const int32_t d = k % 2;
      const std::vector<TaskId>& producers = k >= 2 ? all_ranks[d][c] : d == 0 ? same_step[c] : cross_step[c];
      if (producers.empty()) continue;
      auto [it, inserted] = by_set[k].try_emplace(producers, static_cast<EventId>(events.size()));
      if (inserted) {
        Event e;
        e.producers = producers;
        e.target = static_cast<int64_t>(producers.size());
        e.step_distance = d;
        e.all_ranks = k >= 2;
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
        a[i].target != b[i].target || a[i].step_distance != b[i].step_distance ||
        a[i].all_ranks != b[i].all_ranks)
      return false;
  return true;
}

struct InferDepsOptions {
  bool prune_same_step = true;
  bool prune_cross_step = true;
};

class InferDepsPass : public Pass {
 public:
  explicit InferDepsPass(const InferDepsOptions& o)
      : prune_same_step_(o.prune_same_step), prune_cross_step_(o.prune_cross_step) {}

  PassResult run(Module& m) override {
    if (m.graph.tasks.empty())
      return PassResult::failure("the module has no tasks (run decompose first)");
    try {
      check_regions(m);
    } catch (const Error& e) {
      return PassResult::failure(e.what());
    }
    Dependencies deps = scan(m);
    std::vector<std::vector<TaskId>> cross_step;  // per consumer
    const bool fence = prune_cross_step_ && is_prefill_chunk(m);
    if (fence) cross_step = step_fence(deps);
    if (prune_same_step_ || prune_cross_step_) {
      // The local edges with the same-step cross-rank ones, which imply local edges too;
      // of the reduced sets only the local edges are kept (the cross-rank ones all are).
      std::vector<std::vector<TaskId>> local = deps.same_step, both = deps.same_step;
      for (size_t c = 0; c < both.size(); ++c) {
        both[c].insert(both[c].end(), deps.all_ranks[0][c].begin(), deps.all_ranks[0][c].end());
        sort_unique(both[c]);
      }
      SameStepGraph same_step(both);
      if (prune_same_step_) {
        same_step.reduce();
        same_step.write_back(deps.same_step);
        for (size_t c = 0; c < local.size(); ++c) {
          std::vector<TaskId> kept;
          std::set_intersection(deps.same_step[c].begin(), deps.same_step[c].end(), local[c].begin(),
                                local[c].end(), std::back_inserter(kept));
          deps.same_step[c] = std::move(kept);
        }
      } else {
        deps.same_step = std::move(local);
      }
      if (prune_cross_step_ && !fence) cross_step = prune_cross_step(deps.cross_step_consumers, same_step);
    }
    if (!prune_cross_step_) cross_step = producers_of(deps.cross_step_consumers);
    std::vector<Event> events = group_events(deps.same_step, cross_step, deps.all_ranks);
    const bool changed = !same_events(events, m.graph.events);
    if (changed) {
      // A schedule was made for the previous events.
      m.graph.schedule = Schedule{};
      m.graph.events = std::move(events);
      m.graph.touch();
    }
    return PassResult::ok(changed);
  }

 private:
  bool prune_same_step_;
  bool prune_cross_step_;
};

PassInfo infer_deps_pass_info() {
  using O = InferDepsOptions;
  return typed_pass_info(
      "infer-deps",
      "derive events between tasks from overlapping regions (RAW, WAR, WAW), within a step and "
      "across steps",
      OptionSchema<O>()
          .flag("prune-same-step", &O::prune_same_step,
                "drop same-step dependencies implied by the others (transitive reduction)")
          .flag("prune-cross-step", &O::prune_cross_step,
                "drop cross-step dependencies implied by the kept ones through same-step edges"),
      [](const O& o) { return std::make_unique<InferDepsPass>(o); });
}

}  // namespace

MPK_PASS(infer_deps_pass_info);

}  // namespace mpk
