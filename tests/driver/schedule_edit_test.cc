// Tests of driver/schedule_edit.h: moves are checked by the verifier and refused with
// the cycle's tasks and events when they can deadlock (or put a consumer before its
// producer); kept edits re-simulate at once; undo and redo; moves by time and by place;
// the edited module saves as a pinned schedule whose provenance replays it, and the
// built `mpk run --graph` runs it on the sim backend (same executions as the editor's
// simulation) and on the cpu backend.
#include "driver/schedule_edit.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "ir/error.h"
#include "tests/studio/optimizer_test_util.h"
#include "traces/shipped_costs.h"
#include "traces/simulator.h"

namespace mpk {
namespace {

using studio::testing::CommandResult;
using studio::testing::OptimizerTest;
using studio::testing::scheduled_preset;
using Lists = std::vector<std::vector<TaskId>>;

constexpr const char* kRoundRobin4 = "decompose,infer-deps,assign-sm{policy=round-robin,workers=4}";

ScheduleEditor make_editor(const Module& m, int32_t steps = 2) {
  return ScheduleEditor(m, simulation_costs(m.machine, ""), steps);  // as `mpk run --backend sim`
}

bool runs_on(const std::vector<Execution>& execs, TaskId t, int32_t worker) {
  return std::any_of(execs.begin(), execs.end(),
                     [&](const Execution& x) { return x.task == t && x.worker == worker; });
}

class ScheduleEdit : public OptimizerTest {};

TEST_F(ScheduleEdit, AcceptedMoveChangesTheListsAndResimulates) {
  const Module m = scheduled_preset("tiny", kRoundRobin4);
  ScheduleEditor e = make_editor(m);
  ASSERT_TRUE(runs_on(e.executions(), 13, 1));
  const EditOutcome r = e.move({13}, 2, 10);
  ASSERT_TRUE(r.accepted) << r.message;
  EXPECT_NE(r.message.find("moved task 13 ("), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("step "), std::string::npos) << r.message;
  const auto& list = e.module().graph.schedule.workers[2];
  const auto at = std::find(list.begin(), list.end(), 10);
  ASSERT_NE(at + 1, list.end());
  EXPECT_EQ(at[1], 13);
  EXPECT_EQ(e.worker_of(13), 2);
  EXPECT_TRUE(runs_on(e.executions(), 13, 2));
  EXPECT_FALSE(runs_on(e.executions(), 13, 1));
  EXPECT_TRUE(studio::testing::same_executions(
      e.executions(), simulate(e.module(), simulation_costs(m.machine, ""), 2)));
  EXPECT_EQ(e.moves(), "13>w2@after:10");
  EXPECT_EQ(e.edits().size(), 1u);
  EXPECT_EQ(e.edits()[0].duration_ns, e.duration_ns());
}

TEST_F(ScheduleEdit, MoveThatCanDeadlockIsRefusedNamingTasksAndEvents) {
  const Module m = scheduled_preset("tiny", kRoundRobin4);
  ScheduleEditor e = make_editor(m);
  const Lists before = e.module().graph.schedule.workers;
  const std::vector<Execution> execs = e.executions();
  // Task 1 (the first layer's norm) reads what task 0 (an embedding tile) writes; put
  // ahead of it on task 0's worker, it would wait on work queued behind it.
  EditOutcome r = e.move({1}, 0, -1);
  EXPECT_FALSE(r.accepted);
  EXPECT_NE(r.message.find("can deadlock (schedule.deadlock)"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("task 1 (L0.input_norm:rms_norm) on worker 0 -[worker order]-> task 0 "
                           "(embed:embedding) on worker 0 -[event "),
            std::string::npos)
      << r.message;
  EXPECT_EQ(e.module().graph.schedule.workers, before);
  EXPECT_TRUE(studio::testing::same_executions(e.executions(), execs));
  EXPECT_FALSE(e.can_undo());

  // A longer cycle: the last task (argmax_reduce) first on worker 0.
  const TaskId last = static_cast<TaskId>(m.graph.tasks.size()) - 1;
  r = e.move({last}, 0, -1);
  EXPECT_FALSE(r.accepted);
  EXPECT_NE(r.message.find("task " + std::to_string(last) + " (argmax:argmax_reduce) on worker 0"),
            std::string::npos) << r.message;
  EXPECT_NE(r.message.find("-[event "), std::string::npos) << r.message;
  EXPECT_EQ(e.module().graph.schedule.workers, before);

  // Other refusals name the problem and change nothing.
  EXPECT_NE(e.move({13}, 9, -1).message.find("worker 9 does not exist"), std::string::npos);
  EXPECT_NE(e.move({13}, 2, 11).message.find("anchor task 11 is on worker 3, not on worker 2"),
            std::string::npos);
  EXPECT_NE(e.move({13, 14}, 2, 14).message.find("the anchor is one of the tasks moved"),
            std::string::npos);
  EXPECT_NE(e.move({9, 13}, 1, 5).message.find("nothing to change"), std::string::npos);
  EXPECT_EQ(e.module().graph.schedule.workers, before);
  EXPECT_TRUE(e.edits().empty());
}

TEST_F(ScheduleEdit, MultiTaskMoveIsAllOrNothing) {
  const Module m = scheduled_preset("tiny", kRoundRobin4);
  ScheduleEditor e = make_editor(m);
  const Lists before = e.module().graph.schedule.workers;
  // 13 and 17 go to worker 2 after 10, in this order.
  ASSERT_TRUE(e.move({13, 17}, 2, 10).accepted);
  const auto& list = e.module().graph.schedule.workers[2];
  const auto at = std::find(list.begin(), list.end(), 10);
  EXPECT_EQ(at[1], 13);
  EXPECT_EQ(at[2], 17);
  EXPECT_EQ(e.moves(), "13>w2@after:10;17>w2@after:13");
  // 601 fits after 596 on worker 0 (task id order), but task 1 after it would wait
  // behind the tasks that wait on it: nothing of the edit stays.
  const Lists after_first = e.module().graph.schedule.workers;
  const EditOutcome r = e.move({601, 1}, 0, 596);
  EXPECT_FALSE(r.accepted);
  EXPECT_NE(r.message.find("can deadlock"), std::string::npos) << r.message;
  EXPECT_EQ(e.module().graph.schedule.workers, after_first);
  EXPECT_EQ(e.edits().size(), 1u);
  ASSERT_TRUE(e.undo());
  EXPECT_EQ(e.module().graph.schedule.workers, before);
}

TEST_F(ScheduleEdit, UndoAndRedo) {
  const Module m = scheduled_preset("tiny", kRoundRobin4);
  ScheduleEditor e = make_editor(m);
  const Lists l0 = e.module().graph.schedule.workers;
  const int64_t d0 = e.duration_ns();
  ASSERT_TRUE(e.move({13}, 2, 10).accepted);
  const Lists l1 = e.module().graph.schedule.workers;
  ASSERT_TRUE(e.move({17}, 2, 13).accepted);
  const Lists l2 = e.module().graph.schedule.workers;
  const int64_t d2 = e.duration_ns();
  ASSERT_NE(l1, l2);

  EXPECT_TRUE(e.undo());
  EXPECT_EQ(e.module().graph.schedule.workers, l1);
  EXPECT_TRUE(e.undo());
  EXPECT_EQ(e.module().graph.schedule.workers, l0);
  EXPECT_EQ(e.duration_ns(), d0);
  EXPECT_FALSE(e.undo());
  EXPECT_TRUE(e.moves().empty());
  EXPECT_TRUE(e.redo());
  EXPECT_TRUE(e.redo());
  EXPECT_FALSE(e.redo());
  EXPECT_EQ(e.module().graph.schedule.workers, l2);
  EXPECT_EQ(e.duration_ns(), d2);
  EXPECT_EQ(e.moves(), "13>w2@after:10;17>w2@after:13");

  // A new edit after an undo drops what could be redone.
  EXPECT_TRUE(e.undo());
  ASSERT_TRUE(e.move({21}, 0, 20).accepted);
  EXPECT_FALSE(e.can_redo());
  EXPECT_EQ(e.edits().size(), 2u);
  EXPECT_EQ(e.moves(), "13>w2@after:10;21>w0@after:20");
}

TEST_F(ScheduleEdit, ShiftAndMoveByTime) {
  const Module m = scheduled_preset("tiny", "decompose,infer-deps,assign-sm{workers=8}");
  ScheduleEditor e = make_editor(m);
  // Shift: a task two places from the end of its list swaps with its successor.
  const auto& list0 = e.module().graph.schedule.workers[0];
  ASSERT_GE(list0.size(), 3u);
  const TaskId t = list0[list0.size() - 3], next = list0[list0.size() - 2];
  const EditOutcome r = e.shift(t, 1);
  if (r.accepted) {
    EXPECT_EQ(e.position_of(t), static_cast<int32_t>(list0.size()) - 2);
    EXPECT_EQ(e.position_of(next), static_cast<int32_t>(list0.size()) - 3);
  } else {
    EXPECT_NE(r.message.find("can deadlock"), std::string::npos) << r.message;  // next waits on t
  }
  EXPECT_NE(e.shift(list0.back(), 1).message.find("already last on worker 0"), std::string::npos);
  EXPECT_NE(e.shift(list0.front(), -1).message.find("already first on worker 0"),
            std::string::npos);

  // By time: after every task of the target worker that started before it in step 0;
  // such a move never deadlocks.
  std::vector<int64_t> start0(m.graph.tasks.size());
  for (const Execution& x : e.executions())
    if (x.step == 0) start0[x.task] = x.start_ns;
  int accepted = 0;
  for (TaskId task : {TaskId{40}, TaskId{200}, TaskId{400}}) {
    const int32_t to = (e.worker_of(task) + 1) % 8;
    const EditOutcome moved = e.move_to_worker(task, to);
    ASSERT_TRUE(moved.accepted) << moved.message;
    ++accepted;
    const auto& list = e.module().graph.schedule.workers[to];
    for (int32_t i = 0; i < static_cast<int32_t>(list.size()); ++i) {
      if (list[i] == task) continue;
      EXPECT_EQ(start0[list[i]] < start0[task], i < e.position_of(task)) << list[i];
    }
    for (const Execution& x : e.executions())
      if (x.step == 0) start0[x.task] = x.start_ns;
  }
  EXPECT_EQ(accepted, 3);
  EXPECT_NE(e.move_to_worker(40, 8).message.find("there is no worker 8"), std::string::npos);
}

TEST_F(ScheduleEdit, SavedModuleIsPinnedReplaysAndRunsWithMpkRunGraph) {
  const Module m = scheduled_preset("tiny", kRoundRobin4);
  ScheduleEditor e = make_editor(m, 3);
  ASSERT_TRUE(e.move({13}, 2, 10).accepted);
  ASSERT_TRUE(e.move({1}, 3, -1).accepted);
  const std::string saved = path("edited.mpk");
  e.save(saved);

  const Module loaded = load_module(saved);
  const Schedule& s = loaded.graph.schedule;
  EXPECT_EQ(s.policy, "pinned");
  EXPECT_EQ(attr_str(s.params, "base"), "round-robin");
  EXPECT_EQ(attr_str(s.params, "moves"), "13>w2@after:10;1>w3@first");
  EXPECT_EQ(attr_int(s.params, "moves_applied"), 2);
  EXPECT_EQ(s.workers, e.module().graph.schedule.workers);
  EXPECT_EQ(loaded.provenance.pipeline,
            "decompose,infer-deps,assign-sm{base=round-robin,moves=13>w2@after:10;1>w3@first,"
            "policy=pinned,workers=4}");
  // The provenance rebuilds it from the model.
  EXPECT_EQ(scheduled_preset("tiny", loaded.provenance.pipeline).graph.schedule.workers,
            s.workers);

  // `mpk run --graph` runs it: the sim backend stores the editor's simulation.
  const std::string trace = path("trace.db");
  CommandResult r = run_tool(
      "mpk", "run --backend sim --graph '" + saved + "' --steps 3 --trace '" + trace + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  const TraceReader reader(trace);
  const int64_t run = reader.last_run();
  EXPECT_EQ(reader.load_graph(run).graph.schedule.workers, s.workers);
  EXPECT_EQ(reader.run(run).policy, "pinned");
  EXPECT_TRUE(studio::testing::same_executions(reader.executions(run), e.executions()));

  r = run_tool("mpk", "run --backend cpu --graph '" + saved + "' --steps 3");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("generated:"), std::string::npos) << r.out;
}

TEST_F(ScheduleEdit, EditingAPinnedModuleAppendsItsMoves) {
  const Module m = scheduled_preset("tiny", kRoundRobin4);
  ScheduleEditor first = make_editor(m);
  ASSERT_TRUE(first.move({13}, 2, 10).accepted);
  ScheduleEditor second = make_editor(first.edited_module());
  ASSERT_TRUE(second.move({17}, 2, 13).accepted);
  const Module twice = second.edited_module();
  EXPECT_EQ(attr_str(twice.graph.schedule.params, "base"), "round-robin");
  EXPECT_EQ(attr_str(twice.graph.schedule.params, "moves"), "13>w2@after:10;17>w2@after:13");
  EXPECT_EQ(twice.graph.schedule.workers, second.module().graph.schedule.workers);
  // No edit: the module as it was.
  ScheduleEditor none = make_editor(m);
  EXPECT_EQ(none.edited_module().graph.schedule.policy, "round-robin");
}

TEST_F(ScheduleEdit, AScheduleItsPolicyDoesNotReproduceCannotBePinned) {
  Module m = scheduled_preset("tiny", kRoundRobin4);
  m.graph.schedule.policy = "critical-path";  // the lists say otherwise
  ScheduleEditor e = make_editor(m);
  ASSERT_TRUE(e.move({13}, 2, 10).accepted);
  try {
    e.edited_module();
    ADD_FAILURE() << "pinned a schedule its policy does not make";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("does not reproduce"), std::string::npos) << err.what();
  }
  Module unscheduled = import_model("tiny", ImportOptions{});
  EXPECT_THROW(make_editor(unscheduled), Error);
}

}  // namespace
}  // namespace mpk
