// The simulator backend's pieces, shared by `mpk run --backend sim` (run_sim.cc) and
// `mpk experiment` (cmd_experiment.cc): compile a model without weights, simulate a
// scheduled module and store the run in a trace.db.
#pragma once

#include <cstdint>
#include <string>

#include "ir/module.h"
#include "tools/run_backends.h"
#include "traces/cost_params.h"

namespace mpk {

// Imports request.model (a preset, an HF directory, a config.json, or a .mpk module;
// a scheduled .mpk is used as it is unless a pipeline is given) and runs `pipeline`.
// Throws mpk::Error naming the model, pass or verifier rule.
Module import_for_sim(const RunRequest& request);
void schedule_for_sim(Module& module, const std::string& pipeline);

// The cost parameters: the machine model's defaults, then `costs_path` over them.
CostParams sim_costs(const Module& module, const std::string& costs_path);

struct SimRecord {
  int64_t run = 0;          // id in the trace.db
  size_t executions = 0;
  double simulate_s = 0, write_s = 0;
};

// Simulates `steps` steps and writes a run of kind sim (model, options as given).
SimRecord simulate_and_record(const Module& scheduled, const CostParams& costs, int64_t steps,
                              const std::string& model, const std::string& options,
                              const std::string& trace_path);

}  // namespace mpk
