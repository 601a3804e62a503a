// Tests of the module summary: counts, tasks per worker, the critical path and the
// makespan in the cost model on a hand-built graph, and the printed form.
#include <gtest/gtest.h>

#include "hand_module.h"
#include "ir/cost_params.h"
#include "passes/summary.h"

namespace mpk {
namespace {

using testing::HandModule;
using testing::run_pass;

TEST(Summary, CountsAndEstimatesOnAHandGraph) {
  HandModule h;
  const TensorId a = h.tensor("a");
  h.task({}, {h.cols(a, 0, 64)}, 10000);   // 0
  h.task({h.cols(a, 0, 64)}, {}, 20000);   // 1 after 0
  h.task({}, {}, 30000);                   // 2 independent
  run_pass(h.m, "infer-deps");
  const MachineModel& mm = h.m.machine;
  const CostParams costs = CostParams::from_machine(mm);
  const double c0 = estimate_task_ns(costs, h.m.graph.tasks[0], mm.sm_count);
  const double c1 = estimate_task_ns(costs, h.m.graph.tasks[1], mm.sm_count);
  const double c2 = estimate_task_ns(costs, h.m.graph.tasks[2], mm.sm_count);

  ModuleSummary s = summarize(h.m);
  EXPECT_EQ(s.operators, 1);
  EXPECT_EQ(s.tasks, 3);
  EXPECT_EQ(s.events, 2);
  EXPECT_EQ(s.cross_step_events, 1);  // 1 reads what 0 rewrites next step
  EXPECT_EQ(s.workers, 0);
  EXPECT_EQ(s.bytes_per_step, 60000);
  EXPECT_DOUBLE_EQ(s.critical_path_ns, std::max(c0 + mm.event_latency_ns + c1, c2));
  EXPECT_EQ(s.makespan_ns, 0);
  EXPECT_EQ(format_summary(s).find("makespan"), std::string::npos);

  // Worker 0 runs 0 then 2; worker 1 runs 1 once 0's event reaches it.
  run_pass(h.m, "assign-sm", {{"policy", "round-robin"}, {"workers", "2"}});
  s = summarize(h.m);
  EXPECT_EQ(s.workers, 2);
  EXPECT_EQ(s.policy, "round-robin");
  EXPECT_EQ(s.tasks_per_worker_min, 1);
  EXPECT_EQ(s.tasks_per_worker_median, 2);
  EXPECT_EQ(s.tasks_per_worker_max, 2);
  EXPECT_DOUBLE_EQ(s.makespan_ns, std::max(c0 + c2, c0 + mm.event_latency_ns + c1));

  // On one worker the event latency disappears.
  run_pass(h.m, "assign-sm", {{"policy", "round-robin"}, {"workers", "1"}});
  EXPECT_DOUBLE_EQ(summarize(h.m).makespan_ns, c0 + c1 + c2);
}

TEST(Summary, PrintsAlignedRows) {
  HandModule h;
  const TensorId a = h.tensor("a");
  h.task({}, {h.cols(a, 0, 64)});
  h.task({h.cols(a, 0, 64)}, {});
  run_pass(h.m, "infer-deps");
  run_pass(h.m, "assign-sm", {{"workers", "2"}});
  const std::string text = format_summary(summarize(h.m));
  for (const char* label : {"operators", "tasks", "events", "workers", "tasks/worker",
                            "critical path", "makespan", "bytes/step"})
    EXPECT_NE(text.find("  " + std::string(label) + " "), std::string::npos) << label << "\n" << text;
  // Every value starts in the same column.
  size_t column = std::string::npos;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    const std::string line = text.substr(start, end - start);
    const size_t gap = line.find("  ", 2);
    const size_t value = line.find_first_not_of(' ', gap);
    if (column == std::string::npos) column = value;
    EXPECT_EQ(value, column) << line;
    start = end + 1;
  }
  EXPECT_NE(text.find("(critical-path)"), std::string::npos);
}

TEST(Summary, ProgramOnly) {
  HandModule h;
  const ModuleSummary s = summarize(h.m);
  EXPECT_EQ(s.tasks, 0);
  EXPECT_EQ(format_summary(s), "  operators  1\n");
}

}  // namespace
}  // namespace mpk
