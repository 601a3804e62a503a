// The sim executor: the scheduled task graph timed by the cost model (traces/simulator.h):
// a cost file when given, else the machine model's shipped calibration, else the machine
// model's costs (traces/shipped_costs.h); describe() says which.
#include "driver/compile.h"
#include "driver/executor.h"
#include "ir/checked.h"
#include "ir/row_positions.h"
#include "runtime/cpu/memory_budget.h"
#include "runtime/cpu/run_common.h"
#include "ir/cost_params.h"
#include "traces/shipped_costs.h"
#include "traces/simulator.h"

namespace mpk {
namespace {

class SimExecutor : public Executor {
 public:
  SimExecutor(const Module& m, const ExecutorOptions& o)
      : module_(m), option_("costs=" + recorded_costs(m.machine, o.costs)),
        costs_(simulation_costs(m.machine, o.costs, &used_)) {}

  const char* kind() const override { return "sim"; }
  std::string describe() const override { return module_.machine.name + ", costs: " + used_; }

  // With a prefill, its chunk steps are simulated as a run of their own, and the decode
  // from step P - 1 on (its executions keep their step numbers).
  ExecResult run(const ExecRequest& req) override {
    check_steps_fit(module_, checked_range(req.steps, 1, INT32_MAX, "option '--steps'"));
    const int64_t end = req.prefill ? prefill_end(prompt_length(req.prompt, req.prompt_rows), req.steps) : 0;
    std::shared_ptr<ExecResult> prefill;
    if (end > 0)
      prefill = std::make_shared<ExecResult>(simulated(*req.prefill, prefill_steps(end, chunk_rows(*req.prefill)), 0));
    ExecResult out = simulated(module_, req.steps - end, end);
    out.steps = req.steps;
    out.first_step = end;
    out.prefill = std::move(prefill);
    return out;
  }

  // `steps` steps of `m`, numbered from `first`.
  ExecResult simulated(const Module& m, int64_t steps, int64_t first) const {
    const int64_t tasks = static_cast<int64_t>(m.graph.tasks.size());
    check_host_memory(checked_product({steps, tasks, static_cast<int64_t>(sizeof(Execution))},
                                      "the simulated executions"),
                      "the simulated executions (" + std::to_string(steps) + " steps of " +
                          std::to_string(tasks) + " tasks)");
    ExecResult out;
    const auto t0 = std::chrono::steady_clock::now();
    out.executions = simulate(m, costs_, static_cast<int32_t>(steps));
    for (Execution& x : out.executions) x.step += static_cast<int32_t>(first);
    out.seconds = seconds_since(t0);
    out.steps = steps;
    out.batch = attr_int_or(m.attrs, "batch", 1);
    return out;
  }

  RunInfo run_info(const ExecResult& r) const override {
    RunInfo info;
    info.kind = "sim";
    info.options = option_;
    info.steps = r.steps;
    return info;
  }

 private:
  const Module& module_;
  std::string option_, used_;
  CostParams costs_;
};

}  // namespace

std::unique_ptr<Executor> make_sim_executor(const Module& module, const ExecutorOptions& options) {
  return std::make_unique<SimExecutor>(module, options);
}

}  // namespace mpk
