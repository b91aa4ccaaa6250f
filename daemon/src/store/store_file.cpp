#include "trainingd/daemon/store/store_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "store/store_backup.h"
#include "store/store_schema.h"
#include "store/store_sqlite.h"

namespace trainingd::daemon {
namespace fs = std::filesystem;
namespace {

using engine::Status;

constexpr char kBackupInfix[] = ".before-v";
constexpr char kTmpSuffix[] = ".tmp";

// Opens `path` read-only (a missing file is NotFound, not created) and reads its version and
// application id; the first read also tells a file that is not a database.
engine::Result<std::unique_ptr<sqlite::Db>> OpenReadOnly(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return Status::NotFound(path + ": no such file");
  if (!fs::is_regular_file(path, ec)) return Status::FailedPrecondition(path + ": not a file");
  return sqlite::Db::Open(path, SQLITE_OPEN_READONLY, 5000);
}

Status CheckApplicationId(sqlite::Db& db) {
  auto app_id = db.QueryInt("PRAGMA application_id", "reading the application id");
  if (!app_id.ok()) return app_id.status();
  if (*app_id != 0 && *app_id != kStoreApplicationId) {
    return Status::FailedPrecondition(db.path() + ": not a trainingd database (application_id " +
                                      std::to_string(*app_id) + ")");
  }
  return Status::Ok();
}

Status SyncPath(const std::string& path, bool directory) {
  const int fd = open(path.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_RDWR) | O_CLOEXEC);
  if (fd < 0) return engine::ErrnoStatus(errno, path + ": cannot open: " + std::strerror(errno));
  const int rc = fsync(fd);
  const int err = errno;
  close(fd);
  if (rc != 0) return engine::ErrnoStatus(err, path + ": cannot fsync: " + std::strerror(err));
  return Status::Ok();
}

}  // namespace

int StoreSchemaVersionOfThisBuild() { return StoreSchemaVersion(); }

engine::Result<int64_t> ReadStoreSchemaVersion(const std::string& path) {
  auto db = OpenReadOnly(path);
  if (!db.ok()) return db.status();
  TRAININGD_RETURN_IF_ERROR(CheckApplicationId(**db));
  return (*db)->QueryInt("PRAGMA user_version", "reading the schema version");
}

engine::Result<int64_t> CheckStoreFile(const std::string& path) {
  auto db = OpenReadOnly(path);
  if (!db.ok()) return db.status();
  sqlite::Db& d = **db;
  TRAININGD_RETURN_IF_ERROR(CheckApplicationId(d));
  auto version = d.QueryInt("PRAGMA user_version", "reading the schema version");
  if (!version.ok()) return version.status();
  auto app_id = d.QueryInt("PRAGMA application_id", "reading the application id");
  if (!app_id.ok()) return app_id.status();
  if (*version == 0 || *app_id == 0) {
    return Status::FailedPrecondition(path + ": not a trainingd store (no schema version)");
  }
  if (*version > StoreSchemaVersion()) {
    return Status::FailedPrecondition(
        path + ": database schema version " + std::to_string(*version) +
        " is newer than this trainingd supports (" + std::to_string(StoreSchemaVersion()) + ")");
  }
  auto check = d.Prepare("PRAGMA integrity_check");
  if (!check.ok()) return check.status();
  sqlite::Stmt& s = **check;
  sqlite::ResetOnExit reset(s);
  const int rc = s.Step();
  if (rc != SQLITE_ROW) return d.Error(rc, "checking its integrity");
  if (s.Text(0) != "ok") {
    return Status::DataLoss(path + ": integrity check failed: " + s.Text(0));
  }
  return *version;
}

Status BackupDatabase(sqlite::Db& db, const std::string& to) {
  std::error_code ec;
  if (fs::exists(to, ec)) return Status::FailedPrecondition(to + ": already exists");
  const std::string tmp = to + kTmpSuffix;
  fs::remove(tmp, ec);  // an interrupted earlier backup's
  Status st;
  {
    sqlite3_stmt* raw = nullptr;
    int rc = sqlite3_prepare_v2(db.handle(), "VACUUM INTO ?1", -1, &raw, nullptr);
    if (rc != SQLITE_OK) return db.Error(rc, "preparing a backup");
    sqlite::Stmt stmt(raw);
    stmt.Bind(1, std::string_view(tmp));
    rc = stmt.Step();
    if (rc != SQLITE_DONE) st = db.Error(rc, "backing up to " + tmp);
  }
  // VACUUM INTO does not sync its output: the backup must be on disk before it is named, and
  // before a migration that counts on it starts.
  if (st.ok()) st = SyncPath(tmp, false);
  if (st.ok()) {
    fs::rename(tmp, to, ec);
    if (ec) st = Status::IoError(to + ": cannot rename the backup into place: " + ec.message());
  }
  if (st.ok()) {
    const fs::path dir = fs::path(to).parent_path();
    st = SyncPath(dir.empty() ? "." : dir.string(), true);
  }
  if (!st.ok()) fs::remove(tmp, ec);
  return st;
}

Status BackupStoreFile(const std::string& from, const std::string& to) {
  auto db = OpenReadOnly(from);
  if (!db.ok()) return db.status();
  TRAININGD_RETURN_IF_ERROR(CheckApplicationId(**db));
  return BackupDatabase(**db, to);
}

std::string MigrationBackupName(const std::string& db_path, int to, std::time_t now) {
  std::tm tm{};
  gmtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
  return db_path + kBackupInfix + std::to_string(to) + "-" + stamp;
}

std::vector<std::string> ListMigrationBackups(const std::string& db_path) {
  const fs::path db(db_path);
  const fs::path dir = db.parent_path().empty() ? fs::path(".") : db.parent_path();
  const std::string prefix = db.filename().string() + kBackupInfix;
  std::vector<std::pair<fs::file_time_type, std::string>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0 || name.ends_with(kTmpSuffix)) continue;
    if (!entry.is_regular_file(ec)) continue;
    const auto mtime = entry.last_write_time(ec);
    if (ec) continue;
    found.emplace_back(mtime, (db.parent_path() / name).string());
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

void PruneMigrationBackups(const std::string& db_path, int keep) {
  std::vector<std::string> backups = ListMigrationBackups(db_path);
  std::error_code ec;
  for (size_t i = 0; i + static_cast<size_t>(std::max(keep, 0)) < backups.size(); ++i) {
    fs::remove(backups[i], ec);
  }
  const fs::path db(db_path);
  const fs::path dir = db.parent_path().empty() ? fs::path(".") : db.parent_path();
  const std::string prefix = db.filename().string() + kBackupInfix;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && name.ends_with(kTmpSuffix)) fs::remove(entry.path(), ec);
  }
}

}  // namespace trainingd::daemon
