// locality: critical-path list scheduling that keeps a consumer on the worker of its
// main producer (the producer whose writes overlapping the consumer's reads are largest)
// when that does not lengthen the schedule: when the task's finish time there stays
// within its slack. The slack is how far the task can finish after its earliest
// possible finish before it would exceed its latest finish under the makespan bound
// (max(critical path, total cost / workers)), times `slack-scale`.
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
  for (EventId e : s.graph().waits(t)) {
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

}  // namespace

PolicyInfo locality_policy_info() {
  PolicyInfo info;
  info.name = "locality";
  info.summary = "critical-path, but keeps a consumer on its main producer's worker "
                 "within its slack";
  info.options = {
      {"event-latency-ns", "", "cross-worker dependency latency (default: the machine's)"},
      {"slack-scale", "1", "fraction of a task's slack it may spend to stay local"},
  };
  info.configure = [](const PassOptions& o) -> ScheduleFn {
    const double latency = option_float(o, "assign-sm", "event-latency-ns", -1);
    if (o.count("event-latency-ns") && latency < 0)
      throw Error("pass 'assign-sm': option 'event-latency-ns' must be >= 0");
    const double scale = option_float(o, "assign-sm", "slack-scale", 1.0);
    if (scale < 0) throw Error("pass 'assign-sm': option 'slack-scale' must be >= 0");
    return [latency, scale](const TaskGraph& g, const MachineModel& m, int32_t workers) {
      const double l = latency >= 0 ? latency : m.event_latency_ns;
      auto keep_local = [scale](const ListScheduler& s, TaskId t, int32_t best,
                                double best_finish) {
        const TaskId p = main_producer(s, t);
        if (p < 0 || s.worker_of(p) == best) return best;
        const int32_t local = s.worker_of(p);
        const double latest_finish = s.makespan_bound() - (s.bottom_level(t) - s.cost(t));
        const double slack = std::max(0.0, latest_finish - best_finish);
        return s.finish_on(t, local) <= best_finish + scale * slack ? local : best;
      };
      PolicyOutput out;
      out.workers = ListScheduler(g, m, workers, l).run(keep_local);
      out.params["event-latency-ns"] = l;
      out.params["slack-scale"] = scale;
      return out;
    };
  };
  return info;
}

}  // namespace mpk
