// The visual optimizer's latencies, as mpk-studio's pipeline panel sees them: the time
// from Apply (PipelineRunner::start) to the new run being ready (read the viewed run's
// stored module back, run the pipeline pass by pass, verify, simulate, store in trace.db),
// and for a hand edit the time to check a move with the verifier and re-simulate, then
// to store the edited schedule as a pinned run; and what the UI does next, load the new
// run's TraceModel for the timeline. A plain main: prints the median of --repeat runs
// per preset.
//   optimizer_bench [--steps N] [--repeat N] [PRESET...]   (default llama-3.2-1b qwen3-8b)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "ir/error.h"
#include "ir/import/import.h"
#include "passes/pipeline.h"
#include "driver/schedule_edit.h"
#include "studio/model/pipeline_runner.h"
#include "studio/model/trace_model.h"

namespace {

namespace fs = std::filesystem;
using mpk::studio::PipelineRequest;
using mpk::studio::PipelineRunner;
using mpk::studio::RunnerProgress;
using mpk::studio::RunnerResult;
using mpk::studio::RunnerStage;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Starts `r` and polls every millisecond, as the UI does every frame, until the job
// ends; returns the result and the wall time from start to the poll that saw it done.
RunnerResult apply(PipelineRunner& runner, PipelineRequest r, double& wall_s) {
  const auto t0 = Clock::now();
  runner.start(std::move(r));
  RunnerProgress p = runner.progress();
  while (p.busy()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    p = runner.progress();
  }
  wall_s = seconds_since(t0);
  if (p.stage != RunnerStage::kDone) throw mpk::Error("job ended with: " + p.text());
  return *runner.take_result();
}

struct Row {
  std::string model;
  size_t tasks = 0, executions = 0;
  std::vector<double> load, passes, simulate, store, wall, open;
  std::vector<double> edit, edit_store;
};

Row bench_model(const std::string& preset, int32_t steps, int repeat, const fs::path& dir) {
  Row row;
  row.model = preset;
  const std::string trace = (dir / (preset + ".db")).string();
  PipelineRunner runner;
  double wall = 0;
  // The run being viewed: the default pipeline, stored as `mpk run --backend sim` would.
  PipelineRequest viewed;
  viewed.source.module =
      std::make_shared<const mpk::Module>(mpk::import_model(preset, mpk::ImportOptions{}));
  viewed.pipeline = mpk::kDefaultPipeline;
  viewed.trace_path = trace;
  viewed.steps = steps;
  viewed.model = preset;
  const int64_t viewed_run = apply(runner, viewed, wall).run;

  // Apply: another policy over the viewed run.
  RunnerResult last;
  for (int i = 0; i < repeat; ++i) {
    PipelineRequest r;
    r.source = {"", trace, viewed_run, nullptr};
    r.pipeline = mpk::default_pipeline_with("locality");
    r.trace_path = trace;
    r.steps = steps;
    last = apply(runner, r, wall);
    row.load.push_back(last.load_s);
    row.passes.push_back(last.passes_s);
    row.simulate.push_back(last.simulate_s);
    row.store.push_back(last.store_s);
    row.wall.push_back(wall);
    const auto t0 = Clock::now();
    const mpk::TraceReader reader(trace);
    const mpk::studio::TraceModel model(reader, last.run);
    row.open.push_back(seconds_since(t0));
  }
  row.tasks = last.module->graph.tasks.size();
  row.executions = last.executions.size();

  // A hand edit: one task to the next worker (placed by time), checked and re-simulated;
  // then the edited schedule stored as a pinned run.
  const mpk::CostParams costs = mpk::CostParams::from_machine(last.module->machine);
  mpk::ScheduleEditor editor(*last.module, costs, steps, last.executions);
  const int32_t workers = static_cast<int32_t>(last.module->graph.schedule.workers.size());
  for (int i = 0; i < repeat; ++i) {
    const mpk::TaskId t = static_cast<mpk::TaskId>(row.tasks * (i + 1) / (repeat + 1));
    auto t0 = Clock::now();
    const mpk::EditOutcome moved =
        editor.move_to_worker(t, (editor.worker_of(t) + 1) % workers);
    row.edit.push_back(seconds_since(t0));
    if (!moved.accepted) throw mpk::Error(moved.message);

    PipelineRequest store;
    store.source.module = std::make_shared<const mpk::Module>(editor.module());
    store.trace_path = trace;
    store.steps = steps;
    store.model = preset;
    const mpk::Schedule original = editor.original_schedule();
    const std::string moves = editor.moves();
    store.finish = [original, moves](mpk::Module& m) { mpk::pin_schedule(m, original, moves); };
    apply(runner, store, wall);
    row.edit_store.push_back(wall);
  }
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  int32_t steps = 8;
  int repeat = 3;
  std::vector<std::string> presets;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--steps" || a == "--repeat") && i + 1 < argc) {
      (a == "--steps" ? steps : repeat) = std::atoi(argv[++i]);
    } else if (a.rfind("--", 0) == 0) {
      std::fprintf(stderr, "usage: optimizer_bench [--steps N] [--repeat N] [PRESET...]\n");
      return 2;
    } else {
      presets.push_back(a);
    }
  }
  if (presets.empty()) presets = {"llama-3.2-1b", "qwen3-8b"};
  if (steps < 1 || repeat < 1) {
    std::fprintf(stderr, "optimizer_bench: --steps and --repeat must be at least 1\n");
    return 2;
  }
  const fs::path dir = fs::temp_directory_path() / "mpk_optimizer_bench";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::printf("Apply -> new run ready (read the module back, passes + verify, simulate %d steps, store), "
              "median of %d; pipeline %s\n\n",
              steps, repeat, mpk::default_pipeline_with("locality").c_str());
  std::printf("%-14s %7s %10s %8s %8s %9s %8s %8s | %9s | %11s %11s\n", "model", "tasks",
              "executions", "load", "passes", "simulate", "store", "total", "open run",
              "edit+resim", "edit store");
  try {
    for (const std::string& preset : presets) {
      const Row r = bench_model(preset, steps, repeat, dir);
      std::printf(
          "%-14s %7zu %10zu %7.3fs %7.3fs %8.3fs %7.3fs %7.3fs | %8.3fs | %10.3fs %10.3fs\n",
          r.model.c_str(), r.tasks, r.executions, median(r.load), median(r.passes),
          median(r.simulate), median(r.store), median(r.wall), median(r.open), median(r.edit),
          median(r.edit_store));
    }
  } catch (const mpk::Error& e) {
    std::fprintf(stderr, "optimizer_bench: %s\n", e.what());
    return 1;
  }
  fs::remove_all(dir);
  return 0;
}
