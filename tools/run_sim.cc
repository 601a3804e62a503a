// The `sim` backend of `mpk run`: compiles the model (no weights needed), simulates the
// scheduled task graph with the cost model (traces/simulator.h), writes a run of kind
// sim to the trace.db (--trace, default trace.db), prints a summary and how to open it.
#include "tools/run_sim.h"

#include <chrono>
#include <cstdio>

#include "ir/checked.h"
#include "ir/error.h"
#include "runtime/cpu/memory_budget.h"
#include "tools/run_compile.h"
#include "traces/analysis.h"
#include "traces/simulator.h"
#include "traces/trace_db.h"

namespace mpk {
CostParams sim_costs(const Module& m, const std::string& costs_path) {
  const CostParams base = CostParams::from_machine(m.machine);
  return costs_path.empty() ? base : load_cost_params(costs_path, base);
}

SimRecord simulate_and_record(const Module& scheduled, const CostParams& costs, int64_t steps,
                              const std::string& model, const std::string& options,
                              const std::string& trace_path) {
  SimRecord rec;
  check_steps_fit(scheduled, checked_range(steps, 1, INT32_MAX, "option '--steps'"));
  check_host_memory(checked_product({steps, static_cast<int64_t>(scheduled.graph.tasks.size()),
                                     static_cast<int64_t>(sizeof(Execution))}, "the simulated executions"),
                    "the simulated executions (" + std::to_string(steps) + " steps of " +
                        std::to_string(scheduled.graph.tasks.size()) + " tasks)");
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<Execution> execs = simulate(scheduled, costs, steps);
  rec.simulate_s = seconds_since(t0);
  rec.executions = execs.size();
  RunInfo info;
  info.kind = "sim";
  info.model = model;
  info.options = options;
  info.steps = steps;
  const auto t1 = std::chrono::steady_clock::now();
  rec.run = write_run(trace_path, scheduled, info, execs);
  rec.write_s = seconds_since(t1);
  return rec;
}

namespace {

int run_sim_backend(const RunRequest& req) {
  const std::string trace = req.trace.empty() ? "trace.db" : req.trace;
  const auto t0 = std::chrono::steady_clock::now();
  Module m = import_for_run(req);
  std::string pipeline;
  if (m.graph.schedule.empty() || !req.pipeline.empty()) {
    pipeline = run_pipeline(req);
    schedule_for_run(m, pipeline);
  }
  const double compile_s = seconds_since(t0);
  const CostParams costs = sim_costs(m, req.costs);
  const SimRecord rec =
      simulate_and_record(m, costs, req.steps, req.model,
                          "costs=" + (req.costs.empty() ? "machine-model" : req.costs), trace);

  std::printf("model     %s (%s), batch %lld\n", m.name.c_str(), m.provenance.source.c_str(),
              static_cast<long long>(attr_int_or(m.attrs, "batch", 1)));
  std::printf("graph     %s | %zu tasks, %zu events, %zu workers\n",
              pipeline.empty() ? "(scheduled module)" : pipeline.c_str(), m.graph.tasks.size(),
              m.graph.events.size(), m.graph.schedule.workers.size());
  std::printf("simulate  %lld steps on %s: compile %.2f s, simulate %.2f s, write %.2f s\n\n",
              static_cast<long long>(req.steps), m.machine.name.c_str(), compile_s, rec.simulate_s,
              rec.write_s);
  const TraceReader reader(trace);
  std::fputs(format_brief(compute_stats(reader, rec.run)).c_str(), stdout);
  std::printf("\ntrace: run %lld -> %s\n", static_cast<long long>(rec.run), trace.c_str());
  std::printf("open it: mpk-studio %s   (or: mpk trace stats %s --run %lld)\n", trace.c_str(),
              trace.c_str(), static_cast<long long>(rec.run));
  return 0;
}

}  // namespace
}  // namespace mpk

MPK_RUN_BACKEND(sim, "timing from the cost model, no GPU needed; writes trace.db",
                mpk::run_sim_backend, nullptr);
