// trace.db at scale: writing a run of 1M task executions (import: validation, bubbles,
// statistics, one transaction), and reading it back for `mpk trace stats`, plus a
// time-window query on one worker. The run is simulated on a synthetic layered graph
// (62,500 tasks on 132 workers, 16 steps).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "ir/module.h"
#include "traces/analysis.h"
#include "traces/simulator.h"
#include "traces/trace_db.h"

namespace {

struct Fixture {
  mpk::Module module;
  std::vector<mpk::Execution> execs;
};

const Fixture& fixture() {
  static const Fixture f = [] {
    Fixture f;
    mpk::Module& m = f.module;
    m.name = "synthetic";
    m.provenance = {"bench", "synthetic", mpk::tool_version()};
    const int workers = 132, layers = 250, width = 250;  // 62,500 tasks
    m.graph.schedule.policy = "round-robin";
    m.graph.schedule.workers.resize(workers);
    std::vector<mpk::TaskId> prev;
    int next_worker = 0;
    for (int l = 0; l < layers; ++l) {
      mpk::Operator op;
      op.name = "L" + std::to_string(l);
      op.kind = l % 2 ? mpk::OpKind::kLinear : mpk::OpKind::kSiluMul;
      op.layer = l;
      m.program.ops.push_back(op);
      std::vector<mpk::TaskId> cur;
      for (int i = 0; i < width; ++i) {
        mpk::Task t;
        t.op = l;
        t.kind = l % 2 ? mpk::TaskKind::kLinear : mpk::TaskKind::kSiluMul;
        t.bytes = 20000 + 1000 * (i % 7);
        m.graph.tasks.push_back(t);
        const auto id = static_cast<mpk::TaskId>(m.graph.tasks.size() - 1);
        m.graph.schedule.workers[next_worker++ % workers].push_back(id);
        cur.push_back(id);
      }
      if (!prev.empty()) {
        mpk::Event e;
        e.producers = prev;
        e.consumers = cur;
        e.target = static_cast<int64_t>(prev.size());
        m.graph.events.push_back(e);
      }
      prev = cur;
    }
    f.execs = mpk::simulate(m, mpk::CostParams::from_machine(m.machine), 16);
    return f;
  }();
  return f;
}

std::string bench_path() { return "/tmp/mpk_trace_bench_" + std::to_string(::getpid()) + ".db"; }

void write_1m(benchmark::State& state) {
  const Fixture& f = fixture();
  const std::string path = bench_path();
  mpk::RunInfo info;
  info.kind = "sim";
  for (auto _ : state) {
    state.PauseTiming();
    std::remove(path.c_str());
    state.ResumeTiming();
    mpk::write_run(path, f.module, info, f.execs);
  }
  state.counters["executions"] = static_cast<double>(f.execs.size());
  std::remove(path.c_str());
}

void stats_1m(benchmark::State& state) {
  const Fixture& f = fixture();
  const std::string path = bench_path();
  std::remove(path.c_str());
  mpk::RunInfo info;
  info.kind = "sim";
  const int64_t run = mpk::write_run(path, f.module, info, f.execs);
  for (auto _ : state) {
    mpk::TraceReader r(path);
    benchmark::DoNotOptimize(mpk::compute_stats(r, run));
  }
  std::remove(path.c_str());
}

void window_query_1m(benchmark::State& state) {
  const Fixture& f = fixture();
  const std::string path = bench_path();
  std::remove(path.c_str());
  mpk::RunInfo info;
  info.kind = "sim";
  const int64_t run = mpk::write_run(path, f.module, info, f.execs);
  mpk::TraceReader r(path);
  const mpk::RunRecord rec = r.run(run);
  int64_t n = 0, k = 0;
  for (auto _ : state) {
    // A window of 1/1000 of the run on a different worker each time.
    const int64_t t0 = (k * 7919) % rec.duration_ns;
    const auto x = r.executions(run, static_cast<int32_t>(k % rec.num_workers), t0,
                                t0 + rec.duration_ns / 1000);
    n += static_cast<int64_t>(x.size());
    ++k;
  }
  state.counters["rows_per_query"] = static_cast<double>(n) / static_cast<double>(k);
  std::remove(path.c_str());
}

}  // namespace

BENCHMARK(write_1m)->Unit(benchmark::kSecond)->Iterations(2);
BENCHMARK(stats_1m)->Unit(benchmark::kSecond)->Iterations(2);
BENCHMARK(window_query_1m)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
