// One interface over the three ways to run a scheduled module: the CPU executor
// (numerics, the oracle), the simulator (timing from the cost model, no GPU) and the
// CUDA megakernel (built only with MPK_WITH_CUDA). An executor is made once for a
// module (the cpu and gpu ones load its weights then; the gpu one also compiles its
// megakernel) and can run it several times. `mpk run --backend X`, `mpk experiment` and
// the studio run modules only through here; driver/record.h stores what they return.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "driver/token_stream.h"
#include "ir/module.h"
#include "traces/trace_db.h"

namespace mpk {

// Settings fixed when an executor is made. Each executor reads only its own.
struct ExecutorOptions {
  uint64_t weights_seed = 0;       // cpu, gpu: random weights when there is no checkpoint
  std::string order = "schedule";  // cpu: schedule | random
  uint64_t seed = 0;               // cpu: the random order's seed
  int64_t threads = 0;             // cpu: OS threads, 0 = every core
  double watchdog_s = 2.0;         // cpu, gpu: seconds a wait may make no progress
  std::string costs;               // sim: a cost file (ir/cost_params.h); "" = machine model
};

struct ExecRequest {
  int64_t steps = 16;                // decode steps; step s works at position s
  std::vector<int64_t> prompt = {1};  // token s is read while s < its length
  bool record = false;               // keep every task execution (sim always does)
  // cpu, gpu: each step's tokens as they are produced (cpu: as each step completes; gpu:
  // as the kernel's argmax of the step completes), and an early end at a stop token
  // (driver/token_stream.h).
  TokenSink on_step = {};
  StopCondition stop = {};
  int64_t prompt_rows = 1;  // 1, or the batch: prompt holds one row (of its length) per batch row
  // A prefill chunk of the module (prefill-chunk, docs/ir.md "Prefill chunks"; it must
  // outlive the run): it fills the KV caches with the prompt's first P - 1 positions, C at
  // a time, and the module decodes from step P - 1. nullptr: one decode step per prompt
  // token.
  const Module* prefill = nullptr;
};

struct ExecResult {
  int64_t steps = 0, batch = 0;
  std::vector<std::vector<int32_t>> tokens;    // [step][row]; empty from the simulator
  std::vector<std::vector<float>> top_logits;  // [step][row]; cpu only
  std::vector<double> step_seconds;            // cpu: wall time per step
  double seconds = 0;                          // cpu: the run's wall time; gpu: kernel time;
                                               // sim: the time simulating took
  std::vector<float> logits;                   // the last step's [batch, vocab]
  std::vector<Execution> executions;           // when recorded
  uint64_t dropped = 0;                        // gpu: executions the trace buffer missed
  int64_t threads = 0;                         // cpu: OS threads used
  // The step after which the stop condition held, or -1: the run's last step (no later
  // step ran, on the cpu or in the gpu's kernel).
  int64_t stopped_at = -1;
  bool streamed = false;  // on_step saw each step as it completed, not after the run
  // With a prefill: the first decoded step (P - 1; the tokens of earlier steps are -1),
  // and the prefill chunk's own run (its steps are chunks; seconds, executions), which the
  // decode started after.
  int64_t first_step = 0;
  std::shared_ptr<ExecResult> prefill;
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual const char* kind() const = 0;  // "cpu" | "sim" | "gpu", the run kind in trace.db
  // Where the weights came from and how long loading them took ("", 0 for sim).
  virtual const std::string& weights_note() const;
  virtual double weights_seconds() const { return 0; }
  // One line on how it runs: "schedule order, 8 threads" (cpu, after a run: the threads
  // it used), "NVIDIA H100 ..., 132 SMs; megakernel ..." (gpu), the machine model (sim).
  virtual std::string describe() const = 0;
  // Runs request.steps steps. Throws mpk::Error for steps beyond the module's
  // max_seq_len, a bad prompt, non-finite logits, a watchdog timeout, or (sim) executions
  // over the host memory budget.
  virtual ExecResult run(const ExecRequest& request) = 0;
  // The run as trace.db records it: kind, the executor's options, batch, steps, device.
  virtual RunInfo run_info(const ExecResult& result) const = 0;
};

struct ExecutorKind {
  const char* name;
  const char* summary;
  bool (*available)();  // e.g. gpu: a GPU is present
  // `module` must outlive the executor. Throws mpk::Error (weights, megakernel, options).
  std::unique_ptr<Executor> (*make)(const Module& module, const ExecutorOptions& options);
};

// cpu, gpu (when built with CUDA), sim: sorted by name.
const std::vector<ExecutorKind>& executor_kinds();
// nullptr when this build has no executor of that name.
const ExecutorKind* find_executor(const std::string& name);
// The kind of that name; throws mpk::Error naming the known kinds, or saying that it is
// not available on this machine.
const ExecutorKind& usable_executor(const std::string& name);
// usable_executor(name).make(module, options).
std::unique_ptr<Executor> make_executor(const std::string& name, const Module& module,
                                        const ExecutorOptions& options);

// The implementations (driver/executor_<kind>.cc).
std::unique_ptr<Executor> make_cpu_executor(const Module& module, const ExecutorOptions& options);
std::unique_ptr<Executor> make_sim_executor(const Module& module, const ExecutorOptions& options);
std::unique_ptr<Executor> make_gpu_executor(const Module& module, const ExecutorOptions& options);

}  // namespace mpk
