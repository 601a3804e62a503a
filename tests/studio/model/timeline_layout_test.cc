// Timeline geometry: the axis and window operations, the ruler, rows with collapsed
// groups, and task merging (counted boxes that cover every execution exactly once and
// whose number follows the screen, not the trace).
#include "studio/model/timeline_layout.h"

#include <gtest/gtest.h>

#include <random>

#include "tests/studio/studio_test_runs.h"

namespace mpk::studio {
namespace {

using mpk::testing::TempPath;

TEST(TimelineLayout, AxisMapsBothWays) {
  const TimeAxis a(TimeWindow{1000, 3000}, 100.0f, 400.0f);
  EXPECT_DOUBLE_EQ(a.ns_per_px, 5.0);
  EXPECT_DOUBLE_EQ(a.x_of(1000), 100.0);
  EXPECT_DOUBLE_EQ(a.x_of(3000), 500.0);
  EXPECT_DOUBLE_EQ(a.t_of(300), 2000.0);
  EXPECT_DOUBLE_EQ(a.t1_ns(), 3000.0);
}

TEST(TimelineLayout, ZoomKeepsTheTimeUnderTheCursor) {
  const TimeWindow w{0, 10000};
  const TimeWindow in = zoom_at(w, 7500, 0.5, 10000);
  EXPECT_DOUBLE_EQ(in.span(), 5000);
  // 7500 was at 75% of the window; it still is.
  EXPECT_DOUBLE_EQ((7500 - in.t0_ns) / in.span(), 0.75);
  const TimeWindow out = zoom_at(in, 7500, 2.0, 10000);
  EXPECT_DOUBLE_EQ(out.t0_ns, 0);
  EXPECT_DOUBLE_EQ(out.t1_ns, 10000);
  // Limits: 100 ns at the deepest, 4x the run at the widest.
  EXPECT_DOUBLE_EQ(zoom_at(w, 5000, 1e-9, 10000).span(), 100);
  EXPECT_DOUBLE_EQ(zoom_at(w, 5000, 1e9, 10000).span(), 40000);
}

TEST(TimelineLayout, PanKeepsHalfTheWindowOverTheRun) {
  const TimeWindow w{0, 1000};
  EXPECT_DOUBLE_EQ(pan_by(w, 300, 10000).t0_ns, 300);
  EXPECT_DOUBLE_EQ(pan_by(w, -5000, 10000).t0_ns, -500);
  EXPECT_DOUBLE_EQ(pan_by(w, 50000, 10000).t0_ns, 9500);
  EXPECT_DOUBLE_EQ(pan_by(w, 50000, 10000).span(), 1000);
  const TimeWindow f = fit(2000);
  EXPECT_LT(f.t0_ns, 0);
  EXPECT_GT(f.t1_ns, 2000);
}

TEST(TimelineLayout, DurationsInNiceUnits) {
  EXPECT_EQ(format_duration(850), "850 ns");
  EXPECT_EQ(format_duration(12500), "12.50 us");
  EXPECT_EQ(format_duration(3204000), "3.204 ms");
  EXPECT_EQ(format_duration(125300), "125.3 us");
  EXPECT_EQ(format_duration(1.25e9), "1.250 s");
}

TEST(TimelineLayout, RulerStepsAreOneTwoFive) {
  // 1000 px over 5 ms: 90 px is 450 us, so ticks every 500 us, labelled in ms.
  Ruler r = make_ruler(TimeAxis(TimeWindow{0, 5e6}, 0, 1000), 90);
  EXPECT_DOUBLE_EQ(r.step_ns, 500e3);
  ASSERT_GE(r.ticks.size(), 10u);
  EXPECT_EQ(r.ticks[0].label, "0.0 ms");
  EXPECT_EQ(r.ticks[3].label, "1.5 ms");
  EXPECT_FALSE(r.minor.empty());
  // 1000 px over 2 ms: 180 us -> 200 us.
  r = make_ruler(TimeAxis(TimeWindow{0, 2e6}, 0, 1000), 90);
  EXPECT_DOUBLE_EQ(r.step_ns, 200e3);
  EXPECT_EQ(r.ticks[1].label, "0.2 ms");
  // 1000 px over 20 ms: 1.8 ms -> 2 ms.
  r = make_ruler(TimeAxis(TimeWindow{1e6, 21e6}, 0, 1000), 90);
  EXPECT_DOUBLE_EQ(r.step_ns, 2e6);
  EXPECT_EQ(r.ticks[0].label, "2 ms");
  // 1000 px over 1 us: 90 ns -> 100 ns.
  r = make_ruler(TimeAxis(TimeWindow{0, 1000}, 0, 1000), 90);
  EXPECT_DOUBLE_EQ(r.step_ns, 100);
  EXPECT_EQ(r.ticks[1].label, "0.1 us");
  // Deep in a long run: 50 us steps at 69 ms read in ms with two decimals.
  r = make_ruler(TimeAxis(TimeWindow{69.0e6, 69.4e6}, 0, 1000), 90);
  EXPECT_DOUBLE_EQ(r.step_ns, 50e3);
  EXPECT_EQ(r.ticks[1].label, "69.05 ms");
  // 100 ns steps at 69 ms would need 4 decimals: shown in us.
  r = make_ruler(TimeAxis(TimeWindow{69.0e6, 69.0e6 + 1000}, 0, 1000), 90);
  EXPECT_EQ(r.ticks[1].label, "69000.1 us");
}

TEST(TimelineLayout, RowsWithCollapsedGroups) {
  std::vector<Row> rows = layout_rows(40, 16, {false, true, false}, 10, 20);
  // Group 0: header + 16 rows; group 1: header only; group 2: header + 8 rows.
  ASSERT_EQ(rows.size(), 1u + 16 + 1 + 1 + 8);
  EXPECT_EQ(rows[0].kind, Row::kGroupHeader);
  EXPECT_EQ(rows[1].worker, 0);
  EXPECT_FLOAT_EQ(rows[1].y, 20);
  EXPECT_EQ(rows[17].kind, Row::kGroupHeader);
  EXPECT_EQ(rows[17].group, 1);
  EXPECT_EQ(rows[18].group, 2);
  EXPECT_EQ(rows[19].worker, 32);
  EXPECT_FLOAT_EQ(rows[19].y, 20 + 160 + 20 + 20);
  EXPECT_EQ(row_at(rows, 25), 1);
  EXPECT_EQ(row_at(rows, 5), 0);
  EXPECT_EQ(row_at(rows, rows[19].y + 9.5f), 19);
  EXPECT_EQ(row_at(rows, -1), -1);
  EXPECT_EQ(row_at(rows, 10000), -1);
}

// Every execution of the window is in exactly one box, boxes follow each other, a
// merged box holds only tasks narrower than the threshold, and the number of boxes
// stays within what the screen can show.
void check_boxes(const TraceModel& m, int32_t w, const TimeAxis& axis, float min_px) {
  std::vector<TaskBox> boxes;
  layout_tasks(m, w, axis, min_px, boxes);
  const IndexRange r = m.executions_in(w, static_cast<int64_t>(std::floor(axis.t0_ns)),
                                       static_cast<int64_t>(std::ceil(axis.t1_ns())));
  if (r.empty()) {
    EXPECT_TRUE(boxes.empty());
    return;
  }
  ASSERT_FALSE(boxes.empty());
  EXPECT_EQ(boxes.front().exec, r.begin);
  const double min_ns = min_px * axis.ns_per_px;
  for (size_t i = 0; i < boxes.size(); ++i) {
    const TaskBox& b = boxes[i];
    EXPECT_LE(b.x0, b.x1);
    if (i > 0) {
      EXPECT_EQ(b.exec, boxes[i - 1].exec + boxes[i - 1].count);
      EXPECT_GE(b.x0, boxes[i - 1].x1 - 1e-3f);
    }
    if (b.merged)
      for (int64_t k = b.exec; k < b.exec + b.count; ++k) {
        const Execution& e = m.execution(k);
        EXPECT_LT(static_cast<double>(e.end_ns - e.start_ns), min_ns);
        EXPECT_EQ(e.worker, w);
      }
  }
  EXPECT_GE(boxes.back().exec + boxes.back().count, r.end);
  EXPECT_LE(boxes.size(), static_cast<size_t>(2 * axis.width / min_px) + 4);
}

TEST(TimelineLayout, MergedBoxesCoverEveryTaskOnce) {
  TempPath path("studio_tiny_layout.db");
  const int64_t run = mpk::testing::store_tiny(path.str(), 8);
  const TraceReader reader(path.str());
  const TraceModel m(reader, run);
  std::mt19937_64 rng(3);
  const double d = static_cast<double>(m.duration_ns());
  // Every other trial on the worker with the most executions, which zoomed out must merge.
  int32_t busiest = 0;
  for (int32_t w = 1; w < m.num_workers(); ++w)
    if (m.worker_range(w).size() > m.worker_range(busiest).size()) busiest = w;
  int merged = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int32_t w =
        trial % 2 ? busiest : static_cast<int32_t>(rng() % static_cast<uint64_t>(m.num_workers()));
    const double span = d * std::pow(10.0, -3.0 * static_cast<double>(rng() % 1000) / 1000.0);
    const double t0 = -0.05 * d + static_cast<double>(rng() % 1000) / 1000.0 * d;
    const TimeAxis axis(TimeWindow{t0, t0 + span}, 50.0f, 400.0f + static_cast<float>(rng() % 1200));
    check_boxes(m, w, axis, 3.0f);
    std::vector<TaskBox> boxes;
    layout_tasks(m, w, axis, 3.0f, boxes);
    for (const TaskBox& b : boxes) merged += b.merged;
  }
  EXPECT_GT(merged, 0);  // the zoomed-out cases did merge
}

TEST(TimelineLayout, ManySmallTasksBecomeFewBoxes) {
  // One worker running 20,000 tasks of 100 ns back to back: 10,000 linear, then
  // 10,000 attention.
  mpk::testing::GraphBuilder g(1);
  const OpId op = g.op("L0.q_proj", OpKind::kLinear, 0);
  const OpId attn = g.op("L0.attention", OpKind::kAttention, 0);
  std::vector<TaskId> list;
  for (int i = 0; i < 20000; ++i)
    list.push_back(i < 10000 ? g.task(op, 100) : g.task(attn, 100, TaskKind::kAttention));
  const Module mod = g.schedule({list});
  TempPath path("studio_many_small.db");
  const int64_t run = mpk::testing::store_run(path.str(), mod, mpk::testing::unit_costs(), 1, "many");
  const TraceReader reader(path.str());
  const TraceModel m(reader, run);
  ASSERT_EQ(m.duration_ns(), 2000000);
  std::vector<TaskBox> boxes;
  // Zoomed out: 1000 px for 2 ms, 2 us a pixel: one box.
  layout_tasks(m, 0, TimeAxis(fit(2e6), 0, 1000), 3.0f, boxes);
  ASSERT_EQ(boxes.size(), 1u);
  EXPECT_EQ(boxes[0].count, 20000);
  check_boxes(m, 0, TimeAxis(fit(2e6), 0, 1000), 3.0f);
  // The merged box's fill shows both halves.
  std::vector<KindSlice> slices;
  merged_slices(m, boxes[0], TimeAxis(fit(2e6), 0, 1000), 2.0f, slices);
  ASSERT_EQ(slices.size(), 2u);
  EXPECT_EQ(slices[0].kind, OpKind::kLinear);
  EXPECT_EQ(slices[1].kind, OpKind::kAttention);
  EXPECT_FLOAT_EQ(slices[0].busy, 1.0f);  // back to back: busy all through
  EXPECT_FLOAT_EQ(slices[1].busy, 1.0f);
  EXPECT_FLOAT_EQ(slices[0].x0, boxes[0].x0);
  EXPECT_FLOAT_EQ(slices[1].x1, boxes[0].x1);
  EXPECT_NEAR(slices[1].x0, TimeAxis(fit(2e6), 0, 1000).x_of(1e6), 2.0);
  // Zoomed in to 10 us: 1000 px, 10 ns a pixel: every task (10 px) on its own.
  boxes.clear();
  const TimeAxis deep(TimeWindow{500000, 510000}, 0, 1000);
  layout_tasks(m, 0, deep, 3.0f, boxes);
  EXPECT_EQ(boxes.size(), 100u);
  for (const TaskBox& b : boxes) {
    EXPECT_EQ(b.count, 1);
    EXPECT_FALSE(b.merged);
  }
  EXPECT_EQ(m.execution(boxes[0].exec).start_ns, 500000);
  EXPECT_FLOAT_EQ(boxes[0].x1 - boxes[0].x0, 10.0f);
  EXPECT_EQ(boxes[0].kind, OpKind::kLinear);
}

// One worker running 10,000 tasks of 100 ns, one every 200 ns: merged boxes are half
// busy at every zoom, whether their slices are summed from the coarse picture or exactly,
// and their busy time adds up to the truth.
TEST(TimelineLayout, MergedSlicesShowHowBusyTheyAre) {
  mpk::testing::GraphBuilder g(1);
  const OpId op = g.op("L0.q_proj", OpKind::kLinear, 0);
  std::vector<TaskId> list;
  std::vector<Execution> execs;
  for (int i = 0; i < 10000; ++i) {
    list.push_back(g.task(op, 100));
    execs.push_back({list.back(), 0, 0, 0, 200 * i, 200 * i, 200 * i + 100});
  }
  TempPath path("studio_half_busy.db");
  const int64_t run = write_run(path.str(), g.schedule({list}), RunInfo{}, execs);
  const TraceReader reader(path.str());
  const TraceModel m(reader, run);
  const double d = static_cast<double>(m.duration_ns());
  for (const double span : {1.02 * d, 0.1 * d, 0.05 * d}) {
    const TimeAxis axis(TimeWindow{0.3 * d - 0.01 * d, 0.3 * d - 0.01 * d + span}, 0, 1000);
    std::vector<TaskBox> boxes;
    layout_tasks(m, 0, axis, 3.0f, boxes);
    ASSERT_EQ(boxes.size(), 1u) << span;
    ASSERT_TRUE(boxes[0].merged);
    EXPECT_NEAR(box_busy_fraction(m, boxes[0]), 0.5, 0.01);
    std::vector<KindSlice> slices;
    merged_slices(m, boxes[0], axis, 2.0f, slices);
    double busy_ns = 0;
    for (const KindSlice& sl : slices) {
      // A whole slice of two periods or more is half busy.
      if (sl.x1 - sl.x0 >= 1.99f && axis.t_of(sl.x1) - axis.t_of(sl.x0) >= 399) {
        EXPECT_NEAR(sl.busy, 0.5, 0.05) << span;
      }
      EXPECT_EQ(sl.kind, OpKind::kLinear);
      busy_ns += sl.busy * (axis.t_of(sl.x1) - axis.t_of(sl.x0));
    }
    const double t0 = std::max(0.0, axis.t0_ns), t1 = std::min(d, axis.t1_ns());
    EXPECT_NEAR(busy_ns, static_cast<double>(m.busy_ns(0, static_cast<int64_t>(t0), static_cast<int64_t>(t1))),
                0.005 * (t1 - t0) + 200)
        << span;
  }
}

TEST(TimelineLayout, BubbleBoxesAreWideEnough) {
  TempPath path("studio_fork_join_bubbles.db");
  const int64_t run = mpk::testing::store_fork_join(path.str(), 2);
  const TraceReader reader(path.str());
  const TraceModel m(reader, run);
  std::vector<BubbleBox> out;
  // 1 ns a pixel: worker 0's two idle pieces [300, 600) and [600, 700) are wide.
  layout_bubbles(m, 0, TimeAxis(TimeWindow{0, 1000}, 0, 1000), 2.0f, out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_FLOAT_EQ(out[0].x0, 300);
  EXPECT_FLOAT_EQ(out[0].x1, 600);
  // 2 ns a pixel with a 150 px threshold: only the 300 ns queue-empty pieces of
  // steps 0 and 1, not the 100 ns step tails.
  out.clear();
  layout_bubbles(m, 0, TimeAxis(TimeWindow{0, 2000}, 0, 1000), 150.0f, out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(m.bubbles(0)[static_cast<size_t>(out[0].index)].start_ns, 300);
  EXPECT_EQ(m.bubbles(0)[static_cast<size_t>(out[1].index)].start_ns, 1000);
}

}  // namespace
}  // namespace mpk::studio
