// The sim executor: the scheduled task graph timed by the cost model (traces/simulator.h)
// with the machine model's costs, or a cost file over them (e.g. from mpk calibrate).
#include "driver/compile.h"
#include "driver/executor.h"
#include "ir/checked.h"
#include "runtime/cpu/memory_budget.h"
#include "ir/cost_params.h"
#include "traces/simulator.h"

namespace mpk {
namespace {

class SimExecutor : public Executor {
 public:
  SimExecutor(const Module& m, const ExecutorOptions& o)
      : module_(m), costs_path_(o.costs),
        costs_(o.costs.empty() ? CostParams::from_machine(m.machine)
                               : load_cost_params(o.costs, CostParams::from_machine(m.machine))) {}

  const char* kind() const override { return "sim"; }
  std::string describe() const override { return module_.machine.name; }

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
    info.options = "costs=" + (costs_path_.empty() ? std::string("machine-model") : costs_path_);
    info.steps = r.steps;
    return info;
  }

 private:
  const Module& module_;
  std::string costs_path_;
  CostParams costs_;
};

}  // namespace

std::unique_ptr<Executor> make_sim_executor(const Module& module, const ExecutorOptions& options) {
  return std::make_unique<SimExecutor>(module, options);
}

}  // namespace mpk
