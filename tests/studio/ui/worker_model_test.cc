// The workers view: per-worker busy share, idle time by cause and blamed producers on the
// hand-timed fork-join run, sorting, and a click on a row showing that worker's timeline
// row.
#include "studio/model/worker_model.h"

#include <gtest/gtest.h>

#include "studio/ui/app.h"
#include "studio/ui/headless_frame.h"
#include "tests/studio/studio_test_runs.h"

namespace mpk::studio {
namespace {

using mpk::testing::TempPath;

// Worker 0: norm [700k, +100) q0 [+100, +300), idle [+300, +700) (queue_empty 300, step
// tail 100); worker 1: waits [+0, +100) for the norm, q1 [+100, +600), residual [+600, +700).
TEST(WorkerModel, ForkJoinByHand) {
  TempPath path("workers_fork_join.db");
  const int64_t run = mpk::testing::store_fork_join(path.str(), 3);
  const TraceReader reader(path.str());
  const TraceModel m(reader, run);
  std::vector<WorkerRow> rows = worker_rows(m, 0, 0);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].busy_ns, 900);
  EXPECT_NEAR(rows[0].busy, 900.0 / 2100, 1e-12);
  EXPECT_EQ(rows[1].busy_ns, 1800);
  EXPECT_EQ(rows[1].idle_ns[static_cast<size_t>(BubbleCause::kWait)], 300);
  EXPECT_EQ(rows[0].idle_ns[static_cast<size_t>(BubbleCause::kQueueEmpty)], 900);
  // Busy and idle fill each worker's time.
  for (const WorkerRow& r : rows) {
    int64_t idle = 0;
    for (int64_t v : r.idle_ns) idle += v;
    EXPECT_LE(r.busy_ns + idle, 2100);
  }
  // Worker 1 waited for the norm each step.
  ASSERT_FALSE(rows[1].blamed.empty());
  EXPECT_EQ(rows[1].blamed[0].name, "input_norm");
  EXPECT_EQ(rows[1].blamed[0].wait_ns, 300);
  EXPECT_EQ(rows[0].sm, 0);
  // A range: step 1 only.
  rows = worker_rows(m, 700, 1400);
  EXPECT_EQ(rows[1].busy_ns, 600);
  EXPECT_EQ(rows[1].idle_ns[static_cast<size_t>(BubbleCause::kWait)], 100);
  // Sorting.
  sort_worker_rows(rows, WorkerColumn::kBusy, false);
  EXPECT_EQ(rows[0].worker, 1);
  sort_worker_rows(rows, WorkerColumn::kWorker, true);
  EXPECT_EQ(rows[0].worker, 0);
}

TEST(WorkersPanel, AClickOnARowShowsItsTimelineRow) {
  TempPath path("workers_panel.db");
  const int64_t run = mpk::testing::store_gpu_like_tiny(path.str(), 2, 64);
  StudioState s;
  ASSERT_TRUE(open_trace(s, path.str(), run)) << s.status;
  HeadlessFrame h(1600, 1000);
  const auto frame = [&] { draw_app_frame(s); };
  h.run(frame, 2);
  s.view = View::kWorkers;
  s.view_changed = true;
  h.run(frame, 3);
  const WorkersViewState& v = panel_state<WorkersViewState>(s);
  ASSERT_EQ(v.rows.size(), 64u);
  // The last row drawn well inside the view: far down the timeline.
  int32_t target = -1;
  for (int32_t w = 63; w >= 0 && target < 0; --w)
    if (v.row_y[static_cast<size_t>(w)] > 0 && v.row_y[static_cast<size_t>(w)] < 900) target = w;
  ASSERT_GE(target, 0);
  h.click(frame, v.row_x, v.row_y[static_cast<size_t>(target)]);
  h.run(frame, 3);
  EXPECT_EQ(s.view, View::kTimeline);
  ASSERT_GE(s.timeline.row_y[static_cast<size_t>(target)], s.timeline.view_y0) << "worker " << target;
  EXPECT_LE(s.timeline.row_y[static_cast<size_t>(target)], s.timeline.view_y0 + s.timeline.canvas_height);
  EXPECT_GE(target, 20);  // it was below the timeline's first screen
}

}  // namespace
}  // namespace mpk::studio
