// The task-graph index on a hand-built graph: waits, triggers, producers and consumers
// with distances, the schedule's places and order edges, what an unverified graph's bad
// references become, the same-step order, and the invalidation rule (a touched or
// resized graph makes an older index throw, and the pass manager touches).
#include "ir/task_graph_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <vector>

#include "ir/error.h"

namespace mpk {
namespace {

template <class Span>
std::vector<int32_t> list(const Span& s) {
  return {s.begin(), s.end()};
}
using Ids = std::vector<int32_t>;

// Tasks 0..4. Event 0: 0 -> 1, 2; event 1: 1, 2 -> 3; event 2: 3 -> 0 one step later;
// event 3: 0 -> 4. Workers: [0, 1, 3] and [2, 4].
TaskGraph hand_graph() {
  TaskGraph g;
  g.tasks.resize(5);
  g.events = {Event{{0}, {1, 2}, 1, 0}, Event{{1, 2}, {3}, 2, 0}, Event{{3}, {0}, 1, 1},
              Event{{0}, {4}, 1, 0}};
  g.schedule.policy = "hand";
  g.schedule.workers = {{0, 1, 3}, {2, 4}};
  return g;
}

TEST(TaskGraphIndex, ProducersConsumersWaitsAndTriggersWithDistances) {
  const TaskGraph g = hand_graph();
  const TaskGraphIndex x(g);
  EXPECT_EQ(x.problem(), "");
  EXPECT_EQ(x.num_tasks(), 5);
  EXPECT_EQ(x.num_events(), 4);
  EXPECT_EQ(list(x.producers(1)), (Ids{1, 2}));
  EXPECT_EQ(list(x.consumers(0)), (Ids{1, 2}));
  EXPECT_EQ(x.distance(2), 1);
  EXPECT_EQ(x.distance(3), 0);
  // Task 0 waits on the previous step's event 2 and triggers events 0 and 3.
  EXPECT_EQ(list(x.waits(0)), (Ids{2}));
  EXPECT_EQ(list(x.same_step_waits(0)), (Ids{}));
  EXPECT_EQ(list(x.triggers(0)), (Ids{0, 3}));
  EXPECT_EQ(list(x.same_step_triggers(0)), (Ids{0, 3}));
  // Task 3 waits on event 1 and triggers the cross-step event 2.
  EXPECT_EQ(list(x.waits(3)), (Ids{1}));
  EXPECT_EQ(list(x.triggers(3)), (Ids{2}));
  EXPECT_EQ(list(x.same_step_triggers(3)), (Ids{}));
  EXPECT_EQ(list(x.waits(4)), (Ids{3}));
  EXPECT_EQ(list(x.triggers(4)), (Ids{}));
}

TEST(TaskGraphIndex, ScheduleGivesPlacesOrderEdgesAndListings) {
  const TaskGraph g = hand_graph();
  const TaskGraphIndex x(g);
  EXPECT_TRUE(x.scheduled());
  EXPECT_EQ(x.num_workers(), 2);
  EXPECT_EQ(x.worker_of(3), 0);
  EXPECT_EQ(x.position_of(3), 2);
  EXPECT_EQ(x.worker_of(4), 1);
  EXPECT_EQ(x.next_on_worker(0), 1);
  EXPECT_EQ(x.next_on_worker(3), -1);
  EXPECT_EQ(x.prev_on_worker(4), 2);
  EXPECT_EQ(x.prev_on_worker(0), -1);
  EXPECT_EQ(list(x.listings(2)), (Ids{1}));

  TaskGraph twice = hand_graph();
  twice.schedule.workers[1].push_back(1);  // [2, 4, 1]: 1 is on worker 0 first
  const TaskGraphIndex y(twice);
  EXPECT_EQ(list(y.listings(1)), (Ids{0, 1}));
  EXPECT_EQ(y.worker_of(1), 0);
  EXPECT_EQ(y.prev_on_worker(1), 0);  // its first place's neighbour keeps it
  EXPECT_EQ(y.next_on_worker(4), -1);
}

TEST(TaskGraphIndex, BadReferencesAreSkippedAndNamed) {
  TaskGraph g = hand_graph();
  g.events[1].producers = {2, 1, 9, 2};  // unsorted, repeated, and a task that does not exist
  g.schedule.workers[1].push_back(-3);
  const TaskGraphIndex x(g);
  EXPECT_EQ(list(x.producers(1)), (Ids{1, 2}));
  EXPECT_EQ(list(x.triggers(2)), (Ids{1}));
  EXPECT_EQ(x.problem(), "event 1 names producer task 9, which does not exist");
  try {
    x.require_valid();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), x.problem());
  }
  g.events[1].producers = {1, 2};
  const TaskGraphIndex y(g);
  EXPECT_EQ(y.problem(), "worker 1 lists task -3, which does not exist");
}

TEST(TaskGraphIndex, SameStepOrderPutsProducersFirstAndIsEmptyOnACycle) {
  TaskGraph g = hand_graph();
  EXPECT_EQ(same_step_order(TaskGraphIndex(g)), (Ids{0, 1, 2, 3, 4}));
  g.events.push_back(Event{{3}, {1}, 1, 0});  // 1 -> 3 -> 1 in one step
  EXPECT_TRUE(same_step_order(TaskGraphIndex(g)).empty());
}

std::string stale_error(const std::function<void()>& query) {
  try {
    query();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(TaskGraphIndex, AnIndexOfAChangedGraphThrowsInsteadOfAnswering) {
  TaskGraph g = hand_graph();
  const TaskGraphIndex x(g);
  EXPECT_EQ(stale_error([&] { x.waits(0); }), "");
  // Any change that is followed by touch(), whatever the sizes.
  g.events[3].consumers = {2, 4};
  g.touch();
  for (const auto& query : std::vector<std::function<void()>>{
           [&] { x.waits(0); }, [&] { x.consumers(3); }, [&] { x.distance(0); },
           [&] { x.worker_of(1); }, [&] { x.next_on_worker(1); }, [&] { x.require_current(); }})
    EXPECT_NE(stale_error(query).find("stale task-graph index"), std::string::npos);
  EXPECT_EQ(list(TaskGraphIndex(g).consumers(3)), (Ids{2, 4}));

  // A change of the task or event count is caught even without touch().
  TaskGraph h = hand_graph();
  const TaskGraphIndex y(h);
  h.events.push_back(Event{{4}, {0}, 1, 1});
  EXPECT_NE(stale_error([&] { y.triggers(4); }).find("5 tasks and 4 events then, 5 and 5 now"), std::string::npos)
      << stale_error([&] { y.triggers(4); });

  // A graph replaced by a fresh one has a fresh stamp; a copy keeps its source's.
  TaskGraph k = hand_graph();
  const TaskGraphIndex z(k);
  const uint64_t before = k.generation;
  k = hand_graph();
  EXPECT_NE(k.generation, before);
  EXPECT_NE(stale_error([&] { z.waits(0); }), "");
  const TaskGraph copy = k;
  EXPECT_EQ(copy.generation, k.generation);
}

}  // namespace
}  // namespace mpk
