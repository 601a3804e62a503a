// Simulation time of a compiled preset (default qwen3-8b, batch 1) for 16 decode
// steps under each scheduling policy, with the simulated per-step makespan as a counter.
#include <benchmark/benchmark.h>

#include <map>
#include <string>

#include "ir/import/import.h"
#include "passes/pass_manager.h"
#include "passes/pipeline.h"
#include "ir/cost_params.h"
#include "traces/simulator.h"

namespace {

const mpk::Module& compiled(const std::string& preset, const std::string& policy) {
  static std::map<std::string, mpk::Module> cache;
  const std::string key = preset + "/" + policy;
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  mpk::Module m = mpk::import_model(preset, mpk::ImportOptions{});
  mpk::PassManager pm(
      mpk::parse_pipeline(mpk::default_pipeline_with(policy)));
  pm.run(m);
  return cache.emplace(key, std::move(m)).first->second;
}

void simulate_preset(benchmark::State& state, const std::string& preset,
                     const std::string& policy) {
  const mpk::Module& m = compiled(preset, policy);
  const mpk::CostParams costs = mpk::CostParams::from_machine(m.machine);
  const int32_t steps = 16;
  int64_t end = 0;
  size_t executions = 0;
  for (auto _ : state) {
    auto x = mpk::simulate(m, costs, steps);
    executions = x.size();
    for (const auto& e : x) end = std::max(end, e.end_ns);
    benchmark::DoNotOptimize(x.data());
  }
  state.counters["tasks"] = static_cast<double>(m.graph.tasks.size());
  state.counters["executions"] = static_cast<double>(executions);
  state.counters["sim_ms_per_step"] = static_cast<double>(end) / steps * 1e-6;
}

}  // namespace

BENCHMARK_CAPTURE(simulate_preset, qwen3_8b_critical_path, "qwen3-8b", "critical-path")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(simulate_preset, qwen3_8b_round_robin, "qwen3-8b", "round-robin")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(simulate_preset, qwen3_8b_locality, "qwen3-8b", "locality")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(simulate_preset, llama_3_2_1b_critical_path, "llama-3.2-1b", "critical-path")
    ->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
