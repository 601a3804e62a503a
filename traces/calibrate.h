// Calibration of the simulator's cost model from a recorded run (docs/simulator.md).
// Machine-wide: event latency = median of (start - last producer's end) over tasks
// that waited; dispatch = median gap between a worker's task end and its next wait.
// One SM's bandwidth limit: searched over 1..8x its fair share, kept at the base's
// value unless another value predicts durations better by more than 0.5 ns rms.
// Per task kind: fixed_ns and bytes_scale by least squares against the run's own
// bandwidth-sharing profile, i.e. the bytes a task could stream between
// start + fixed_ns and its end given how many SMs were busy at each instant.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/module.h"
#include "ir/cost_params.h"
#include "traces/trace_db.h"

namespace mpk {

struct KindFit {
  TaskKind kind = TaskKind::kLinear;
  int64_t samples = 0;
  double fixed_ns = 0, bytes_scale = 1;
  double mean_ns = 0;       // measured mean duration
  double rms_error_ns = 0;  // of predicted durations under the measured sharing profile
};

struct Calibration {
  CostParams params;
  std::vector<KindFit> fits;  // kinds with samples, in TaskKind order
  int64_t latency_samples = 0, dispatch_samples = 0;
  bool sm_bandwidth_fitted = false;  // else the base's value was kept
};

// `execs` of a run of `graph` (times relative to the run start). `base` supplies the
// bandwidths and whatever a run cannot determine.
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
