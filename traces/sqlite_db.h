// A thin RAII layer over the SQLite C API for trace.db: a connection, prepared
// statements with typed bind/column helpers, and errors as mpk::Error naming the file.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace mpk {

class SqliteDb {
 public:
  // Opens `path` (read-only or read-write, creating it when `create`). Throws mpk::Error.
  SqliteDb(const std::string& path, bool read_only, bool create);
  ~SqliteDb();
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  sqlite3* handle() const { return db_; }
  const std::string& path() const { return path_; }
  // Runs one or more statements without results. Throws mpk::Error naming `what`.
  void exec(const std::string& sql, const char* what = "query");
  // "<path>: <what>: <sqlite message>"
  [[noreturn]] void fail(const char* what) const;

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
};

class SqliteStmt {
 public:
  SqliteStmt(SqliteDb& db, const char* sql);
  ~SqliteStmt();
  SqliteStmt(const SqliteStmt&) = delete;
  SqliteStmt& operator=(const SqliteStmt&) = delete;

  // Binds by 1-based index; chainable.
  SqliteStmt& bind(int i, int64_t v);
  SqliteStmt& bind(int i, double v);
  SqliteStmt& bind(int i, std::string_view v);
  // Text that outlives the statement's next step (no copy).
  SqliteStmt& bind_static(int i, const char* static_text);
  SqliteStmt& bind_null(int i);
  SqliteStmt& bind_blob(int i, std::string_view bytes);
  // True while a row is available; false when done. Throws on error.
  bool step();
  // step() for a statement without results, then reset().
  void run();
  // run() for a statement whose every parameter is bound again before the next step
  // (hot insert loops): skips clearing the bindings.
  void run_rebinding_all();
  void reset();

  int64_t col_int(int i) const { return sqlite3_column_int64(stmt_, i); }
  double col_double(int i) const { return sqlite3_column_double(stmt_, i); }
  std::string col_str(int i) const;
  std::string col_blob(int i) const;  // the bytes of a BLOB (or TEXT) column
  bool col_null(int i) const { return sqlite3_column_type(stmt_, i) == SQLITE_NULL; }
  int col_type(int i) const { return sqlite3_column_type(stmt_, i); }  // SQLITE_INTEGER, ...

 private:
  SqliteDb& db_;
  sqlite3_stmt* stmt_ = nullptr;
};

// Appends rows with multi-row INSERT statements (the per-statement cost dominates
// single-row inserts). Give each row's values in column order, then finish().
class BatchInsert {
 public:
  // `head`: "INSERT INTO t(a, b, c)"; `columns` values per row.
  BatchInsert(SqliteDb& db, std::string head, int columns, int rows_per_statement = 256);
  BatchInsert& value(int64_t v);
  BatchInsert& text(const char* static_text);  // must outlive finish()
  BatchInsert& null();
  void finish();

 private:
  struct Value {
    int64_t i = 0;
    const char* s = nullptr;
    bool is_null = false;
  };
  void flush(size_t rows);
  std::string sql(size_t rows) const;

  SqliteDb& db_;
  std::string head_;
  size_t columns_, rows_;
  std::vector<Value> pending_;
  std::unique_ptr<SqliteStmt> full_;
};

}  // namespace mpk
