// The simulator backend's pieces, shared by `mpk run --backend sim` (run_sim.cc) and
// `mpk experiment` (cmd_experiment.cc): simulate a scheduled module (compiled with
// tools/run_compile.h, without weights) and store the run in a trace.db.
#pragma once

#include <cstdint>
#include <string>

#include "ir/module.h"
#include "tools/run_backends.h"
#include "ir/cost_params.h"

namespace mpk {

// The cost parameters: the machine model's defaults, then `costs_path` over them.
CostParams sim_costs(const Module& module, const std::string& costs_path);

struct SimRecord {
  int64_t run = 0;          // id in the trace.db
  size_t executions = 0;
  double simulate_s = 0, write_s = 0;
};

// Simulates `steps` steps and writes a run of kind sim (model, options as given). Throws
// mpk::Error for steps beyond the module's max_seq_len, or executions over the host memory
// budget (runtime/cpu/memory_budget.h).
SimRecord simulate_and_record(const Module& scheduled, const CostParams& costs, int64_t steps,
                              const std::string& model, const std::string& options,
                              const std::string& trace_path);

}  // namespace mpk
