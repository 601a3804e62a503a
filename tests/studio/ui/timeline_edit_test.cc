// Hand edits from the timeline and jobs seen from any view, driven headless through whole
// app frames (HeadlessFrame) with synthetic input: an Apply started in the pipeline view
// is taken while the timeline is shown; Alt+drag moves a task onto another worker's row
// (Ctrl+Z restores it); an Alt+drag that would deadlock is refused with the verifier's
// message in the status line; an Alt+drag on a run with no edit session starts loading
// one and says so; Alt+arrows work in the timeline too.
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/studio/ui/app_test_fixture.h"
#include "ir/task_graph_index.h"

namespace mpk::studio {
namespace {

class TimelineEdit : public testing::AppOnTinyRun {
 protected:
  // Loads an edit session through the pipeline view, then shows the timeline.
  void load_session_and_show_timeline() {
    show(View::kPipeline);
    run_until([&] { return has_edit_session(s_); });
    ASSERT_TRUE(has_edit_session(s_)) << s_.pipeline.job_message;
    show(View::kTimeline);
  }

  void show(View v) {
    s_.view = v;
    s_.view_changed = true;
    h_.run(frame_, 2);
  }

  // Step 0 fills the timeline's window.
  void zoom_to_step0() {
    const StepRecord& st = s_.model->steps().front();
    s_.window = {static_cast<double>(st.start_ns), static_cast<double>(st.end_ns)};
    h_.run(frame_, 2);
  }

  // Screen x of time t and the centre y of a worker's row, from the last frame.
  float x_of(double t_ns) const {
    const TimelineState& tl = s_.timeline;
    return tl.canvas_x0 +
           static_cast<float>((t_ns - s_.window.t0_ns) / s_.window.span()) * tl.canvas_width;
  }
  float y_of(int32_t worker) const {
    return s_.timeline.row_y[static_cast<size_t>(worker)] + s_.timeline.row_height * 0.5f;
  }

  enum class Grab { kAlt, kCtrl, kEditMode };
  // Drags the step-0 box of task t by (dx, dy) from a point 2 px inside its left edge,
  // holding Alt or Ctrl, or with no key in edit mode.
  void grab_drag(TaskId t, float dx, float dy, Grab grab = Grab::kAlt) {
    const Execution& e = s_.model->execution(s_.model->find(t, 0));
    const float x = x_of(static_cast<double>(e.start_ns)) + 2, y = y_of(e.worker);
    ASSERT_GT(y, 0) << "worker " << e.worker << "'s row is not visible";
    ImGui::SetCurrentContext(h_.context());
    ImGui::GetIO().KeyAlt = grab == Grab::kAlt;
    ImGui::GetIO().KeyCtrl = grab == Grab::kCtrl;
    s_.timeline.edit_mode = grab == Grab::kEditMode;
    h_.drag(frame_, x, y, dx, dy, 6);
    ImGui::SetCurrentContext(h_.context());
    ImGui::GetIO().KeyAlt = ImGui::GetIO().KeyCtrl = false;
    h_.run(frame_);
  }
  void alt_drag(TaskId t, float dx, float dy) { grab_drag(t, dx, dy, Grab::kAlt); }

};

TEST_F(TimelineEdit, ApplyStartedInThePipelineViewIsTakenWhileTheTimelineIsShown) {
  load_session_and_show_timeline();  // the pipeline view's own job first: Apply waits for it
  show(View::kPipeline);
  set_pipeline_text(s_.pipeline, "decompose,infer-deps,assign-sm{policy=locality,workers=8}");
  s_.pipeline.text_edited = true;
  h_.run(frame_);
  ASSERT_TRUE(s_.pipeline.buttons.count("apply"));
  const auto [x, y] = s_.pipeline.buttons.at("apply");
  h_.click(frame_, x, y);
  ASSERT_EQ(s_.pipeline.job, PipelineJob::kApply) << s_.pipeline.job_message;
  show(View::kTimeline);
  run_until([&] { return s_.run != first_; });
  ASSERT_NE(s_.run, first_) << s_.pipeline.job_message;
  const RunRecord* r = find_run(s_, s_.run);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->policy, "locality");
  EXPECT_EQ(r->num_workers, 8);
  EXPECT_EQ(s_.compare_run, first_);
  EXPECT_EQ(s_.pipeline.job, PipelineJob::kNone);
}

TEST_F(TimelineEdit, AltDragMovesATaskToAnotherWorkersRowAndCtrlZRestoresIt) {
  load_session_and_show_timeline();
  zoom_to_step0();
  ASSERT_EQ(editor().worker_of(13), 1);
  const auto before = editor().module().graph.schedule.workers;
  const auto before_run = s_.model->graph().graph.schedule.workers;
  alt_drag(13, 0, y_of(2) - y_of(1));  // straight down onto worker 2's row
  EXPECT_FALSE(s_.pipeline.edit_refused) << s_.pipeline.edit_message;
  EXPECT_EQ(editor().worker_of(13), 2) << s_.pipeline.edit_message;
  EXPECT_TRUE(editor().moves().rfind("13>w2@", 0) == 0 && editor().moves().find(';') == std::string::npos)
      << editor().moves();  // one move: task 13 to worker 2
  EXPECT_EQ(selected_task(s_), 13);
  EXPECT_EQ(s_.window.t0_ns, static_cast<double>(s_.model->steps().front().start_ns))
      << "an Alt+drag must not pan";

  // The edited schedule is stored as a run and shown, at the same zoom.
  const TimeWindow zoom = s_.window;
  idle();
  EXPECT_NE(s_.run, first_);
  EXPECT_EQ(s_.window.t0_ns, zoom.t0_ns);
  EXPECT_EQ(s_.window.t1_ns, zoom.t1_ns);
  EXPECT_NE(s_.model->graph().graph.schedule.workers, before_run);
  EXPECT_EQ(s_.model->graph().graph.schedule.workers, editor().module().graph.schedule.workers);

  press(ImGuiKey_Z, true, false);
  EXPECT_EQ(editor().worker_of(13), 1);
  EXPECT_EQ(editor().module().graph.schedule.workers, before);
  idle();
  EXPECT_EQ(s_.run, first_);
  EXPECT_EQ(s_.model->graph().graph.schedule.workers, before_run);
}

// Where the window manager takes Alt+drag: Ctrl+drag moves a task, and so does a plain
// drag in edit mode (E); out of it a plain drag pans.
TEST_F(TimelineEdit, CtrlDragAndEditModeMoveATaskToo) {
  load_session_and_show_timeline();
  zoom_to_step0();
  ASSERT_EQ(editor().worker_of(13), 1);
  grab_drag(13, 0, y_of(2) - y_of(1), Grab::kCtrl);
  EXPECT_EQ(editor().worker_of(13), 2) << s_.pipeline.edit_message;
  idle();
  grab_drag(13, 0, y_of(3) - y_of(2), Grab::kEditMode);
  EXPECT_EQ(editor().worker_of(13), 3) << s_.pipeline.edit_message;
  idle();
  s_.timeline.edit_mode = false;
  const double t0 = s_.window.t0_ns;
  const Execution& e = s_.model->execution(s_.model->find(13, 0));
  h_.drag(frame_, x_of(static_cast<double>(e.start_ns)) + 2, y_of(e.worker), -100, 0, 4);
  EXPECT_EQ(editor().worker_of(13), 3);
  EXPECT_GT(s_.window.t0_ns, t0);  // panned
  // E toggles the edit mode.
  h_.type_char('e');
  h_.run(frame_);
  EXPECT_TRUE(s_.timeline.edit_mode);
}

TEST_F(TimelineEdit, AltDragThatWouldDeadlockIsRefusedWithTheVerifiersMessage) {
  load_session_and_show_timeline();
  zoom_to_step0();
  // A task right behind one of its same-step producers on its worker.
  const Module& g = editor().module();
  TaskId task = -1, producer = -1;
  const TaskGraphIndex index(g.graph);
  for (const auto& list : g.graph.schedule.workers)
    for (size_t i = 1; i < list.size() && task < 0; ++i)
      for (EventId e : index.waits(list[i]))
        if (g.graph.events[e].step_distance == 0 &&
            std::count(g.graph.events[e].producers.begin(), g.graph.events[e].producers.end(),
                       list[i - 1])) {
          task = list[i];
          producer = list[i - 1];
        }
  ASSERT_GE(task, 0);
  const auto before = g.graph.schedule.workers;
  const Execution& t = s_.model->execution(s_.model->find(task, 0));
  const Execution& p = s_.model->execution(s_.model->find(producer, 0));
  // Its box's left edge to just before the producer's start: ahead of it on the row.
  const float dx = x_of(static_cast<double>(p.start_ns)) - x_of(static_cast<double>(t.start_ns)) - 2;
  ASSERT_LT(dx, -3);
  alt_drag(task, dx, 0);
  EXPECT_TRUE(s_.pipeline.edit_refused);
  const std::string& m = s_.pipeline.edit_message;
  EXPECT_NE(m.find("refused: task " + std::to_string(task)), std::string::npos) << m;
  EXPECT_NE(m.find("can deadlock"), std::string::npos) << m;
  EXPECT_TRUE(s_.status_error);
  EXPECT_EQ(s_.status, m);
  EXPECT_EQ(editor().module().graph.schedule.workers, before);
  EXPECT_TRUE(editor().edits().empty());
}

TEST_F(TimelineEdit, AltDragWithNoSessionLoadsOneAndSaysSo) {
  show(View::kTimeline);
  zoom_to_step0();
  ASSERT_FALSE(has_edit_session(s_));
  alt_drag(13, 0, y_of(2) - y_of(1));
  if (!has_edit_session(s_)) {  // the load had not finished at the drop
    EXPECT_TRUE(s_.pipeline.edit_refused);
    EXPECT_NE(s_.status.find("its graph is loading"), std::string::npos) << s_.status;
  }
  run_until([&] { return has_edit_session(s_); });
  ASSERT_TRUE(has_edit_session(s_)) << s_.pipeline.job_message;
  // Now the same drag moves it; a drag back onto its own place does nothing.
  if (editor().worker_of(13) == 1) alt_drag(13, 0, y_of(2) - y_of(1));
  EXPECT_EQ(editor().worker_of(13), 2) << s_.pipeline.edit_message;
  idle();
  zoom_to_step0();  // the stored run became current, with the window fitted to it
  const size_t edits = editor().edits().size();
  alt_drag(13, 4, 0);
  EXPECT_EQ(editor().edits().size(), edits) << s_.pipeline.edit_message;
}

TEST_F(TimelineEdit, AltArrowsMoveTheSelectedTaskInTheTimeline) {
  load_session_and_show_timeline();
  s_.pipeline.auto_store = false;  // a stored edit becomes the current run, refitting the window
  select_execution(s_, s_.model->find(13, 0));
  press(ImGuiKey_DownArrow, false, true);
  EXPECT_EQ(editor().worker_of(13), 2) << s_.pipeline.edit_message;
  const double t0 = s_.window.t0_ns;
  press(ImGuiKey_Y, true, false);  // nothing to redo
  press(ImGuiKey_Z, true, false);
  EXPECT_EQ(editor().worker_of(13), 1);
  EXPECT_EQ(s_.window.t0_ns, t0) << "Alt/Ctrl chords must not pan";
}

}  // namespace
}  // namespace mpk::studio
