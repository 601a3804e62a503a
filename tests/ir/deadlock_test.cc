// The deadlock check: a cycle through a same-worker order edge (and none without the
// order, or through a distance-1 event), the shortest cycle through a given task, what
// can never start, the order of explicit lists, and the verifier's schedule.deadlock
// that rests on it.
#include "ir/deadlock.h"

#include <gtest/gtest.h>

#include "ir/verifier.h"
#include "tests/ir/test_modules.h"

namespace mpk {
namespace {

// Tasks 0..3: event 0: 0 -> 1, event 1: 1 -> 2, event 2: 2 -> 3 one step later.
TaskGraph chain() {
  TaskGraph g;
  g.tasks.resize(4);
  g.events = {Event{{0}, {1}, 1, 0}, Event{{1}, {2}, 1, 0}, Event{{2}, {3}, 1, 1}};
  return g;
}

TEST(Deadlock, ACycleThroughAWorkerOrderEdge) {
  TaskGraph g = chain();
  // Worker 0 runs 2 before 0, but 2 waits (through 1) for 0.
  g.schedule.workers = {{2, 0, 3}, {1}};
  const TaskGraphIndex x(g);
  EXPECT_FALSE(WaitCheck(x).deadlocks());  // the events alone are acyclic
  const WaitCheck check(x, schedule_order(x));
  ASSERT_TRUE(check.deadlocks());
  EXPECT_EQ(check.stuck_tasks(), 4);  // 3 waits behind 0 on its worker
  EXPECT_TRUE(check.stuck_event(0));
  EXPECT_FALSE(check.stuck_event(2));  // distance 1: not a same-step edge
  EXPECT_EQ(print_cycle(check.cycle()), "task 0 -[event 0]-> task 1 -[event 1]-> task 2 -[worker order]-> task 0");
  EXPECT_EQ(check.cycle(2), (std::vector<CycleLink>{{2, 1}, {0, -1}, {1, 0}}));
  EXPECT_EQ(check.cycle(3), check.cycle());  // 3 is stuck but on no cycle
  // The same lists given explicitly.
  EXPECT_EQ(WaitCheck(x, list_order(x, g.schedule.workers)).cycle(), check.cycle());
}

TEST(Deadlock, OrderAlongTheDependenciesAndCrossStepEdgesCloseNoCycle) {
  TaskGraph g = chain();
  g.schedule.workers = {{0, 1, 2, 3}};
  const TaskGraphIndex x(g);
  EXPECT_FALSE(WaitCheck(x, schedule_order(x)).deadlocks());
  EXPECT_TRUE(WaitCheck(x, schedule_order(x)).cycle().empty());
  // 3 before 2 on one worker: 3 waits for 2 only in the previous step.
  const std::vector<std::vector<TaskId>> lists = {{0, 1, 3, 2}};
  EXPECT_FALSE(WaitCheck(x, list_order(x, lists)).deadlocks());
}

TEST(Deadlock, ListOrderSkipsWhatIsNotATask) {
  const TaskGraph g = chain();
  const TaskGraphIndex x(g);
  const std::vector<std::vector<TaskId>> lists = {{1, 7, 0}, {-1, 2}};
  const NextOnWorker next = list_order(x, lists);
  EXPECT_EQ(next(1), -1);  // 7 is no task: no edge through it
  EXPECT_EQ(next(2), -1);
  EXPECT_FALSE(WaitCheck(x, next).deadlocks());
}

TEST(Deadlock, TheVerifiersDeadlockRuleNamesTheCycleOnItsWorkers) {
  Module m = testing::tiny_module();
  // Task 3 (k_proj) ahead of task 1 (input_norm, which it waits on) on worker 1.
  auto& w1 = m.graph.schedule.workers[1];
  std::swap(*std::find(w1.begin(), w1.end(), 1), *std::find(w1.begin(), w1.end(), 3));
  const std::vector<Diagnostic> d = verify_schedule(m);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].rule, "schedule.deadlock");
  EXPECT_NE(d[0].message.find("task 1 (L0.input_norm:rms_norm) on worker 1 -> task 3 (L0.k_proj:linear) on worker 1"),
            std::string::npos) << d[0].message;
}

}  // namespace
}  // namespace mpk
