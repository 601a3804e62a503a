// Fuzz target: the trace.db reader and the analyses a user runs on a trace (list the runs;
// per run: its launch's ranks, statistics with the critical path, Chrome export to a null
// stream, derive_run on the executions read back, the stored module read back). Two kinds
// of input:
//   - bytes starting with the SQLite header: the whole file image (byte mutations mostly
//     give "not a database", which is fine);
//   - anything else: SQL text applied to a small built-in trace.db (UPDATE, INSERT, DELETE,
//     even CREATE/DROP TABLE), so that mutations reach the row checks.
// Any input must be read and analysed or throw mpk::Error; nothing else is allowed.
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <ostream>
#include <string>

#include "ir/error.h"
#include "ir/module.h"
#include "traces/analysis.h"
#include "traces/chrome_export.h"
#include "traces/run_derive.h"
#include "traces/simulator.h"
#include "traces/trace_db.h"

namespace {

constexpr char kSqliteHeader[] = "SQLite format 3";  // with its NUL: 16 bytes

// The built-in trace for SQL inputs: norm (w0) -> q0 (w0), q1 (w1) -> residual (w1) over three
// steps, the residual feeding the next step's norm, run as two tensor-parallel ranks (two
// runs, rank 1's a copy of rank 0's).
std::string built_in_trace() {
  mpk::Module m;
  m.name = "fuzz";
  m.attrs["batch"] = int64_t{1};
  m.attrs["tp"] = int64_t{2};
  m.machine.sm_count = 2;
  for (const char* name : {"L0.norm", "L0.q"}) {
    mpk::Operator op;
    op.name = name;
    op.kind = name[3] == 'n' ? mpk::OpKind::kRmsNorm : mpk::OpKind::kLinear;
    op.layer = 0;
    m.program.add_op(op);
  }
  for (int t = 0; t < 4; ++t) {
    mpk::Task task;
    task.op = t == 1 || t == 2 ? 1 : 0;
    task.kind = task.op == 1 ? mpk::TaskKind::kLinear : mpk::TaskKind::kRmsNorm;
    task.bytes = 100 * (t + 1);
    m.graph.tasks.push_back(task);
  }
  const auto event = [&](std::vector<mpk::TaskId> p, std::vector<mpk::TaskId> c, int32_t distance) {
    mpk::Event e;
    e.target = static_cast<int64_t>(p.size());
    e.producers = std::move(p);
    e.consumers = std::move(c);
    e.step_distance = distance;
    m.graph.events.push_back(e);
  };
  event({0}, {1, 2}, 0);
  event({1, 2}, {3}, 0);
  event({3}, {0}, 1);
  m.graph.schedule.policy = "fuzz";
  m.graph.schedule.workers = {{0, 1}, {2, 3}};
  char path[] = "/tmp/mpk_trace_fuzz_XXXXXX";
  const int fd = ::mkstemp(path);
  ::close(fd);
  ::unlink(path);
  std::vector<mpk::Execution> execs = mpk::simulate(m, mpk::CostParams::from_machine(m.machine), 3);
  for (size_t i = 0, n = execs.size(); i < n; ++i) {
    execs.push_back(execs[i]);
    execs.back().rank = 1;
  }
  mpk::write_run(path, m, mpk::RunInfo{}, execs);
  sqlite3* db = nullptr;  // small pages: a few KiB to copy per input instead of 300
  sqlite3_open(path, &db);
  sqlite3_exec(db, "PRAGMA page_size = 512; VACUUM", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  ::unlink(path);
  return bytes;
}

// The file the reader opens (SQLite needs a real path: it resolves links, so a memfd will
// not do): one file in /dev/shm, rewritten for every input and removed at exit.
struct Image {
  Image() {
    char name[] = "/dev/shm/mpk_trace_fuzz_XXXXXX";
    fd = ::mkstemp(name);
    if (fd < 0) std::abort();
    path = name;
  }
  ~Image() { ::unlink(path.c_str()); }
  int fd = -1;
  std::string path;
};

const Image& image() {
  static const Image i;
  return i;
}

void write_image(const void* data, size_t size) {
  const int fd = image().fd;
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) std::abort();
}

// SQL that could touch other files is not run.
bool harmless(std::string sql) {
  std::transform(sql.begin(), sql.end(), sql.begin(), [](unsigned char c) { return std::tolower(c); });
  return sql.find("attach") == std::string::npos && sql.find("vacuum") == std::string::npos;
}

int deny_outside(void*, int action, const char*, const char*, const char*, const char*) {
  return action == SQLITE_ATTACH || action == SQLITE_DETACH || action == SQLITE_PRAGMA ? SQLITE_DENY
                                                                                      : SQLITE_OK;
}

int stop_long_statements(void* steps) { return ++*static_cast<int*>(steps) > 1000; }

// Applies `sql` to the built-in trace and writes the result as the image; false when the SQL
// changed nothing.
bool apply_sql(const std::string& sql) {
  static const std::string base = built_in_trace();
  if (!harmless(sql)) return false;
  sqlite3* db = nullptr;
  sqlite3_open(":memory:", &db);
  auto* copy = static_cast<unsigned char*>(sqlite3_malloc64(base.size()));
  std::copy(base.begin(), base.end(), copy);
  sqlite3_deserialize(db, "main", copy, static_cast<sqlite3_int64>(base.size()),
                      static_cast<sqlite3_int64>(base.size()),
                      SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_RESIZEABLE);
  sqlite3_set_authorizer(db, deny_outside, nullptr);
  int steps = 0;
  sqlite3_progress_handler(db, 1000, stop_long_statements, &steps);  // about 1 M VM steps
  sqlite3_limit(db, SQLITE_LIMIT_LENGTH, 1 << 20);
  sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
  bool changed = sqlite3_total_changes(db) > 0;
  if (changed) {
    sqlite3_int64 size = 0;
    unsigned char* image = sqlite3_serialize(db, "main", &size, 0);
    changed = image != nullptr;
    if (image) write_image(image, static_cast<size_t>(size));
    sqlite3_free(image);
  }
  sqlite3_close(db);
  return changed;
}

void analyse() {
  const mpk::TraceReader reader(image().path);
  std::ostream null(nullptr);
  for (const mpk::RunRecord& run : reader.runs()) {
    try {
      reader.rank_runs(run.id);
      mpk::format_stats(mpk::compute_stats(reader, run.id), true);
      // Every flow arrow only for small runs: formatting them dominates, and the small runs
      // reach the same code.
      const auto flows = run.num_executions <= 100 ? mpk::FlowMode::kAll : mpk::FlowMode::kLast;
      mpk::export_chrome_trace(reader, run.id, null, {flows, 0, -1});
      // The rows read back are what the writer derives bubbles and steps from.
      const mpk::Module m = reader.load_graph(run.id);
      std::vector<mpk::Execution> execs = reader.executions(run.id);
      mpk::validate_and_normalize(m, execs, static_cast<int32_t>(run.steps));
      mpk::derive_run(m, execs, static_cast<int32_t>(run.steps));
      reader.stored_module(run.id);
    } catch (const mpk::Error&) {
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size >= sizeof kSqliteHeader && std::equal(kSqliteHeader, kSqliteHeader + sizeof kSqliteHeader, data)) {
    write_image(data, size);
  } else if (!apply_sql(std::string(reinterpret_cast<const char*>(data), size))) {
    return 0;
  }
  try {
    analyse();
  } catch (const mpk::Error&) {
  }
  return 0;
}
