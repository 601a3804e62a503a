// wave: Hazy Research's "wave" placement. The task list (id order) is cut into waves of
// consecutive tasks of one operator and kind that do not depend on each other; each
// wave's tasks, largest estimated cost first (the cost model, ir/cost_params.h), go to
// the worker with the least work so far (ties: the lowest worker). The load balances
// across operators instead of restarting at worker 0 with each one. Lists follow the
// waves in id order and a wave has no inner dependencies, so they are deadlock-free
// when task ids follow the dependencies (as after infer-deps).
#include <algorithm>
#include <queue>

#include "passes/policies/policy.h"
#include "passes/policies/timing_model.h"

namespace mpk {
namespace {

// The first task of each wave, and the end.
std::vector<TaskId> wave_starts(const TaskGraphIndex& g) {
  const TaskGraph& graph = g.graph();
  const int32_t n = g.num_tasks();
  std::vector<TaskId> starts;
  TaskId begin = 0;
  for (TaskId t = 0; t < n; ++t) {
    bool cut = t == 0 || graph.tasks[t].op != graph.tasks[t - 1].op ||
               graph.tasks[t].kind != graph.tasks[t - 1].kind;
    for (EventId e : g.same_step_waits(t))
      for (TaskId p : g.producers(e)) cut = cut || p >= begin;  // depends on its own wave
    if (cut) {
      starts.push_back(t);
      begin = t;
    }
  }
  starts.push_back(n);
  return starts;
}

PolicyInfo wave_policy_info() {
  PolicyInfo info;
  info.name = "wave";
  info.summary = "each operator's tasks, largest first, to the least loaded worker (Hazy's wave)";
  info.configure = [](const PassOptions&) -> ScheduleFn {
    return [](const ScheduleRequest& r) {
      const std::vector<double> cost = task_costs(r.graph, r.costs, r.machine.sm_count);
      using Load = std::pair<double, int32_t>;  // (work so far, worker)
      std::priority_queue<Load, std::vector<Load>, std::greater<Load>> least;
      for (int32_t w = 0; w < r.workers; ++w) least.push({0.0, w});
      PolicyOutput out;
      out.workers.resize(r.workers);
      const std::vector<TaskId> starts = wave_starts(r.index);
      for (size_t i = 0; i + 1 < starts.size(); ++i) {
        std::vector<TaskId> wave;
        for (TaskId t = starts[i]; t < starts[i + 1]; ++t) wave.push_back(t);
        std::stable_sort(wave.begin(), wave.end(), [&](TaskId a, TaskId b) { return cost[a] > cost[b]; });
        for (TaskId t : wave) {
          auto [load, w] = least.top();
          least.pop();
          out.workers[w].push_back(t);
          least.push({load + cost[t], w});
        }
      }
      return out;
    };
  };
  return info;
}

}  // namespace

MPK_POLICY(wave_policy_info);

}  // namespace mpk
