// The statistics, compare and graph views driven headless through whole app frames with
// synthetic mouse input: header clicks sort the table, the stats follow the selected
// range, the compare view zooms and pans the shared axis, a click on a graph node
// highlights its tasks for the timeline and a double click expands its layer.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <chrono>
#include <thread>

#include "studio/ui/app.h"
#include "studio/ui/headless_frame.h"
#include "studio/model/panel_registry.h"
#include "studio/ui/panels.h"
#include "tests/studio/panel_test_runs.h"

namespace mpk::studio {
namespace {

using mpk::testing::TempPath;

class PanelsFrame : public ::testing::Test {
 protected:
  void SetUp() override {
    first_ = mpk::testing::store_tiny(path_.str(), 3, "round-robin");
    last_ = mpk::testing::store_tiny(path_.str(), 3, "critical-path");
    ASSERT_TRUE(open_trace(s_, path_.str())) << s_.status;
    frame_ = [this] { draw_app_frame(s_); };
  }

  void show(View v) {
    s_.view = v;
    s_.view_changed = true;
    h_.run(frame_, 3);
  }

  // Frames until the graph view has its layout (bounded, so that a failure cannot hang).
  void wait_for_layout() {
    for (int i = 0; i < 6000 && (s_.graph.pending || !s_.graph.shown); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      h_.run(frame_);
    }
    ASSERT_NE(s_.graph.shown, nullptr) << s_.graph.error;
    ASSERT_FALSE(s_.graph.pending);
    h_.run(frame_);
  }

  ImVec2 on_screen(const GraphNode& n) const {
    const GraphViewState& g = s_.graph;
    return ImVec2(g.origin_x + g.scale * static_cast<float>(n.x), g.origin_y + g.scale * static_cast<float>(n.y));
  }

  // The first node of `kind` whose centre is on the canvas.
  int32_t visible_node(NodeKind kind) const {
    const GraphViewState& g = s_.graph;
    for (size_t i = 0; i < g.shown->nodes.size(); ++i) {
      const ImVec2 p = on_screen(g.shown->nodes[i]);
      if (g.shown->nodes[i].kind == kind && p.x > g.canvas_x0 + 5 && p.x < g.canvas_x0 + g.canvas_width - 5 &&
          p.y > g.canvas_y0 + 5 && p.y < g.canvas_y0 + g.canvas_height - 5)
        return static_cast<int32_t>(i);
    }
    return -1;
  }

  TempPath path_{"panels_frame.db"};
  int64_t first_ = 0, last_ = 0;
  StudioState s_;
  HeadlessFrame h_{1600, 1000};
  std::function<void()> frame_;
};

TEST_F(PanelsFrame, StatsHeaderClicksSort) {
  show(View::kStats);
  ASSERT_NE(s_.stats.model, nullptr);
  const StatsModel& m = *s_.stats.model;
  EXPECT_EQ(m.run(), last_);
  EXPECT_EQ(m.sort_column(), StatsColumn::kTotal);
  EXPECT_FALSE(m.sort_ascending());
  const auto& hx = s_.stats.header_x;
  // Count: descending first (the column prefers it), then ascending.
  h_.click(frame_, hx[static_cast<size_t>(StatsColumn::kCount)], s_.stats.header_y);
  EXPECT_EQ(m.sort_column(), StatsColumn::kCount);
  EXPECT_FALSE(m.sort_ascending());
  for (size_t i = 1; i < m.rows().size(); ++i) EXPECT_GE(m.rows()[i - 1].count, m.rows()[i].count);
  h_.click(frame_, hx[static_cast<size_t>(StatsColumn::kCount)], s_.stats.header_y);
  EXPECT_TRUE(m.sort_ascending());
  for (size_t i = 1; i < m.rows().size(); ++i) EXPECT_LE(m.rows()[i - 1].count, m.rows()[i].count);
  // Kind: by name, ascending first.
  h_.click(frame_, hx[static_cast<size_t>(StatsColumn::kName)], s_.stats.header_y);
  EXPECT_EQ(m.sort_column(), StatsColumn::kName);
  EXPECT_TRUE(m.sort_ascending());
  for (size_t i = 1; i < m.rows().size(); ++i) EXPECT_LT(m.rows()[i - 1].name, m.rows()[i].name);
  // A click on a row shows that kind's histogram.
  ASSERT_EQ(s_.stats.row_y.size(), m.rows().size());
  ASSERT_GE(m.rows().size(), 3u);
  const std::string third = m.rows()[2].name;
  EXPECT_NE(s_.stats.histogram_row, third);
  h_.click(frame_, hx[static_cast<size_t>(StatsColumn::kTotal)], s_.stats.row_y[2]);
  EXPECT_EQ(s_.stats.histogram_row, third);
  EXPECT_GT(s_.stats.histogram_x1, s_.stats.histogram_x0);
}

TEST_F(PanelsFrame, StatsFollowTheSelectedRangeAndTheRun) {
  show(View::kStats);
  const int64_t all = s_.stats.model->total_count();
  EXPECT_TRUE(s_.stats.model->whole_run());
  const double half = 0.5 * static_cast<double>(s_.model->duration_ns());
  s_.range = TimeWindow{half, 2 * half};
  h_.run(frame_);
  EXPECT_FALSE(s_.stats.model->whole_run());
  EXPECT_EQ(s_.stats.model->range_begin(), static_cast<int64_t>(half));
  EXPECT_LT(s_.stats.model->total_count(), all);
  s_.range.reset();
  h_.run(frame_);
  EXPECT_TRUE(s_.stats.model->whole_run());
  EXPECT_EQ(s_.stats.model->total_count(), all);
  ASSERT_TRUE(select_run(s_, first_));
  h_.run(frame_);
  EXPECT_EQ(s_.stats.model->run(), first_);
}

TEST_F(PanelsFrame, CompareSharesTheTimeAxis) {
  show(View::kCompare);
  EXPECT_EQ(s_.compare.model, nullptr);  // no run B yet
  s_.compare_run = first_;
  h_.run(frame_, 2);
  ASSERT_NE(s_.compare.model, nullptr) << s_.compare.error;
  const CompareModel& cm = *s_.compare.model;
  EXPECT_EQ(cm.stats_a().run.id, last_);
  EXPECT_EQ(cm.stats_b().run.id, first_);
  EXPECT_FALSE(cm.deltas().empty());
  EXPECT_GT(s_.compare.boxes_drawn, 0);
  // The wheel zooms the shared window at the cursor; a drag pans it.
  const CompareViewState& v = s_.compare;
  const float x = v.canvas_x0 + 0.5f * v.canvas_width, y = v.canvas_y0 + 0.5f * v.canvas_height;
  const TimeWindow before = s_.window;
  h_.mouse_move(x, y);
  h_.run(frame_);
  h_.wheel(2);
  h_.run(frame_);
  EXPECT_LT(s_.window.span(), 0.7 * before.span());
  const double t_mid = before.t0_ns + (x - v.canvas_x0) / v.canvas_width * before.span();
  EXPECT_NEAR(s_.window.t0_ns + (x - v.canvas_x0) / v.canvas_width * s_.window.span(), t_mid, 1e-6 * before.span() + 1);
  const TimeWindow zoomed = s_.window;
  h_.drag(frame_, x, y, -200, 0);
  EXPECT_GT(s_.window.t0_ns, zoomed.t0_ns);
  EXPECT_NEAR(s_.window.span(), zoomed.span(), 1e-6 * zoomed.span());
}

// The same GPU-shaped run as A and B at three zooms (the whole run; three steps; one step
// and a half): per step, the busy time the lanes stand for (boxes, and merged tasks'
// busy columns) is the step's busy time, the same at every zoom.
TEST(CompareLanes, TheSameRunDrawsTheSameBusyTimeAtEveryZoom) {
  TempPath path("compare_lanes_zoom.db");
  const int64_t a = mpk::testing::store_gpu_like_tiny(path.str(), 8, 16);
  const int64_t b = mpk::testing::store_gpu_like_tiny(path.str(), 8, 16);
  StudioState s;
  ASSERT_TRUE(open_trace(s, path.str(), a)) << s.status;
  s.compare_run = b;
  s.view = View::kCompare;
  HeadlessFrame h(1600, 1000);
  const auto frame = [&] { draw_app_frame(s); };
  h.run(frame, 3);
  ASSERT_NE(s.compare.model, nullptr) << s.compare.error;
  const std::vector<StepRecord>& steps = s.model->steps();
  const StepRecord& st = steps[4];
  const double len = static_cast<double>(st.end_ns - st.start_ns);
  const double mid = 0.5 * static_cast<double>(st.start_ns + st.end_ns);
  std::vector<std::array<double, 2>> drawn;  // step 4's, per zoom, for A and B
  for (const double span : {-1.0, 3 * len, 1.5 * len}) {
    if (span < 0)
      fit_window(s);
    else
      s.window = {mid - span / 2, mid + span / 2};
    h.run(frame, 2);
    drawn.push_back({s.compare.step_busy_drawn[0][4], s.compare.step_busy_drawn[1][4]});
  }
  for (const auto& d : drawn)
    for (double v : d) EXPECT_NEAR(v, static_cast<double>(st.busy_ns), 0.01 * static_cast<double>(st.busy_ns));
  EXPECT_NEAR(drawn[0][0], drawn[2][0], 0.01 * static_cast<double>(st.busy_ns));
}

TEST_F(PanelsFrame, GraphClickHighlightsAndDoubleClickExpands) {
  show(View::kGraph);
  wait_for_layout();
  EXPECT_EQ(s_.graph.mode, GraphMode::kOps);
  EXPECT_GT(s_.graph.nodes_drawn, 0);
  const int32_t node = visible_node(NodeKind::kOp);
  ASSERT_GE(node, 0);
  const GraphNode& n = s_.graph.shown->nodes[static_cast<size_t>(node)];
  std::vector<TaskId> tasks = n.tasks;
  std::sort(tasks.begin(), tasks.end());
  const ImVec2 p = on_screen(n);
  h_.click(frame_, p.x, p.y);
  EXPECT_EQ(s_.graph.selected, node);
  EXPECT_EQ(s_.highlighted_tasks, tasks);
  // A click on empty canvas clears the highlight.
  h_.click(frame_, s_.graph.canvas_x0 + 3, s_.graph.canvas_y0 + s_.graph.canvas_height - 3);
  EXPECT_EQ(s_.graph.selected, -1);
  EXPECT_TRUE(s_.highlighted_tasks.empty());

  // A double click on an operator of a layer expands that layer into its tasks.
  int32_t in_layer = -1;
  for (int32_t i = 0; in_layer < 0 && i < static_cast<int32_t>(s_.graph.shown->nodes.size()); ++i) {
    const GraphNode& c = s_.graph.shown->nodes[static_cast<size_t>(i)];
    const ImVec2 q = on_screen(c);
    if (c.layer >= 0 && q.y > s_.graph.canvas_y0 + 5 && q.y < s_.graph.canvas_y0 + s_.graph.canvas_height - 5) in_layer = i;
  }
  ASSERT_GE(in_layer, 0);
  const int32_t layer = s_.graph.shown->nodes[static_cast<size_t>(in_layer)].layer;
  const ImVec2 q = on_screen(s_.graph.shown->nodes[static_cast<size_t>(in_layer)]);
  h_.click(frame_, q.x, q.y);
  h_.click(frame_, q.x, q.y);
  EXPECT_EQ(s_.graph.expanded, std::vector<int32_t>{layer});
  wait_for_layout();
  EXPECT_EQ(s_.graph.shown->key.expanded, std::vector<int32_t>{layer});
  const int32_t task = visible_node(NodeKind::kTask);
  ASSERT_GE(task, 0) << "the fitted view shows the expanded tasks";
  const GraphNode& t = s_.graph.shown->nodes[static_cast<size_t>(task)];
  EXPECT_EQ(t.layer, layer);
  const ImVec2 tp = on_screen(t);
  h_.click(frame_, tp.x, tp.y);
  EXPECT_EQ(s_.highlighted_tasks, t.tasks);
}

TEST_F(PanelsFrame, GraphWheelZoomsAtTheCursor) {
  show(View::kGraph);
  wait_for_layout();
  const GraphViewState& g = s_.graph;
  // ImGui floors the mouse position.
  const float x = std::floor(g.canvas_x0 + 0.5f * g.canvas_width), y = std::floor(g.canvas_y0 + 0.5f * g.canvas_height);
  const float scale = g.scale;
  const float gx = (x - g.origin_x) / g.scale, gy = (y - g.origin_y) / g.scale;
  h_.mouse_move(x, y);
  h_.run(frame_);
  h_.wheel(1);
  h_.run(frame_);
  EXPECT_NEAR(g.scale, scale * 1.2f, 1e-4f * scale);
  // The graph point under the cursor stays there.
  EXPECT_NEAR((x - g.origin_x) / g.scale, gx, 1e-2f);
  EXPECT_NEAR((y - g.origin_y) / g.scale, gy, 1e-2f);
}

// Every registered panel copes with nothing open.
// The views register themselves, in tab order; each is a --view name.
TEST(PanelRegistry, EveryViewIsRegisteredOnce) {
  std::vector<std::string> names;
  for (const PanelInfo& p : registered_panels()) names.push_back(p.name);
  const std::vector<std::string> want = {"timeline", "stats", "workers", "compare", "graph", "pipeline"};
  EXPECT_EQ(names, want);
  for (const std::string& n : names) {
    ASSERT_TRUE(parse_view(n).has_value()) << n;
    EXPECT_STREQ(name_of(*parse_view(n)), n.c_str());
  }
  EXPECT_FALSE(parse_view("flame").has_value());
  EXPECT_EQ(find_panel("stats")->title, std::string("Stats"));
}

TEST(PanelsEmpty, NothingOpenSaysSo) {
  StudioState s;
  HeadlessFrame h(800, 600);
  h.run([&] {
    ImGui::Begin("w");
    for (const PanelInfo& p : registered_panels()) p.draw(s);
    ImGui::End();
  });
  EXPECT_EQ(s.stats.model, nullptr);
  EXPECT_EQ(s.compare.model, nullptr);
  EXPECT_EQ(s.graph.layouts, nullptr);
}

}  // namespace
}  // namespace mpk::studio
