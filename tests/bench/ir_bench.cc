// Benchmark of the IR's own costs on a compiled module (preset after the default
// pipeline): the whole verifier and each layer, the text printer and parser, and the
// binary format both ways. Counters report the module's size.
#include <benchmark/benchmark.h>

#include <map>
#include <string>

#include "ir/import/import.h"
#include "ir/serialize.h"
#include "ir/text.h"
#include "ir/verifier.h"
#include "passes/pass_manager.h"

namespace {

// Compiled once per preset and kept for every benchmark.
const mpk::Module& compiled(const std::string& preset) {
  static std::map<std::string, mpk::Module> cache;
  auto it = cache.find(preset);
  if (it == cache.end()) {
    mpk::Module m = mpk::import_model(preset, mpk::ImportOptions{});
    mpk::PassManagerConfig c;
    c.verify_each = false;
    mpk::PassManager(mpk::parse_pipeline(mpk::kDefaultPipeline), c).run(m);
    it = cache.emplace(preset, std::move(m)).first;
  }
  return it->second;
}

void set_counters(benchmark::State& state, const mpk::Module& m) {
  state.counters["tasks"] = static_cast<double>(m.graph.tasks.size());
  state.counters["events"] = static_cast<double>(m.graph.events.size());
}

template <typename F>
void run_layer(benchmark::State& state, const std::string& preset, F&& layer) {
  const mpk::Module& m = compiled(preset);
  size_t found = 0;
  for (auto _ : state) {
    auto d = layer(m);
    found += d.size();
    benchmark::DoNotOptimize(d);
  }
  if (found) state.SkipWithError("the verifier rejected the compiled module");
  set_counters(state, m);
}

void BM_VerifyModule(benchmark::State& state, std::string preset) {
  run_layer(state, preset, [](const mpk::Module& m) { return mpk::verify_module(m); });
}
void BM_VerifyStructure(benchmark::State& state, std::string preset) {
  run_layer(state, preset, [](const mpk::Module& m) { return mpk::verify_structure(m); });
}
void BM_VerifyGraph(benchmark::State& state, std::string preset) {
  run_layer(state, preset, [](const mpk::Module& m) { return mpk::verify_graph(m); });
}
void BM_VerifySchedule(benchmark::State& state, std::string preset) {
  run_layer(state, preset, [](const mpk::Module& m) { return mpk::verify_schedule(m); });
}

void BM_PrintText(benchmark::State& state, std::string preset) {
  const mpk::Module& m = compiled(preset);
  for (auto _ : state) benchmark::DoNotOptimize(mpk::print_module(m));
  state.counters["bytes"] = static_cast<double>(mpk::print_module(m).size());
  set_counters(state, m);
}

void BM_ParseText(benchmark::State& state, std::string preset) {
  const mpk::Module& m = compiled(preset);
  const std::string text = mpk::print_module(m);
  for (auto _ : state) benchmark::DoNotOptimize(mpk::parse_module(text, "bench"));
  set_counters(state, m);
}

void BM_ToBinary(benchmark::State& state, std::string preset) {
  const mpk::Module& m = compiled(preset);
  for (auto _ : state) benchmark::DoNotOptimize(mpk::module_to_binary(m));
  state.counters["bytes"] = static_cast<double>(mpk::module_to_binary(m).size());
  set_counters(state, m);
}

// Includes the verifier, which module_from_binary always runs.
void BM_FromBinary(benchmark::State& state, std::string preset) {
  const mpk::Module& m = compiled(preset);
  const std::string bytes = mpk::module_to_binary(m);
  for (auto _ : state) benchmark::DoNotOptimize(mpk::module_from_binary(bytes, "bench"));
  set_counters(state, m);
}

#define MPK_IR_BENCH(fn)                                                       \
  BENCHMARK_CAPTURE(fn, llama_3_2_1b, std::string("llama-3.2-1b"))->Unit(benchmark::kMillisecond); \
  BENCHMARK_CAPTURE(fn, qwen3_8b, std::string("qwen3-8b"))->Unit(benchmark::kMillisecond)

MPK_IR_BENCH(BM_VerifyModule);
MPK_IR_BENCH(BM_VerifyStructure);
MPK_IR_BENCH(BM_VerifyGraph);
MPK_IR_BENCH(BM_VerifySchedule);
MPK_IR_BENCH(BM_PrintText);
MPK_IR_BENCH(BM_ParseText);
MPK_IR_BENCH(BM_ToBinary);
MPK_IR_BENCH(BM_FromBinary);

}  // namespace

BENCHMARK_MAIN();
