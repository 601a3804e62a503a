// calibrate_run: the simulator's cost model fitted to a recorded run (traces/calibrate.h,
// the fit `mpk calibrate` makes, over the machine model's values), checked as a cost file
// must be and labelled with where it came from, so that a front end can simulate other
// schedules of the same graph under the same costs (the studio's optimizer loop compares
// a GPU run's schedule and a new one under the costs calibrated from that run).
#pragma once

#include <cstdint>
#include <string>

#include "ir/cost_params.h"
#include "ir/module.h"

namespace mpk {

// Fits the costs to run `run` of `trace_path`, whose scheduled module is `module` (the
// one the trace stored with the run). Throws mpk::Error naming the trace and the run for
// a run without executions, or costs a cost file could not hold.
CostParams calibrate_run(const std::string& trace_path, int64_t run, const Module& module);

}  // namespace mpk
