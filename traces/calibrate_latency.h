// The machine-wide part of calibration: how long a release takes to reach a waiter and
// what a worker spends between tasks, from the executions of one or more runs.
//   - event latency: a waiting task's start minus the end of the producer it waited for
//     (the last one, traces/run_derive.h BlameIndex) is modelled as event_latency_ns +
//     trigger_ns * (the event's place among the producer's triggered events) + fanout_ns *
//     (the event's consumers - 1); fitted by least absolute deviations, a growth term kept
//     only where it explains the waits better;
//   - dispatch_ns: the median of start - the worker's previous end over tasks whose
//     events were ready by then (so the worker, not an event, set the start), within a
//     step (where every task waited: of wait_begin - the previous end); step_ns: the same
//     over each worker's first task of a step, less dispatch_ns;
//   - link_latency_ns (tensor parallel): where a task's start was decided by an all_ranks
//     event, whose last producer is the last over every rank (CalibrationRun::peers), the
//     median of its start minus that end, less event_latency_ns: what a cross-GPU release
//     costs beyond a local one (with the ranks' skew, which one rank's simulation cannot
//     see otherwise). Those waits are left out of the event latency's fit.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/cost_params.h"
#include "traces/calibrate.h"

namespace mpk {

struct LatencyFit {
  double event_latency_ns = 0, trigger_ns = 0, fanout_ns = 0;
  double dispatch_ns = 0, step_ns = 0;
  double link_latency_ns = 0;
  int64_t latency_samples = 0, dispatch_samples = 0, step_samples = 0, link_samples = 0;
};

// Fields without samples keep `base`'s values.
LatencyFit fit_latencies(const std::vector<CalibrationRun>& runs, const CostParams& base);

// Least absolute deviations of y ~ x * coef (x rows of `columns` regressors), by
// iteratively reweighted least squares; coefficients that come out negative are
// dropped (0). Returns the coefficients.
std::vector<double> fit_l1(const std::vector<double>& x, const std::vector<double>& y,
                           size_t columns);

}  // namespace mpk
