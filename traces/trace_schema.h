// The trace.db schema (DDL) and the checks made when a file is opened: an SQLite file,
// not truncated, carrying our application id and a schema version this build reads.
#pragma once

#include <string>

#include "traces/sqlite_db.h"

namespace mpk {

// 'mpkt' in PRAGMA application_id.
inline constexpr int kTraceApplicationId = 0x6d706b74;

// Checks the raw file before SQLite sees it: throws mpk::Error with one clear message
// for a file that is not SQLite or is shorter than its header says. A missing or empty
// file passes when `may_be_new`.
void check_trace_file(const std::string& path, bool may_be_new);

// For an open connection: creates the schema in an empty database (when `create`), or
// checks that it is a trace.db of a schema version this build reads
// (kOldestTraceSchemaVersion..kTraceSchemaVersion, traces/trace_db.h); with `create`
// (a writer) an older schema is upgraded in place. Returns the file's schema version.
int prepare_trace_db(SqliteDb& db, bool create);

}  // namespace mpk
