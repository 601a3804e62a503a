// The placement policies from the anchors (zig-zag, wave and pool after Hazy Research's
// megakernel scheduler; chain-aware): each places as it says, and on every preset, fused
// by the default pipeline, gives a verified schedule that runs (the deadlock check of
// assign-sm, the verifier, and a list walk of one step in the timing model).
#include <gtest/gtest.h>

#include <algorithm>

#include "ir/cost_params.h"
#include "ir/import/import.h"
#include "ir/task_graph_index.h"
#include "ir/verifier.h"
#include "passes/pass_manager.h"
#include "passes/pipeline.h"
#include "passes/policies/timing_model.h"

namespace mpk {
namespace {

Module compiled(const std::string& preset, const std::string& assign_sm) {
  Module m = import_model(preset, ImportOptions{});
  std::string pipeline = default_pipeline_with("critical-path");
  pipeline = pipeline.substr(0, pipeline.rfind("assign-sm")) + assign_sm;
  PassManager(parse_pipeline(pipeline)).run(m);
  return m;
}

bool streams(const Module& m, TaskId t) {
  return CostParams::from_machine(m.machine).cost_of(m.graph.tasks[static_cast<size_t>(t)].kind).prefetch > 0;
}

TEST(PlacementPolicies, EveryPresetGetsAVerifiedScheduleThatRuns) {
  for (const std::string& preset : preset_names()) {
    if (preset == "qwen3-8b") continue;  // PlacementPoliciesSlow
    for (const char* policy : {"zig-zag", "wave", "pool", "chain-aware"}) {
      const Module m = compiled(preset, std::string("assign-sm{policy=") + policy + "}");
      const std::vector<Diagnostic> d = verify_module(m);
      EXPECT_TRUE(d.empty()) << preset << " " << policy << ": " << d.front().message;
      const TaskGraphIndex g(m.graph);
      const ScheduleTiming timing = simulate_schedule(
          g, m.graph.schedule.workers,
          task_costs(m.graph, CostParams::from_machine(m.machine), m.machine.sm_count), 1000);
      EXPECT_GT(timing.makespan_ns, 0) << preset << " " << policy;
    }
  }
}

TEST(PlacementPoliciesSlow, Qwen3_8bGetsVerifiedSchedules) {
  for (const char* policy : {"zig-zag", "wave", "pool", "chain-aware"}) {
    const Module m = compiled("qwen3-8b", std::string("assign-sm{policy=") + policy + "}");
    EXPECT_TRUE(verify_module(m).empty()) << policy;
  }
}

TEST(PlacementPolicies, ZigZagDealsBackAndForth) {
  const Module m = compiled("tiny", "assign-sm{policy=zig-zag,workers=4}");
  const auto& w = m.graph.schedule.workers;
  // Sweeps of 4: 0 1 2 3 | 7 6 5 4 | 8 9 10 11 | ...
  EXPECT_EQ(std::vector<TaskId>(w[0].begin(), w[0].begin() + 3), (std::vector<TaskId>{0, 7, 8}));
  EXPECT_EQ(std::vector<TaskId>(w[3].begin(), w[3].begin() + 3), (std::vector<TaskId>{3, 4, 11}));
}

TEST(PlacementPolicies, WaveKeepsTheWorkersLoadsWithinOneTask) {
  const Module m = compiled("llama-3.2-1b", "assign-sm{policy=wave}");
  const std::vector<double> cost = task_costs(m.graph, CostParams::from_machine(m.machine), m.machine.sm_count);
  double lo = 1e300, hi = 0, biggest = 0;
  for (const auto& list : m.graph.schedule.workers) {
    double load = 0;
    for (TaskId t : list) load += cost[static_cast<size_t>(t)];
    lo = std::min(lo, load);
    hi = std::max(hi, load);
  }
  for (double c : cost) biggest = std::max(biggest, c);
  EXPECT_LE(hi - lo, biggest);  // greedy to the least loaded worker
}

TEST(PlacementPolicies, PoolSplitsStreamingTasksFromTheChain) {
  const Module m = compiled("llama-3.2-1b", "assign-sm{memory-fraction=0.75,policy=pool}");
  const int64_t mem = attr_int(m.graph.schedule.params, "memory_workers");
  EXPECT_EQ(mem, 99);  // round(132 * 0.75)
  const auto& w = m.graph.schedule.workers;
  for (size_t i = 0; i < w.size(); ++i)
    for (TaskId t : w[i]) EXPECT_EQ(streams(m, t), static_cast<int64_t>(i) < mem) << "task " << t;
}

TEST(PlacementPolicies, ChainAwareKeepsTheChainOnItsWorkers) {
  const Module m = compiled("llama-3.2-1b", "assign-sm{chain-workers=12,policy=chain-aware}");
  EXPECT_EQ(attr_int(m.graph.schedule.params, "chain_workers"), 12);
  const auto& w = m.graph.schedule.workers;
  const size_t first_chain = w.size() - 12;
  for (size_t i = 0; i < w.size(); ++i)
    for (TaskId t : w[i]) EXPECT_EQ(streams(m, t), i < first_chain) << "task " << t << " on " << i;
  // auto: as many chain workers as the widest chain operator has tasks: llama-3.2-1b's
  // fused attention at its default max_seq_len, 8 kv appends, 8 splits x 8 kv heads of
  // partials and 8 merges.
  EXPECT_EQ(attr_int(compiled("llama-3.2-1b", "assign-sm{policy=chain-aware}").graph.schedule.params,
                     "chain_workers"),
            80);
}

}  // namespace
}  // namespace mpk
