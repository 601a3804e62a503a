// pool: Hazy Research's "pool" placement. The workers are split into a memory pool (the
// first round(W * memory-fraction)) and a latency pool (the rest): tasks whose kind
// streams its weights (its `prefetch` share in the cost model, ir/cost_params.h: linear
// and lm_head) are dealt round-robin over the memory pool in id order, every other task
// over the latency pool. The latency chain (norms, attention, RoPE, argmax) then never
// waits behind a weight stream, and the streams never stop for it. Each list is in task
// id order, so it is deadlock-free when task ids follow the dependencies.
#include <algorithm>
#include <cmath>

#include "passes/policies/policy.h"

namespace mpk {
namespace {

struct PoolOptions {
  double memory_fraction = 0.9;
};

PolicyInfo pool_policy_info() {
  using O = PoolOptions;
  return typed_policy_info(
      "pool", "weight-streaming tasks on a memory pool of workers, the rest on the others (Hazy's pool)",
      OptionSchema<O>().real("memory-fraction", &O::memory_fraction,
                             "share of the workers that stream weights", 0.05, 0.95),
      [](const O& o) -> ScheduleFn {
        return [fraction = o.memory_fraction](const ScheduleRequest& r) {
          std::vector<TaskId> memory, latency;
          for (size_t t = 0; t < r.graph.tasks.size(); ++t)
            (r.costs.cost_of(r.graph.tasks[t].kind).prefetch > 0 ? memory : latency)
                .push_back(static_cast<TaskId>(t));
          // Both pools get a worker when both have tasks (one worker: a single list).
          int32_t mem = static_cast<int32_t>(std::lround(r.workers * fraction));
          if (!latency.empty()) mem = std::min(mem, r.workers - 1);
          if (!memory.empty()) mem = std::max(mem, 1);
          PolicyOutput out;
          out.workers.resize(r.workers);
          const int32_t rest = r.workers - mem;
          // Both deals in one pass in id order, so that a worker that serves both pools (a
          // single worker) lists its tasks in id order.
          for (size_t i = 0, j = 0; i < memory.size() || j < latency.size();) {
            const bool take_memory = j == latency.size() || (i < memory.size() && memory[i] < latency[j]);
            const TaskId t = take_memory ? memory[i] : latency[j];
            const size_t k = take_memory ? i++ : j++;
            const int32_t w = take_memory || rest <= 0 ? static_cast<int32_t>(k % std::max(mem, 1))
                                                       : mem + static_cast<int32_t>(k % rest);
            out.workers[w].push_back(t);
          }
          out.params["memory_workers"] = static_cast<int64_t>(mem);
          return out;
        };
      });
}

}  // namespace

MPK_POLICY(pool_policy_info);

}  // namespace mpk
