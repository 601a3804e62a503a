// The race check's rule for cooperative shares (runtime/cpu/race_check.h): two shares of
// one operator write whichever units they claim on the GPU, so when one starts step k the
// other must have completed step k - 1 and not step k + 1; within a step they never
// conflict. Other tasks of one operator never conflict with each other.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "ir/error.h"
#include "ir/ops/linear.h"
#include "runtime/cpu/race_check.h"
#include "tests/runtime/runtime_test_util.h"

namespace mpk {
namespace {

// The first two tasks of operator `op` in g.
std::pair<TaskId, TaskId> two_tasks_of(const Module& g, const std::string& op) {
  const OpId o = g.program.find_op(op);
  std::vector<TaskId> found;
  for (TaskId t = 0; t < static_cast<TaskId>(g.graph.tasks.size()) && found.size() < 2; ++t)
    if (g.graph.tasks[t].op == o) found.push_back(t);
  EXPECT_EQ(found.size(), 2u) << op;
  return {found.at(0), found.at(1)};
}

// Whether `task` may start `step` when `other` has completed `done` steps and every other
// task has completed what sequential order asks: step `step` for the earlier operators,
// step - 1 for the later ones and `task`'s own (only `other`'s count is in question).
bool may_start(const Module& g, const RaceChecker& rc, TaskId task, TaskId other, int64_t step, int64_t done) {
  std::vector<std::atomic<int64_t>> counts(g.graph.tasks.size());
  for (TaskId t = 0; t < static_cast<TaskId>(counts.size()); ++t)
    counts[t] = g.graph.tasks[t].op < g.graph.tasks[task].op ? step + 1 : step;
  counts[other] = done;
  try {
    rc.check(g, task, step, counts);
    return true;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("race: "), std::string::npos) << e.what();
    return false;
  }
}

TEST(RaceCheck, CooperativeSharesOfOneOperatorConflictAcrossStepsOnly) {
  const Module g = test::compile(test::preset_module("tiny"), test::policy_pipeline("critical-path", "coop=on,coop-unit=8"));
  const RaceChecker rc(g);
  const auto [a, b] = two_tasks_of(g, "L0.o_proj");
  ASSERT_TRUE(coop_share(g.graph.tasks[a]).cooperative() && coop_share(g.graph.tasks[b]).cooperative());
  EXPECT_FALSE(may_start(g, rc, a, b, 3, 2));  // b has not finished step 2: it may still write its units
  EXPECT_TRUE(may_start(g, rc, a, b, 3, 3));   // b finished step 2
  EXPECT_TRUE(may_start(g, rc, a, b, 3, 4));   // b finished step 3 beside a's: the same step
  EXPECT_FALSE(may_start(g, rc, a, b, 3, 5));  // b ran step 4 before a's step 3
}

TEST(RaceCheck, TilesOfOneOperatorNeverConflict) {
  const Module g = test::compile(test::preset_module("tiny"), test::policy_pipeline("critical-path", "coop=off"));
  const RaceChecker rc(g);
  const auto [a, b] = two_tasks_of(g, "L0.o_proj");
  for (int64_t done : {0, 2, 3, 4, 9}) EXPECT_TRUE(may_start(g, rc, a, b, 3, done)) << done;
}

}  // namespace
}  // namespace mpk
