// The optimizer loop's cost model, headless: every Apply and hand edit is simulated under
// one cost model and compared with a simulation of the source run's own schedule under
// the same costs and steps (never with a measured run). By default the costs are the
// run's own: calibrated from it for a GPU run (driver/calibrate_run.h, written to a cost
// file beside the opened file), the costs a simulated run was made with, the machine
// model for a CPU run (its timings are the host's); the user may pick the machine model
// or a cost file instead.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "traces/trace_db.h"

namespace mpk::studio {

enum class CostSource { kRun, kMachineModel, kFile };

struct CostChoice {
  CostSource source = CostSource::kRun;
  std::string file;  // kFile: the cost file (ir/cost_params.h)
};

// The costs a job simulates with.
struct JobCosts {
  std::string path;        // the cost file; "" = the machine model
  bool calibrate = false;  // fit it to the run first, writing `path`
  std::string label;       // "calibrated from run 3 (gpu)", "the machine model", ...
  // As trace.db records it among the run's options: the file or "machine-model".
  std::string recorded() const { return path.empty() ? "machine-model" : path; }
};

// The costs a simulated run was made with (its `costs=` option); nullopt for a run of
// another kind.
std::optional<std::string> simulated_costs(const RunRecord& r);

// True when `r` is itself a simulation of its schedule under `recorded` costs for
// `steps` steps: then it is what a new schedule is compared with.
bool simulates_under(const RunRecord& r, const std::string& recorded, int64_t steps);

// The costs for a job on run `r` under `choice`. `calibrated`: the cost files already
// fitted to runs (run -> file); `input`: the opened file, beside which a new one goes.
// Throws mpk::Error for a cost file that does not exist.
JobCosts resolve_costs(const CostChoice& choice, const RunRecord& r,
                       const std::map<int64_t, std::string>& calibrated, const std::string& input);

}  // namespace mpk::studio
