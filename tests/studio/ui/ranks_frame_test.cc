// Every rank of a tensor-parallel launch on the timeline, driven headless: a real 2-rank CPU
// launch of tiny whose rank 1 lies kRankOneOffsetNs after rank 0 (tests/studio/rank_test_runs.h).
// Rank 1's rows are drawn under rank 0's, hovering one of its tasks says the task and its
// time on rank 0's axis, a click there selects nothing, its header collapses it, F fits both
// ranks, the run list has a rank column and opens rank 1 as the interactive run; damaged
// rank rows open the run alone with one message.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "studio/model/timeline_layout.h"
#include "studio/ui/app.h"
#include "studio/ui/headless_frame.h"
#include "tests/studio/rank_test_runs.h"
#include "tests/traces/test_graphs.h"

namespace mpk::studio {
namespace {

using mpk::testing::kRankOneOffsetNs;
using mpk::testing::TempPath;

double x_of(const StudioState& s, double t) {
  return s.timeline.canvas_x0 + (t - s.window.t0_ns) / s.window.span() * s.timeline.canvas_width;
}

class RanksFrame : public ::testing::Test {
 protected:
  void SetUp() override {
    rank0_ = mpk::testing::store_tiny_tp2(path_.str());
    ASSERT_TRUE(open_trace(s_, path_.str(), rank0_)) << s_.status;
    frame_ = [this] { draw_app_frame(s_); };
    h_.run(frame_, 3);
  }

  const std::vector<float>& rank1_rows() const { return s_.timeline.rank_row_y.at(0); }

  TempPath path_{"studio_ranks_frame.db"};
  int64_t rank0_ = 0;
  StudioState s_;
  HeadlessFrame h_{1600, 1000};
  std::function<void()> frame_;
};

TEST_F(RanksFrame, RankOnesRowsAreDrawnUnderRankZerosOnOneAxis) {
  ASSERT_EQ(s_.other_ranks.size(), 1u);
  const TimelineState& tl = s_.timeline;
  ASSERT_EQ(tl.rank_row_y.size(), 1u);
  ASSERT_EQ(rank1_rows().size(), static_cast<size_t>(s_.other_ranks[0].model->num_workers()));
  const float last_rank0 = *std::max_element(tl.row_y.begin(), tl.row_y.end());
  for (float y : rank1_rows()) {
    EXPECT_GE(y, tl.view_y0);  // on screen
    EXPECT_GT(y, last_rank0);  // below rank 0's rows
  }
  EXPECT_GT(tl.boxes_drawn, 0);
  // Fitted over both ranks: rank 1 ends after rank 0 by about its offset.
  EXPECT_GT(s_.window.t1_ns, static_cast<double>(s_.other_ranks[0].model->duration_ns() + kRankOneOffsetNs));
  EXPECT_NE(s_.status.find("rank 0 of 2"), std::string::npos) << s_.status;
}

TEST_F(RanksFrame, HoveringRankOnesTaskSaysItOnRankZerosAxis) {
  const OtherRank& r1 = s_.other_ranks[0];
  const TraceModel& m = *r1.model;
  // Rank 1's longest execution on worker 0, 200 px wide in the window's middle.
  const IndexRange r = m.worker_range(0);
  int64_t x = r.begin;
  for (int64_t i = r.begin; i < r.end; ++i)
    if (m.execution(i).end_ns - m.execution(i).start_ns > m.execution(x).end_ns - m.execution(x).start_ns) x = i;
  const Execution& e = m.execution(x);
  const double at = static_cast<double>(e.start_ns + kRankOneOffsetNs), d = static_cast<double>(e.end_ns - e.start_ns);
  const double span = d * s_.timeline.canvas_width / 200;
  s_.window = {at + d / 2 - span / 2, at + d / 2 + span / 2};
  h_.run(frame_, 2);
  const float mx = std::floor(static_cast<float>(x_of(s_, at + d / 2)));
  const float my = rank1_rows()[0] + s_.timeline.row_height / 2;
  h_.mouse_move(mx, my);
  h_.run(frame_, 2);
  EXPECT_EQ(s_.timeline.hovered_rank, 0);
  EXPECT_EQ(s_.timeline.hovered_exec, -1);  // not the opened run's execution
  EXPECT_EQ(s_.hovered_kind, static_cast<int>(m.kind_of(e.task)));
  const std::string& text = s_.timeline.hover_text;
  EXPECT_EQ(text.rfind("rank 1 (CPU engine 1), run " + std::to_string(rank0_ + 1), 0), 0u) << text;
  EXPECT_NE(text.find(m.op_of(e.task).name + "  [task " + std::to_string(e.task) + "]"), std::string::npos) << text;
  EXPECT_NE(text.find("start " + format_duration(at)), std::string::npos) << text;
  // A click there selects nothing: another rank is shown, not worked on.
  h_.click(frame_, mx, my);
  EXPECT_EQ(s_.selection.exec, -1);
}

TEST_F(RanksFrame, ARanksHeaderCollapsesItsRows) {
  const float header_y = rank1_rows()[0] - 8;  // the rank's header is just above its first row
  h_.mouse_move(s_.timeline.canvas_x0 + 100, header_y);
  h_.run(frame_);
  EXPECT_NE(s_.timeline.hover_text.find("rank 1 (CPU engine 1)"), std::string::npos) << s_.timeline.hover_text;
  h_.click(frame_, s_.timeline.canvas_x0 + 100, header_y);
  h_.run(frame_);
  EXPECT_TRUE(s_.timeline.collapsed.back());
  for (float y : rank1_rows()) EXPECT_LT(y, 0);
  for (float y : s_.timeline.row_y) EXPECT_GE(y, s_.timeline.canvas_y0);  // rank 0's rows stay
}

TEST_F(RanksFrame, FitCoversEveryRank) {
  s_.window = {0, 1000};
  h_.run(frame_);
  h_.type_char('f');
  h_.run(frame_);
  const TimeWindow extent = launch_extent(s_);
  EXPECT_GE(extent.t1_ns, static_cast<double>(s_.other_ranks[0].model->duration_ns() + kRankOneOffsetNs));
  EXPECT_LT(s_.window.t0_ns, extent.t0_ns);
  EXPECT_GT(s_.window.t1_ns, extent.t1_ns);
}

TEST_F(RanksFrame, TheRunListOpensRankOneAsTheInteractiveRun) {
  ASSERT_EQ(s_.run_row_y.size(), 2u);
  h_.click(frame_, 30, s_.run_row_y[1]);
  h_.run(frame_, 2);
  EXPECT_EQ(s_.run, rank0_ + 1);
  EXPECT_EQ(s_.model->run().rank, 1);
  ASSERT_EQ(s_.other_ranks.size(), 1u);
  EXPECT_EQ(s_.other_ranks[0].run().rank, 0);
  EXPECT_EQ(s_.other_ranks[0].shift_ns, -kRankOneOffsetNs);
  ASSERT_EQ(s_.timeline.rank_row_y.size(), 1u);
  EXPECT_GE(s_.timeline.rank_row_y[0][0], s_.timeline.view_y0);
}

TEST(RanksDamaged, TheRunOpensAloneAndSaysWhyOnce) {
  TempPath path("studio_ranks_frame_damaged.db");
  const int64_t rank0 = mpk::testing::store_tiny_tp2(path.str());
  mpk::testing::sql(path.str(), "DELETE FROM run WHERE rank = 1");
  StudioState s;
  ASSERT_TRUE(open_trace(s, path.str(), rank0)) << s.status;
  HeadlessFrame h(1600, 1000);
  h.run([&] { draw_app_frame(s); }, 3);
  EXPECT_TRUE(s.status_error);
  const std::string message = "the ranks of run " + std::to_string(rank0) + ": 1 of its 2 ranks are stored";
  const size_t first = s.status.find(message);
  ASSERT_NE(first, std::string::npos) << s.status;
  EXPECT_EQ(s.status.find(message, first + 1), std::string::npos) << s.status;
  EXPECT_TRUE(s.timeline.rank_row_y.empty());
  EXPECT_GT(s.timeline.boxes_drawn, 0);  // rank 0 is drawn as any run
  EXPECT_GE(s.timeline.row_y[0], s.timeline.canvas_y0);
}

}  // namespace
}  // namespace mpk::studio
