// Benchmark of the whole default pipeline on the large presets: import, decompose,
// infer-deps and assign-sm{policy=critical-path}, and of each of the dependency and
// scheduling passes alone. Counters report the task and event counts.
#include <benchmark/benchmark.h>

#include <string>

#include "ir/import/import.h"
#include "passes/pass_manager.h"

namespace {

mpk::PassManagerConfig no_verify() {
  mpk::PassManagerConfig c;
  c.verify_each = false;
  return c;
}

void set_counters(benchmark::State& state, const mpk::Module& m) {
  int64_t cross = 0;
  for (const mpk::Event& e : m.graph.events) cross += e.step_distance != 0;
  state.counters["tasks"] = static_cast<double>(m.graph.tasks.size());
  state.counters["events"] = static_cast<double>(m.graph.events.size());
  state.counters["cross_step_events"] = static_cast<double>(cross);
}

// import + the default pipeline.
void BM_DefaultPipeline(benchmark::State& state, std::string preset) {
  mpk::PassManager pm(mpk::parse_pipeline(mpk::kDefaultPipeline), no_verify());
  mpk::Module m;
  for (auto _ : state) {
    m = mpk::import_model(preset, mpk::ImportOptions{});
    pm.run(m);
  }
  set_counters(state, m);
}

// One pass on a module that ran `before`, the input copied outside the timing.
void BM_Pass(benchmark::State& state, std::string preset, std::string before, std::string pass) {
  mpk::Module input = mpk::import_model(preset, mpk::ImportOptions{});
  mpk::PassManager(mpk::parse_pipeline(before), no_verify()).run(input);
  mpk::PassManager pm(mpk::parse_pipeline(pass), no_verify());
  mpk::Module m;
  for (auto _ : state) {
    state.PauseTiming();
    m = input;
    state.ResumeTiming();
    pm.run(m);
  }
  set_counters(state, m);
}

BENCHMARK_CAPTURE(BM_DefaultPipeline, llama_3_2_1b, std::string("llama-3.2-1b"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_DefaultPipeline, qwen3_8b, std::string("qwen3-8b"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Pass, qwen3_8b_infer_deps, std::string("qwen3-8b"), std::string("decompose"),
                  std::string("infer-deps"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Pass, qwen3_8b_critical_path, std::string("qwen3-8b"),
                  std::string("decompose,infer-deps"),
                  std::string("assign-sm{policy=critical-path}"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Pass, qwen3_8b_locality, std::string("qwen3-8b"),
                  std::string("decompose,infer-deps"), std::string("assign-sm{policy=locality}"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Pass, qwen3_8b_round_robin, std::string("qwen3-8b"),
                  std::string("decompose,infer-deps"),
                  std::string("assign-sm{policy=round-robin}"))
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
