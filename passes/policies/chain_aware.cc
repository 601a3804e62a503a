// chain-aware: critical-path list scheduling (passes/policies/list_scheduler.h) that
// keeps each layer's latency chain (the tasks whose kind streams no weights: norms,
// attention, RoPE, KV appends, argmax) on `chain-workers` workers and the weight-streaming
// tasks (linear, lm_head: the kinds with a `prefetch` share in the cost model) on the
// others; by default as many chain workers as the widest chain operator has tasks. A chain task goes to the chain worker where it finishes first, a streaming task
// to the best other worker, so the streams never queue behind the chain, and the few
// chain workers hand its results on without the chain waiting for a stream to end: the
// placement the performance diagnosis points at (design.md, anchors). Tasks enter the
// lists in dependency order, so they are deadlock-free.
#include <algorithm>

#include "passes/policies/list_scheduler.h"
#include "passes/policies/policy.h"

namespace mpk {
namespace {

struct ChainAwareOptions {
  std::optional<int64_t> chain_workers;    // unset: the widest chain operator's tasks
  std::optional<double> event_latency_ns;  // unset: the cost model's
};

bool streams(const ScheduleRequest& r, TaskId t) {
  return r.costs.cost_of(r.graph.tasks[static_cast<size_t>(t)].kind).prefetch > 0;
}

// The most chain tasks (streaming no weights) one operator has.
int64_t widest_chain_op(const ScheduleRequest& r) {
  std::vector<int64_t> per_op;
  for (size_t t = 0; t < r.graph.tasks.size(); ++t) {
    const OpId op = r.graph.tasks[t].op;
    if (streams(r, static_cast<TaskId>(t)) || op < 0) continue;
    if (per_op.size() <= static_cast<size_t>(op)) per_op.resize(static_cast<size_t>(op) + 1, 0);
    ++per_op[static_cast<size_t>(op)];
  }
  return per_op.empty() ? 1 : *std::max_element(per_op.begin(), per_op.end());
}

PolicyInfo chain_aware_policy_info() {
  using O = ChainAwareOptions;
  return typed_policy_info(
      "chain-aware",
      "critical-path, with the latency chain on a few workers and the weight streams on the rest",
      OptionSchema<O>()
          .integer("chain-workers", &O::chain_workers,
                   "workers that run the tasks streaming no weights (at most all but one); auto: "
                   "as many as the widest such operator has tasks",
                   1, 4096)
          .real("event-latency-ns", &O::event_latency_ns,
                "cross-worker dependency latency (default: the cost model's)", 0, kMaxEventLatencyNs),
      [](const O& o) -> ScheduleFn {
        return [chain = o.chain_workers, latency = o.event_latency_ns](const ScheduleRequest& r) {
          const double l = latency.value_or(r.costs.event_latency_ns);
          // The last `k` workers run the chain; with one worker it runs everything.
          const int32_t k = static_cast<int32_t>(
              std::min<int64_t>(chain.value_or(widest_chain_op(r)), std::max(1, r.workers - 1)));
          const int32_t first_chain = r.workers > 1 ? r.workers - k : 0;
          auto place = [&](const ListScheduler& s, TaskId t, int32_t best, double) {
            const bool stream = streams(r, t);
            const int32_t lo = stream ? 0 : first_chain;
            const int32_t hi = stream && r.workers > 1 ? first_chain : r.workers;
            if (best >= lo && best < hi) return best;
            int32_t pick = lo;
            double finish = s.finish_on(t, lo);
            for (int32_t w = lo + 1; w < hi; ++w)
              if (const double f = s.finish_on(t, w); f < finish) pick = w, finish = f;
            return pick;
          };
          PolicyOutput out;
          out.workers = ListScheduler(r, l).run(place).workers;
          out.params["event_latency_ns"] = l;
          out.params["chain_workers"] = static_cast<int64_t>(k);
          return out;
        };
      });
}

}  // namespace

MPK_POLICY(chain_aware_policy_info);

}  // namespace mpk
