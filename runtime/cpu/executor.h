// The CPU executor: runs a decomposed, dependency-annotated and scheduled task graph
// for N decode steps with the per-task kernels, behaving like the GPU workers.
//
// Schedule order: every worker list of the schedule is a logical worker that runs its
// list in order, step after step; before a task it waits until each event it consumes
// has counter >= target * (k + 1 - step_distance), after it it increments the events it
// triggers; counters only grow. Logical workers are distributed round-robin over
// `threads` OS threads; a thread runs whichever of its logical workers has a runnable
// next task and sleeps until some counter moves when none has, so one OS thread can
// own many logical workers without deadlock (every cooperative interleaving is an
// execution the GPU could also take). A wait that makes no progress for `watchdog_s`
// throws mpk::Error naming the worker, task, step and event.
//
// Random order: one thread runs (task, step) pairs in a seeded random order that
// respects the events alone (and each task's own step order), ignoring the schedule, so
// a missing dependency shows up as a wrong result or, with check_races, as an error.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/module.h"
#include "runtime/cpu/run_common.h"
#include "runtime/weights/weights.h"

namespace mpk {

enum class CpuOrder { kSchedule, kRandom };

struct CpuRunOptions {
  int64_t steps = 1;
  std::vector<int64_t> prompt = {1};
  int64_t prompt_rows = 1;  // 1, or the batch: one row per batch row (run_common.h, prompt_token)
  CpuOrder order = CpuOrder::kSchedule;
  uint64_t seed = 0;          // random order
  int64_t threads = 0;        // schedule order: OS threads, 0 = hardware concurrency
  double watchdog_s = 10.0;   // longest wait without progress before throwing
  bool check_races = true;    // RaceChecker before every task (race_check.h)
  bool record_tasks = false;  // fill CpuRunResult::task_records
  // Called once per step, in step order, as soon as every batch row's token of that step
  // is recorded, with the step and its tokens [row]; returning false ends the run after
  // that step (the result then holds steps 0..step). It runs on the thread that recorded
  // the last row, before that task signals its events, so no task that reads those tokens
  // starts before it returns; calls never overlap. What it throws fails the run.
  std::function<bool(int64_t step, const std::vector<int32_t>& tokens)> on_step;
};

// One (task, step) execution, for traces.
struct CpuTaskRecord {
  TaskId task = -1;
  int64_t step = 0;
  int32_t worker = -1;   // logical worker (schedule order), -1 in random order
  int32_t thread = 0;    // OS thread that ran it
  int64_t wait_ns = 0;   // when the worker started waiting for it (ns from the run's start)
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int32_t rank = 0;      // tensor-parallel rank (run_cpu_tp: the ranks' times share one start)
};

struct CpuExecResult : CpuRunResult {
  std::vector<CpuTaskRecord> task_records;  // in completion order per worker
  int64_t threads = 1;
};

// Throws mpk::Error for a module without tasks (or, in schedule order, without a valid
// schedule), a task the kernels reject, missing weights, bad inputs, a detected race or
// a watchdog timeout, and for a module sharded for more than one rank.
CpuExecResult run_cpu(const Module& scheduled, const Weights& w, const CpuRunOptions& o);

// Tensor parallel (docs/ir.md "Tensor parallel"): runs a module sharded for N ranks (attr
// tp) as N ranks at once, rank r with rank_weights[r] (shard_weights, runtime/weights/
// weights.h) and o.threads threads of its own, in schedule order. An all_ranks event
// waits for the counter of every rank; an all_reduce reads every rank's partial. Every
// rank computes the same tokens (checked); rank 0's result is returned, and only rank 0
// calls on_step. A rank's failure stops the others and is thrown, prefixed "rank r: ".
CpuExecResult run_cpu_tp(const Module& scheduled, const std::vector<Weights>& rank_weights, const CpuRunOptions& o);

// Prefill, then decode (docs/ir.md "Prefill chunks"): runs `chunk` (a prefill chunk of
// the program of `scheduled`: prefill-chunk) over the first E = P - 1 positions of the
// prompt (P tokens per row; at most o.steps), ceil(E / C) steps, then `scheduled` from
// step E to o.steps on the KV caches the chunk filled. The decode result's steps before E
// hold token -1 (its first_step is E). A one-token prompt needs no prefill: then it is
// run_cpu. Throws as run_cpu does, for a tensor-parallel module, and for a chunk whose
// caches differ from the decode module's.
struct CpuPrefillResult {
  CpuExecResult prefill;  // the chunk's steps (tasks_run, task records); empty without E
  CpuExecResult decode;
};
CpuPrefillResult run_cpu_prefilled(const Module& chunk, const Module& scheduled, const Weights& w,
                                   const CpuRunOptions& o);

// "schedule" | "random"; nullopt otherwise.
std::optional<CpuOrder> parse_cpu_order(const std::string& s);

}  // namespace mpk
