// Thin owning wrappers over the SQLite C API for the store (private to daemon/src): a connection
// with its cache of prepared statements, a statement, and the mapping of SQLite result codes to
// engine::Status. Nothing here is thread-safe: a Db is used by one thread at a time.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trainingd/engine/base/status.h"

namespace trainingd::daemon::sqlite {

// A prepared statement. Text is bound without copying (SQLITE_STATIC): the bound string must stay
// alive until the statement is reset, and every use binds every parameter again.
class Stmt {
 public:
  explicit Stmt(sqlite3_stmt* stmt) : stmt_(stmt) {}
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  ~Stmt() { sqlite3_finalize(stmt_); }

  void Bind(int index, int64_t v) { sqlite3_bind_int64(stmt_, index, v); }
  // NaN is stored as NULL (SQLite has no NaN); Real() reads NULL back as NaN.
  void Bind(int index, double v) { sqlite3_bind_double(stmt_, index, v); }
  void Bind(int index, std::string_view v) {
    sqlite3_bind_text(stmt_, index, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
  }
  // SQLITE_ROW, SQLITE_DONE or an error code.
  int Step() { return sqlite3_step(stmt_); }
  void Reset() { sqlite3_reset(stmt_); }

  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  double Real(int col) const;
  std::string Text(int col) const;
  bool IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }

 private:
  sqlite3_stmt* stmt_;
};

// Resets a statement when it goes out of scope, so that no read transaction stays open and the
// statement is ready for its next use.
class ResetOnExit {
 public:
  explicit ResetOnExit(Stmt& stmt) : stmt_(stmt) {}
  ResetOnExit(const ResetOnExit&) = delete;
  ResetOnExit& operator=(const ResetOnExit&) = delete;
  ~ResetOnExit() { stmt_.Reset(); }

 private:
  Stmt& stmt_;
};

// One connection. Errors name the database file.
class Db {
 public:
  // Opens `path` with `flags` (SQLITE_OPEN_*; SQLITE_OPEN_NOMUTEX is added) and sets the busy
  // timeout, through the VFS named `vfs` ("" = SQLite's default). IoError when the file cannot be
  // opened or created.
  static engine::Result<std::unique_ptr<Db>> Open(const std::string& path, int flags,
                                                  int busy_timeout_ms, const std::string& vfs = "");
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;
  ~Db();

  // The statement for `sql`, prepared on first use and kept for the life of the connection.
  // `sql` must be a string with static storage (it is the cache key).
  engine::Result<Stmt*> Prepare(const char* sql);
  // Runs one or more statements that return no rows; `what` describes them for the error.
  engine::Status Exec(const char* sql, std::string_view what);
  // Runs a statement returning one integer (a PRAGMA); `what` describes it for the error.
  engine::Result<int64_t> QueryInt(const char* sql, std::string_view what);
  // "<path>: <what>: <SQLite's message>", with a code that says what kind of failure it is.
  engine::Status Error(int rc, std::string_view what) const;

  // Rolls back the open transaction, if any (SQLite may already have rolled it back itself).
  void RollbackIfOpen();
  bool in_transaction() const { return sqlite3_get_autocommit(db_) == 0; }
  int64_t changes() const { return sqlite3_changes64(db_); }
  int64_t last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }
  sqlite3* handle() const { return db_; }
  const std::string& path() const { return path_; }

 private:
  Db(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}

  sqlite3* db_;
  std::string path_;
  std::unordered_map<const char*, std::unique_ptr<Stmt>> statements_;
};

// Maps an SQLite result code to a status: "<path>: <what>: <message>".
engine::Status ErrorStatus(int rc, std::string_view path, std::string_view what,
                           std::string_view message);

// Reads every row `s` gives through `read` (a Result<Record>(Stmt&)); a step that fails is
// db.Error(rc, what).
template <typename Record, typename Read>
engine::Result<std::vector<Record>> ReadRows(Db& db, Stmt& s, std::string_view what, Read&& read) {
  std::vector<Record> out;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) {
    auto record = read(s);
    if (!record.ok()) return record.status();
    out.push_back(std::move(record).value());
  }
  if (rc != SQLITE_DONE) return db.Error(rc, what);
  return out;
}

}  // namespace trainingd::daemon::sqlite
