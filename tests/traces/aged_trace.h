// Ages a trace.db written by this build into one as a writer of an older schema left it,
// for the tests of reading and upgrading old files: schema 3's rank columns dropped (2),
// and the stored modules too (1), with the graphs' digests as schema 1 made them.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>

namespace mpk::testing {

inline void age_to_schema(const std::string& db_path, int version) {
  std::string sql =
      "DROP INDEX run_by_rank0_run;"
      "ALTER TABLE run DROP COLUMN rank; ALTER TABLE run DROP COLUMN ranks;"
      "ALTER TABLE run DROP COLUMN rank0_run; ALTER TABLE run DROP COLUMN rank_offset_ns;";
  if (version == 1) sql += "DROP TABLE graph_module; UPDATE graph SET digest = 'schema 1 ' || id;";
  sql += "UPDATE meta SET value = '" + std::to_string(version) + "' WHERE key = 'schema_version';";
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_path.c_str(), &db), SQLITE_OK);
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK) << (error ? error : "");
  sqlite3_free(error);
  sqlite3_close(db);
}

}  // namespace mpk::testing
