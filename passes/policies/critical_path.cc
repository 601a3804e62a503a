// critical-path: HEFT-like list scheduling under the cost model (ir/cost_model.h). The
// ready task with the largest bottom level goes to the worker where it finishes first,
// counting the event latency for dependencies on other workers.
#include "passes/policies/list_scheduler.h"
#include "passes/policies/policy.h"

namespace mpk {

PolicyInfo critical_path_policy_info() {
  PolicyInfo info;
  info.name = "critical-path";
  info.summary = "list scheduling by longest remaining path, earliest finish time";
  info.options = {
      PassOptionInfo::real("event-latency-ns", "",
                           "cross-worker dependency latency (default: the machine's)", 0,
                           kMaxEventLatencyNs),
  };
  info.configure = [](const PassOptions& o) -> ScheduleFn {
    const double latency = option_float(o, "assign-sm", "event-latency-ns", -1);
    if (o.count("event-latency-ns") && latency < 0)
      throw Error("pass 'assign-sm': option 'event-latency-ns' must be >= 0");
    return [latency](const TaskGraph& g, const MachineModel& m, int32_t workers) {
      const double l = latency >= 0 ? latency : m.event_latency_ns;
      PolicyOutput out;
      out.workers = ListScheduler(g, m, workers, l).run().workers;
      out.params["event_latency_ns"] = l;
      return out;
    };
  };
  return info;
}

}  // namespace mpk
