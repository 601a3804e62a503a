// The timeline's navigation: search by operator or task with next/previous instance, the
// range readout's figures, filters, zoom targets, range export (CSV and Chrome JSON), on
// the hand-timed fork-join run; then through whole app frames: F3 walks the matches and
// scrolls the rows, --select scrolls the rows, Z zooms to the selection, a long status
// message wraps, a key pressed and released within one slow frame still counts, and the
// why-idle walk's colour is no kind's.
#include "studio/model/navigation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "studio/ui/app.h"
#include "studio/ui/colors.h"
#include "studio/ui/headless_frame.h"
#include "studio/ui/key_queue.h"
#include "studio/ui/timeline_nav.h"
#include "tests/studio/studio_test_runs.h"

namespace mpk::studio {
namespace {

using mpk::testing::kNorm;
using mpk::testing::kQ0;
using mpk::testing::kQ1;
using mpk::testing::kResidual;
using mpk::testing::TempPath;

class ForkJoinNav : public ::testing::Test {
 protected:
  void SetUp() override {
    run_ = mpk::testing::store_fork_join(path_.str(), 3);
    ASSERT_TRUE(open_trace(s_, path_.str(), run_)) << s_.status;
  }
  const TraceModel& m() const { return *s_.model; }
  TempPath path_{"nav_fork_join.db"};
  int64_t run_ = 0;
  StudioState s_;
};

TEST_F(ForkJoinNav, SearchByOperatorOrTaskAndStepThroughInstances) {
  // q_proj: q0 and q1 of each step, by start (q0 and q1 start together: worker order).
  const std::vector<int64_t> q = search_executions(m(), "Q_PROJ");
  ASSERT_EQ(q.size(), 6u);
  EXPECT_EQ(q[0], m().find(kQ0, 0));
  EXPECT_EQ(q[1], m().find(kQ1, 0));
  EXPECT_EQ(q[5], m().find(kQ1, 2));
  const std::vector<int64_t> t = search_executions(m(), "task 3");
  ASSERT_EQ(t.size(), 3u);
  for (size_t k = 0; k < 3; ++k) EXPECT_EQ(t[k], m().find(kResidual, static_cast<int32_t>(k)));
  EXPECT_EQ(search_executions(m(), "#0").size(), 3u);
  EXPECT_TRUE(search_executions(m(), "flash").empty());
  EXPECT_TRUE(search_executions(m(), "  ").empty());
  // Next and previous in time, wrapping round.
  EXPECT_EQ(next_match(m(), q, -1, true), q[0]);
  EXPECT_EQ(next_match(m(), q, q[0], true), q[1]);
  EXPECT_EQ(next_match(m(), q, q[5], true), q[0]);
  EXPECT_EQ(next_match(m(), q, q[0], false), q[5]);
  EXPECT_EQ(next_match(m(), q, m().find(kResidual, 0), true), q[2]);  // from a non-match
  EXPECT_EQ(next_match(m(), {}, 0, true), -1);
}

TEST_F(ForkJoinNav, RangeReadoutFilterAndZoomTarget) {
  // Step 1 [700, 1400): 4 tasks; unit costs: a task streams 1 byte a ns of its duration.
  RangeSummary r = summarize_range(m(), 700, 1400);
  EXPECT_EQ(r.tasks, 4);
  EXPECT_DOUBLE_EQ(r.duration_ns, 700);
  double want = 0;
  for (TaskId t : {kNorm, kQ0, kQ1, kResidual}) want += static_cast<double>(m().task(t).bytes);
  EXPECT_NEAR(r.bytes, want, 1e-6);
  // Half of q1@1 [800, 1300) lies in [800, 1050): half its bytes.
  r = summarize_range(m(), 1050, 1300);
  EXPECT_EQ(r.tasks, 0);
  EXPECT_NEAR(r.bytes, 0.5 * static_cast<double>(m().task(kQ1).bytes), 1e-6);

  ViewFilter f;
  EXPECT_FALSE(f.active());
  f.step = 1;
  EXPECT_TRUE(passes(m(), f, m().find(kQ0, 1)));
  EXPECT_FALSE(passes(m(), f, m().find(kQ0, 2)));
  f = ViewFilter{};
  f.kinds = 1u << static_cast<int>(OpKind::kLinear);
  EXPECT_TRUE(passes(m(), f, m().find(kQ1, 0)));
  EXPECT_FALSE(passes(m(), f, m().find(kNorm, 0)));
  f = ViewFilter{};
  f.layer = 1;
  EXPECT_FALSE(passes(m(), f, m().find(kNorm, 0)));  // the graph has layer 0 only

  EXPECT_FALSE(zoom_target(s_).has_value());
  select_execution(s_, m().find(kQ1, 1));
  TimeWindow w = *zoom_target(s_);
  EXPECT_LT(w.t0_ns, 800);
  EXPECT_GT(w.t1_ns, 1300);
  EXPECT_LT(w.span(), 700);
  s_.range = TimeWindow{100, 2100};
  w = *zoom_target(s_);
  EXPECT_NEAR(w.t0_ns, 0, 1e-9);
  EXPECT_NEAR(w.t1_ns, 2200, 1e-9);
}

TEST_F(ForkJoinNav, ExportARangeAsCsvAndChromeJson) {
  s_.range = TimeWindow{700, 1400};
  TempPath csv("nav_range.csv"), json("nav_range.json");
  ASSERT_TRUE(export_range(s_, csv.str(), ExportFormat::kCsv)) << s_.status;
  std::ifstream in(csv.str());
  std::string line;
  std::vector<std::string> lines;
  while (std::getline(in, line)) lines.push_back(line);
  ASSERT_EQ(lines.size(), 1u + 4u);  // step 1's four executions
  EXPECT_EQ(lines[0], "task,operator,kind,layer,step,worker,sm,wait_ns,start_ns,end_ns,bytes");
  EXPECT_NE(lines[1].find("\"L0.input_norm\",rms_norm,0,1,0,0,"), std::string::npos) << lines[1];
  ASSERT_TRUE(export_range(s_, json.str(), ExportFormat::kChromeJson)) << s_.status;
  std::stringstream ss;
  ss << std::ifstream(json.str()).rdbuf();
  const std::string text = ss.str();
  size_t slices = 0;
  for (size_t at = text.find("\"cat\":\"linear\""); at != std::string::npos; at = text.find("\"cat\":\"linear\"", at + 1))
    ++slices;
  EXPECT_EQ(slices, 2u);  // q0@1 and q1@1
  EXPECT_NE(text.find("\"name\":\"step 1\""), std::string::npos);
  EXPECT_EQ(text.find("\"name\":\"step 2\""), std::string::npos);
  EXPECT_NE(s_.status.find("Chrome JSON"), std::string::npos) << s_.status;
  EXPECT_FALSE(export_range(s_, "/nonexistent/dir/x.csv", ExportFormat::kCsv));
  EXPECT_TRUE(s_.status_error);
}

// ---- through app frames

class NavFrame : public ::testing::Test {
 protected:
  void SetUp() override {
    run_ = mpk::testing::store_tiny(path_.str(), 3);  // 132 workers: most rows off screen
    ASSERT_TRUE(open_trace(s_, path_.str(), run_)) << s_.status;
    frame_ = [this] { draw_app_frame(s_); };
    h_.run(frame_, 3);
  }
  bool row_on_screen(int32_t w) const {
    const float y = s_.timeline.row_y[static_cast<size_t>(w)];
    return y >= s_.timeline.view_y0 && y + s_.timeline.row_height <= s_.timeline.view_y0 + s_.timeline.canvas_height;
  }
  // An execution on the highest-numbered worker that has one.
  int64_t far_execution() const {
    for (int32_t w = s_.model->num_workers() - 1; w >= 0; --w)
      if (!s_.model->worker_range(w).empty()) return s_.model->worker_range(w).begin;
    return -1;
  }
  TempPath path_{"nav_frame.db"};
  int64_t run_ = 0;
  StudioState s_;
  HeadlessFrame h_{1600, 1000};
  std::function<void()> frame_;
};

TEST_F(NavFrame, SelectOptionAndGoToScrollTheRows) {
  const int64_t x = far_execution();
  const Execution& e = s_.model->execution(x);
  ASSERT_GT(e.worker, 60);
  ASSERT_FALSE(row_on_screen(e.worker));
  StudioState t;
  AppOptions o;
  o.input = path_.str();
  o.select_task = e.task;
  o.select_step = e.step;
  ASSERT_TRUE(apply_options(t, o)) << t.status;
  HeadlessFrame h(1600, 1000);
  h.run([&] { draw_app_frame(t); }, 4);
  EXPECT_EQ(t.selection.exec, x);
  const float y = t.timeline.row_y[static_cast<size_t>(e.worker)];
  EXPECT_GE(y, t.timeline.view_y0) << "--select must scroll to worker " << e.worker;
  EXPECT_LE(y + t.timeline.row_height, t.timeline.view_y0 + t.timeline.canvas_height);
  // Go to (show_execution) from the top: the same.
  select_execution(s_, x);
  show_execution(s_, x);
  h_.run(frame_, 4);
  EXPECT_TRUE(row_on_screen(e.worker));
}

TEST_F(NavFrame, F3WalksTheMatchesAndZKeyZoomsToTheSelection) {
  s_.timeline.search = "lm_head";
  const std::vector<int64_t> all = search_executions(*s_.model, "lm_head");
  ASSERT_GT(all.size(), 2u);
  h_.press_raw_key(frame_, kKeyF3);
  EXPECT_EQ(s_.selection.exec, all[0]);
  h_.press_raw_key(frame_, kKeyF3);
  EXPECT_EQ(s_.selection.exec, all[1]);
  h_.run(frame_, 4);
  EXPECT_TRUE(row_on_screen(s_.model->execution(all[1]).worker));
  ImGui::SetCurrentContext(h_.context());
  ImGui::GetIO().KeyShift = true;
  h_.press_raw_key(frame_, kKeyF3);
  ImGui::GetIO().KeyShift = false;
  EXPECT_EQ(s_.selection.exec, all[0]);
  // Z frames the selection.
  const Execution& e = s_.model->execution(all[0]);
  h_.type_char('z');
  h_.run(frame_);
  EXPECT_LT(s_.window.t0_ns, static_cast<double>(e.start_ns));
  EXPECT_GT(s_.window.t1_ns, static_cast<double>(e.end_ns));
  EXPECT_LT(s_.window.span(), 1.5 * static_cast<double>(e.end_ns - e.start_ns));
}

TEST_F(NavFrame, ALongStatusMessageWraps) {
  const float one_line = s_.status_height;
  std::string cycle = "refused: the move can deadlock: ";
  for (int i = 0; i < 40; ++i) cycle += "task " + std::to_string(1000 + i) + " on w" + std::to_string(i) + " waits for ";
  set_status(s_, cycle, true);
  h_.run(frame_, 2);
  EXPECT_GT(s_.status_height, 2.5f * one_line);
}

TEST_F(NavFrame, AKeyPressedAndReleasedWithinOneFrameCounts) {
  KeyQueue keys;
  s_.window = {0, 1000};
  h_.run(frame_);
  // End (the run's end) down and up between two frames, as a slow frame sees it.
  keys.on_key(ImGuiKey_End, true, false, false, false);
  keys.on_key(ImGuiKey_End, false, false, false, false);
  ImGui::SetCurrentContext(h_.context());
  ASSERT_FALSE(ImGui::GetIO().KeysDown[ImGuiKey_End]);  // released already: a plain frame sees nothing
  keys.before_frame(ImGui::GetIO());
  h_.run(frame_);
  EXPECT_GT(s_.window.t1_ns, static_cast<double>(s_.model->duration_ns()));  // End moved the window
  keys.before_frame(ImGui::GetIO());
  EXPECT_FALSE(ImGui::GetIO().KeysDown[ImGuiKey_End]);  // released on the next frame
  // Ctrl+Q pressed and released within a frame: the modifier comes along.
  keys.on_key('Q', true, true, false, false);
  keys.before_frame(ImGui::GetIO());
  h_.run(frame_);
  EXPECT_TRUE(s_.quit_requested);
}

TEST(WalkColour, NoKindOrIdleCauseLooksLikeIt) {
  const auto distance = [](ImU32 a, ImU32 b) {
    double d = 0;
    for (int shift : {IM_COL32_R_SHIFT, IM_COL32_G_SHIFT, IM_COL32_B_SHIFT}) {
      const double x = static_cast<double>((a >> shift) & 0xFF) - static_cast<double>((b >> shift) & 0xFF);
      d += x * x;
    }
    return std::sqrt(d);
  };
  for (int k = 0; k < kNumOpKinds; ++k) EXPECT_GT(distance(walk_color(), kind_color(static_cast<OpKind>(k))), 80) << k;
  for (int c = 0; c < 4; ++c) EXPECT_GT(distance(walk_color(), bubble_color(static_cast<BubbleCause>(c))), 80) << c;
}

}  // namespace
}  // namespace mpk::studio
