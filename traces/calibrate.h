// Calibration of the cost model (ir/cost_params.h) from one or more recorded runs
// (docs/simulator.md, "Calibration"). Machine-wide, from the waits and gaps of every run
// (traces/calibrate_latency.h): event latency with its growth per event a producer
// triggers and per consumer of the event, dispatch gap, step-boundary gap. One SM's
// bandwidth limit, the weight stream's ring and whether KV-cache reads follow the
// position: searched, each candidate judged by how well the per-kind fits then predict
// task durations. Per task kind (traces/calibrate_kinds.h): fixed_ns and bytes_scale by
// least squares against each run's own bandwidth-sharing profile.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/cost_params.h"
#include "ir/module.h"
#include "traces/trace_db.h"

namespace mpk {

// One recorded run to calibrate on (or to predict, traces/model_error.h).
struct CalibrationRun {
  std::string label;   // "trace.db run 3"
  std::string model;   // the run's model and policy, to group runs by (model, policy)
  std::string policy;
  Module module;       // the scheduled graph it ran (with tensors when the trace stored its
                       // module: positional KV-cache reads need them)
  std::vector<Execution> executions;  // times from the run's start
  int32_t steps = 0;
  // A rank of a tensor-parallel launch: the other ranks' executions on this run's time
  // axis (Execution::rank set), which decide its waits on all_ranks events.
  std::vector<Execution> peers;
};

// A run of trace.db: its stored module (else the graph rows), executions and labels, and
// for a rank of a tensor-parallel launch its peers' executions.
// Throws mpk::Error naming the file and run.
CalibrationRun load_calibration_run(const TraceReader& reader, int64_t run);

struct KindFit {
  TaskKind kind = TaskKind::kLinear;
  int64_t samples = 0;
  double fixed_ns = 0, bytes_scale = 1;
  double mean_ns = 0;       // measured mean duration
  double rms_error_ns = 0;  // of predicted durations under the measured sharing profiles
};

struct Calibration {
  CostParams params;
  std::vector<KindFit> fits;  // kinds with samples, in TaskKind order
  int64_t latency_samples = 0, dispatch_samples = 0, step_samples = 0;
  int64_t link_samples = 0;  // waits an all_ranks event decided (tensor-parallel runs)
  bool sm_bandwidth_fitted = false;  // else the base's value was kept
};

// `base` supplies the bandwidths and whatever the runs cannot determine. Throws
// mpk::Error when no run has executions.
Calibration calibrate(const std::vector<CalibrationRun>& runs, const CostParams& base);
// One run of `graph`.
Calibration calibrate(const Module& graph, const std::vector<Execution>& execs,
                      const CostParams& base);

// Adjusts p.event_latency_ns (between 0 and a few times its value) until simulating
// `graph` for `steps` steps gives `measured_step_ns` per step, by bisection; the
// latency then also absorbs what the cost model misses on the critical path. Returns
// the remaining relative error; keeps the closest latency when no value matches.
double match_makespan(const Module& graph, int32_t steps, double measured_step_ns,
                      CostParams& p);

// Mean makespan per step of a run's executions: end of the last one / steps.
double mean_step_ns(const std::vector<Execution>& execs, int32_t steps);

}  // namespace mpk
