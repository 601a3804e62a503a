// The verifier's graph and schedule layers (semantics in docs/ir.md, "Events" and
// "Schedule"):
//   graph:    distance-0 events form no cycle; every two tasks whose regions conflict
//             (RAW, WAR, WAW) are ordered by a chain of events: the earlier one (in
//             task id order) before the later in the same step, and the later one's
//             previous step before the earlier (once the graph has events or a
//             schedule: before infer-deps it has neither); every task is scheduled
//             exactly once on at most sm_count workers;
//   schedule: distance-0 event edges plus same-worker order edges form no cycle.
// Conflicting pairs come from RegionIndex queries, never from comparing all pairs; the
// adjacency is the task-graph index's and the cycles are the deadlock check's
// (ir/task_graph_index.h, ir/deadlock.h).
#include <algorithm>
#include <cstdint>

#include "ir/checked.h"
#include "ir/deadlock.h"
#include "ir/region_index.h"
#include "ir/task_graph_index.h"
#include "ir/verifier_rules.h"

namespace mpk {
namespace {

// The work of one AccessOrderChecker run (candidate regions examined, conflicting pairs
// checked, tasks visited by backward searches): Qwen3-8B's graph takes 1.9e7 steps (8.3e7
// with tile=8 and nothing pruned), Llama 3 405B's about four times that; the bound (a
// few tens of seconds) stops a hostile graph of many tasks that all conflict, which
// would take hours.
constexpr int64_t kMaxOrderWork = int64_t{1} << 33;

// The cycle's tasks joined by " -> ", the first repeated at the end.
std::string cycle_text(const Module& m, const std::vector<CycleLink>& cycle,
                       const TaskGraphIndex* with_workers) {
  constexpr size_t kShown = 12;
  auto one = [&](TaskId t) {
    std::string s = describe_task(m, t);
    if (with_workers) s += " on worker " + std::to_string(with_workers->worker_of(t));
    return s;
  };
  std::string s;
  for (size_t i = 0; i < cycle.size() && i < kShown; ++i) s += one(cycle[i].task) + " -> ";
  if (cycle.size() > kShown) s += "... (" + std::to_string(cycle.size()) + " tasks) -> ";
  return s + one(cycle.front().task);
}

// One bit per distance-1 event, for every task.
class EventBits {
 public:
  EventBits(size_t num_tasks, size_t num_bits)
      : words_((num_bits + 63) / 64), bits_(num_tasks * words_, 0) {}
  uint64_t* row(size_t t) { return bits_.data() + t * words_; }
  const uint64_t* row(size_t t) const { return bits_.data() + t * words_; }
  void set(size_t t, size_t bit) { row(t)[bit / 64] |= uint64_t{1} << (bit % 64); }
  void merge(size_t into, const uint64_t* from) {
    uint64_t* r = row(into);
    for (size_t w = 0; w < words_; ++w) r[w] |= from[w];
  }
  bool intersects(const EventBits& o, size_t a, size_t b) const {
    const uint64_t *x = row(a), *y = o.row(b);
    for (size_t w = 0; w < words_; ++w)
      if (x[w] & y[w]) return true;
    return false;
  }

 private:
  size_t words_;
  std::vector<uint64_t> bits_;
};

// Checks that conflicting accesses (read after write, write after read, write after
// write on overlapping regions) are ordered by events. Candidate pairs come from
// RegionIndex queries. A pair is ordered by a direct event (fast path), or, across
// steps, by a chain through one distance-1 event (bitsets over the distance-1 events,
// computed once in topological order), or by a distance-0 chain (a backward search
// from the later task, once per task, only as far back as its unordered pairs need).
class AccessOrderChecker {
 public:
  AccessOrderChecker(const Module& m, const TaskGraphIndex& g, const std::vector<TaskId>& topo,
                     DiagnosticSink& sink)
      : m_(m), g_(g), sink_(sink), up_(0, 0), down_(0, 0), topo_pos_(topo.size()) {
    for (size_t i = 0; i < topo.size(); ++i) topo_pos_[topo[i]] = static_cast<int32_t>(i);
    cross_step_bits(topo);
  }

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
    RegionIndex reads = writes;  // same key dimensions and cuts, still empty
    universe.clear();
    universe.shrink_to_fit();
    for (int32_t i = 0; i < g_.num_tasks(); ++i) {
      for (const Region& w : tasks[i].writes)
        if (usable(w)) writes.insert(w, i);
      for (const Region& r : tasks[i].reads)
        if (usable(r)) reads.insert(r, i);
    }

    const int32_t n = g_.num_tasks();
    checked_.assign(n, -1);
    reach_.assign(n, 0);
    hit_.assign(n, 0);
    ev_seen_.assign(m_.graph.events.size(), 0);
    // The shares of a cooperative operator write disjoint units at run time (docs/ir.md):
    // they need no order among themselves.
    std::vector<OpId> coop_op(n, -1);
    for (int32_t i = 0; i < n; ++i)
      if (coop_share(tasks[i]).cooperative()) coop_op[i] = tasks[i].op;
    // Each pair (p, c) is checked once: the first conflict found is the one reported.
    for (TaskId c = 0; c < n; ++c) {
      if (work_ + writes.steps() + reads.steps() > kMaxOrderWork) {
        sink_.add("graph.too-large", "checking that conflicting accesses are ordered took more than " +
                                         std::to_string(kMaxOrderWork) + " steps (at task " + std::to_string(c) +
                                         " of " + std::to_string(n) + ")");
        return;
      }
      // Pairs that no direct event or cross-step bit orders wait for one backward search
      // from c, which only needs to reach as far back as the earliest of them.
      pending_.clear();
      auto visit = [&](TaskId p, const Region& mine, const Region& theirs, const char* rule,
                       const char* c_verb, const char* p_verb, const char* p_past) {
        if (p == c || checked_[p] == c || (coop_op[c] >= 0 && coop_op[p] == coop_op[c])) return;
        checked_[p] = c;
        ++work_;
        if (!ordered_without_search(p, c))
          pending_.push_back({p, &mine, &theirs, rule, c_verb, p_verb, p_past});
      };
      for (const Region& r : tasks[c].reads) {
        if (!usable(r)) continue;
        writes.for_each_overlap(r, [&](int32_t, int32_t p, const Region& w) {
          visit(p, r, w, "graph.unordered-read", "reads", "writes", "wrote");
        });
      }
      for (const Region& w : tasks[c].writes) {
        if (!usable(w)) continue;
        writes.for_each_overlap(w, [&](int32_t, int32_t p, const Region& o) {
          visit(p, w, o, "graph.unordered-write", "writes", "writes", "wrote");
        });
        reads.for_each_overlap(w, [&](int32_t, int32_t p, const Region& o) {
          visit(p, w, o, "graph.unordered-write", "writes", "reads", "read");
        });
      }
      if (pending_.empty()) continue;
      search_from(c);
      for (const Pending& x : pending_)
        if (reach_[x.p] != stamp_)
          report(x.p, c, *x.mine, *x.theirs, x.rule, x.c_verb, x.p_verb, x.p_past);
    }
  }

 private:
  // up_[t]: distance-1 events that t reaches (t, or a distance-0 chain from t, ends at
  // one of their producers). down_[t]: distance-1 events that reach t (one of their
  // consumers is t or has a distance-0 chain to t). p in step k-1 is ordered before c
  // in step k through one distance-1 event iff up_[p] and down_[c] share a bit.
  void cross_step_bits(const std::vector<TaskId>& topo) {
    const auto& events = m_.graph.events;
    std::vector<int32_t> bit(events.size(), -1);
    int32_t num_bits = 0;
    for (size_t e = 0; e < events.size(); ++e)
      if (events[e].step_distance == 1) bit[e] = num_bits++;
    const size_t n = static_cast<size_t>(g_.num_tasks());
    up_ = EventBits(n, num_bits);
    down_ = EventBits(n, num_bits);
    if (num_bits == 0) return;
    // Per distance-0 event, the union over its consumers (up) or producers (down),
    // computed once, when the first task needs it.
    EventBits ev_up(events.size(), num_bits), ev_down(events.size(), num_bits);
    std::vector<char> up_done(events.size(), 0), down_done(events.size(), 0);
    for (size_t e = 0; e < events.size(); ++e)
      if (bit[e] >= 0)
        for (TaskId p : g_.producers(static_cast<EventId>(e))) up_.set(p, bit[e]);
    // Reverse topological order: the consumers of a task's distance-0 events are done
    // before it (they come after all of the event's producers).
    for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
      const TaskId t = *it;
      for (EventId e : g_.same_step_triggers(t)) {
        if (!up_done[e]) {
          for (TaskId c : g_.consumers(e)) ev_up.merge(e, up_.row(c));
          up_done[e] = 1;
        }
        up_.merge(t, ev_up.row(e));
      }
    }
    for (TaskId t : topo)
      for (EventId e : g_.waits(t)) {
        if (bit[e] >= 0) {
          down_.set(t, bit[e]);
        } else if (events[e].step_distance == 0) {
          if (!down_done[e]) {
            for (TaskId p : g_.producers(e)) ev_down.merge(e, down_.row(p));
            down_done[e] = 1;
          }
          down_.merge(t, ev_down.row(e));
        }
      }
  }

  bool direct(TaskId p, TaskId c, bool any_distance) const {
    for (EventId e : g_.waits(c)) {
      if (g_.distance(e) != 0 && !any_distance) continue;
      const std::span<const TaskId> producers = g_.producers(e);
      if (std::binary_search(producers.begin(), producers.end(), p)) return true;
    }
    return false;
  }

  // p accesses earlier in the step (p < c): a distance-0 chain p -> c is needed. p
  // accesses later (p > c), so c conflicts with what p did in the previous step: a
  // chain of total distance <= 1 is needed (a distance-0 chain also orders p's
  // previous step, which ran before p's current one on the same worker).
  // Ordered by a direct event, or across steps by one distance-1 event; otherwise only
  // a distance-0 chain p -> ... -> c can order the pair (search_from).
  bool ordered_without_search(TaskId p, TaskId c) const {
    const bool cross = p > c;
    if (direct(p, c, cross)) return true;
    return cross && up_.intersects(down_, p, c);
  }

  // Marks with stamp_ the tasks with a distance-0 chain to c, as far as the pending
  // producers need: a task earlier in topological order than all of them can neither be
  // one nor reach one, and the search stops once every pending producer is reached.
  void search_from(TaskId c) {
    ++stamp_;
    int32_t lo = topo_pos_[c];
    for (const Pending& x : pending_) lo = std::min(lo, topo_pos_[x.p]);
    size_t missing = pending_.size();
    for (const Pending& x : pending_) hit_[x.p] = stamp_;
    stack_.assign(1, c);
    reach_[c] = stamp_;
    while (!stack_.empty() && missing > 0) {
      const TaskId t = stack_.back();
      stack_.pop_back();
      ++work_;
      for (EventId e : g_.same_step_waits(t)) {
        if (ev_seen_[e] == stamp_) continue;
        ev_seen_[e] = stamp_;
        for (TaskId p : g_.producers(e))
          if (reach_[p] != stamp_ && topo_pos_[p] >= lo) {
            reach_[p] = stamp_;
            if (hit_[p] == stamp_) {
              hit_[p] = 0;  // counted once, though several pairs may name it
              --missing;
            }
            stack_.push_back(p);
          }
      }
    }
  }

  // c's access `mine` conflicts with p's access `theirs`; the verbs say what each does
  // ("reads", "writes", and p's in the past tense).
  void report(TaskId p, TaskId c, const Region& mine, const Region& theirs, const char* rule,
              const char* c_verb, const char* p_verb, const char* p_past) {
    const auto& tensors = m_.program.tensors;
    const std::string head = describe_task(m_, c) + " " + c_verb + " " +
                             format_region(tensors[mine.tensor].name, mine) + ", which " +
                             describe_task(m_, p) + " ";
    const std::string other = " (" + format_region(tensors[theirs.tensor].name, theirs) + ")";
    if (p < c)
      sink_.add(rule, head + p_verb + " earlier in the step" + other +
                          ", and no chain of distance-0 events orders task " + std::to_string(p) +
                          " before task " + std::to_string(c));
    else
      sink_.add(rule, head + p_past + " in the previous step" + other +
                          ", and no chain of events of total distance <= 1 orders task " +
                          std::to_string(p) + " before task " + std::to_string(c));
  }

  const Module& m_;
  const TaskGraphIndex& g_;
  DiagnosticSink& sink_;
  EventBits up_, down_;
  // A conflicting pair of c's that awaits the search, with what report() says of it.
  struct Pending {
    TaskId p;
    const Region *mine, *theirs;
    const char *rule, *c_verb, *p_verb, *p_past;
  };
  std::vector<TaskId> checked_;  // per task p: the last task c it was checked against
  std::vector<int32_t> topo_pos_;  // per task: its place in the topological order
  std::vector<uint32_t> reach_, hit_, ev_seen_;
  std::vector<TaskId> stack_;
  std::vector<Pending> pending_;
  uint32_t stamp_ = 0;
  int64_t work_ = 0;  // pairs checked plus tasks searched, against kMaxOrderWork
};

// AccessOrderChecker's bitsets: one bit per distance-1 event for every task and every
// event, twice. A real graph has few distance-1 events (one for Qwen3-8B after pruning,
// 15570 of 16580 unpruned), so even Llama 3 405B unpruned (about 130000 tasks, 65000
// distance-1 events) needs 3.2 GB; a hostile graph of millions of each would need
// terabytes.
constexpr int64_t kMaxCrossStepBytes = int64_t{1} << 32;

int64_t cross_step_bytes(const Module& m) {
  int64_t bits = 0;
  for (const Event& e : m.graph.events) bits += e.step_distance == 1;
  const auto rows = static_cast<int64_t>(m.graph.tasks.size() + m.graph.events.size());
  return checked_product({2, rows, (bits + 63) / 64, 8}, "cross-step bitsets");
}

void check_schedule_cover(const Module& m, const TaskGraphIndex& g, DiagnosticSink& sink) {
  const Schedule& s = m.graph.schedule;
  if (static_cast<int64_t>(s.workers.size()) > m.machine.sm_count)
    sink.add("graph.bad-worker", "the schedule has " + std::to_string(s.workers.size()) +
                                     " workers, but machine '" + m.machine.name + "' has " +
                                     std::to_string(m.machine.sm_count) + " SMs (one worker each)");
  for (TaskId t = 0; t < g.num_tasks(); ++t) {
    const std::span<const int32_t> on = g.listings(t);
    if (on.empty()) {
      sink.add("graph.unscheduled-task", describe_task(m, t) + " is on no worker");
    } else if (on.size() > 1) {
      std::string where;
      for (size_t i = 0; i < on.size(); ++i) where += (i ? ", " : "") + std::to_string(on[i]);
      sink.add("graph.task-scheduled-twice", describe_task(m, t) + " is scheduled " +
                                                 std::to_string(on.size()) +
                                                 " times (workers " + where + ")");
    }
  }
}

}  // namespace

std::vector<Diagnostic> verify_graph_indexed(const Module& m, const TaskGraphIndex& g) {
  DiagnosticSink sink;
  if (m.graph.tasks.empty()) return sink.finish();
  const std::vector<TaskId> topo = same_step_order(g);
  if (topo.empty()) {
    const std::vector<CycleLink> cycle = WaitCheck(g).cycle();
    sink.add("graph.cycle", "distance-0 events form a cycle: " + cycle_text(m, cycle, nullptr));
  } else if (!m.graph.events.empty() || !m.graph.schedule.empty()) {
    // A decomposed graph whose dependencies are not inferred yet (no events, no
    // schedule) is an intermediate state of the pipeline, not an unordered one.
    const int64_t bytes = cross_step_bytes(m);
    if (bytes > kMaxCrossStepBytes)
      sink.add("graph.too-large", "checking the order across steps of " + std::to_string(m.graph.tasks.size()) +
                                      " tasks and " + std::to_string(m.graph.events.size()) + " events needs " +
                                      std::to_string(bytes) + " bytes, above the limit of " +
                                      std::to_string(kMaxCrossStepBytes) + " (4 GiB)");
    else
      AccessOrderChecker(m, g, topo, sink).run();
    check_cross_rank_order(m, sink);
  }
  if (!m.graph.schedule.empty()) check_schedule_cover(m, g, sink);
  return sink.finish();
}

std::vector<Diagnostic> verify_schedule_indexed(const Module& m, const TaskGraphIndex& g) {
  DiagnosticSink sink;
  if (m.graph.schedule.empty() || m.graph.tasks.empty()) return sink.finish();
  const std::vector<CycleLink> cycle = WaitCheck(g, schedule_order(g)).cycle();
  if (!cycle.empty())
    sink.add("schedule.deadlock",
             "distance-0 events and worker order wait on each other in a cycle: " + cycle_text(m, cycle, &g));
  return sink.finish();
}

std::vector<Diagnostic> verify_graph(const Module& m) {
  return verify_graph_indexed(m, TaskGraphIndex(m.graph));
}

std::vector<Diagnostic> verify_schedule(const Module& m) {
  return verify_schedule_indexed(m, TaskGraphIndex(m.graph));
}

}  // namespace mpk
