// PipelineRunner: one job at a time on a worker thread; progress and the result behind
// a mutex; cancellation checked between stages.
#include "studio/pipeline_runner.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <mutex>

#include "ir/error.h"
#include "ir/import/model_source.h"
#include "ir/serialize.h"
#include "ir/verifier.h"
#include "passes/pass_manager.h"
#include "ir/cost_params.h"
#include "traces/simulator.h"

namespace mpk::studio {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// One pass manager per pipeline entry, so that progress can say which pass runs.
std::vector<PassManager> pass_managers(const std::string& pipeline) {
  std::vector<PassManager> out;
  if (pipeline.empty()) return out;
  for (PipelineEntry& e : parse_pipeline(pipeline)) out.emplace_back(Pipeline{std::move(e)});
  return out;
}

}  // namespace

std::string GraphSource::describe() const {
  if (!module_path.empty()) return module_path;
  if (!trace_path.empty()) return "run " + std::to_string(run) + " of " + trace_path;
  if (module) return "module '" + module->name + "' in memory";
  return "nothing";
}

bool RunnerProgress::busy() const {
  return stage == RunnerStage::kLoading || stage == RunnerStage::kPasses ||
         stage == RunnerStage::kSimulating || stage == RunnerStage::kStoring;
}

std::string RunnerProgress::text() const {
  char buf[64];
  switch (stage) {
    case RunnerStage::kIdle: return "idle";
    case RunnerStage::kLoading: return "loading the graph";
    case RunnerStage::kPasses:
      return "pass " + std::to_string(pass) + " of " + std::to_string(num_passes) + ": " +
             pass_name;
    case RunnerStage::kSimulating: return "simulating";
    case RunnerStage::kStoring: return "storing the run";
    case RunnerStage::kDone:
      std::snprintf(buf, sizeof buf, " in %.2f s", elapsed_s);
      return (run >= 0 ? "done: run " + std::to_string(run) : std::string("done")) + buf;
    case RunnerStage::kFailed: return "failed: " + error;
    case RunnerStage::kCancelled: return "cancelled";
  }
  return "?";
}

Module load_source(const GraphSource& s, std::string* model) {
  const int given = !s.module_path.empty() + !s.trace_path.empty() + (s.module != nullptr);
  if (given != 1) throw Error("a pipeline source is one module file, trace run or module");
  if (s.module) {
    if (model) *model = s.module->provenance.source;
    return *s.module;
  }
  if (!s.module_path.empty()) {
    if (model) *model = s.module_path;
    return load_module(s.module_path);
  }
  const TraceReader reader(s.trace_path);
  const RunRecord r = reader.run(s.run);
  const std::string spec = r.model.rfind("preset:", 0) == 0 ? r.model.substr(7) : r.model;
  if (model) *model = spec;
  ImportOptions io;
  io.batch = r.batch > 0 ? r.batch : 1;
  try {
    return load_model_source(resolve_model_source(spec, fs::path(s.trace_path).parent_path().string()), io);
  } catch (const Error& e) {
    throw Error("run " + std::to_string(s.run) + " of " + s.trace_path +
                ": cannot re-import its model '" + spec + "': " + e.what());
  }
}

struct PipelineRunner::Job {
  PipelineRequest request;
  std::vector<PassManager> passes;
  std::atomic<bool> cancel{false};
  Clock::time_point started = Clock::now();

  mutable std::mutex mutex;
  std::condition_variable ended;
  RunnerProgress progress;
  std::optional<RunnerResult> result;

  void set_stage(RunnerStage stage, int32_t pass = 0, std::string name = "") {
    std::lock_guard<std::mutex> lock(mutex);
    progress.stage = stage;
    progress.pass = pass;
    progress.num_passes = static_cast<int32_t>(passes.size());
    progress.pass_name = std::move(name);
  }
  bool cancelled() {
    if (!cancel) return false;
    end(RunnerStage::kCancelled);
    return true;
  }
  void end(RunnerStage stage, std::string error = "") {
    std::lock_guard<std::mutex> lock(mutex);
    progress.stage = stage;
    progress.error = std::move(error);
    progress.elapsed_s = seconds_since(started);
    ended.notify_all();
  }
  void run();
};

void PipelineRunner::Job::run() {
  try {
    RunnerResult out;
    const PipelineRequest& r = request;
    set_stage(RunnerStage::kLoading);
    auto t = Clock::now();
    std::string model;
    Module m = load_source(r.source, &model);
    if (!r.model.empty()) model = r.model;
    // "": a run's graph is rebuilt with its own pipeline unless its model is scheduled.
    const bool rebuild = r.pipeline.empty() && !r.source.trace_path.empty() &&
                         m.graph.schedule.empty();
    if (rebuild)
      passes = pass_managers(TraceReader(r.source.trace_path).run(r.source.run).pipeline);
    out.load_s = seconds_since(t);
    if (cancelled()) return;

    t = Clock::now();
    for (size_t i = 0; i < passes.size(); ++i) {
      set_stage(RunnerStage::kPasses, static_cast<int32_t>(i + 1), passes[i].pipeline()[0].pass);
      passes[i].run(m);
      if (cancelled()) return;
    }
    if (m.graph.schedule.empty())
      throw Error(r.source.describe() +
                  " has no schedule (give a pipeline that ends in assign-sm)");
    verify_or_throw(m);
    if (r.pipeline.empty() && !r.source.trace_path.empty()) {
      const Module stored = TraceReader(r.source.trace_path).load_graph(r.source.run);
      if (stored.graph.schedule.workers != m.graph.schedule.workers)
        throw Error(r.source.describe() + ": its model and pipeline rebuild another schedule "
                    "than the stored one (another mpk version or max-seq?)");
    }
    if (r.finish) r.finish(m);
    out.passes_s = seconds_since(t);
    if (cancelled()) return;

    set_stage(RunnerStage::kSimulating);
    t = Clock::now();
    const CostParams base = CostParams::from_machine(m.machine);
    const CostParams costs = r.costs_path.empty() ? base : load_cost_params(r.costs_path, base);
    out.executions = simulate(m, costs, r.steps);
    out.steps = r.steps;
    out.simulate_s = seconds_since(t);
    if (cancelled()) return;

    if (!r.trace_path.empty()) {
      set_stage(RunnerStage::kStoring);
      t = Clock::now();
      RunInfo info;
      info.kind = "sim";
      info.model = model;
      info.options =
          "costs=" + (r.costs_path.empty() ? std::string("machine-model") : r.costs_path);
      if (!r.note.empty()) info.options += " " + r.note;
      info.steps = r.steps;
      out.run = write_run(r.trace_path, m, info, out.executions);
      out.store_s = seconds_since(t);
    }
    out.model = model;
    out.module = std::make_shared<const Module>(std::move(m));
    out.total_s = seconds_since(started);
    {
      std::lock_guard<std::mutex> lock(mutex);
      progress.run = out.run;
      result = std::move(out);
    }
    end(RunnerStage::kDone);
  } catch (const Error& e) {
    end(RunnerStage::kFailed, e.what());
  } catch (const std::exception& e) {
    end(RunnerStage::kFailed, std::string("internal error: ") + e.what());
  }
}

PipelineRunner::PipelineRunner() = default;

PipelineRunner::~PipelineRunner() {
  cancel();
  if (thread_.joinable()) thread_.join();
}

void PipelineRunner::start(PipelineRequest request) {
  if (busy()) throw Error("a pipeline is running already (cancel it first)");
  if (thread_.joinable()) thread_.join();
  if (request.steps < 1) throw Error("simulate at least 1 step");
  auto job = std::make_shared<Job>();
  job->passes = pass_managers(request.pipeline);
  job->request = std::move(request);
  job->progress.stage = RunnerStage::kLoading;
  job_ = job;
  thread_ = std::thread([job] { job->run(); });
}

RunnerProgress PipelineRunner::progress() const {
  if (!job_) return {};
  std::lock_guard<std::mutex> lock(job_->mutex);
  RunnerProgress p = job_->progress;
  if (p.busy()) p.elapsed_s = seconds_since(job_->started);
  return p;
}

void PipelineRunner::cancel() {
  if (job_) job_->cancel = true;
}

void PipelineRunner::wait() {
  if (!job_) return;
  std::unique_lock<std::mutex> lock(job_->mutex);
  job_->ended.wait(lock, [&] { return !job_->progress.busy(); });
}

std::optional<RunnerResult> PipelineRunner::take_result() {
  if (!job_) return std::nullopt;
  std::lock_guard<std::mutex> lock(job_->mutex);
  if (job_->progress.stage != RunnerStage::kDone) return std::nullopt;
  std::optional<RunnerResult> r = std::move(job_->result);
  job_->result.reset();
  return r;
}

}  // namespace mpk::studio
