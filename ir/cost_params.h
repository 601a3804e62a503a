// The one cost model, shared by the scheduling policies (passes/policies/), the module
// summary and the simulator (traces/simulator.h), so that a cost file fitted by
// `mpk calibrate` improves scheduling and simulation alike (docs/simulator.md, "Cost
// model"; docs/passes.md, "assign-sm"). Machine-wide values: memory bandwidth shared by
// the busy SMs, one SM's own bandwidth limit, event latency and its growth with the
// events a producer triggers and the consumers that wait, dispatch gap, the gap at a step
// boundary, the weight stream's ring, whether KV-cache reads cover only the positions
// written so far. Per task kind: fixed ns, a factor on the task's bytes, its arithmetic
// rate, the share of its bytes that comes through the weight stream. Defaults come from
// the machine model; a cost file (JSON: a "default" entry plus optional per-kind
// overrides under "kinds") replaces any of them.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "ir/module.h"
#include "ir/types.h"

namespace mpk {

struct KindCost {
  double fixed_ns = 0;      // per execution, before the task streams its bytes
  double bytes_scale = 1;   // effective bytes = task bytes * bytes_scale
  double flops_per_ns = 0;  // arithmetic rate of one SM for this kind; 0: flops not modeled
  double prefetch = 0;      // share of the bytes that comes through the weight stream
};

// A per-kind override: unset fields fall back to CostParams::defaults.
struct KindCostOverride {
  std::optional<double> fixed_ns, bytes_scale, flops_per_ns, prefetch;
};

struct CostParams {
  double mem_bandwidth = 0;     // bytes/s of device memory, shared by busy SMs
  double sm_bandwidth = 0;      // bytes/s one SM can stream on its own
  double event_latency_ns = 0;  // release -> visible to a waiter
  double dispatch_ns = 0;       // worker's gap between one task's end and the next wait
  // A producer releases its events trigger_ns apart (the n-th at end + (n - 1) *
  // trigger_ns); a release is visible fanout_ns later per consumer of the event beyond
  // the first (many SMs polling one counter).
  double trigger_ns = 0;
  double fanout_ns = 0;
  double step_ns = 0;           // added to the dispatch gap before a worker's first task of
                                // each step after the first
  // Tensor parallel (docs/ir.md): an all_ranks event's release reaches a waiter link_latency_ns
  // after it would on one GPU (a poll of a peer's counter over NVLink), and an all_reduce
  // task reads the other ranks' partials at link_bandwidth bytes/s.
  double link_latency_ns = 0;
  double link_bandwidth = 0;
  // A task reads only the KV-cache positions written so far: at step k (position k) the
  // part of a cache read beyond position k moves no bytes (ir: a cache's dimension 1 is
  // the position). Off: every task moves its bytes every step.
  bool positional_cache = false;
  // Weight stream ring per SM: a task's streamed bytes (its kind's `prefetch` share)
  // are fetched from the end of the worker's previous task, up to this many before the
  // task starts. 0: no stream ahead (every byte moves after the start).
  double prefetch_bytes = 0;
  KindCost defaults;
  std::array<KindCostOverride, kNumTaskKinds> kinds;
  std::string note;             // provenance, e.g. "calibrated from trace.db run 3"

  KindCost cost_of(TaskKind k) const;

  // Defaults from the machine model: its bandwidth, latency and per-task overhead,
  // one SM streaming at most 3x its fair share, 256 flops per cycle per SM; linear and
  // lm_head tasks stream all their bytes (used once prefetch_bytes is set). Throws
  // mpk::Error naming the field for a machine model out of bounds (ir/machine_check.h).
  static CostParams from_machine(const MachineModel& m);
};

// One task under `c`: its fixed time, the bytes it streams through the weight stream
// (0 unless c.prefetch_bytes > 0), the bytes it moves itself, and its arithmetic time;
// and, for positional_cache, the part of the direct bytes it reads from KV caches with
// the positions [cache_lo, cache_hi) they cover.
struct TaskCost {
  double fixed_ns = 0, stream_bytes = 0, direct_bytes = 0, compute_ns = 0;
  double cache_bytes = 0;
  int64_t cache_lo = 0, cache_hi = 0;
  // The share of its cache positions written by decode step `step` (its position); 1
  // for a task without cache reads.
  double cache_share_at(int64_t step) const {
    if (cache_bytes <= 0 || cache_hi <= cache_lo) return 1;
    const double have = static_cast<double>(step + 1 - cache_lo) / static_cast<double>(cache_hi - cache_lo);
    return have < 0 ? 0 : have > 1 ? 1 : have;
  }
  // The direct bytes at `step`: all of them, less the cache positions not written yet.
  double direct_bytes_at(int64_t step) const {
    return direct_bytes - cache_bytes * (1.0 - cache_share_at(step));
  }
  // The arithmetic at `step`: a task that reads the cache works on the positions it
  // reads (attention's work is per position).
  double compute_ns_at(int64_t step) const { return compute_ns * cache_share_at(step); }
};
TaskCost task_cost(const CostParams& c, const Task& t);
// The same, with the KV-cache reads of t (module m's tensors of role kv_cache) when
// c.positional_cache is on; a module without tensors (a trace's graph) has none.
TaskCost task_cost(const CostParams& c, const Module& m, const Task& t);

// Bandwidth one busy SM gets when `busy` SMs are busy, in bytes per ns (the simulator's
// sharing rule).
inline double shared_rate(const CostParams& c, int64_t busy) {
  const double total = c.mem_bandwidth * 1e-9 / static_cast<double>(busy > 0 ? busy : 1);
  const double own = c.sm_bandwidth * 1e-9;
  return total < own ? total : own;
}

// What the policies and the summary plan with: how long task t holds its worker when
// all `sm_count` SMs stream at once and nothing streams ahead of its start, i.e.
// fixed_ns + max(bytes * bytes_scale / per-SM rate, flops / flops_per_ns) + dispatch_ns,
// the rate being min(mem_bandwidth / sm_count, sm_bandwidth). Under
// CostParams::from_machine this is the machine model's overhead plus the larger of the
// task's fair-share memory time and its CUDA-core time.
double estimate_task_ns(const CostParams& c, const Task& t, int32_t sm_count);

// Every value within the bounds of ir/machine_check.h (bandwidths that keep times
// finite, latencies of at most a second, shares in 0..1); throws mpk::Error naming
// `source` and the field.
void check_cost_params(const CostParams& p, const std::string& source);

// Cost files (ir/cost_file.cc). Reads a cost file (at most 1 MiB) over `base` (keys in
// the file replace base's), then checks the result. Throws mpk::Error naming the file
// and the key for unknown keys, unknown task kinds or bad values.
CostParams load_cost_params(const std::string& path, const CostParams& base);
CostParams parse_cost_params(const std::string& json_text, const std::string& source,
                             const CostParams& base);
std::string format_cost_params(const CostParams& p);  // pretty JSON
// Checks `p`, then writes it with write_file_safely (never half a file).
void save_cost_params(const CostParams& p, const std::string& path);

}  // namespace mpk
