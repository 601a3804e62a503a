// trace.db DDL and open-time checks. docs/trace-schema.md explains every table.
#include "traces/trace_schema.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>

#include "ir/error.h"
#include "ir/module.h"
#include "traces/trace_db.h"

namespace mpk {
namespace {

const char* kSchema = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
CREATE TABLE string(id INTEGER PRIMARY KEY, value TEXT NOT NULL UNIQUE) STRICT;

CREATE TABLE device(
  id INTEGER PRIMARY KEY, name INTEGER NOT NULL REFERENCES string(id),
  sm_count INTEGER NOT NULL, clock_khz INTEGER NOT NULL, mem_clock_khz INTEGER NOT NULL,
  mem_bandwidth INTEGER NOT NULL, smem_per_sm INTEGER NOT NULL,
  UNIQUE(name, sm_count, clock_khz, mem_clock_khz, mem_bandwidth, smem_per_sm)) STRICT;

CREATE TABLE graph(
  id INTEGER PRIMARY KEY, digest TEXT NOT NULL UNIQUE,
  name INTEGER NOT NULL REFERENCES string(id), source INTEGER NOT NULL REFERENCES string(id),
  pipeline INTEGER NOT NULL REFERENCES string(id),
  tool_version INTEGER NOT NULL REFERENCES string(id), attrs TEXT NOT NULL,
  policy INTEGER NOT NULL REFERENCES string(id), policy_params TEXT NOT NULL,
  num_workers INTEGER NOT NULL, event_latency_ns INTEGER NOT NULL,
  task_overhead_ns INTEGER NOT NULL) STRICT;

CREATE TABLE graph_module(
  graph INTEGER PRIMARY KEY REFERENCES graph(id), module BLOB NOT NULL) STRICT;

CREATE TABLE operator(
  graph INTEGER NOT NULL, id INTEGER NOT NULL, name INTEGER NOT NULL REFERENCES string(id),
  kind INTEGER NOT NULL REFERENCES string(id), layer INTEGER NOT NULL,
  PRIMARY KEY(graph, id)) STRICT, WITHOUT ROWID;

CREATE TABLE task(
  graph INTEGER NOT NULL, id INTEGER NOT NULL, op INTEGER NOT NULL,
  kind INTEGER NOT NULL REFERENCES string(id), worker INTEGER NOT NULL,
  position INTEGER NOT NULL, bytes INTEGER NOT NULL, flops INTEGER NOT NULL,
  PRIMARY KEY(graph, id)) STRICT, WITHOUT ROWID;

CREATE TABLE event(
  graph INTEGER NOT NULL, id INTEGER NOT NULL, target INTEGER NOT NULL,
  step_distance INTEGER NOT NULL, PRIMARY KEY(graph, id)) STRICT, WITHOUT ROWID;
CREATE TABLE event_producer(
  graph INTEGER NOT NULL, event INTEGER NOT NULL, task INTEGER NOT NULL,
  PRIMARY KEY(graph, event, task)) STRICT, WITHOUT ROWID;
CREATE INDEX event_producer_by_task ON event_producer(graph, task);
CREATE TABLE event_consumer(
  graph INTEGER NOT NULL, event INTEGER NOT NULL, task INTEGER NOT NULL,
  PRIMARY KEY(graph, event, task)) STRICT, WITHOUT ROWID;
CREATE INDEX event_consumer_by_task ON event_consumer(graph, task);

CREATE VIEW dependency AS
  SELECT p.graph AS graph, p.task AS producer, c.task AS consumer, p.event AS event,
         e.step_distance AS step_distance
  FROM event_producer p
  JOIN event_consumer c ON c.graph = p.graph AND c.event = p.event
  JOIN event e ON e.graph = p.graph AND e.id = p.event;

CREATE TABLE run(
  id INTEGER PRIMARY KEY, kind TEXT NOT NULL CHECK(kind IN ('gpu', 'sim', 'cpu')),
  graph INTEGER NOT NULL REFERENCES graph(id), device INTEGER NOT NULL REFERENCES device(id),
  model INTEGER NOT NULL REFERENCES string(id), policy INTEGER NOT NULL REFERENCES string(id),
  policy_params TEXT NOT NULL, options TEXT NOT NULL, batch INTEGER NOT NULL,
  steps INTEGER NOT NULL, started_at_ns INTEGER NOT NULL,
  tool_version INTEGER NOT NULL REFERENCES string(id), num_workers INTEGER NOT NULL,
  num_executions INTEGER NOT NULL, duration_ns INTEGER NOT NULL,
  max_task_ns INTEGER NOT NULL, time_origin_ns INTEGER NOT NULL,
  rank INTEGER NOT NULL DEFAULT 0, ranks INTEGER NOT NULL DEFAULT 1,
  rank0_run INTEGER, rank_offset_ns INTEGER NOT NULL DEFAULT 0) STRICT;
CREATE INDEX run_by_rank0_run ON run(rank0_run) WHERE rank0_run IS NOT NULL;

CREATE TABLE execution(
  run INTEGER NOT NULL, worker INTEGER NOT NULL, start_ns INTEGER NOT NULL,
  task INTEGER NOT NULL, step INTEGER NOT NULL, sm INTEGER NOT NULL,
  wait_begin_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,
  PRIMARY KEY(run, worker, start_ns, task, step)) STRICT, WITHOUT ROWID;

-- The cause check is an OR chain: SQLite 3.40 evaluates IN (list) with a table built for
-- every row, which doubled the cost of inserting bubbles.
CREATE TABLE bubble(
  run INTEGER NOT NULL, worker INTEGER NOT NULL, start_ns INTEGER NOT NULL,
  end_ns INTEGER NOT NULL,
  cause TEXT NOT NULL CHECK(cause = 'wait' OR cause = 'queue_empty' OR cause = 'step_tail' OR
                            cause = 'overhead'),
  step INTEGER NOT NULL, task INTEGER, event INTEGER, producer INTEGER,
  producer_worker INTEGER, PRIMARY KEY(run, worker, start_ns)) STRICT, WITHOUT ROWID;

CREATE TABLE step(
  run INTEGER NOT NULL, step INTEGER NOT NULL, start_ns INTEGER NOT NULL,
  end_ns INTEGER NOT NULL, busy_ns INTEGER NOT NULL,
  PRIMARY KEY(run, step)) STRICT, WITHOUT ROWID;

CREATE TABLE operator_stat(
  run INTEGER NOT NULL, op INTEGER NOT NULL, executions INTEGER NOT NULL,
  total_ns INTEGER NOT NULL, max_ns INTEGER NOT NULL, wait_ns INTEGER NOT NULL,
  PRIMARY KEY(run, op)) STRICT, WITHOUT ROWID;

CREATE VIEW run_named AS
  SELECT r.id, r.kind, m.value AS model, p.value AS policy, r.policy_params, r.options,
         r.batch, r.steps, r.started_at_ns, r.duration_ns, r.num_executions, d.value AS device
  FROM run r JOIN string m ON m.id = r.model JOIN string p ON p.id = r.policy
  JOIN device dv ON dv.id = r.device JOIN string d ON d.id = dv.name;
CREATE VIEW task_named AS
  SELECT t.graph, t.id, t.op, o.value AS op_name, k.value AS kind, t.worker, t.position,
         t.bytes, t.flops
  FROM task t JOIN operator op ON op.graph = t.graph AND op.id = t.op
  JOIN string o ON o.id = op.name JOIN string k ON k.id = t.kind;
CREATE VIEW operator_stat_named AS
  SELECT s.run, s.op, n.value AS name, k.value AS kind, op.layer, s.executions, s.total_ns,
         s.max_ns, s.wait_ns
  FROM operator_stat s JOIN run r ON r.id = s.run
  JOIN operator op ON op.graph = r.graph AND op.id = s.op
  JOIN string n ON n.id = op.name JOIN string k ON k.id = op.kind;
)sql";

// Schema 1 -> 2: the table of stored modules; graphs written before keep none.
const char* kUpgradeFrom1 = R"sql(
CREATE TABLE graph_module(
  graph INTEGER PRIMARY KEY REFERENCES graph(id), module BLOB NOT NULL) STRICT;
UPDATE meta SET value = '2' WHERE key = 'schema_version';
)sql";

// Schema 2 -> 3: a tensor-parallel launch stores one run per rank (docs/trace-schema.md).
const char* kUpgradeFrom2 = R"sql(
ALTER TABLE run ADD COLUMN rank INTEGER NOT NULL DEFAULT 0;
ALTER TABLE run ADD COLUMN ranks INTEGER NOT NULL DEFAULT 1;
ALTER TABLE run ADD COLUMN rank0_run INTEGER;
ALTER TABLE run ADD COLUMN rank_offset_ns INTEGER NOT NULL DEFAULT 0;
CREATE INDEX run_by_rank0_run ON run(rank0_run) WHERE rank0_run IS NOT NULL;
UPDATE meta SET value = '3' WHERE key = 'schema_version';
)sql";

uint32_t be32(const unsigned char* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | p[3];
}

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

void check_trace_file(const std::string& path, bool may_be_new) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (may_be_new) return;
    throw Error(path + ": no such file");
  }
  if (!S_ISREG(st.st_mode)) throw Error(path + ": not a regular file");
  if (st.st_size == 0) {
    if (may_be_new) return;
    throw Error(path + ": empty file, not a trace.db");
  }
  unsigned char h[100] = {};
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot read");
  in.read(reinterpret_cast<char*>(h), sizeof h);
  if (in.gcount() < static_cast<std::streamsize>(sizeof h) ||
      std::memcmp(h, "SQLite format 3", 16) != 0)
    throw Error(path + ": not a trace.db (not an SQLite database)");
  // A hot journal means an interrupted write that SQLite rolls back on open; the
  // header describes the pre-rollback state until then.
  if (file_exists(path + "-journal")) return;
  uint32_t page_size = (uint32_t(h[16]) << 8) | h[17];
  if (page_size == 1) page_size = 65536;
  const uint32_t pages = be32(h + 28);
  if (pages > 0 && be32(h + 24) == be32(h + 92)) {
    const uint64_t want = uint64_t(page_size) * pages;
    if (static_cast<uint64_t>(st.st_size) < want)
      throw Error(path + ": truncated trace.db (" + std::to_string(st.st_size) +
                  " bytes, its header says " + std::to_string(want) + ")");
  }
}

int prepare_trace_db(SqliteDb& db, bool create) {
  const std::string& path = db.path();
  int64_t app_id = 0;
  int64_t tables = 0;
  try {
    SqliteStmt q(db, "PRAGMA application_id");
    if (q.step()) app_id = q.col_int(0);
  } catch (const Error&) {
    const int code = sqlite3_errcode(db.handle()) & 0xff;
    if (code == SQLITE_NOTADB) throw Error(path + ": not a trace.db (not an SQLite database)");
    if (code == SQLITE_CORRUPT) throw Error(path + ": corrupt trace.db (SQLite: malformed)");
    throw;
  }
  {
    SqliteStmt q(db, "SELECT count(*) FROM sqlite_schema");
    if (q.step()) tables = q.col_int(0);
  }
  // Re-check the header now that any interrupted write was rolled back.
  check_trace_file(path, create);
  if (tables == 0 && app_id == 0) {
    if (!create) throw Error(path + ": empty SQLite database, not a trace.db");
    // Large pages: runs are appended in key order, millions of small rows at a time.
    db.exec("PRAGMA page_size = 16384", "create schema");
    db.exec("BEGIN IMMEDIATE", "create schema");
    try {
      db.exec("PRAGMA application_id = " + std::to_string(kTraceApplicationId), "create schema");
      db.exec(kSchema, "create schema");
      SqliteStmt ins(db, "INSERT INTO meta(key, value) VALUES(?, ?)");
      ins.bind(1, std::string_view("schema_version"))
          .bind(2, std::string_view(std::to_string(kTraceSchemaVersion)))
          .run();
      ins.bind(1, std::string_view("created_by")).bind(2, std::string_view(tool_version())).run();
      db.exec("COMMIT", "create schema");
    } catch (...) {
      sqlite3_exec(db.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
    return kTraceSchemaVersion;
  }
  if (app_id != kTraceApplicationId)
    throw Error(path + ": an SQLite database, but not a trace.db");
  int64_t version = -1;
  try {
    SqliteStmt q(db, "SELECT value FROM meta WHERE key = 'schema_version'");
    if (q.step()) version = std::stoll(q.col_str(0));
  } catch (const std::exception&) {
    throw Error(path + ": corrupt trace.db (no readable schema_version)");
  }
  if (version < 0) throw Error(path + ": corrupt trace.db (no schema_version)");
  if (version > kTraceSchemaVersion)
    throw Error(path + ": written by a newer mpk (trace schema " + std::to_string(version) +
                "; this build reads up to " + std::to_string(kTraceSchemaVersion) + ")");
  if (version < kOldestTraceSchemaVersion)
    throw Error(path + ": trace schema " + std::to_string(version) +
                " is older than this build reads (" + std::to_string(kOldestTraceSchemaVersion) +
                ".." + std::to_string(kTraceSchemaVersion) + ")");
  if (version < kTraceSchemaVersion && create) {  // a writer appends in the current schema
    const std::string what = "upgrade trace schema " + std::to_string(version) + " to " +
                             std::to_string(kTraceSchemaVersion);
    db.exec("BEGIN IMMEDIATE", what.c_str());
    try {
      if (version == 1) db.exec(kUpgradeFrom1, what.c_str());
      db.exec(kUpgradeFrom2, what.c_str());
      db.exec("COMMIT", what.c_str());
    } catch (...) {
      sqlite3_exec(db.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
    return kTraceSchemaVersion;
  }
  return static_cast<int>(version);
}

}  // namespace mpk
