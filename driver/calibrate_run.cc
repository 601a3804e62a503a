// calibrate_run: reads the run's executions and record, fits, checks, labels.
#include "driver/calibrate_run.h"

#include "ir/error.h"
#include "traces/calibrate.h"
#include "traces/trace_db.h"

namespace mpk {

CostParams calibrate_run(const std::string& trace_path, int64_t run, const Module& module) {
  const TraceReader reader(trace_path);
  const RunRecord record = reader.run(run);
  const std::vector<Execution> execs = reader.executions(run);
  const std::string what = trace_path + " run " + std::to_string(run);
  if (execs.empty()) throw Error(what + " has no executions to calibrate the costs from");
  CostParams p = calibrate(module, execs, CostParams::from_machine(module.machine)).params;
  check_cost_params(p, "the costs calibrated from " + what);
  p.note = "calibrated from " + what + " (" + record.kind + ", " + record.model + ", " +
           record.policy + ")";
  return p;
}

}  // namespace mpk
