// One cost model for planning and simulation (ir/cost_params.h): a cost file given to
// assign-sm (costs=FILE) changes the critical-path policy's order the way its kind costs
// say, and the simulator, given the same file, times the same kind accordingly.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "passes/registry.h"
#include "tests/traces/test_graphs.h"
#include "traces/simulator.h"

namespace mpk {
namespace {

using testing::GraphBuilder;
using testing::TempPath;

// Two independent chains on one worker: embedding 0 -> embedding 2, rms_norm 1 -> rms_norm 3,
// every task moving the same bytes.
Module two_chains() {
  GraphBuilder g(1);
  const OpId a = g.op("a", OpKind::kEmbedding), b = g.op("b", OpKind::kRmsNorm);
  const TaskId a0 = g.task(a, 1000, TaskKind::kEmbedding), b0 = g.task(b, 1000, TaskKind::kRmsNorm);
  const TaskId a1 = g.task(a, 1000, TaskKind::kEmbedding), b1 = g.task(b, 1000, TaskKind::kRmsNorm);
  g.event({a0}, {a1});
  g.event({b0}, {b1});
  return g.schedule({});
}

Module scheduled(Module m, const std::string& costs) {
  PassOptions o = {{"policy", "critical-path"}};
  if (!costs.empty()) o["costs"] = costs;
  const PassResult r = find_pass("assign-sm")->create(o)->run(m);
  EXPECT_FALSE(r.error) << *r.error;
  return m;
}

int64_t duration(const std::vector<Execution>& execs, TaskId t) {
  const auto x = std::find_if(execs.begin(), execs.end(), [&](const Execution& e) { return e.task == t; });
  return x->end_ns - x->start_ns;
}

TEST(SharedCosts, ACalibratedKindCostReordersCriticalPathAndRetimesTheSimulator) {
  const Module base = two_chains();
  // The machine model's costs: the chains tie, the lower task id goes first.
  const Module plain = scheduled(base, "");
  EXPECT_EQ(plain.graph.schedule.workers, (std::vector<std::vector<TaskId>>{{0, 1, 2, 3}}));
  EXPECT_EQ(plain.graph.schedule.params.count("costs"), 0u);

  // A cost file that makes rms_norm slow: its chain is now the critical one and both of
  // its tasks go first (each is longer than the whole embedding chain).
  TempPath file("shared_costs.json");
  std::ofstream(file.str()) << R"({"kinds": {"rms_norm": {"fixed_ns": 20000}}})";
  const Module calibrated = scheduled(base, file.str());
  EXPECT_EQ(calibrated.graph.schedule.workers, (std::vector<std::vector<TaskId>>{{1, 3, 0, 2}}));
  EXPECT_EQ(attr_str(calibrated.graph.schedule.params, "costs"), file.str());

  // The simulator reads the same kind cost: an rms_norm task runs 19500 ns longer than
  // under the machine model (whose fixed cost is its task overhead, 500 ns), an
  // embedding task as long, and the run as a whole at least twice that longer.
  const CostParams machine = CostParams::from_machine(base.machine);
  const CostParams costs = load_cost_params(file.str(), machine);
  const std::vector<Execution> before = simulate(plain, machine, 1), after = simulate(plain, costs, 1);
  EXPECT_NEAR(duration(after, 1) - duration(before, 1), 20000 - base.machine.task_overhead_ns, 1);
  EXPECT_EQ(duration(after, 0), duration(before, 0));
  const auto makespan = [](const std::vector<Execution>& x) {
    return std::max_element(x.begin(), x.end(), [](auto& a, auto& b) { return a.end_ns < b.end_ns; })->end_ns;
  };
  EXPECT_GE(makespan(after) - makespan(before), 2 * 19500 - 1000);

  // The policy plans with the estimate the summary and the simulator's parameters share.
  EXPECT_GT(estimate_task_ns(costs, calibrated.graph.tasks[1], 1),
            estimate_task_ns(machine, calibrated.graph.tasks[1], 1) + 19000);
}

TEST(SharedCosts, ABadCostFileFailsTheScheduleNamingTheOption) {
  Module m = two_chains();
  TempPath file("shared_costs_bad.json");
  std::ofstream(file.str()) << R"({"kinds": {"rms_norm": {"fixed_ns": -1}}})";
  const PassResult r =
      find_pass("assign-sm")->create({{"policy", "critical-path"}, {"costs", file.str()}})->run(m);
  ASSERT_TRUE(r.error);
  EXPECT_NE(r.error->find("option 'costs': " + file.str() + ": kinds.rms_norm.fixed_ns"), std::string::npos)
      << *r.error;
}

}  // namespace
}  // namespace mpk
