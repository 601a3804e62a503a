// locality: critical-path list scheduling that keeps a consumer on the worker of its
// main producer (the producer whose writes overlapping the consumer's reads are largest)
// when that does not lengthen the schedule: when its finish time there is within its
// slack. The slack comes from the plain critical-path schedule: a task's latest finish
// there (a backward pass over events and worker order from its makespan) minus the
// earliest finish the list scheduler found for it, times `slack-scale`.
#include <algorithm>

#include "passes/policies/list_scheduler.h"
#include "passes/policies/policy.h"

namespace mpk {
namespace {

// Elements of a that also lie in b (0 unless same tensor and rank).
int64_t overlap_volume(const Region& a, const Region& b) {
  if (a.tensor != b.tensor || a.dims.size() != b.dims.size()) return 0;
  int64_t v = 1;
  for (size_t i = 0; i < a.dims.size(); ++i) {
    const int64_t lo = std::max(a.dims[i].lo, b.dims[i].lo);
    const int64_t hi = std::min(a.dims[i].hi, b.dims[i].hi);
    if (hi <= lo) return 0;
    v *= hi - lo;
  }
  return v;
}

// The same-step producer of t whose writes cover most of t's reads; -1 when none.
TaskId main_producer(const ListScheduler& s, TaskId t) {
  const TaskGraph& g = s.graph().graph();
  TaskId best = -1;
  int64_t best_volume = -1;
  for (EventId e : s.graph().same_step_waits(t)) {
    for (TaskId p : s.graph().producers(e)) {
      int64_t volume = 0;
      for (const Region& w : g.tasks[p].writes)
        for (const Region& r : g.tasks[t].reads) volume += overlap_volume(w, r);
      if (volume > best_volume || (volume == best_volume && p < best)) {
        best = p;
        best_volume = volume;
      }
    }
  }
  return best;
}

// Latest finish of every task in a finished schedule that keeps its makespan: before
// the next task on its worker starts, and before each consumer starts (less the event
// latency when the consumer runs on another worker).
std::vector<double> latest_finish(const ListScheduler& s, const ListScheduler::Result& r,
                                  double latency_ns) {
  const int32_t n = s.graph().num_tasks();
  std::vector<TaskId> next(n, -1);
  for (const auto& list : r.workers)
    for (size_t i = 0; i + 1 < list.size(); ++i) next[list[i]] = list[i + 1];
  std::vector<double> finish(n), start(n);
  for (auto it = r.order.rbegin(); it != r.order.rend(); ++it) {
    const TaskId t = *it;
    double f = next[t] >= 0 ? start[next[t]] : r.makespan_ns;
    for (EventId e : s.graph().same_step_triggers(t))
      for (TaskId c : s.graph().consumers(e))
        f = std::min(f, start[c] - (s.worker_of(c) != s.worker_of(t) ? latency_ns : 0));
    finish[t] = f;
    start[t] = f - s.cost(t);
  }
  return finish;
}

struct LocalityOptions {
  std::optional<double> event_latency_ns;  // unset: the cost model's
  double slack_scale = 1;
};

PolicyInfo locality_policy_info() {
  using O = LocalityOptions;
  return typed_policy_info(
      "locality",
      "critical-path, but keeps a consumer on its main producer's worker within its slack",
      OptionSchema<O>()
          .real("event-latency-ns", &O::event_latency_ns,
                "cross-worker dependency latency (default: the cost model's)", 0, kMaxEventLatencyNs)
          .real("slack-scale", &O::slack_scale,
                "fraction of a task's slack it may spend to stay local", 0, kMaxSlackScale),
      [](const O& o) -> ScheduleFn {
        return [latency = o.event_latency_ns, scale = o.slack_scale](const ScheduleRequest& r) {
          const double l = latency.value_or(r.costs.event_latency_ns);
          ListScheduler plain(r, l);
          const std::vector<double> deadline = latest_finish(plain, plain.run(), l);
          auto keep_local = [&](const ListScheduler& s, TaskId t, int32_t best,
                                double best_finish) {
            const TaskId p = main_producer(s, t);
            if (p < 0 || s.worker_of(p) == best) return best;
            const int32_t local = s.worker_of(p);
            const double slack = std::max(0.0, deadline[t] - best_finish);
            return s.finish_on(t, local) <= best_finish + scale * slack ? local : best;
          };
          PolicyOutput out;
          out.workers = ListScheduler(r, l).run(keep_local).workers;
          out.params["event_latency_ns"] = l;
          out.params["slack_scale"] = scale;
          return out;
        };
      });
}

}  // namespace

MPK_POLICY(locality_policy_info);

}  // namespace mpk
