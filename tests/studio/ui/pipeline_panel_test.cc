// The pipeline view driven headless through whole app frames (HeadlessFrame) with
// synthetic input: it loads an edit session for the current run; Alt+Down moves the
// selected task to the next worker and the edited schedule becomes a stored run compared
// with the original; Ctrl+Z / Ctrl+Y undo and redo; a refused Alt+Left that would
// deadlock shows its message; Apply runs the pipeline off the UI thread and opens the
// new run beside the previous one in the compare view; Save .mpk writes a pinned
// schedule; the option widgets follow the declared options; a trace written before
// modules were stored is edited from rebuilt modules, which the status line says once.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include "tests/traces/aged_trace.h"
#include "tests/studio/ui/app_test_fixture.h"
#include "ir/serialize.h"
#include "ir/task_graph_index.h"

namespace mpk::studio {
namespace {

class PipelinePanel : public testing::AppOnTinyRun {
 protected:
  void SetUp() override {
    AppOnTinyRun::SetUp();
    if (HasFatalFailure()) return;
    s_.view = View::kPipeline;
    s_.view_changed = true;
    h_.run(frame_, 2);
    run_until([&] { return has_edit_session(s_); });
    ASSERT_TRUE(has_edit_session(s_)) << s_.pipeline.job_message;
  }

  void select_task(TaskId t) { select_execution(s_, s_.model->find(t, 0)); }

  void click(const char* button) {
    ASSERT_TRUE(s_.pipeline.buttons.count(button)) << button << " was not drawn";
    const auto [x, y] = s_.pipeline.buttons.at(button);
    h_.click(frame_, x, y);
  }
};

TEST_F(PipelinePanel, AltDownMovesTheSelectedTaskAndCtrlZYUndoAndRedo) {
  select_task(13);
  ASSERT_EQ(selected_task(s_), 13);
  ASSERT_EQ(editor().worker_of(13), 1);
  press(ImGuiKey_DownArrow, false, true);
  EXPECT_EQ(editor().worker_of(13), 2) << s_.pipeline.edit_message;
  EXPECT_FALSE(s_.pipeline.edit_refused);
  EXPECT_TRUE(editor().moves().rfind("13>w2@", 0) == 0 && editor().moves().find(';') == std::string::npos)
      << editor().moves();  // one move: task 13 to worker 2

  // The edited schedule is stored as a run, made current and compared with the first.
  idle();
  const int64_t edited = s_.run;
  EXPECT_NE(edited, first_);
  EXPECT_EQ(s_.compare_run, first_);
  EXPECT_EQ(find_run(s_, edited)->policy, "pinned");
  EXPECT_EQ(s_.model->graph().graph.schedule.workers, editor().module().graph.schedule.workers);
  EXPECT_EQ(selected_task(s_), 13);  // still selected
  EXPECT_TRUE(has_edit_session(s_));

  press(ImGuiKey_Z, true, false);
  EXPECT_EQ(editor().worker_of(13), 1);
  idle();
  EXPECT_EQ(s_.run, first_);  // the unedited schedule is the first run
  const size_t runs = s_.runs.size();
  press(ImGuiKey_Y, true, false);
  EXPECT_EQ(editor().worker_of(13), 2);
  idle();
  EXPECT_EQ(s_.run, edited);  // stored before: no new run
  EXPECT_EQ(s_.runs.size(), runs);
}

TEST_F(PipelinePanel, RefusedMoveThatWouldDeadlockShowsItsMessage) {
  // A task right behind one of its producers on its worker: Alt+Left puts it first.
  const Module& g = editor().module();
  TaskId task = -1;
  const TaskGraphIndex index(g.graph);
  for (const auto& list : g.graph.schedule.workers)
    for (size_t i = 1; i < list.size() && task < 0; ++i)
      for (EventId e : index.waits(list[i]))
        if (g.graph.events[e].step_distance == 0 &&
            std::count(g.graph.events[e].producers.begin(), g.graph.events[e].producers.end(),
                       list[i - 1]))
          task = list[i];
  ASSERT_GE(task, 0);
  const auto before = g.graph.schedule.workers;
  select_task(task);
  press(ImGuiKey_LeftArrow, false, true);
  EXPECT_TRUE(s_.pipeline.edit_refused);
  const std::string& m = s_.pipeline.edit_message;
  EXPECT_NE(m.find("refused: task " + std::to_string(task)), std::string::npos) << m;
  EXPECT_NE(m.find("can deadlock"), std::string::npos) << m;
  EXPECT_NE(m.find("-[event "), std::string::npos) << m;
  EXPECT_TRUE(s_.status_error);
  EXPECT_EQ(s_.status, m);
  EXPECT_EQ(editor().module().graph.schedule.workers, before);
  EXPECT_TRUE(editor().edits().empty());
}

TEST_F(PipelinePanel, ApplyOpensTheNewRunBesideThePreviousOneInCompare) {
  EXPECT_EQ(s_.pipeline.text, testing::kRoundRobin4);  // the run's pipeline
  set_pipeline_text(s_.pipeline, "decompose,infer-deps,assign-sm{policy=locality,workers=8}");
  s_.pipeline.text_edited = true;
  h_.run(frame_);
  click("apply");
  run_until([&] { return s_.view == View::kCompare; });
  ASSERT_EQ(s_.view, View::kCompare) << s_.pipeline.job_message << s_.pipeline.text_error;
  EXPECT_NE(s_.run, first_);
  EXPECT_EQ(s_.compare_run, first_);
  const RunRecord* r = find_run(s_, s_.run);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->policy, "locality");
  EXPECT_EQ(r->pipeline, "decompose,infer-deps,assign-sm{policy=locality,workers=8}");
  EXPECT_EQ(r->steps, 2);
  EXPECT_EQ(r->num_workers, 8);
  EXPECT_NE(s_.pipeline.job_message.find("A run " + std::to_string(first_) + " "), std::string::npos)
      << s_.pipeline.job_message;
  EXPECT_NE(s_.pipeline.job_message.find(", B run " + std::to_string(s_.run) + " "), std::string::npos)
      << s_.pipeline.job_message;
  EXPECT_TRUE(s_.compare_current_is_b);  // the old run is A, the new one B
  EXPECT_TRUE(has_edit_session(s_));  // the new run can be edited at once
  EXPECT_EQ(s_.pipeline.session_run, s_.run);

  // A malformed pipeline does not start.
  set_pipeline_text(s_.pipeline, "decompose,assign-sm{policy=fastest}");
  EXPECT_FALSE(apply_pipeline(s_));
  EXPECT_NE(s_.pipeline.text_error.find("got 'fastest'"), std::string::npos);
}

TEST_F(PipelinePanel, SaveWritesAPinnedScheduleThatMpkRunGraphRuns) {
  select_task(13);
  press(ImGuiKey_DownArrow, false, true);
  ASSERT_TRUE(editor().moves().rfind("13>w2@", 0) == 0 && editor().moves().find(';') == std::string::npos)
      << editor().moves();  // one move: task 13 to worker 2
  s_.pipeline.save_path = path("edited.mpk");
  h_.run(frame_);
  click("save");
  ASSERT_FALSE(s_.pipeline.save_failed) << s_.pipeline.save_message;
  const Module saved = load_module(path("edited.mpk"));
  EXPECT_EQ(saved.graph.schedule.policy, "pinned");
  EXPECT_EQ(attr_str(saved.graph.schedule.params, "base"), "round-robin");
  EXPECT_EQ(saved.graph.schedule.workers, editor().module().graph.schedule.workers);
  const testing::CommandResult r =
      run_tool("mpk", "run --backend sim --graph '" + path("edited.mpk") + "' --steps 2 --trace '" +
                          path("graph.db") + "'");
  EXPECT_EQ(r.status, 0) << r.err;
}

TEST_F(PipelinePanel, OptionWidgetsFollowTheDeclaredOptions) {
  PipelineViewState& p = s_.pipeline;
  set_pipeline_text(p,
                    "decompose,infer-deps,assign-sm{base=locality,policy=pinned,slack-scale=0.5}");
  std::vector<std::string> names;
  for (const PassOptionInfo& o : entry_options(p.entries[2])) names.push_back(o.name);
  EXPECT_EQ(names, (std::vector<std::string>{"policy", "workers", "base", "moves",
                                             "event-latency-ns", "slack-scale"}));
  // Another base drops what it does not take; another policy too.
  set_pipeline_option(p, 2, "base", "round-robin");
  EXPECT_EQ(p.text, "decompose,infer-deps,assign-sm{base=round-robin,policy=pinned}");
  set_pipeline_option(p, 2, "policy", "critical-path");
  EXPECT_EQ(p.text, "decompose,infer-deps,assign-sm{policy=critical-path}");
  set_pipeline_option(p, 0, "tile", "16");
  set_pipeline_option(p, 1, "prune-cross-step", "false");
  EXPECT_EQ(p.text, "decompose{tile=16},infer-deps{prune-cross-step=false},"
                    "assign-sm{policy=critical-path}");
  set_pipeline_option(p, 0, "tile", std::nullopt);
  EXPECT_EQ(p.text, "decompose,infer-deps{prune-cross-step=false},assign-sm{policy=critical-path}");
  // The widgets are drawn for it.
  h_.run(frame_, 2);
  EXPECT_EQ(p.entries.size(), 3u);
  EXPECT_TRUE(p.text_error.empty());
}

class OldTracePipeline : public testing::AppOnTinyRun {};

TEST_F(OldTracePipeline, RunsWithoutAStoredModuleAreRebuiltSayingSoOnce) {
  // The trace as schema 1 wrote it: no stored modules.
  mpk::testing::age_to_schema(trace_, 1);
  ASSERT_TRUE(open_trace(s_, trace_)) << s_.status;
  s_.view = View::kPipeline;
  s_.view_changed = true;
  h_.run(frame_, 2);
  run_until([&] { return has_edit_session(s_); });
  ASSERT_TRUE(has_edit_session(s_)) << s_.pipeline.job_message;
  EXPECT_NE(s_.status.find("was re-imported and its pipeline re-run"), std::string::npos) << s_.status;
  EXPECT_FALSE(s_.status_error);

  // Apply rebuilds the run again, silently now; the new run keeps its module.
  s_.status.clear();
  ASSERT_TRUE(apply_pipeline(s_)) << s_.pipeline.job_message << s_.pipeline.text_error;
  run_until([&] { return s_.view == View::kCompare; });
  ASSERT_NE(s_.run, first_) << s_.pipeline.job_message;
  EXPECT_EQ(s_.status.find("re-imported"), std::string::npos) << s_.status;
  // The new runs went to the side file, a copy of the trace that goes on from it.
  EXPECT_EQ(s_.trace_path, path("trace.studio.db"));
  EXPECT_EQ(TraceReader(trace_).runs().size(), 1u);
  const TraceReader reader(s_.trace_path);
  EXPECT_FALSE(reader.stored_module(first_));
  EXPECT_TRUE(reader.stored_module(s_.run));
}

}  // namespace
}  // namespace mpk::studio
