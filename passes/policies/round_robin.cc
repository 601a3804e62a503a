// round-robin: the task id order is the schedule; task i runs on worker i mod W, as
// MPK does. Deadlock-free when task ids follow the dependencies (decompose's order).
#include "passes/policies/policy.h"

namespace mpk {
namespace {

PolicyInfo round_robin_policy_info() {
  PolicyInfo info;
  info.name = "round-robin";
  info.summary = "task i on worker i mod W, in task id order";
  info.configure = [](const PassOptions&) -> ScheduleFn {
    return [](const ScheduleRequest& r) {
      PolicyOutput out;
      out.workers.resize(r.workers);
      for (size_t t = 0; t < r.graph.tasks.size(); ++t)
        out.workers[t % r.workers].push_back(static_cast<TaskId>(t));
      return out;
    };
  };
  return info;
}

}  // namespace

MPK_POLICY(round_robin_policy_info);

}  // namespace mpk
