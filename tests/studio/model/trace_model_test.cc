// TraceModel: window queries, hit lookup of tasks and bubbles, dependencies, and the
// bubble level of detail, on the hand-timed fork-join run and the tiny preset.
#include "studio/model/trace_model.h"

#include <gtest/gtest.h>

#include <random>

#include "studio/model/state.h"
#include "tests/studio/studio_test_runs.h"

namespace mpk::studio {
namespace {

using mpk::testing::kNorm;
using mpk::testing::kQ0;
using mpk::testing::kQ1;
using mpk::testing::kResidual;
using mpk::testing::TempPath;

class ForkJoinModel : public ::testing::Test {
 protected:
  void SetUp() override {
    run_ = mpk::testing::store_fork_join(path_.str(), 3);
    reader_ = std::make_unique<TraceReader>(path_.str());
    model_ = std::make_unique<TraceModel>(*reader_, run_);
  }
  TempPath path_{"studio_fork_join.db"};
  int64_t run_ = 0;
  std::unique_ptr<TraceReader> reader_;
  std::unique_ptr<TraceModel> model_;
};

TEST_F(ForkJoinModel, LoadsExecutionsPerWorkerInOrder) {
  const TraceModel& m = *model_;
  EXPECT_EQ(m.num_workers(), 2);
  EXPECT_EQ(m.num_steps(), 3);
  EXPECT_EQ(m.duration_ns(), 2100);
  ASSERT_EQ(m.executions().size(), 12u);
  EXPECT_EQ(m.worker_range(0).size(), 6);
  EXPECT_EQ(m.worker_range(1).size(), 6);
  const Execution& q1 = m.execution(m.find(kQ1, 1));
  EXPECT_EQ(q1.worker, 1);
  EXPECT_EQ(q1.start_ns, 800);
  EXPECT_EQ(q1.end_ns, 1300);
  EXPECT_EQ(m.op_of(kQ1).name, "L0.q_proj");
  EXPECT_EQ(m.kind_of(kResidual), OpKind::kResidualAdd);
  EXPECT_EQ(m.label(m.find(kNorm, 0)), "L0.input_norm [task 0]");
}

TEST_F(ForkJoinModel, WindowQueries) {
  const TraceModel& m = *model_;
  // Worker 1: q1@0 [100, 600), r@0 [600, 700), q1@1 [800, 1300), ...
  IndexRange r = m.executions_in(1, 650, 820);
  ASSERT_EQ(r.size(), 2);
  EXPECT_EQ(r.begin, m.find(kResidual, 0));
  EXPECT_EQ(r.end - 1, m.find(kQ1, 1));
  // Half-open: a task ending at t0 is out, one starting at t1 is out.
  r = m.executions_in(1, 700, 800);
  EXPECT_TRUE(r.empty());
  r = m.executions_in(0, 0, 1);
  ASSERT_EQ(r.size(), 1);
  EXPECT_EQ(r.begin, m.find(kNorm, 0));
  EXPECT_TRUE(m.executions_in(0, 5000, 6000).empty());
  EXPECT_TRUE(m.executions_in(7, 0, 100).empty());
}

TEST_F(ForkJoinModel, ExecutionAndBubbleUnderTime) {
  const TraceModel& m = *model_;
  EXPECT_EQ(m.execution_at(0, 150), m.find(kQ0, 0));
  EXPECT_EQ(m.execution_at(0, 100), m.find(kQ0, 0));  // starts are inclusive
  EXPECT_EQ(m.execution_at(0, 350), -1);               // worker 0 idles [300, 700)
  EXPECT_EQ(m.execution_at(0, 350, 60), m.find(kQ0, 0));
  EXPECT_EQ(m.execution_at(0, 650, 60), m.find(kNorm, 1));

  const Bubble* b = m.bubble_at(0, 400);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->cause, BubbleCause::kQueueEmpty);
  EXPECT_EQ(b->start_ns, 300);
  EXPECT_EQ(b->end_ns, 600);
  b = m.bubble_at(0, 650);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->cause, BubbleCause::kStepTail);
  b = m.bubble_at(1, 50);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->cause, BubbleCause::kWait);
  EXPECT_EQ(b->event, 0);
  EXPECT_EQ(b->producer, kNorm);
  EXPECT_EQ(b->producer_worker, 0);
  EXPECT_EQ(m.bubble_at(0, 150), nullptr);  // busy
  EXPECT_EQ(m.bubble_at(0, 99999), nullptr);

  const IndexRange br = m.bubbles_in(0, 350, 650);
  ASSERT_EQ(br.size(), 2);
  EXPECT_EQ(m.bubbles(0)[static_cast<size_t>(br.begin)].cause, BubbleCause::kQueueEmpty);
}

TEST_F(ForkJoinModel, ProducersAndConsumers) {
  const TraceModel& m = *model_;
  const std::vector<DepLink> p = m.producers(m.find(kResidual, 1));
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].exec, m.find(kQ0, 1));
  EXPECT_EQ(p[1].exec, m.find(kQ1, 1));
  EXPECT_EQ(p[0].event, 1);

  const std::vector<DepLink> c = m.consumers(m.find(kResidual, 0));
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].task, kNorm);
  EXPECT_EQ(c[0].step, 1);
  EXPECT_EQ(c[0].step_distance, 1);
  EXPECT_EQ(c[0].exec, m.find(kNorm, 1));
  // The last step's residual feeds a step the run does not have.
  const std::vector<DepLink> last = m.consumers(m.find(kResidual, 2));
  ASSERT_EQ(last.size(), 1u);
  EXPECT_EQ(last[0].exec, -1);
  // Step 0's norm waits for a residual of step -1.
  const std::vector<DepLink> first = m.producers(m.find(kNorm, 0));
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].exec, -1);

  const Blame bl = m.blame(m.find(kResidual, 0));
  EXPECT_EQ(bl.producer, kQ1);
  EXPECT_EQ(bl.producer_end_ns, 600);
  EXPECT_EQ(m.previous_on_worker(m.find(kQ0, 0)), m.find(kNorm, 0));
  EXPECT_EQ(m.previous_on_worker(m.worker_range(1).begin), -1);
}

TEST_F(ForkJoinModel, CoarsePicture) {
  const TraceModel& m = *model_;
  const CoarsePicture& p = m.picture();
  // 2100 ns in 8192 cells: cells of 1 ns (the smallest).
  EXPECT_DOUBLE_EQ(p.cell_ns(), 1.0);
  const auto kind_at = [&](int32_t w, double t) {
    const int32_t x = p.cell(w, p.cell_at(t)).exec;
    return x < 0 ? -1 : static_cast<int>(m.kind_of(m.execution(x).task));
  };
  EXPECT_EQ(kind_at(0, 50), static_cast<int>(OpKind::kRmsNorm));
  EXPECT_EQ(kind_at(0, 150), static_cast<int>(OpKind::kLinear));
  EXPECT_EQ(kind_at(1, 650), static_cast<int>(OpKind::kResidualAdd));
  EXPECT_EQ(kind_at(0, 400), -1);  // idle
  EXPECT_EQ(kind_at(1, 50), -1);   // waiting
  EXPECT_EQ(p.cell(0, 50).busy, CoarsePicture::kBusyOne);
  EXPECT_EQ(p.cell(0, 400).busy, 0);
  EXPECT_EQ(p.cell(1, 50).cause, static_cast<int>(BubbleCause::kWait));
  // Worker 0 of step 0: busy [0, 300) of [0, 700); both workers busy 200 ns in [100, 300).
  const SpanSummary s0 = p.summarize(0, 0, 700);
  EXPECT_NEAR(s0.busy_ns, 300, 1e-6);
  EXPECT_EQ(s0.cause, static_cast<int>(BubbleCause::kQueueEmpty));
  EXPECT_NEAR(p.busy_workers(p.cell_at(150)), 2.0, 1e-9);
  EXPECT_NEAR(p.busy_workers(p.cell_at(650)), 1.0, 1e-9);
  // Outside the run and unknown workers: nothing.
  EXPECT_EQ(p.summarize(0, -50, -10).busy_ns, 0);
  EXPECT_EQ(p.summarize(5, 0, 100).exec, -1);
  // Bytes spread over each execution's time add up to the tasks' bytes.
  double bytes = 0;
  for (int32_t c = 0; c < p.num_cells(); ++c) bytes += p.bytes(c);
  double want = 0;
  for (const Execution& e : m.executions()) want += static_cast<double>(m.task(e.task).bytes);
  EXPECT_NEAR(bytes, want, 1e-6 * want);
}

TEST_F(ForkJoinModel, BusyTimeAndExactSummaries) {
  const TraceModel& m = *model_;
  EXPECT_EQ(m.busy_ns(0, 0, 700), 300);
  EXPECT_EQ(m.busy_ns(1, 0, 700), 600);
  EXPECT_EQ(m.busy_ns(1, 50, 150), 50);
  EXPECT_EQ(m.busy_ns(1, 0, 2100), 3 * 600);
  EXPECT_DOUBLE_EQ(m.busy_before(0, 250), 250);
  int64_t hint = -1;
  EXPECT_DOUBLE_EQ(m.busy_before(1, 650, &hint), 550);
  EXPECT_DOUBLE_EQ(m.busy_before(1, 900, &hint), 700);  // a later t from the hint
  const SpanSummary s = m.summarize(1, 0, 700);
  EXPECT_DOUBLE_EQ(s.busy_ns, 600);
  EXPECT_EQ(s.cause, static_cast<int>(BubbleCause::kWait));
  EXPECT_EQ(s.exec, m.find(kQ1, 0));
  EXPECT_EQ(m.summarize(0, 310, 690).exec, -1);  // idle all through
}

TEST(TraceModel, ALinearGroupIsOneExecutionWithMembers) {
  TempPath db("studio_grouped.db");
  const int64_t run = write_run(db.str(), mpk::testing::grouped_graph(), RunInfo{}, mpk::testing::grouped_execs());
  const TraceReader reader(db.str());
  const TraceModel m(reader, run);
  // q and k of layer 0 (tasks 1, 2) ran as one on worker 1 over [110, 300).
  const int64_t q = m.find(1, 0), k = m.find(2, 0);
  EXPECT_EQ(k, q + 1);
  EXPECT_EQ(m.group_of(q).begin, q);
  EXPECT_EQ(m.group_of(k).begin, q);
  EXPECT_EQ(m.group_of(k).size(), 2);
  EXPECT_EQ(m.group_of(m.find(0, 0)).size(), 1);
  EXPECT_EQ(m.label(k), "2 tasks: L0.q_proj+k_proj [tasks 1, 2]");
  EXPECT_EQ(m.group_name(q), "L0.q_proj+k_proj");
  EXPECT_EQ(m.label(m.find(0, 0)), "L0.input_norm [task 0]");
  // Busy time is the union: worker 1 was busy 190 + 240 ns, not twice that.
  EXPECT_EQ(m.busy_ns(1, 0, 800), 430);
  EXPECT_EQ(m.busy_ns(0, 0, 800), 315);
  // The hit lookup finds the group's first member; both are reachable by task.
  EXPECT_EQ(m.execution_at(1, 200), q);
}

TEST(TraceModel, WideBubblesMatchBruteForce) {
  TempPath path("studio_tiny_lod.db");
  const int64_t run = mpk::testing::store_tiny(path.str(), 3);
  const TraceReader reader(path.str());
  const TraceModel m(reader, run);
  std::mt19937_64 rng(7);
  int checked = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int32_t w = static_cast<int32_t>(rng() % static_cast<uint64_t>(m.num_workers()));
    const int64_t t0 = static_cast<int64_t>(rng() % static_cast<uint64_t>(m.duration_ns()));
    const int64_t t1 = t0 + 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(m.duration_ns()));
    const int64_t min_ns = int64_t{1} << (rng() % 16);
    std::vector<int64_t> got;
    m.wide_bubbles(w, t0, t1, min_ns, got);
    const auto bs = m.bubbles(w);
    for (size_t i = 0; i < bs.size(); ++i) {
      const bool overlaps = bs[i].start_ns < t1 && bs[i].end_ns > t0;
      const int64_t d = bs[i].end_ns - bs[i].start_ns;
      const bool listed = std::find(got.begin(), got.end(), static_cast<int64_t>(i)) != got.end();
      if (overlaps && d >= min_ns) {
        EXPECT_TRUE(listed) << "bubble " << i << " of worker " << w;
      }
      if (listed) {
        EXPECT_TRUE(overlaps);
        EXPECT_GE(2 * d, min_ns);
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 100);
}

TEST(TraceModel, UnknownRunIsAnError) {
  TempPath path("studio_unknown_run.db");
  mpk::testing::store_fork_join(path.str(), 1);
  const TraceReader reader(path.str());
  EXPECT_THROW(TraceModel(reader, 99), Error);
}

TEST(TraceModelRows, RowsNameTheWorkerAndTheSmItRanOn) {
  // As on the GPU: worker 0 ran on SM 128, worker 1 on SM 3.
  std::vector<Execution> execs = mpk::testing::grouped_execs();
  for (Execution& e : execs) e.sm = e.worker == 0 ? 128 : 3;
  TempPath db("rows_sm.db");
  RunInfo info;
  info.device.sm_count = 132;
  const int64_t run = write_run(db.str(), mpk::testing::grouped_graph(), info, execs);
  TraceReader reader(db.str());
  const TraceModel m(reader, run);
  EXPECT_EQ(m.sm_of(0), 128);
  EXPECT_EQ(m.sm_of(1), 3);
  EXPECT_EQ(m.row_label(0), "w0 SM 128");
  EXPECT_EQ(m.row_label(1), "w1 SM 3");
}

}  // namespace
}  // namespace mpk::studio
