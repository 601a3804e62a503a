// critical-path: HEFT-like list scheduling under the cost model (ir/cost_params.h). The
// ready task with the largest bottom level goes to the worker where it finishes first,
// counting the event latency for dependencies on other workers.
#include "passes/policies/list_scheduler.h"
#include "passes/policies/policy.h"

namespace mpk {

namespace {

struct CriticalPathOptions {
  std::optional<double> event_latency_ns;  // unset: the cost model's
};

PolicyInfo critical_path_policy_info() {
  using O = CriticalPathOptions;
  return typed_policy_info(
      "critical-path", "list scheduling by longest remaining path, earliest finish time",
      OptionSchema<O>().real("event-latency-ns", &O::event_latency_ns,
                             "cross-worker dependency latency (default: the cost model's)", 0,
                             kMaxEventLatencyNs),
      [](const O& o) -> ScheduleFn {
        return [latency = o.event_latency_ns](const ScheduleRequest& r) {
          const double l = latency.value_or(r.costs.event_latency_ns);
          PolicyOutput out;
          out.workers = ListScheduler(r, l).run().workers;
          out.params["event_latency_ns"] = l;
          return out;
        };
      });
}

}  // namespace

MPK_POLICY(critical_path_policy_info);

}  // namespace mpk
