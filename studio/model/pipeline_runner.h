// Runs a pass pipeline and the simulator off the UI thread, headless (no ImGui). A job
// takes the graph being viewed (a .mpk file; a run of a trace.db, whose exact module the
// trace stored (driver/run_module.h); or a module in memory), runs a pipeline text over
// it (driver/compile.h: over a compiled module the pipeline re-derives its task graph),
// simulates it with the sim executor (driver/executor.h) and stores the run
// (driver/record.h), reporting progress (loading, calibrating, pass n of N, simulating,
// storing) that the UI thread polls. So that a new schedule is compared like with like, a
// job can first calibrate the costs from the source run (driver/calibrate_run.h) and
// simulate and store the schedule it is compared with (the baseline) under the same costs
// and steps. A job can be cancelled; it then stops at its next stage and
// stores nothing. What it stores is what `mpk-opt MODEL --pass-pipeline=P -o out.mpk`
// then `mpk run --backend sim --model out.mpk` store from the CLI.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "driver/run_module.h"
#include "ir/module.h"
#include "traces/trace_db.h"

namespace mpk::studio {

// What a job runs on: exactly one of a module file, a run of a trace.db or a module.
struct GraphSource {
  std::string module_path;               // a .mpk (binary or text)
  std::string trace_path;                // with `run`: a run of this trace.db
  int64_t run = -1;
  std::shared_ptr<const Module> module;  // a module in memory
  std::string describe() const;          // "edited.mpk", "run 3 of trace.db", ...
};

struct PipelineRequest {
  GraphSource source;
  // The pipeline to run over the source's module; for a compiled module it re-derives
  // the task graph (PassPipeline::recompile, driver/compile.h). "" keeps the source's
  // schedule.
  std::string pipeline;
  std::string trace_path;  // the trace.db that gets the new run; "" = do not store
  int32_t steps = 8;
  std::string costs_path;  // the simulator's cost file; "" = from the machine model
  // Fit the costs to the source run first (the source must be a trace run) and write
  // them to costs_path, which the simulations then use.
  bool calibrate = false;
  // Also simulate the schedule the new run is compared with, under the same costs and
  // steps, and store it before the new run: `baseline_module`, or (null) the source as
  // loaded, before the passes. Its note is `baseline_note`.
  bool baseline = false;
  std::shared_ptr<const Module> baseline_module;
  std::string baseline_note;
  std::string model;       // the run's model; "" = the source's (module path, run's model)
  std::string note;        // appended to the run's options, e.g. "studio: from run 3"
  // Runs on the worker thread after the passes, before simulating (e.g. pin_schedule).
  std::function<void(Module&)> finish;
};

enum class RunnerStage {
  kIdle, kLoading, kCalibrating, kPasses, kSimulating, kStoring, kDone, kFailed, kCancelled
};

struct RunnerProgress {
  RunnerStage stage = RunnerStage::kIdle;
  int32_t pass = 0;        // kPasses: the pass running, from 1
  int32_t num_passes = 0;
  std::string pass_name;
  std::string error;       // kFailed: the message
  int64_t run = -1;        // kDone: the stored run's id (-1 when not stored)
  double elapsed_s = 0;    // since the job started (until it ended, once it has)
  bool busy() const;       // loading, calibrating, passes, simulating or storing
  // "loading the graph", "calibrating the costs", "pass 2 of 3: infer-deps",
  // "simulating", "storing the run",
  // "done: run 5 in 0.41 s", "failed: ...", "cancelled".
  std::string text() const;
};

struct RunnerResult {
  std::shared_ptr<const Module> module;  // scheduled and verified
  std::vector<Execution> executions;     // the simulation, as simulate() returned it
  int32_t steps = 0;
  int64_t run = -1;                      // -1 when not stored
  double step_ns = 0;                    // simulated makespan per step (mean)
  int64_t baseline_run = -1;             // the stored baseline; -1 when none
  double baseline_step_ns = 0;           // its makespan per step (mean)
  std::string costs;                     // the costs simulated with: a file or "machine-model"
  std::string model;                     // as recorded
  std::string note;                      // how an old trace's run was rebuilt; "" else
  double load_s = 0, calibrate_s = 0, passes_s = 0, simulate_s = 0, store_s = 0, total_s = 0;
};

// Loads the module `source` names on the calling thread: a module file or module as it
// is; for a run, the module the trace stored with it (rebuilt, saying so in `note`, for
// a trace written before modules were stored). `model` is the model spec to record.
// Throws mpk::Error naming the file or run.
RunModule load_source(const GraphSource& source);

class PipelineRunner {
 public:
  PipelineRunner();
  ~PipelineRunner();  // cancels a running job and waits for it
  PipelineRunner(const PipelineRunner&) = delete;
  PipelineRunner& operator=(const PipelineRunner&) = delete;

  // Parses the pipeline and resolves its passes and options here, so that a malformed
  // one throws mpk::Error at once; so does a call while a job is running. Then runs the
  // job on a worker thread.
  void start(PipelineRequest request);
  RunnerProgress progress() const;  // any thread
  bool busy() const { return progress().busy(); }
  void cancel();                    // the job stops at its next stage; nothing is stored
  void wait();                      // blocks until the job has ended
  // The result of a job that ended with kDone, once; nullopt otherwise.
  std::optional<RunnerResult> take_result();

 private:
  struct Job;
  std::shared_ptr<Job> job_;
  std::thread thread_;
};

}  // namespace mpk::studio
