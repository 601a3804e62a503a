// The studio driven headless: whole app frames with synthetic mouse and keys, asserting
// what gets selected, where the window moves, and what the tooltips say; plus opening
// bad input (never a crash, a clear message) and a scheduled .mpk.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "ir/serialize.h"
#include "studio/ui/app.h"
#include "studio/ui/headless_frame.h"
#include "tests/studio/studio_test_runs.h"

namespace mpk::studio {
namespace {

using mpk::testing::TempPath;

double x_of(const StudioState& s, double t) {
  return s.timeline.canvas_x0 + (t - s.window.t0_ns) / s.window.span() * s.timeline.canvas_width;
}
double t_of(const StudioState& s, double x) {
  return s.window.t0_ns + (x - s.timeline.canvas_x0) / s.timeline.canvas_width * s.window.span();
}

class StudioFrame : public ::testing::Test {
 protected:
  void SetUp() override {
    mpk::testing::store_tiny(path_.str(), 3, "round-robin");
    run_ = mpk::testing::store_tiny(path_.str(), 4);
    ASSERT_TRUE(open_trace(s_, path_.str())) << s_.status;
    frame_ = [this] { draw_app_frame(s_); };
    h_.run(frame_, 3);
  }

  // A visible execution at least `min_px` wide on screen, in the window's middle.
  int64_t visible_execution(float min_px) const {
    const TraceModel& m = *s_.model;
    for (int32_t w = 0; w < m.num_workers(); ++w) {
      if (s_.timeline.row_y[static_cast<size_t>(w)] < s_.timeline.canvas_y0) continue;
      const IndexRange r = m.executions_in(w, static_cast<int64_t>(s_.window.t0_ns + 0.2 * s_.window.span()),
                                           static_cast<int64_t>(s_.window.t0_ns + 0.8 * s_.window.span()));
      for (int64_t i = r.begin; i < r.end; ++i) {
        const Execution& e = m.execution(i);
        if (x_of(s_, e.end_ns) - x_of(s_, e.start_ns) >= min_px) return i;
      }
    }
    return -1;
  }

  ImVec2 center_of(int64_t exec) const {
    const Execution& e = s_.model->execution(exec);
    return ImVec2(static_cast<float>(x_of(s_, 0.5 * static_cast<double>(e.start_ns + e.end_ns))),
                  s_.timeline.row_y[static_cast<size_t>(e.worker)] + s_.timeline.row_height / 2);
  }

  // Zooms (through the state) to one step so that tasks are wide.
  void zoom_to_step(int32_t k) {
    const StepRecord& st = s_.model->steps()[static_cast<size_t>(k)];
    s_.window = {static_cast<double>(st.start_ns), static_cast<double>(st.start_ns) + 0.5 * static_cast<double>(st.end_ns - st.start_ns)};
    h_.run(frame_, 2);
  }

  TempPath path_{"studio_frame.db"};
  int64_t run_ = 0;
  StudioState s_;
  HeadlessFrame h_{1600, 1000};
  std::function<void()> frame_;
};

TEST_F(StudioFrame, OpensTheLastRunFitted) {
  EXPECT_EQ(s_.run, run_);
  ASSERT_NE(s_.model, nullptr);
  EXPECT_LT(s_.window.t0_ns, 0);
  EXPECT_GT(s_.window.t1_ns, static_cast<double>(s_.model->duration_ns()));
  EXPECT_GT(s_.timeline.boxes_drawn, 0);
  EXPECT_GT(s_.timeline.canvas_width, 1000);
  EXPECT_GE(s_.timeline.row_y[0], s_.timeline.canvas_y0);
  EXPECT_FALSE(s_.status_error);
}

TEST_F(StudioFrame, ClickOnATaskSelectsIt) {
  zoom_to_step(1);
  const int64_t x = visible_execution(12);
  ASSERT_GE(x, 0);
  const ImVec2 p = center_of(x);
  h_.click(frame_, p.x, p.y);
  EXPECT_EQ(s_.selection.exec, x);
  // Clicking empty time (before the run) clears it.
  s_.window = {-1e6, static_cast<double>(s_.model->duration_ns())};
  h_.run(frame_, 2);
  h_.click(frame_, s_.timeline.canvas_x0 + 20, p.y);
  EXPECT_EQ(s_.selection.exec, -1);
}

TEST_F(StudioFrame, HoverShowsTheTaskAndHighlightsItsKind) {
  zoom_to_step(2);
  const int64_t x = visible_execution(12);
  ASSERT_GE(x, 0);
  const ImVec2 p = center_of(x);
  h_.mouse_move(p.x, p.y);
  h_.run(frame_, 2);
  EXPECT_EQ(s_.timeline.hovered_exec, x);
  const TraceModel& m = *s_.model;
  EXPECT_EQ(s_.hovered_kind, static_cast<int>(m.kind_of(m.execution(x).task)));
  EXPECT_NE(s_.timeline.hover_text.find("[task " + std::to_string(m.execution(x).task) + "]"), std::string::npos)
      << s_.timeline.hover_text;
  EXPECT_NE(s_.timeline.hover_text.find(m.op_of(m.execution(x).task).name), std::string::npos);
}

TEST_F(StudioFrame, WheelZoomsAroundTheCursor) {
  // ImGui floors the mouse position; a whole pixel keeps the test exact.
  const float x = std::floor(s_.timeline.canvas_x0 + 0.3f * s_.timeline.canvas_width);
  const float y = s_.timeline.row_y[3] + 2;
  h_.mouse_move(x, y);
  h_.run(frame_);
  const double t_before = t_of(s_, x);
  const double span = s_.window.span();
  h_.wheel(2);
  h_.run(frame_);
  EXPECT_NEAR(s_.window.span(), span * 0.64, span * 1e-9);
  EXPECT_NEAR(t_of(s_, x), t_before, span * 1e-6);
  h_.wheel(-2);
  h_.run(frame_);
  EXPECT_NEAR(s_.window.span(), span, span * 1e-9);
}

TEST_F(StudioFrame, DragPansWithoutSelecting) {
  zoom_to_step(1);
  const double t0 = s_.window.t0_ns;
  const double ns_per_px = s_.window.span() / s_.timeline.canvas_width;
  const float y = s_.timeline.row_y[2] + 2;
  h_.drag(frame_, s_.timeline.canvas_x0 + 600, y, -200, 0);
  EXPECT_NEAR(s_.window.t0_ns, t0 + 200 * ns_per_px, ns_per_px);
  EXPECT_EQ(s_.selection.exec, -1);
}

TEST_F(StudioFrame, RightDragPicksARange) {
  zoom_to_step(1);
  const TimeWindow before = s_.window;
  const float x = std::floor(s_.timeline.canvas_x0 + 200);
  const double t0 = t_of(s_, x), t1 = t_of(s_, x + 300);
  h_.drag(frame_, x, s_.timeline.row_y[2] + 2, 300, 0, 4, ImGuiMouseButton_Right);
  ASSERT_TRUE(s_.range.has_value());
  const double px = s_.window.span() / s_.timeline.canvas_width;
  EXPECT_NEAR(s_.range->t0_ns, t0, px);
  EXPECT_NEAR(s_.range->t1_ns, t1, px);
  EXPECT_DOUBLE_EQ(s_.window.t0_ns, before.t0_ns);  // no pan
  EXPECT_EQ(s_.selection.exec, -1);
  h_.press_key(frame_, ImGuiKey_Escape);
  EXPECT_FALSE(s_.range.has_value());
}

TEST_F(StudioFrame, F2TogglesTheFrameTimeOverlay) {
  EXPECT_FALSE(s_.show_frame_time);
  h_.press_raw_key(frame_, kKeyF2);
  EXPECT_TRUE(s_.show_frame_time);
  EXPECT_GT(s_.frame_cpu_ms, 0);
  h_.press_raw_key(frame_, kKeyF2);
  EXPECT_FALSE(s_.show_frame_time);
}

TEST_F(StudioFrame, KeysFitZoomAndPan) {
  zoom_to_step(1);
  const double span = s_.window.span();
  h_.type_char('+');
  h_.run(frame_);
  EXPECT_NEAR(s_.window.span(), 0.8 * span, 1e-6 * span);
  const double t0 = s_.window.t0_ns;
  h_.press_key(frame_, ImGuiKey_RightArrow);
  EXPECT_NEAR(s_.window.t0_ns, t0 + 0.1 * s_.window.span(), 1e-6 * span);
  h_.type_char('f');
  h_.run(frame_);
  EXPECT_GT(s_.window.t1_ns, static_cast<double>(s_.model->duration_ns()));
  EXPECT_LT(s_.window.t0_ns, 0);
  h_.type_char('+');
  h_.type_char('+');
  h_.run(frame_);
  h_.press_key(frame_, ImGuiKey_End);
  EXPECT_GT(s_.window.t1_ns, static_cast<double>(s_.model->duration_ns()));
  h_.press_key(frame_, ImGuiKey_Home);
  EXPECT_LT(s_.window.t0_ns, 0);
  EXPECT_LT(s_.window.t1_ns, static_cast<double>(s_.model->duration_ns()));
}

TEST_F(StudioFrame, HoveringAWaitBubbleSaysWhatTheWorkerWaitedFor) {
  zoom_to_step(1);
  const TraceModel& m = *s_.model;
  // A wait bubble at least 10 px wide on a visible row.
  const Bubble* found = nullptr;
  for (int32_t w = 0; w < m.num_workers() && !found; ++w) {
    if (s_.timeline.row_y[static_cast<size_t>(w)] < s_.timeline.canvas_y0) continue;
    for (const Bubble& b : m.bubbles(w))
      if (b.cause == BubbleCause::kWait && x_of(s_, b.start_ns) > s_.timeline.canvas_x0 + 5 &&
          x_of(s_, b.end_ns) < s_.timeline.canvas_x0 + s_.timeline.canvas_width - 5 &&
          x_of(s_, b.end_ns) - x_of(s_, b.start_ns) >= 10) {
        found = &b;
        break;
      }
  }
  ASSERT_NE(found, nullptr);
  const float x = static_cast<float>(x_of(s_, 0.5 * static_cast<double>(found->start_ns + found->end_ns)));
  h_.mouse_move(x, s_.timeline.row_y[static_cast<size_t>(found->worker)] + s_.timeline.row_height / 2);
  h_.run(frame_, 2);
  EXPECT_EQ(s_.timeline.hovered_bubble_worker, found->worker);
  EXPECT_EQ(&m.bubbles(found->worker)[static_cast<size_t>(s_.timeline.hovered_bubble)], found);
  const std::string& text = s_.timeline.hover_text;
  EXPECT_NE(text.find(": wait (step"), std::string::npos) << text;
  EXPECT_NE(text.find("waited for event " + std::to_string(found->event) + ", released last by " +
                      m.op_of(found->producer).name),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("on " + m.row_label(found->producer_worker)), std::string::npos) << text;
}

TEST_F(StudioFrame, WhyIdleButtonWalksBackFromTheSelection) {
  zoom_to_step(2);
  const int64_t x = visible_execution(12);
  ASSERT_GE(x, 0);
  const ImVec2 p = center_of(x);
  h_.click(frame_, p.x, p.y);
  ASSERT_EQ(s_.selection.exec, x);
  EXPECT_FALSE(s_.selection.show_why_idle);
  h_.click(frame_, s_.timeline.why_button_x, s_.timeline.why_button_y);
  EXPECT_TRUE(s_.selection.show_why_idle);
  ASSERT_FALSE(s_.selection.why_idle.empty());
  EXPECT_EQ(s_.selection.why_idle.back(), x);
  for (int64_t e : s_.selection.why_idle) EXPECT_EQ(s_.model->execution(e).step, 2);
}

TEST_F(StudioFrame, GroupHeaderCollapsesItsRows) {
  const float header_y = s_.timeline.row_y[0] - 8;  // group 0's header is just above SM 0
  h_.click(frame_, s_.timeline.canvas_x0 + 100, header_y);
  h_.run(frame_);  // the rows follow on the next frame
  ASSERT_FALSE(s_.timeline.collapsed.empty());
  EXPECT_TRUE(s_.timeline.collapsed[0]);
  for (int w = 0; w < 16; ++w) EXPECT_LT(s_.timeline.row_y[static_cast<size_t>(w)], 0);
  EXPECT_GE(s_.timeline.row_y[16], s_.timeline.canvas_y0);
}

TEST_F(StudioFrame, RunListPicksARun) {
  ASSERT_EQ(s_.runs.size(), 2u);
  ASSERT_EQ(s_.run_row_y.size(), 2u);
  h_.click(frame_, 30, s_.run_row_y[0]);
  EXPECT_EQ(s_.run, s_.runs[0].id);
  EXPECT_EQ(s_.model->run().id, s_.runs[0].id);
  EXPECT_EQ(s_.model->run().policy, "round-robin");
}

// A GPU-shaped run: a linear group is one box; its hover lists the members, a click
// selects the group, the details pane reaches every member, and --select any member.
TEST(StudioGroups, EveryMemberOfALinearGroupIsReachable) {
  TempPath path("studio_groups.db");
  const int64_t run = mpk::testing::store_gpu_like_tiny(path.str(), 3, 16);
  StudioState s;
  ASSERT_TRUE(open_trace(s, path.str(), run)) << s.status;
  const TraceModel& m = *s.model;
  // The largest group of step 1.
  int64_t lead = -1, n = 1;
  for (int64_t i = 0; i < static_cast<int64_t>(m.executions().size()); ++i)
    if (m.group_of(i).size() > n && m.group_of(i).begin == i && m.execution(i).step == 1) lead = i, n = m.group_of(i).size();
  ASSERT_GE(lead, 0);
  const Execution& e = m.execution(lead);
  s.window = {static_cast<double>(e.start_ns) - 2000, static_cast<double>(e.end_ns) + 2000};
  HeadlessFrame h(1600, 1000);
  const auto frame = [&] { draw_app_frame(s); };
  h.run(frame, 3);
  const float x = static_cast<float>(x_of(s, 0.5 * static_cast<double>(e.start_ns + e.end_ns)));
  const float y = s.timeline.row_y[static_cast<size_t>(e.worker)] + s.timeline.row_height / 2;
  h.mouse_move(x, y);
  h.run(frame, 2);
  EXPECT_EQ(s.timeline.hovered_exec, lead);
  const std::string& text = s.timeline.hover_text;
  EXPECT_NE(text.find(std::to_string(n) + " tasks: " + m.group_name(lead)), std::string::npos) << text;
  for (int64_t k = lead; k < lead + n; ++k)
    EXPECT_NE(text.find(std::to_string(m.execution(k).task)), std::string::npos) << text;
  h.click(frame, x, y);
  ASSERT_EQ(s.selection.exec, lead);
  h.run(frame);
  ASSERT_EQ(static_cast<int64_t>(s.timeline.member_y.size()), n);
  for (int64_t k = n - 1; k >= 0; --k) {
    h.click(frame, s.timeline.member_x, s.timeline.member_y[static_cast<size_t>(k)]);
    EXPECT_EQ(s.selection.exec, lead + k);
  }
  // --select names any member.
  StudioState t;
  AppOptions o;
  o.input = path.str();
  o.select_task = m.execution(lead + n - 1).task;
  o.select_step = 1;
  ASSERT_TRUE(apply_options(t, o)) << t.status;
  EXPECT_EQ(t.selection.exec, lead + n - 1);
}

// ---- bad input: a message, never a crash

void expect_open_fails(const std::string& path, const std::string& words) {
  StudioState s;
  EXPECT_FALSE(open_input(s, path));
  EXPECT_TRUE(s.status_error);
  EXPECT_NE(s.status.find(words), std::string::npos) << s.status;
  EXPECT_EQ(s.model, nullptr);
  HeadlessFrame h;
  h.run([&] { draw_app_frame(s); }, 3);  // shows the message
}

TEST(StudioBadInput, MissingFile) { expect_open_fails("/nonexistent/trace.db", "no such file"); }

TEST(StudioBadInput, NotATraceDb) {
  TempPath p("studio_not_a_trace.db");
  std::ofstream(p.str()) << "hello, this is not SQLite\n";
  expect_open_fails(p.str(), p.str());
}

TEST(StudioBadInput, EmptyTrace) {
  TempPath p("studio_empty.db");
  { TraceWriter w(p.str()); }
  expect_open_fails(p.str(), "no runs");
}

TEST(StudioBadInput, NewerSchema) {
  TempPath p("studio_newer.db");
  mpk::testing::store_fork_join(p.str(), 1);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(p.str().c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE meta SET value = '99' WHERE key = 'schema_version'", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  expect_open_fails(p.str(), "newer");
}

// A trace whose rows were edited: the open names the table, the row and the field.
TEST(StudioBadInput, EditedTraceRows) {
  const std::pair<const char*, const char*> edits[] = {
      {"UPDATE execution SET task = 100000000 WHERE task = 0 AND step = 0",
       "run 1: execution row 0: task 100000000 is not a task of the run's graph (0..3)"},
      {"UPDATE graph SET num_workers = 2147483648", "graph 1: num_workers must be in 1..4096, got 2147483648"},
      {"UPDATE task SET position = 2000000000 WHERE id = 0", "graph 1: task row 0: position must be in"}};
  for (const auto& [sql, message] : edits) {
    TempPath p("studio_edited.db");
    mpk::testing::store_fork_join(p.str(), 2);
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(p.str().c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sql;
    sqlite3_close(db);
    expect_open_fails(p.str(), message);
  }
}

TEST(StudioBadInput, UnscheduledModule) {
  TempPath p("studio_unscheduled.mpk");
  Module m = import_model("tiny", ImportOptions{});
  save_module(m, p.str(), Format::kBinary);
  expect_open_fails(p.str(), "no schedule");
}

TEST(StudioBadInput, Options) {
  EXPECT_THROW(parse_app_options({"--view", "flame"}), Error);
  EXPECT_THROW(parse_app_options({"--run", "x"}), Error);
  EXPECT_THROW(parse_app_options({"--size", "10x10"}), Error);
  EXPECT_THROW(parse_app_options({"a.db", "b.db"}), Error);
  EXPECT_THROW(parse_app_options({"--frobnicate"}), Error);
  const AppOptions o = parse_app_options({"t.db", "--run", "3", "--view", "timeline", "--size", "800x600"});
  EXPECT_EQ(o.input, "t.db");
  EXPECT_EQ(o.run, 3);
  EXPECT_EQ(o.width, 800);
  StudioState s;
  AppOptions bad;
  bad.input = "/nonexistent.db";
  EXPECT_FALSE(apply_options(s, bad));
}

TEST(StudioInput, ScheduledModuleIsSimulated) {
  TempPath p("studio_tiny.mpk");
  save_module(mpk::testing::tiny_scheduled(), p.str(), Format::kText);
  std::string temp;
  {
    StudioState s;
    ASSERT_TRUE(open_input(s, p.str(), -1, 3)) << s.status;
    EXPECT_TRUE(s.trace_is_temporary);
    temp = s.trace_path;
    ASSERT_EQ(s.runs.size(), 1u);
    EXPECT_EQ(s.runs[0].kind, "sim");
    EXPECT_EQ(s.model->num_steps(), 3);
    EXPECT_EQ(s.input_path, p.str());
    EXPECT_TRUE(std::filesystem::exists(temp));
  }
  EXPECT_FALSE(std::filesystem::exists(temp));  // removed with the state
}

}  // namespace
}  // namespace mpk::studio
