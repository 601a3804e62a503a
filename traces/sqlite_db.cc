// SQLite connection and statement wrappers.
#include "traces/sqlite_db.h"

#include "ir/error.h"

namespace mpk {

SqliteDb::SqliteDb(const std::string& path, bool read_only, bool create) : path_(path) {
  int flags = read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
  if (!read_only && create) flags |= SQLITE_OPEN_CREATE;
  flags |= SQLITE_OPEN_NOMUTEX;  // one connection per thread
  if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw Error(path + ": cannot open: " + msg);
  }
  sqlite3_busy_timeout(db_, 5000);
  sqlite3_extended_result_codes(db_, 1);
}

SqliteDb::~SqliteDb() { sqlite3_close(db_); }

void SqliteDb::exec(const std::string& sql, const char* what) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    throw Error(path_ + ": " + what + ": " + msg);
  }
}

void SqliteDb::fail(const char* what) const {
  throw Error(path_ + ": " + what + ": " + sqlite3_errmsg(db_));
}

SqliteStmt::SqliteStmt(SqliteDb& db, const char* sql) : db_(db) {
  if (sqlite3_prepare_v2(db.handle(), sql, -1, &stmt_, nullptr) != SQLITE_OK)
    db.fail("cannot prepare a query (is this a trace.db of this version?)");
}

SqliteStmt::~SqliteStmt() { sqlite3_finalize(stmt_); }

SqliteStmt& SqliteStmt::bind(int i, int64_t v) {
  sqlite3_bind_int64(stmt_, i, v);
  return *this;
}

SqliteStmt& SqliteStmt::bind(int i, double v) {
  sqlite3_bind_double(stmt_, i, v);
  return *this;
}

SqliteStmt& SqliteStmt::bind(int i, std::string_view v) {
  sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  return *this;
}

SqliteStmt& SqliteStmt::bind_static(int i, const char* static_text) {
  sqlite3_bind_text(stmt_, i, static_text, -1, SQLITE_STATIC);
  return *this;
}

SqliteStmt& SqliteStmt::bind_blob(int i, std::string_view bytes) {
  sqlite3_bind_blob64(stmt_, i, bytes.data(), bytes.size(), SQLITE_TRANSIENT);
  return *this;
}

SqliteStmt& SqliteStmt::bind_null(int i) {
  sqlite3_bind_null(stmt_, i);
  return *this;
}

bool SqliteStmt::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  db_.fail("query failed");
}

void SqliteStmt::run() {
  step();
  reset();
}

void SqliteStmt::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

void SqliteStmt::run_rebinding_all() {
  step();
  sqlite3_reset(stmt_);
}

std::string SqliteStmt::col_str(int i) const {
  const unsigned char* p = sqlite3_column_text(stmt_, i);
  return p ? std::string(reinterpret_cast<const char*>(p),
                         static_cast<size_t>(sqlite3_column_bytes(stmt_, i)))
           : std::string();
}

std::string SqliteStmt::col_blob(int i) const {
  const void* p = sqlite3_column_blob(stmt_, i);
  return p ? std::string(static_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(stmt_, i)))
           : std::string();
}

BatchInsert::BatchInsert(SqliteDb& db, std::string head, int columns, int rows_per_statement)
    : db_(db), head_(std::move(head)), columns_(static_cast<size_t>(columns)),
      rows_(static_cast<size_t>(rows_per_statement)) {
  pending_.reserve(columns_ * rows_);
}

std::string BatchInsert::sql(size_t rows) const {
  std::string row = "(";
  for (size_t c = 0; c < columns_; ++c) row += c ? ",?" : "?";
  row += ")";
  std::string out = head_ + " VALUES";
  for (size_t r = 0; r < rows; ++r) out += (r ? "," : "") + row;
  return out;
}

BatchInsert& BatchInsert::value(int64_t v) {
  pending_.push_back({v, nullptr, false});
  if (pending_.size() == columns_ * rows_) flush(rows_);
  return *this;
}

BatchInsert& BatchInsert::text(const char* static_text) {
  pending_.push_back({0, static_text, false});
  if (pending_.size() == columns_ * rows_) flush(rows_);
  return *this;
}

BatchInsert& BatchInsert::null() {
  pending_.push_back({0, nullptr, true});
  if (pending_.size() == columns_ * rows_) flush(rows_);
  return *this;
}

void BatchInsert::finish() {
  if (pending_.size() % columns_ != 0) throw Error("internal: a partial row in a batch insert");
  if (!pending_.empty()) flush(pending_.size() / columns_);
}

void BatchInsert::flush(size_t rows) {
  std::unique_ptr<SqliteStmt> partial;
  if (rows == rows_ && !full_) full_ = std::make_unique<SqliteStmt>(db_, sql(rows_).c_str());
  if (rows != rows_) partial = std::make_unique<SqliteStmt>(db_, sql(rows).c_str());
  SqliteStmt& st = partial ? *partial : *full_;
  for (size_t i = 0; i < rows * columns_; ++i) {
    const Value& v = pending_[i];
    const int at = static_cast<int>(i) + 1;
    if (v.is_null) st.bind_null(at);
    else if (v.s) st.bind_static(at, v.s);
    else st.bind(at, v.i);
  }
  st.run_rebinding_all();
  pending_.clear();
}

}  // namespace mpk
