// Busy time is a union of intervals (traces/busy_time.h): a linear group's members share
// one interval and count once, in busy_union_ns, its prefix form and `trace stats`, which
// must agree with the union of the execution rows read back with plain SQL; time per kind
// counts a group once too.
#include "traces/busy_time.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>

#include "tests/traces/test_graphs.h"
#include "traces/analysis.h"

namespace mpk {
namespace {

using testing::grouped_execs;
using testing::grouped_graph;
using testing::TempPath;

// worker 0: [0,100) [310,400) [405,450) [720,800) = 315 ns; worker 1: the groups
// [110,300) x2 and [460,700) x2 = 430 ns. Summed, the members would give 1175.
constexpr int64_t kGroupedUnion = 745;

// The union of the execution rows of `run`, from SQL rows merged here.
int64_t sql_union(const std::string& db, int64_t run) {
  sqlite3* h = nullptr;
  EXPECT_EQ(sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  const std::string sql =
      "SELECT worker, start_ns, end_ns FROM execution WHERE run = " + std::to_string(run) +
      " ORDER BY worker, start_ns";
  EXPECT_EQ(sqlite3_prepare_v2(h, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(h);
  int64_t total = 0, worker = -1, lo = 0, hi = 0;
  while (sqlite3_step(st) == SQLITE_ROW) {
    const int64_t w = sqlite3_column_int64(st, 0), s = sqlite3_column_int64(st, 1), e = sqlite3_column_int64(st, 2);
    if (w != worker || s > hi) {
      total += hi - lo;
      worker = w, lo = s, hi = e;
    } else {
      hi = std::max(hi, e);
    }
  }
  total += hi - lo;
  sqlite3_finalize(st);
  sqlite3_close(h);
  return total;
}

TEST(BusyTime, GroupMembersCountOnce) {
  std::vector<Execution> execs = grouped_execs();
  EXPECT_EQ(busy_union_ns(execs), kGroupedUnion);
  std::reverse(execs.begin(), execs.end());  // any order
  EXPECT_EQ(busy_union_ns(execs), kGroupedUnion);
}

TEST(BusyTime, OverlapsAndNestingAreMergedPerWorker) {
  // task, step, worker, sm, wait_begin, start, end
  const std::vector<Execution> execs = {{0, 0, 0, 0, 0, 0, 10}, {1, 0, 0, 0, 0, 5, 20}, {2, 0, 0, 0, 0, 6, 8},
                                        {3, 0, 1, 1, 0, 5, 20}, {4, 0, 0, 0, 0, 30, 31}};
  EXPECT_EQ(busy_union_ns(execs), 20 + 15 + 1);
}

TEST(BusyTime, PerStepUnions) {
  std::vector<Execution> execs = grouped_execs();
  Execution later = execs[1];  // the first group again, in step 1
  later.step = 1;
  execs.push_back(later);
  execs.push_back(later);
  EXPECT_EQ(busy_union_per_step(execs, 2), (std::vector<int64_t>{kGroupedUnion, 190}));
  EXPECT_EQ(busy_union_per_step(execs, 1), (std::vector<int64_t>{kGroupedUnion}));
}

TEST(BusyTime, PrefixGivesEachRunOfOneWorker) {
  std::vector<Execution> execs = grouped_execs();
  std::sort(execs.begin(), execs.end(), [](const Execution& a, const Execution& b) {
    return a.worker != b.worker ? a.worker < b.worker : a.start_ns < b.start_ns;
  });
  const std::vector<int64_t> p = busy_union_prefix(execs);
  ASSERT_EQ(p.size(), execs.size() + 1);
  EXPECT_EQ(p.back(), kGroupedUnion);
  EXPECT_EQ(p[4] - p[0], 315);  // worker 0's four executions
  EXPECT_EQ(p[8] - p[4], 430);  // worker 1's two groups
  EXPECT_EQ(p[6] - p[4], 190);  // the first group
}

TEST(BusyTime, TraceStatsAgreeWithTheSqlUnion) {
  TempPath db("busy_grouped.db");
  const int64_t run = write_run(db.str(), grouped_graph(), RunInfo{}, grouped_execs());
  const TraceReader reader(db.str());
  const RunStats s = compute_stats(reader, run);
  EXPECT_EQ(sql_union(db.str(), run), kGroupedUnion);
  EXPECT_EQ(s.busy_ns, kGroupedUnion);
  EXPECT_DOUBLE_EQ(s.utilization, static_cast<double>(kGroupedUnion) / (2.0 * static_cast<double>(s.run.duration_ns)));
  EXPECT_LE(s.utilization, 1.0);
  // Time per kind counts a group once: the kinds add up to the busy time.
  ASSERT_EQ(s.kinds.size(), 1u);
  EXPECT_EQ(s.kinds[0].executions, 6);  // 8 rows, two of them the second members of groups
  EXPECT_EQ(s.kinds[0].total_ns, kGroupedUnion);
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_EQ(s.steps[0].busy_ns, kGroupedUnion);  // the step row the writer derived
}

}  // namespace
}  // namespace mpk
