// trace.db robustness: a writer killed mid-run leaves earlier runs intact; corrupt,
// truncated, foreign and newer files are refused with one clear message.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "ir/error.h"
#include "tests/traces/test_graphs.h"
#include "traces/simulator.h"
#include "traces/trace_db.h"

namespace mpk {
namespace {

using testing::GraphBuilder;
using testing::TempPath;

// A graph big enough that a run spills pages to the file before it commits.
Module wide_graph() {
  GraphBuilder g(16);
  OpId op = g.op("op");
  std::vector<std::vector<TaskId>> lists(16);
  std::vector<TaskId> prev;
  for (int layer = 0; layer < 40; ++layer) {
    std::vector<TaskId> cur;
    for (int w = 0; w < 16; ++w) {
      TaskId t = g.task(op, 1000 + 10 * w);
      lists[w].push_back(t);
      cur.push_back(t);
    }
    if (!prev.empty()) g.event(prev, cur);
    prev = cur;
  }
  return g.schedule(lists);
}

std::string error_of(const std::string& path) {
  try {
    TraceReader r(path);
    r.runs();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void expect_refused(const std::string& path, const std::string& needle) {
  const std::string msg = error_of(path);
  EXPECT_NE(msg.find(needle), std::string::npos) << "message: '" << msg << "'";
  EXPECT_NE(msg.find(path), std::string::npos) << "message does not name the file: " << msg;
}

// Runs `child` in a forked process and returns its wait status.
template <class F>
int in_child(F child) {
  pid_t pid = ::fork();
  if (pid == 0) {
    child();
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

void check_intact(const std::string& path, size_t runs, int64_t execs_each) {
  TraceReader r(path);
  auto all = r.runs();
  ASSERT_EQ(all.size(), runs);
  for (const RunRecord& run : all) {
    EXPECT_EQ(static_cast<int64_t>(r.executions(run.id).size()), execs_each);
    EXPECT_EQ(run.num_executions, execs_each);
    EXPECT_FALSE(r.bubbles(run.id).empty());
  }
}

TEST(TraceFile, WriterExitingBeforeCommitLeavesEarlierRunsIntact) {
  TempPath path("crash_exit.db");
  Module m = wide_graph();
  auto execs = simulate(m, testing::unit_costs(), 8);
  write_run(path.str(), m, RunInfo{}, execs);
  write_run(path.str(), m, RunInfo{}, execs);
  int status = in_child([&] {
    TraceWriter w(path.str());
    w.set_before_commit([] { ::_exit(3); });
    w.write_run(m, RunInfo{}, execs);
  });
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 3);
  check_intact(path.str(), 2, static_cast<int64_t>(execs.size()));
  // The file still takes new runs.
  write_run(path.str(), m, RunInfo{}, execs);
  check_intact(path.str(), 3, static_cast<int64_t>(execs.size()));
}

TEST(TraceFile, WriterKilledMidRunLeavesEarlierRunsIntact) {
  TempPath path("crash_kill.db");
  Module m = wide_graph();
  auto execs = simulate(m, testing::unit_costs(), 8);
  write_run(path.str(), m, RunInfo{}, execs);
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(ready[0]);
    TraceWriter w(path.str());
    w.set_before_commit([&] {
      char c = 'x';
      if (::write(ready[1], &c, 1) != 1) ::_exit(4);
      ::pause();  // SIGKILLed here, inside the open transaction
    });
    w.write_run(m, RunInfo{}, execs);
    ::_exit(0);
  }
  ::close(ready[1]);
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  check_intact(path.str(), 1, static_cast<int64_t>(execs.size()));
}

TEST(TraceFile, MissingAndEmptyFiles) {
  TempPath path("missing.db");
  expect_refused(path.str(), "no such file");
  { std::ofstream(path.str()); }
  expect_refused(path.str(), "empty file, not a trace.db");
}

TEST(TraceFile, ForeignFilesAreRefused) {
  TempPath text("foreign.txt");
  { std::ofstream(text.str()) << "model: qwen3-8b\nthis is not a database, but it is long enough "
                                  "to have a header's worth of bytes in it, which is 100 bytes.\n"; }
  expect_refused(text.str(), "not a trace.db (not an SQLite database)");
  // The writer refuses it too, and leaves it alone.
  EXPECT_THROW(TraceWriter w(text.str()), Error);

  TempPath other("other.sqlite");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(other.str().c_str(), &db), SQLITE_OK);
  sqlite3_exec(db, "CREATE TABLE people(name TEXT)", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  expect_refused(other.str(), "an SQLite database, but not a trace.db");
  try {
    TraceWriter w(other.str());
    ADD_FAILURE() << "writer accepted a foreign database";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a trace.db"), std::string::npos) << e.what();
  }
}

TEST(TraceFile, TruncatedFileIsRefused) {
  TempPath path("truncated.db");
  Module m = wide_graph();
  write_run(path.str(), m, RunInfo{}, simulate(m, testing::unit_costs(), 4));
  std::ifstream in(path.str(), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 8192u);
  { std::ofstream(path.str(), std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() / 2); }
  expect_refused(path.str(), "truncated trace.db");
}

TEST(TraceFile, NewerSchemaIsRefused) {
  TempPath path("newer.db");
  Module m = wide_graph();
  write_run(path.str(), m, RunInfo{}, simulate(m, testing::unit_costs(), 1));
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.str().c_str(), &db), SQLITE_OK);
  sqlite3_exec(db, "UPDATE meta SET value = '99' WHERE key = 'schema_version'", nullptr, nullptr,
               nullptr);
  sqlite3_close(db);
  expect_refused(path.str(), "written by a newer mpk (trace schema 99");
  EXPECT_THROW(TraceWriter w(path.str()), Error);
}

TEST(TraceFile, GarbledPagesAreReportedNotCrashed) {
  TempPath path("garbled.db");
  Module m = wide_graph();
  write_run(path.str(), m, RunInfo{}, simulate(m, testing::unit_costs(), 4));
  std::fstream f(path.str(), std::ios::binary | std::ios::in | std::ios::out);
  f.seekg(0, std::ios::end);
  const std::streamoff size = f.tellg();
  // Overwrite everything after the first page with a pattern.
  std::string junk(static_cast<size_t>(size - 4096), '\x5a');
  f.seekp(4096);
  f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  f.close();
  const std::string msg = [&] {
    try {
      TraceReader r(path.str());
      for (const RunRecord& run : r.runs()) r.executions(run.id);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  }();
  EXPECT_FALSE(msg.empty());
  EXPECT_NE(msg.find(path.str()), std::string::npos) << msg;
}

}  // namespace
}  // namespace mpk
