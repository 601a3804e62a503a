// kill -9 during trace.db appends: `mpk run --backend sim --trace T.db` appends one run per
// process; the test kills 20 or more of them with SIGKILL at varied moments (before, during and after
// the write) and checks each time that the file opens and every run it lists reads back whole
// and consistent, then that the CLI reads every run and a further append succeeds.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <cstdio>
#include <random>
#include <thread>
#include <vector>

#include "tests/hostile/hostile_fixture.h"
#include "traces/analysis.h"
#include "traces/trace_db.h"

namespace mpk::hostile {
namespace {

class TraceDbKill : public HostileTest {
 protected:
  // Starts one sim run appending to `db`, its output discarded.
  pid_t start_append(const std::string& db) const {
    const std::string mpk = bin("mpk");
    const pid_t pid = ::fork();
    if (pid == 0) {
      const int null = ::open("/dev/null", O_WRONLY);  // dup2, not freopen: no stdio flush
      ::dup2(null, 1);
      ::dup2(null, 2);
      ::execl(mpk.c_str(), mpk.c_str(), "run", "--model", "tiny", "--backend", "sim", "--steps", "2",
              "--trace", db.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    return pid;
  }

  static int wait_for(pid_t pid) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    return status;
  }

  // Every run listed reads back: its graph, every table, and the statistics of `trace stats`.
  static size_t check_every_run(const std::string& db) {
    const TraceReader r(db);
    const std::vector<RunRecord> runs = r.runs();
    for (const RunRecord& run : runs) {
      SCOPED_TRACE("run " + std::to_string(run.id));
      EXPECT_EQ(static_cast<int64_t>(r.executions(run.id).size()), run.num_executions);
      EXPECT_EQ(static_cast<int64_t>(r.steps(run.id).size()), run.steps);
      EXPECT_EQ(run.steps, 2);
      EXPECT_FALSE(r.bubbles(run.id).empty());
      EXPECT_FALSE(r.operator_stats(run.id).empty());
      EXPECT_GT(compute_stats(r, run.id).path_tasks, 0);
    }
    return runs.size();
  }
};

TEST_F(TraceDbKill, KilledAppendsLeaveEveryListedRunWhole) {
  const std::string db = path("t.db");
  // One whole append first: the file exists, and its time scales the kill moments.
  const auto t0 = std::chrono::steady_clock::now();
  int status = wait_for(start_append(db));
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const auto whole = std::chrono::steady_clock::now() - t0;
  std::mt19937 rng(13);
  std::uniform_real_distribution<double> at(0.1, 1.0);  // of a whole append's time
  size_t runs = 1, killed = 0, mid_write = 0;
  int i = 0;
  // 20 kills, and more (up to 80) until one strikes inside a write: on a loaded machine the
  // first append's time is a rough guide to when the write happens.
  for (; i < 20 || (mid_write == 0 && i < 80); ++i) {
    SCOPED_TRACE("kill " + std::to_string(i));
    const pid_t pid = start_append(db);
    std::this_thread::sleep_for(std::chrono::duration_cast<std::chrono::microseconds>(whole * at(rng)));
    ::kill(pid, SIGKILL);
    status = wait_for(pid);
    // A journal left behind: killed inside its write transaction.
    mid_write += std::filesystem::exists(db + "-journal");
    if (WIFSIGNALED(status)) ++killed;
    else ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
    const size_t now = check_every_run(db);
    EXPECT_GE(now, runs);  // a kill never loses a committed run
    EXPECT_LE(now, runs + 1);
    runs = now;
  }
  EXPECT_GT(killed, 0u) << "every append ended before its kill";
  EXPECT_GT(mid_write, 0u) << "no kill struck inside a write transaction";
  std::printf("%zu of %d appends killed, %zu of them inside the write; %zu runs\n", killed, i, mid_write, runs);
  // The CLI reads every run, and the file takes a further append.
  const CliResult list = run("mpk", "trace runs '" + db + "'");
  expect_clean(list);
  EXPECT_EQ(list.status, 0) << list.err;
  for (size_t id = 1; id <= runs; ++id) {  // a rolled-back run leaves no gap in the ids
    const CliResult stats = run("mpk", "trace stats '" + db + "' --run " + std::to_string(id));
    expect_clean(stats);
    EXPECT_EQ(stats.status, 0) << stats.err;
  }
  status = wait_for(start_append(db));
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(check_every_run(db), runs + 1);
}

}  // namespace
}  // namespace mpk::hostile
