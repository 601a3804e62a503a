// A tensor-parallel launch in trace.db (docs/trace-schema.md "Ranks"): the cpu executor's
// ranks of tiny at tp 2 are stored as one run per rank, in one transaction, on one time
// axis; traces/rank_clocks.h puts ranks whose clocks disagree back on rank 0's; files of
// schema 2 read as single-rank runs and are upgraded by a writer; damaged rank rows are
// refused with one message.
#include <gtest/gtest.h>

#include <map>

#include "driver/record.h"
#include "driver_test_util.h"
#include "ir/error.h"
#include "tests/traces/aged_trace.h"
#include "tests/traces/cross_rank_order.h"
#include "traces/analysis.h"
#include "traces/rank_clocks.h"

namespace mpk {
namespace {

using testing::DriverTest;
using testing::check_cross_rank_order;
using testing::error_of;

Compiled tiny_tp2() {
  CompileRequest r;
  r.model = "tiny";
  r.tp = 2;
  return compile(r);
}

ExecResult run_cpu_ranks(const Module& m, std::unique_ptr<Executor>* cpu) {
  ExecutorOptions o;
  o.threads = 2;
  *cpu = make_executor("cpu", m, o);
  return (*cpu)->run({4, {1, 2}, true});
}

TEST_F(DriverTest, ATensorParallelLaunchIsOneRunPerRankOnOneTimeAxis) {
  const Compiled c = tiny_tp2();
  std::unique_ptr<Executor> cpu;
  const ExecResult r = run_cpu_ranks(c.module, &cpu);
  const size_t tasks = c.module.graph.tasks.size();
  ASSERT_EQ(r.executions.size(), 2 * 4 * tasks);  // every task of both ranks at every step
  EXPECT_GT(check_cross_rank_order(c.module, r.executions), 0);

  const std::string trace = path("t.db");
  const int64_t id = record_run(trace, c.module, *cpu, r, {"tiny", "", ""});
  const TraceReader reader(trace);
  const std::vector<RunRecord> ranks = reader.rank_runs(id);
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(reader.rank_runs(ranks[1].id)[0].id, id);  // from either rank
  EXPECT_EQ(reader.runs().size(), 2u);
  int64_t origin = INT64_MAX;  // the launch's first wait, where rank 0's run starts
  for (const Execution& x : r.executions)
    if (x.rank == 0) origin = std::min(origin, x.wait_begin_ns);
  for (int32_t k = 0; k < 2; ++k) {
    const RunRecord& run = ranks[k];
    EXPECT_EQ(run.rank, k);
    EXPECT_EQ(run.ranks, 2);
    EXPECT_EQ(run.rank0_run, k == 0 ? 0 : id);
    EXPECT_EQ(run.graph, ranks[0].graph);
    EXPECT_EQ(run.steps, 4);
    EXPECT_EQ(reader.steps(run.id).size(), 4u);
    EXPECT_NE(format_run_title(run).find(" rank " + std::to_string(k) + " of 2"), std::string::npos);
    // Each rank's executions, from its own start, are the executor's at rank_offset_ns on
    // rank 0's axis.
    std::map<std::pair<TaskId, int32_t>, Execution> want;
    for (const Execution& x : r.executions)
      if (x.rank == k) want[{x.task, x.step}] = x;
    const std::vector<ExecutionRecord> got = reader.executions(run.id);
    ASSERT_EQ(got.size(), 4 * tasks);
    for (const ExecutionRecord& x : got) {
      const Execution& w = want.at({x.task, x.step});
      EXPECT_EQ(x.start_ns + run.rank_offset_ns, w.start_ns - origin);
      EXPECT_EQ(x.end_ns + run.rank_offset_ns, w.end_ns - origin);
      EXPECT_EQ(x.worker, w.worker);
    }
  }
  EXPECT_EQ(ranks[0].rank_offset_ns, 0);
}

TEST_F(DriverTest, RankClocksThatDisagreeAreAlignedByTheirCrossRankWaits) {
  const Compiled c = tiny_tp2();
  std::unique_ptr<Executor> cpu;
  const ExecResult r = run_cpu_ranks(c.module, &cpu);

  // The CPU's ranks share one clock: the traces agree with it, and nothing moves.
  std::vector<Execution> same = r.executions;
  const std::vector<RankClock> agree = align_rank_clocks(c.module, same);
  ASSERT_EQ(agree.size(), 2u);
  EXPECT_TRUE(agree[1].bounded);
  EXPECT_LE(agree[1].lo_ns, 0);
  EXPECT_GE(agree[1].hi_ns, 0);
  EXPECT_EQ(agree[1].offset_ns, 0);
  for (size_t i = 0; i < same.size(); ++i) EXPECT_EQ(same[i].start_ns, r.executions[i].start_ns);

  // Rank 1's clock 5 ms ahead: it is moved back into the interval that the waits allow,
  // shifted by the same 5 ms, and every cross-rank wait is in order again.
  constexpr int64_t kSkew = 5'000'000;
  for (const int64_t skew : {kSkew, -kSkew}) {
    std::vector<Execution> skewed = r.executions;
    for (Execution& x : skewed)
      if (x.rank == 1) {
        x.wait_begin_ns += skew;
        x.start_ns += skew;
        x.end_ns += skew;
      }
    const std::vector<RankClock> fixed = align_rank_clocks(c.module, skewed);
    EXPECT_EQ(fixed[0].offset_ns, 0);
    EXPECT_EQ(fixed[1].lo_ns, agree[1].lo_ns - skew);
    EXPECT_EQ(fixed[1].hi_ns, agree[1].hi_ns - skew);
    EXPECT_GE(fixed[1].offset_ns, fixed[1].lo_ns);
    EXPECT_LE(fixed[1].offset_ns, fixed[1].hi_ns);
    EXPECT_GT(check_cross_rank_order(c.module, skewed), 0);
  }

  std::vector<Execution> foreign = r.executions;
  foreign[0].rank = 2;
  EXPECT_NE(error_of([&] { align_rank_clocks(c.module, foreign); }).find("on rank 2 is not of the module"),
            std::string::npos);
}

TEST_F(DriverTest, SchemaTwoFilesReadAsSingleRankRunsAndAreUpgraded) {
  const Compiled one = testing::tiny();
  const std::string trace = path("t.db");
  const std::unique_ptr<Executor> sim = make_executor("sim", one.module, ExecutorOptions{});
  const int64_t old = record_run(trace, one.module, *sim, sim->run({2, {1}, true}), {"tiny", "", ""});
  mpk::testing::age_to_schema(trace, 2);
  {
    const TraceReader reader(trace);
    const RunRecord r = reader.run(old);
    EXPECT_EQ(r.rank, 0);
    EXPECT_EQ(r.ranks, 1);
    EXPECT_EQ(reader.rank_runs(old).size(), 1u);
    EXPECT_TRUE(reader.stored_module(old));
  }
  const Compiled c = tiny_tp2();
  std::unique_ptr<Executor> cpu;
  const int64_t id = record_run(trace, c.module, *cpu, run_cpu_ranks(c.module, &cpu), {"tiny", "", ""});
  EXPECT_EQ(testing::scalar(trace, "SELECT value FROM meta WHERE key = 'schema_version'"), "3");
  const TraceReader reader(trace);
  EXPECT_EQ(reader.rank_runs(id).size(), 2u);
  EXPECT_EQ(reader.run(old).ranks, 1);
}

TEST_F(DriverTest, DamagedRankRowsAreRefusedWithOneMessage) {
  const Compiled c = tiny_tp2();
  std::unique_ptr<Executor> cpu;
  ExecResult r = run_cpu_ranks(c.module, &cpu);

  // The writer refuses a rank the module does not have, and writes nothing.
  const std::string trace = path("t.db");
  ExecResult bad = r;
  bad.executions.back().rank = 2;
  EXPECT_NE(error_of([&] { record_run(trace, c.module, *cpu, bad, {"tiny", "", ""}); })
                .find("on rank 2: the module has 2 tensor-parallel rank(s)"),
            std::string::npos);

  const int64_t id = record_run(trace, c.module, *cpu, r, {"tiny", "", ""});
  const std::string base = path("base.db");
  std::filesystem::copy_file(trace, base);
  auto damaged = [&](const std::string& sql) {
    std::filesystem::copy_file(base, trace, std::filesystem::copy_options::overwrite_existing);
    testing::sql(trace, sql);
    return error_of([&] {
      const TraceReader reader(trace);
      reader.runs();
      reader.rank_runs(id);
    });
  };
  const std::string run1 = trace + ": run " + std::to_string(id + 1);
  EXPECT_EQ(damaged("UPDATE run SET rank0_run = NULL WHERE rank = 1"), run1 + ": rank 1 has no rank0_run");
  EXPECT_EQ(damaged("UPDATE run SET rank0_run = 1 WHERE rank = 0"), trace + ": run 1: rank0_run is set for rank 0");
  EXPECT_EQ(damaged("UPDATE run SET ranks = 9"), trace + ": run 1: ranks must be in 1..8, got 9");
  EXPECT_EQ(damaged("UPDATE run SET rank = 5 WHERE rank = 1"), run1 + ": rank must be in 0..1, got 5");
  EXPECT_EQ(damaged("DELETE FROM run WHERE rank = 1"),
            trace + ": the ranks of run 1: 1 of its 2 ranks are stored");
  EXPECT_EQ(damaged("UPDATE run SET rank = 0, rank0_run = NULL WHERE rank = 1"),
            trace + ": the ranks of run 1: 1 of its 2 ranks are stored");
}

}  // namespace
}  // namespace mpk
