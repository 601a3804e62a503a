// Shared by the driver's tests: a per-test temporary folder, the tiny preset compiled
// through the driver, and raw SQLite access to a trace.db (to age or damage a real file).
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>

#include "driver/compile.h"
#include "ir/error.h"

namespace mpk::testing {

class DriverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("mpk_driver_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::filesystem::path dir_;
};

// The message of the mpk::Error that `f` throws; "(no error)" when it throws none.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// The tiny preset through the default pipeline with `policy`.
inline Compiled tiny(const std::string& policy = "critical-path") {
  CompileRequest r;
  r.model = "tiny";
  r.policy = policy;
  return compile(r);
}

// Runs `sql` on the file, binding `blob` to its one parameter when given; fails the test
// on an SQLite error.
inline void sql(const std::string& db_path, const std::string& statement,
                const std::string* blob = nullptr) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, statement.c_str(), -1, &s, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  if (blob) sqlite3_bind_blob64(s, 1, blob->data(), blob->size(), SQLITE_TRANSIENT);
  EXPECT_EQ(sqlite3_step(s), SQLITE_DONE) << sqlite3_errmsg(db) << ": " << statement;
  sqlite3_finalize(s);
  sqlite3_close(db);
}

// The first column of the first row of `query`, as bytes ("" when no row).
inline std::string scalar(const std::string& db_path, const std::string& query) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(db_path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, query.c_str(), -1, &s, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  std::string out;
  if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_blob(s, 0))
    out.assign(static_cast<const char*>(sqlite3_column_blob(s, 0)),
               static_cast<size_t>(sqlite3_column_bytes(s, 0)));
  sqlite3_finalize(s);
  sqlite3_close(db);
  return out;
}

}  // namespace mpk::testing
