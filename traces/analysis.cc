// Run statistics and the critical-path walk.
#include "traces/analysis.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "ir/error.h"
#include "traces/busy_time.h"
#include "traces/critical_path.h"

namespace mpk {
namespace {

// The critical path of one step, from its last-ending execution back to its start;
// consecutive nodes with the same name are one segment.
void step_critical_path(const Module& m, const std::vector<Execution>& execs,
                        const StepRecord& step, RunStats& s) {
  const int32_t k = step.step;
  int64_t last = -1;
  for (size_t i = 0; i < execs.size(); ++i)
    if (execs[i].step == k && (last < 0 || execs[i].end_ns > execs[last].end_ns))
      last = static_cast<int64_t>(i);
  if (last < 0) return;
  const CriticalPathWalker walker(m, execs, static_cast<int32_t>(s.run.steps));
  const CriticalPath path = walker.walk(
      walker.node_of(last), [&](int64_t n) { return walker.nodes()[n].step != k; }, step.start_ns);
  s.path_step = k;
  std::map<std::string, std::pair<int64_t, int64_t>> by_kind;  // kind -> (nodes, busy)
  for (const PathEntry& e : path.entries) {
    const OpId op = walker.op_of(e.node);
    const std::string name = walker.name_of(e.node, false);
    if (s.path.empty() || s.path.back().name != name) {
      PathSegment seg;
      seg.op = op;
      seg.name = name;
      if (op >= 0 && static_cast<size_t>(op) < m.program.ops.size())
        seg.kind = std::string(name_of(m.program.ops[op].kind));
      s.path.push_back(seg);
    }
    PathSegment& seg = s.path.back();
    seg.tasks++;
    seg.busy_ns += e.run_ns;
    seg.gap_ns += e.gap_ns;
    s.path_busy_ns += e.run_ns;
    s.path_gap_ns += e.gap_ns;
    s.path_tasks++;
    by_kind[seg.kind].first++;
    by_kind[seg.kind].second += e.run_ns;
  }
  for (const auto& [kind, v] : by_kind) s.path_kinds.push_back({kind, v.first, v.second, 0});
  std::sort(s.path_kinds.begin(), s.path_kinds.end(),
            [](const KindTime& a, const KindTime& b) { return a.total_ns > b.total_ns; });
}

// Time per operator kind. The members of a linear group share one interval on one worker
// and count as one execution of their kind, so the kinds' times add up to the busy time.
std::map<std::string, KindTime> kind_times(const Module& m, const std::vector<Execution>& execs) {
  auto before = [](const Execution* a, const Execution* b) {
    return std::tie(a->worker, a->start_ns, a->end_ns) < std::tie(b->worker, b->start_ns, b->end_ns);
  };
  std::vector<const Execution*> order;
  order.reserve(execs.size());
  for (const Execution& e : execs) order.push_back(&e);
  if (!std::is_sorted(order.begin(), order.end(), before)) std::sort(order.begin(), order.end(), before);
  std::vector<KindTime> by_kind(kNumOpKinds);
  for (size_t i = 0; i < order.size(); ++i) {
    const Execution& e = *order[i];
    if (i > 0 && std::tie(e.worker, e.start_ns, e.end_ns) ==
                     std::tie(order[i - 1]->worker, order[i - 1]->start_ns, order[i - 1]->end_ns))
      continue;
    const OpId op = e.task >= 0 && static_cast<size_t>(e.task) < m.graph.tasks.size() ? m.graph.tasks[e.task].op : -1;
    if (op < 0 || static_cast<size_t>(op) >= m.program.ops.size()) continue;
    KindTime& k = by_kind[static_cast<size_t>(m.program.ops[static_cast<size_t>(op)].kind)];
    ++k.executions;
    k.total_ns += e.end_ns - e.start_ns;
    k.wait_ns += e.start_ns - e.wait_begin_ns;
  }
  std::map<std::string, KindTime> kinds;
  for (size_t k = 0; k < by_kind.size(); ++k) {
    if (by_kind[k].executions == 0) continue;
    by_kind[k].kind = std::string(name_of(static_cast<OpKind>(k)));
    kinds[by_kind[k].kind] = by_kind[k];
  }
  return kinds;
}

// When each (task, step) ended, to split a wait at its producer's release.
class WaitSplitter {
 public:
  WaitSplitter(const Module& m, const std::vector<Execution>& execs, int64_t steps)
      : m_(m), steps_(std::max<int64_t>(steps, 0)), end_(m.graph.tasks.size() * static_cast<size_t>(steps_), -1) {
    for (const Execution& e : execs)
      if (known(e.task, e.step)) end_[slot(e.task, e.step)] = e.end_ns;
  }

  // The part of wait `b` after its producer's execution ended; 0 when the producer or
  // its execution is not known.
  int64_t after_release_ns(const Bubble& b) const {
    if (b.event < 0 || static_cast<size_t>(b.event) >= m_.graph.events.size()) return 0;
    const int64_t step = b.step - m_.graph.events[static_cast<size_t>(b.event)].step_distance;
    const int64_t end = known(b.producer, step) ? end_[slot(b.producer, step)] : -1;
    return end < 0 ? 0 : std::max<int64_t>(0, b.end_ns - std::max(b.start_ns, end));
  }

 private:
  bool known(TaskId t, int64_t step) const {
    return t >= 0 && static_cast<size_t>(t) < m_.graph.tasks.size() && step >= 0 && step < steps_;
  }
  size_t slot(TaskId t, int64_t step) const { return static_cast<size_t>(t * steps_ + step); }

  const Module& m_;
  int64_t steps_;
  std::vector<int64_t> end_;
};

}  // namespace

RunStats compute_stats(const TraceReader& reader, int64_t run, int64_t step) {
  StoredRun r;
  r.run = reader.run(run);
  r.steps = reader.steps(run);
  r.executions = reader.executions(run);
  r.bubbles = reader.bubbles(run);
  return compute_stats(reader.load_graph(run), r, step);
}

RunStats compute_stats(const Module& m, const StoredRun& r, int64_t step) {
  RunStats s;
  s.run = r.run;
  s.steps = r.steps;
  const int64_t run = r.run.id;
  const std::vector<Execution>& execs = r.executions;
  const std::vector<Bubble>& bubbles = r.bubbles;

  std::vector<int64_t> spans;
  for (const StepRecord& st : s.steps) spans.push_back(st.end_ns - st.start_ns);
  if (!spans.empty()) {
    double total = 0;
    for (int64_t v : spans) total += static_cast<double>(v);
    s.mean_step_ns = total / static_cast<double>(spans.size());
    std::vector<int64_t> sorted = spans;
    std::sort(sorted.begin(), sorted.end());
    s.median_step_ns = static_cast<double>(sorted[(sorted.size() - 1) / 2]);
  }
  s.busy_ns = busy_union_ns(execs);
  const double capacity = static_cast<double>(s.run.num_workers) * static_cast<double>(s.run.duration_ns);
  s.utilization = capacity > 0 ? static_cast<double>(s.busy_ns) / capacity : 0;

  std::vector<const Bubble*> waits;
  const WaitSplitter split(m, execs, s.run.steps);
  for (const Bubble& b : bubbles) {
    s.bubble_ns[static_cast<size_t>(b.cause)] += b.end_ns - b.start_ns;
    if (b.cause != BubbleCause::kWait) continue;
    waits.push_back(&b);
    const int64_t released = split.after_release_ns(b);
    s.wait_released_ns += released;
    s.wait_running_ns += b.end_ns - b.start_ns - released;
    s.waits_released += released > 0;
  }
  const size_t top = std::min<size_t>(10, waits.size());
  std::partial_sort(waits.begin(), waits.begin() + top, waits.end(),
                    [](const Bubble* a, const Bubble* b) {
                      return a->end_ns - a->start_ns > b->end_ns - b->start_ns;
                    });
  auto op_name = [&](TaskId t) -> std::string {
    if (t < 0 || static_cast<size_t>(t) >= m.graph.tasks.size()) return "";
    const OpId op = m.graph.tasks[t].op;
    return op >= 0 && static_cast<size_t>(op) < m.program.ops.size() ? m.program.ops[op].name : "";
  };
  for (size_t i = 0; i < top; ++i) {
    const Bubble& b = *waits[i];
    s.longest_waits.push_back({b.worker, b.step, b.task, op_name(b.task), b.start_ns,
                               b.end_ns - b.start_ns, b.event, b.producer, op_name(b.producer),
                               b.producer_worker});
  }

  for (const auto& [name, k] : kind_times(m, execs)) s.kinds.push_back(k);
  std::sort(s.kinds.begin(), s.kinds.end(),
            [](const KindTime& a, const KindTime& b) { return a.total_ns > b.total_ns; });

  if (step != -1 && (step < 0 || step >= static_cast<int64_t>(s.steps.size())))
    throw Error("run " + std::to_string(run) + " has no step " + std::to_string(step) +
                " (it ran " + std::to_string(s.steps.size()) + ")");
  if (!s.steps.empty()) {
    int64_t k = step;
    if (k < 0) {
      std::vector<std::pair<int64_t, int32_t>> order;
      for (const StepRecord& st : s.steps) order.push_back({st.end_ns - st.start_ns, st.step});
      std::sort(order.begin(), order.end());
      k = order[(order.size() - 1) / 2].second;
    }
    step_critical_path(m, execs, s.steps[static_cast<size_t>(k)], s);
  }
  return s;
}

}  // namespace mpk
