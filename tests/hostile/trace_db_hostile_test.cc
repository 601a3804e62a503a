// Hostile trace.db files, cost files and machine models given to `mpk trace`, `mpk calibrate`
// and `mpk run --backend sim`: each edited row, bound or output path is refused with one line
// naming the table, the row and the field (or the setting), never a crash, a hang, a huge
// allocation or a half-written output.
#include <sqlite3.h>
#include <sys/stat.h>

#include <filesystem>

#include "tests/hostile/hostile_fixture.h"

namespace mpk::hostile {
namespace {

class TraceDbHostile : public HostileTest {
 protected:
  // A fresh trace.db of the tiny preset (2 steps, 132 workers) with `sql` applied.
  std::string trace(const std::string& sql = "", const std::string& name = "t.db") {
    const std::string db = path(name);
    const CliResult r = run("mpk", "run --model tiny --backend sim --steps 2 --trace '" + db + "'", 120);
    EXPECT_EQ(r.status, 0) << r.err;
    if (!sql.empty()) apply(db, sql);
    return db;
  }

  static void apply(const std::string& db, const std::string& sql) {
    sqlite3* h = nullptr;
    ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
    char* err = nullptr;
    const int rc = sqlite3_exec(h, sql.c_str(), nullptr, nullptr, &err);
    EXPECT_EQ(rc, SQLITE_OK) << (err ? err : "") << "\n" << sql;
    sqlite3_free(err);
    sqlite3_close(h);
  }

  static int64_t count(const std::string& db, const std::string& table) {
    sqlite3* h = nullptr;
    sqlite3_open(db.c_str(), &h);
    sqlite3_stmt* q = nullptr;
    sqlite3_prepare_v2(h, ("SELECT count(*) FROM " + table).c_str(), -1, &q, nullptr);
    const int64_t n = sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_int64(q, 0) : -1;
    sqlite3_finalize(q);
    sqlite3_close(h);
    return n;
  }

  // Every reader of a run: stats, path, diff, export and calibrate, each refused with PHRASE.
  void expect_every_reader_refuses(const std::string& db, const std::string& phrase) {
    const std::string q = "'" + db + "'";
    for (const std::string& args : {"trace stats " + q, "trace path " + q, "trace diff " + q + " --run 1 --run 1",
                                    "trace export --chrome '" + path("out.json") + "' " + q,
                                    "calibrate " + q + " -o '" + path("costs.json") + "'"}) {
      SCOPED_TRACE(args);
      expect_refused(run("mpk", args), phrase);
    }
    EXPECT_FALSE(std::filesystem::exists(path("out.json")));
    EXPECT_FALSE(std::filesystem::exists(path("out.json.tmp")));
    EXPECT_FALSE(std::filesystem::exists(path("costs.json")));
  }

  // Writes past a 1 KiB file size limit fail (SIGXFSZ ignored), as on a full disk.
  CliResult run_with_small_disk(const std::string& args) const {
    const std::string out = path(".stdout"), err = path(".stderr");
    const std::string cmd = "sh -c 'ulimit -f 1; trap \"\" XFSZ; exec timeout -s KILL 60 " +
                            bin("mpk") + " " + args + "' >'" + out + "' 2>'" + err + "'";
    const int raw = std::system(cmd.c_str());
    CliResult r;
    r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    std::ifstream e(err);
    r.err.assign(std::istreambuf_iterator<char>(e), {});
    return r;
  }

  // The tiny preset's scheduled module (mpk-opt) with its machine line edited.
  std::string module_with_machine(const std::string& from, const std::string& to) const {
    const CliResult made = run("mpk-opt", "tiny --emit=text -o '" + path("tiny.mpk") + "'");
    EXPECT_EQ(made.status, 0) << made.err;
    std::string text = read(path("tiny.mpk"));
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    std::ofstream(path("m.mpk")) << text;
    return path("m.mpk");
  }
};

// The first execution row of worker 0 (the table is WITHOUT ROWID).
const std::string kFirstExecution =
    " WHERE worker = 0 AND start_ns = (SELECT min(start_ns) FROM execution WHERE worker = 0)";

TEST_F(TraceDbHostile, ExecutionTaskOutOfRangeIsRefused) {
  const std::string db = trace("UPDATE execution SET task = 100000000" + kFirstExecution);
  const std::string last = std::to_string(count(db, "task") - 1);
  expect_every_reader_refuses(db, "run 1: execution row 0: task 100000000 is not a task of the run's graph (0.." +
                                      last + ")");
}

TEST_F(TraceDbHostile, ExecutionStepBeyondTheRunIsRefused) {
  const std::string db = trace("UPDATE execution SET step = 100000" + kFirstExecution);
  expect_every_reader_refuses(db, "run 1: execution row 0: step 100000 is not a step of the run (0..1)");
}

TEST_F(TraceDbHostile, TaskIdsWithAGapAreRefusedBeforeTheSimulator) {
  const std::string db = trace();
  const std::string last = std::to_string(count(db, "task") - 1);
  apply(db, "UPDATE task SET id = 100000 WHERE id = " + last);
  expect_refused(run("mpk", "calibrate '" + db + "' -o '" + path("c.json") + "'"),
                 "graph 1: task row " + last + ": id 100000 where " + last + " was expected");
}

TEST_F(TraceDbHostile, TwoBillionWorkersInTheGraphAreRefusedNotAllocated) {
  const std::string db = trace("UPDATE graph SET num_workers = 2147483648");
  expect_every_reader_refuses(db, "graph 1: num_workers must be in 1..4096, got 2147483648");
}

TEST_F(TraceDbHostile, RunStepsBeyondItsStepRowsAreRefused) {
  const std::string db = trace("UPDATE run SET steps = 100000");
  expect_every_reader_refuses(db, "run 1: the run row says 100000 steps, the step table holds 2");
}

TEST_F(TraceDbHostile, EventEndNamingNoTaskIsRefused) {
  const std::string db = trace("UPDATE event_consumer SET task = 5000 WHERE task = 3");
  expect_every_reader_refuses(db, "graph 1: event_consumer row");
}

TEST_F(TraceDbHostile, ExecutionTimesPastTheRunAreRefused) {
  const std::string db = trace("UPDATE execution SET end_ns = 4611686018427387904" + kFirstExecution);
  expect_every_reader_refuses(db, "run 1: execution row 0: end_ns must be in");
}

TEST_F(TraceDbHostile, BlameCycleFromAnEditedConsumerEndsTheWalk) {
  // Task 0 waits on the event it triggers itself: the walk meets it again and stops.
  const std::string db = trace("INSERT INTO event_consumer(graph, event, task) VALUES(1, 1, 0)");
  for (const std::string& args : {"trace stats '" + db + "' --path", "trace diff '" + db + "' --run 1 --run 1"}) {
    const CliResult r = run("mpk", args, 20);
    expect_clean(r);
    EXPECT_EQ(r.status, 0) << r.err;
  }
}

TEST_F(TraceDbHostile, StatsStepBeyondInt32IsRefusedNotTruncated) {
  const std::string db = trace();
  expect_refused(run("mpk", "trace stats '" + db + "' --step 4294967296"),
                 "run 1 has no step 4294967296 (it ran 2)");
}

TEST_F(TraceDbHostile, ExportStepsBeyondTheRunAreRefused) {
  const std::string db = trace();
  expect_refused(run("mpk", "trace export --chrome '" + path("o.json") + "' '" + db + "' --steps 5:9"),
                 "run 1 has no step 5 (steps 0..1)");
  expect_refused(run("mpk", "trace export --chrome '" + path("o.json") + "' '" + db +
                                "' --steps 4294967296:4294967297"),
                 "run 1 has no step 4294967296");
  EXPECT_FALSE(std::filesystem::exists(path("o.json")));
}

TEST_F(TraceDbHostile, ExportToFifoIsWrittenInPlace) {
  const std::string db = trace(), fifo = path("out.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const CliResult r = run("mpk", "trace export --chrome '" + fifo + "' '" + db + "' & timeout 30 cat '" + fifo + "' >'" +
                                     path("got") + "'; wait");
  expect_clean(r);
  EXPECT_NE(read(path("got")).find("traceEvents"), std::string::npos);
  struct stat st{};
  ASSERT_EQ(::stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode)) << "the fifo was replaced by a regular file";
  EXPECT_FALSE(std::filesystem::exists(fifo + ".tmp"));
}

TEST_F(TraceDbHostile, CalibrateOnAFullDiskKeepsTheOldCostFile) {
  const std::string db = trace(), costs = write("costs.json", "{\"note\": \"the old costs\"}\n");
  const CliResult r = run_with_small_disk("calibrate " + db + " -o " + costs);
  expect_refused(r, "costs.json");
  EXPECT_EQ(read(costs), "{\"note\": \"the old costs\"}\n");
  for (const auto& entry : std::filesystem::directory_iterator(dir_))
    EXPECT_EQ(entry.path().filename().string().find("costs.json."), std::string::npos)
        << "left behind: " << entry.path();
}

TEST_F(TraceDbHostile, SimAppendToADamagedGraphIsNotCommitted) {
  // The next run of the same graph reuses graph 1 by its digest: its rows do not read back.
  const std::string db = trace("UPDATE task SET worker = 99999 WHERE id = 3");
  expect_refused(run("mpk", "run --model tiny --backend sim --steps 2 --trace '" + db + "'"),
                 "graph 1: task row 3: worker 99999 is not a worker of the graph's schedule (0..131)");
  EXPECT_EQ(count(db, "run"), 1);
}

TEST_F(TraceDbHostile, CostFileThatNeverEndsIsRefused) {
  expect_refused(run("mpk", "run --model tiny --backend sim --steps 1 --costs /dev/zero --trace '" +
                                path("t.db") + "'", 30),
                 "cost file '/dev/zero' is larger than 1 MiB");
}

TEST_F(TraceDbHostile, TinyBandwidthInACostFileIsRefusedNotADeadlock) {
  const std::string costs = write("c.json", "{\"mem_bandwidth\": 1e-300}");
  const CliResult r = run("mpk", "run --model tiny --backend sim --steps 1 --costs '" + costs + "' --trace '" +
                                     path("t.db") + "'");
  expect_refused(r, "c.json: mem_bandwidth (bytes/s) must be in 1000..1e+15, got 1e-300");
  EXPECT_EQ(r.err.find("deadlock"), std::string::npos);
}

TEST_F(TraceDbHostile, AbsurdFixedTimeInACostFileIsRefused) {
  const std::string costs = write("c.json", "{\"kinds\": {\"linear\": {\"fixed_ns\": 1e300}}}");
  expect_refused(run("mpk", "run --model tiny --backend sim --steps 1 --costs '" + costs + "' --trace '" +
                                path("t.db") + "'"),
                 "c.json: kinds.linear.fixed_ns must be in 0..1e+09, got 1e+300");
}

TEST_F(TraceDbHostile, NanBandwidthInTheMachineModelIsRefused) {
  const std::string m = module_with_machine("mem_bandwidth=3000000000000.0", "mem_bandwidth=nan");
  expect_refused(run("mpk", "run --graph '" + m + "' --backend sim --steps 1 --trace '" + path("t.db") + "'"),
                 "mem_bandwidth");
  EXPECT_FALSE(std::filesystem::exists(path("t.db")));
}

TEST_F(TraceDbHostile, NegativeEventLatencyInTheMachineModelIsRefused) {
  const std::string m = module_with_machine("event_latency_ns=1000.0 task", "event_latency_ns=-5 task");
  expect_refused(run("mpk", "run --graph '" + m + "' --backend sim --steps 1 --trace '" + path("t.db") + "'"),
                 "event_latency_ns");
}

TEST_F(TraceDbHostile, HugeSmCountWithThousandsOfEmptyWorkersIsRefused) {
  std::string workers;
  for (int w = 132; w < 5000; ++w) workers += "worker " + std::to_string(w) + ":\n";
  const std::string m = module_with_machine("sm_count=132", "sm_count=2147483647");
  std::ofstream(m, std::ios::app) << workers;
  expect_refused(run("mpk", "run --graph '" + m + "' --backend sim --steps 1 --trace '" + path("t.db") + "'"),
                 "sm_count");
  EXPECT_FALSE(std::filesystem::exists(path("t.db")));
}

TEST_F(TraceDbHostile, SimStepsBeyondInt32AreRefusedNotTruncated) {
  expect_refused(run("mpk", "run --model tiny --backend sim --steps 2147483648 --trace '" + path("t.db") + "'"),
                 "2147483648");
}

}  // namespace
}  // namespace mpk::hostile
