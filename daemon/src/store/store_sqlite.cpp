#include "store/store_sqlite.h"

#include <limits>
#include <utility>

namespace trainingd::daemon::sqlite {

using engine::Status;

double Stmt::Real(int col) const {
  if (IsNull(col)) return std::numeric_limits<double>::quiet_NaN();
  return sqlite3_column_double(stmt_, col);
}

std::string Stmt::Text(int col) const {
  const auto* text = sqlite3_column_text(stmt_, col);
  if (text == nullptr) return {};
  return std::string(reinterpret_cast<const char*>(text),
                     static_cast<size_t>(sqlite3_column_bytes(stmt_, col)));
}

Status ErrorStatus(int rc, std::string_view path, std::string_view what, std::string_view message) {
  std::string m;
  m.append(path).append(": ").append(what).append(": ").append(message);
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return Status::Unavailable(std::move(m));
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return Status::DataLoss(std::move(m));
    case SQLITE_FULL:
      return Status::ResourceExhausted(std::move(m));
    case SQLITE_CANTOPEN:
    case SQLITE_IOERR:
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH:
    case SQLITE_NOLFS:
    case SQLITE_PROTOCOL:
      return Status::IoError(std::move(m));
    case SQLITE_CONSTRAINT:
      return Status::FailedPrecondition(std::move(m));
    default:
      return Status::Internal(std::move(m));
  }
}

engine::Result<std::unique_ptr<Db>> Db::Open(const std::string& path, int flags,
                                             int busy_timeout_ms, const std::string& vfs) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags | SQLITE_OPEN_NOMUTEX,
                                 vfs.empty() ? nullptr : vfs.c_str());
  std::unique_ptr<Db> db(new Db(raw, path));  // owns the handle even when the open failed
  if (rc != SQLITE_OK) {
    return ErrorStatus(rc, path, "cannot open database",
                       raw != nullptr ? sqlite3_errmsg(raw) : sqlite3_errstr(rc));
  }
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, busy_timeout_ms);
  return db;
}

Db::~Db() {
  statements_.clear();  // every statement is finalized before the connection closes
  sqlite3_close(db_);
}

engine::Result<Stmt*> Db::Prepare(const char* sql) {
  auto it = statements_.find(sql);
  if (it != statements_.end()) return it->second.get();
  sqlite3_stmt* raw = nullptr;
  const int rc = sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &raw, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(raw);
    return Error(rc, std::string("preparing \"") + sql + "\"");
  }
  auto stmt = std::make_unique<Stmt>(raw);
  Stmt* p = stmt.get();
  statements_.emplace(sql, std::move(stmt));
  return p;
}

Status Db::Exec(const char* sql, std::string_view what) {
  const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return Error(rc, what);
  return Status::Ok();
}

engine::Result<int64_t> Db::QueryInt(const char* sql, std::string_view what) {
  sqlite3_stmt* raw = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql, -1, &raw, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(raw);
    return Error(rc, what);
  }
  Stmt stmt(raw);
  rc = stmt.Step();
  if (rc != SQLITE_ROW) return Error(rc == SQLITE_DONE ? SQLITE_INTERNAL : rc, what);
  return stmt.Int(0);
}

Status Db::Error(int rc, std::string_view what) const {
  // After a failed call the connection's message describes it; sqlite3_errstr is the fallback
  // when the message is about something else (e.g. SQLITE_INTERNAL made up above).
  const int last = sqlite3_errcode(db_);
  return ErrorStatus(rc, path_, what, last == rc ? sqlite3_errmsg(db_) : sqlite3_errstr(rc));
}

void Db::RollbackIfOpen() {
  if (in_transaction()) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
}

}  // namespace trainingd::daemon::sqlite
