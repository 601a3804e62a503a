// The other ranks of a tensor-parallel launch in the studio's model (studio/model/other_ranks.h),
// on a real 2-rank CPU launch of tiny (tests/studio/rank_test_runs.h) whose rank 1 lies
// kRankOneOffsetNs after rank 0: opening either rank loads the other with the shift between
// them, its rows follow the opened run's with their own labels, its boxes lie at their
// times plus the shift, fit covers both ranks; damaged rank rows open the run alone.
#include <gtest/gtest.h>

#include <algorithm>

#include "studio/model/state.h"
#include "studio/model/timeline_layout.h"
#include "tests/studio/rank_test_runs.h"
#include "tests/traces/test_graphs.h"

namespace mpk::studio {
namespace {

using mpk::testing::kRankOneOffsetNs;
using mpk::testing::TempPath;

size_t occurrences(const std::string& text, const std::string& word) {
  size_t n = 0;
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) ++n;
  return n;
}

// The longest execution of `worker` in `m` (which has one).
int64_t longest_on(const TraceModel& m, int32_t worker) {
  const IndexRange r = m.worker_range(worker);
  int64_t best = r.begin;
  for (int64_t i = r.begin; i < r.end; ++i) {
    const Execution& e = m.execution(i);
    if (e.end_ns - e.start_ns > m.execution(best).end_ns - m.execution(best).start_ns) best = i;
  }
  return best;
}

class OtherRanks : public ::testing::Test {
 protected:
  void SetUp() override {
    rank0_ = mpk::testing::store_tiny_tp2(path_.str());
    ASSERT_TRUE(open_trace(s_, path_.str(), rank0_)) << s_.status;
  }

  TempPath path_{"studio_ranks_model.db"};
  int64_t rank0_ = 0;
  StudioState s_;
};

TEST_F(OtherRanks, OpeningRankZeroLoadsRankOneAtItsOffset) {
  EXPECT_FALSE(s_.status_error) << s_.status;
  EXPECT_NE(s_.status.find("; rank 0 of 2, the other ranks' rows below"), std::string::npos) << s_.status;
  ASSERT_EQ(s_.model->run().rank, 0);
  ASSERT_EQ(s_.other_ranks.size(), 1u);
  const OtherRank& r1 = s_.other_ranks[0];
  EXPECT_EQ(r1.run().id, rank0_ + 1);
  EXPECT_EQ(r1.run().rank, 1);
  EXPECT_EQ(r1.shift_ns, kRankOneOffsetNs);
  EXPECT_EQ(r1.model->executions().size(), s_.model->executions().size());  // the same graph, the same steps
  EXPECT_EQ(rank_title(r1.run()), "rank 1 (CPU engine 1)");
  int32_t labelled = 0;  // workers with executions name their SM; the rest ran nothing
  for (int32_t w = 0; w < r1.model->num_workers(); ++w)
    if (r1.model->sm_of(w) >= 0) {
      EXPECT_EQ(rank_row_label(r1, w), "r1 w" + std::to_string(w) + " SM " + std::to_string(r1.model->sm_of(w)));
      ++labelled;
    } else {
      EXPECT_EQ(rank_row_label(r1, w), "r1 w" + std::to_string(w));
    }
  EXPECT_GT(labelled, 1);
  EXPECT_NE(rank_caption(r1).find("rank 1 (CPU engine 1), run " + std::to_string(rank0_ + 1) + ": its times +7.000 us"),
            std::string::npos)
      << rank_caption(r1);

  // Fit covers both ranks: rank 1 ends at its duration plus its offset on rank 0's axis.
  const TimeWindow extent = launch_extent(s_);
  EXPECT_EQ(extent.t0_ns, 0);
  EXPECT_EQ(extent.t1_ns, static_cast<double>(std::max(s_.model->duration_ns(), r1.model->duration_ns() + kRankOneOffsetNs)));
  EXPECT_LT(s_.window.t0_ns, 0);
  EXPECT_GT(s_.window.t1_ns, extent.t1_ns);
}

TEST_F(OtherRanks, RankRowsFollowTheOpenedRunsGroups) {
  const int32_t workers = s_.model->num_workers();
  const int32_t groups = (workers + 15) / 16;
  const int32_t rank_workers = s_.other_ranks[0].model->num_workers();
  std::vector<Row> rows = layout_rows(workers, 16, {}, 10, 20);
  const size_t opened = rows.size();
  const float opened_h = rows.back().y + rows.back().height;
  append_rank_rows(rows, s_.other_ranks, groups, {}, 10, 20);
  ASSERT_EQ(rows.size(), opened + 1 + static_cast<size_t>(rank_workers));
  const Row& header = rows[opened];
  EXPECT_EQ(header.kind, Row::kGroupHeader);
  EXPECT_EQ(header.group, groups);
  EXPECT_EQ(header.other_rank, 0);
  EXPECT_EQ(header.y, opened_h);
  for (int32_t w = 0; w < rank_workers; ++w) {
    const Row& r = rows[opened + 1 + static_cast<size_t>(w)];
    EXPECT_EQ(r.kind, Row::kWorker);
    EXPECT_EQ(r.worker, w);
    EXPECT_EQ(r.other_rank, 0);
    EXPECT_EQ(r.y, opened_h + 20 + 10.0f * static_cast<float>(w));
  }
  for (size_t i = 0; i < opened; ++i) EXPECT_EQ(rows[i].other_rank, -1);
  // Collapsed, the rank is its header alone.
  std::vector<bool> collapsed(static_cast<size_t>(groups) + 1, false);
  collapsed.back() = true;
  rows = layout_rows(workers, 16, collapsed, 10, 20);
  append_rank_rows(rows, s_.other_ranks, groups, collapsed, 10, 20);
  EXPECT_EQ(rows.size(), opened + 1);
}

TEST_F(OtherRanks, ABoxOfRankOneLiesAtItsTimePlusTheOffset) {
  const OtherRank& r1 = s_.other_ranks[0];
  for (int32_t w = 0; w < r1.model->num_workers(); ++w) {
    if (r1.model->worker_range(w).empty()) continue;
    const int64_t x = longest_on(*r1.model, w);
    const Execution& e = r1.model->execution(x);
    ASSERT_GT(e.end_ns, e.start_ns);
    // A window around where the execution lies on rank 0's axis, the execution 100 px wide.
    const double at = static_cast<double>(e.start_ns + kRankOneOffsetNs), d = static_cast<double>(e.end_ns - e.start_ns);
    const TimeAxis axis(TimeWindow{at - d, at + 2 * d}, 50, 300);
    std::vector<TaskBox> boxes;
    layout_tasks(*r1.model, w, shifted_axis(axis, static_cast<double>(r1.shift_ns)), 3, boxes);
    const auto box = std::find_if(boxes.begin(), boxes.end(), [&](const TaskBox& b) { return b.exec == r1.model->group_of(x).begin; });
    ASSERT_NE(box, boxes.end()) << "worker " << w;
    EXPECT_FALSE(box->merged);
    EXPECT_NEAR(box->x0, 150.0f, 0.01f);
    EXPECT_NEAR(box->x1, 250.0f, 0.01f);
    EXPECT_NEAR(box->x0, axis.x_of(static_cast<double>(e.start_ns + kRankOneOffsetNs)), 0.01);
  }
}

TEST_F(OtherRanks, OpeningRankOneShowsRankZeroRelativeToIt) {
  // A window inside the run, which moves onto rank 1's axis with the same moments in view.
  const double d = static_cast<double>(s_.model->duration_ns());
  ASSERT_GT(d, 4.0 * kRankOneOffsetNs);
  s_.window = {0.5 * d, 0.75 * d};
  ASSERT_TRUE(select_run(s_, rank0_ + 1)) << s_.status;
  EXPECT_FALSE(s_.status_error) << s_.status;
  EXPECT_EQ(s_.model->run().rank, 1);
  ASSERT_EQ(s_.other_ranks.size(), 1u);
  const OtherRank& r0 = s_.other_ranks[0];
  EXPECT_EQ(r0.run().id, rank0_);
  EXPECT_EQ(r0.run().rank, 0);
  EXPECT_EQ(r0.shift_ns, -kRankOneOffsetNs);
  EXPECT_EQ(rank_title(r0.run()), "rank 0 (CPU engine 0)");
  EXPECT_EQ(rank_row_label(r0, 0).rfind("r0 w0", 0), 0u);
  EXPECT_DOUBLE_EQ(s_.window.t0_ns, 0.5 * d - kRankOneOffsetNs);
  EXPECT_DOUBLE_EQ(s_.window.t1_ns, 0.75 * d - kRankOneOffsetNs);
  EXPECT_EQ(launch_extent(s_).t0_ns, -kRankOneOffsetNs);

  std::vector<Row> rows = layout_rows(s_.model->num_workers(), 16, {}, 10, 20);
  append_rank_rows(rows, s_.other_ranks, 1, {}, 10, 20);
  EXPECT_EQ(std::count_if(rows.begin(), rows.end(), [](const Row& r) { return r.kind == Row::kWorker && r.other_rank == 0; }),
            r0.model->num_workers());
  // Rank 0's execution at t lies at t - offset on rank 1's axis.
  const int64_t x = longest_on(*r0.model, 0);
  const Execution& e = r0.model->execution(x);
  const double at = static_cast<double>(e.start_ns - kRankOneOffsetNs), len = static_cast<double>(e.end_ns - e.start_ns);
  const TimeAxis axis(TimeWindow{at - len, at + 2 * len}, 0, 300);
  std::vector<TaskBox> boxes;
  layout_tasks(*r0.model, 0, shifted_axis(axis, static_cast<double>(r0.shift_ns)), 3, boxes);
  const auto box = std::find_if(boxes.begin(), boxes.end(), [&](const TaskBox& b) { return b.exec == r0.model->group_of(x).begin; });
  ASSERT_NE(box, boxes.end());
  EXPECT_NEAR(box->x0, 100.0f, 0.01f);
}

TEST(OtherRanksDamaged, TheRunOpensAloneWithTheMessage) {
  TempPath path("studio_ranks_damaged.db");
  const int64_t rank0 = mpk::testing::store_tiny_tp2(path.str());
  mpk::testing::sql(path.str(), "DELETE FROM run WHERE rank = 1");
  StudioState s;
  ASSERT_TRUE(open_trace(s, path.str(), rank0)) << s.status;
  ASSERT_NE(s.model, nullptr);
  EXPECT_EQ(s.model->run().id, rank0);
  EXPECT_TRUE(s.other_ranks.empty());
  EXPECT_TRUE(s.status_error);
  const std::string message = path.str() + ": the ranks of run " + std::to_string(rank0) + ": 1 of its 2 ranks are stored";
  EXPECT_EQ(occurrences(s.status, message), 1u) << s.status;
  EXPECT_NE(s.status.find("opened alone"), std::string::npos) << s.status;
  // The window fits the run alone.
  EXPECT_GT(s.window.t1_ns, static_cast<double>(s.model->duration_ns()));
  EXPECT_LT(s.window.t1_ns, 1.02 * static_cast<double>(s.model->duration_ns()));
}

}  // namespace
}  // namespace mpk::studio
