// PipelineRunner: one job at a time on a worker thread; progress and the result behind
// a mutex; cancellation checked between stages.
#include "studio/model/pipeline_runner.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>

#include "driver/calibrate_run.h"
#include "driver/compile.h"
#include "driver/executor.h"
#include "driver/record.h"
#include "ir/error.h"
#include "ir/serialize.h"
#include "ir/verifier.h"
#include "traces/calibrate.h"

namespace mpk::studio {
namespace {

using Clock = std::chrono::steady_clock;

// Thrown from the hook before a pass when the job was cancelled.
struct JobCancelled {};

}  // namespace

std::string GraphSource::describe() const {
  if (!module_path.empty()) return module_path;
  if (!trace_path.empty()) return "run " + std::to_string(run) + " of " + trace_path;
  if (module) return "module '" + module->name + "' in memory";
  return "nothing";
}

bool RunnerProgress::busy() const {
  return stage == RunnerStage::kLoading || stage == RunnerStage::kCalibrating ||
         stage == RunnerStage::kPasses ||
         stage == RunnerStage::kSimulating || stage == RunnerStage::kStoring;
}

std::string RunnerProgress::text() const {
  char buf[64];
  switch (stage) {
    case RunnerStage::kIdle: return "idle";
    case RunnerStage::kLoading: return "loading the graph";
    case RunnerStage::kCalibrating: return "calibrating the costs";
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

RunModule load_source(const GraphSource& s) {
  const int given = !s.module_path.empty() + !s.trace_path.empty() + (s.module != nullptr);
  if (given != 1) throw Error("a pipeline source is one module file, trace run or module");
  if (s.module) return {*s.module, s.module->provenance.source, ""};
  if (!s.module_path.empty()) return {load_module(s.module_path), s.module_path, ""};
  return load_run_module(s.trace_path, s.run);
}

struct PipelineRunner::Job {
  PipelineRequest request;
  std::optional<PassPipeline> passes;
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
    progress.num_passes = passes ? static_cast<int32_t>(passes->size()) : 0;
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
  int64_t simulate_and_store(const Module& m, const std::string& model, const std::string& note,
                             ExecResult& simulated);
  void run();
};

// Simulates `m` under the request's costs and steps with the sim executor; stores it
// (when the request has a trace) with `note`. Returns the run id (-1: not stored).
int64_t PipelineRunner::Job::simulate_and_store(const Module& m, const std::string& model,
                                                const std::string& note, ExecResult& simulated) {
  set_stage(RunnerStage::kSimulating);
  ExecutorOptions options;
  options.costs = request.costs_path;
  const std::unique_ptr<Executor> sim = make_executor("sim", m, options);
  simulated = sim->run({request.steps, {}, true});
  if (cancel) throw JobCancelled{};
  if (request.trace_path.empty()) return -1;
  set_stage(RunnerStage::kStoring);
  return record_run(request.trace_path, m, *sim, simulated, {model, "", note});
}

void PipelineRunner::Job::run() {
  try {
    RunnerResult out;
    const PipelineRequest& r = request;
    set_stage(RunnerStage::kLoading);
    auto t = Clock::now();
    RunModule source = load_source(r.source);
    Module& m = source.module;
    out.model = r.model.empty() ? source.model : r.model;
    out.note = source.note;
    out.costs = r.costs_path.empty() ? "machine-model" : r.costs_path;
    out.load_s = seconds_since(t);
    if (cancelled()) return;

    if (r.calibrate) {
      if (r.source.trace_path.empty() || r.costs_path.empty())
        throw Error("calibrating needs a trace run as the source and a cost file to write");
      set_stage(RunnerStage::kCalibrating);
      t = Clock::now();
      save_cost_params(calibrate_run(r.source.trace_path, r.source.run, m), r.costs_path);
      out.calibrate_s = seconds_since(t);
      if (cancelled()) return;
    }
    if (r.baseline) {
      const Module& base = r.baseline_module ? *r.baseline_module : m;
      if (base.graph.schedule.empty()) throw Error(r.source.describe() + " has no schedule to compare with");
      ExecResult simulated;
      out.baseline_run = simulate_and_store(base, out.model, r.baseline_note, simulated);
      out.baseline_step_ns = mean_step_ns(simulated.executions, r.steps);
      if (cancelled()) return;
    }

    t = Clock::now();
    if (passes)
      passes->recompile(m, [&](size_t i) {
        if (cancel) throw JobCancelled{};
        set_stage(RunnerStage::kPasses, static_cast<int32_t>(i + 1), passes->pass(i));
      });
    if (cancelled()) return;
    if (m.graph.schedule.empty())
      throw Error(r.source.describe() + " has no schedule (give a pipeline that ends in assign-sm)");
    verify_or_throw(m);
    if (r.finish) r.finish(m);
    out.passes_s = seconds_since(t);
    if (cancelled()) return;

    ExecResult simulated;
    t = Clock::now();
    out.run = simulate_and_store(m, out.model, r.note, simulated);
    out.steps = r.steps;
    out.simulate_s = simulated.seconds;
    out.store_s = out.run >= 0 ? seconds_since(t) - simulated.seconds : 0;
    out.step_ns = mean_step_ns(simulated.executions, r.steps);
    out.executions = std::move(simulated.executions);
    out.module = std::make_shared<const Module>(std::move(m));
    out.total_s = seconds_since(started);
    {
      std::lock_guard<std::mutex> lock(mutex);
      progress.run = out.run;
      result = std::move(out);
    }
    end(RunnerStage::kDone);
  } catch (const JobCancelled&) {
    end(RunnerStage::kCancelled);
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
  if (!request.pipeline.empty()) job->passes.emplace(request.pipeline);
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
