// The sim executor: the scheduled task graph timed by the cost model (traces/simulator.h):
// a cost file when given, else the machine model's shipped calibration, else the machine
// model's costs (traces/shipped_costs.h); describe() says which.
#include "driver/compile.h"
#include "driver/executor.h"
#include "ir/checked.h"
#include "runtime/cpu/memory_budget.h"
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

  ExecResult run(const ExecRequest& req) override {
    check_steps_fit(module_, checked_range(req.steps, 1, INT32_MAX, "option '--steps'"));
    const int64_t tasks = static_cast<int64_t>(module_.graph.tasks.size());
    check_host_memory(checked_product({req.steps, tasks, static_cast<int64_t>(sizeof(Execution))},
                                      "the simulated executions"),
                      "the simulated executions (" + std::to_string(req.steps) + " steps of " +
                          std::to_string(tasks) + " tasks)");
    ExecResult out;
    const auto t0 = std::chrono::steady_clock::now();
    out.executions = simulate(module_, costs_, static_cast<int32_t>(req.steps));
    out.seconds = seconds_since(t0);
    out.steps = req.steps;
    out.batch = attr_int_or(module_.attrs, "batch", 1);
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
