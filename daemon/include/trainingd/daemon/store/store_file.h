// The store's database file seen from outside a Store (docs/storage.md#backups): its schema
// version read without migrating anything, a consistent copy of it taken while a daemon writes
// it, and the backups the store takes before a migration. `trainingd db` and `trainingd serve`
// use these; Store::Open takes the pre-migration backup itself.
#pragma once

#include <cstdint>
#include <ctime>
#include <string>
#include <vector>

#include "trainingd/engine/base/status.h"

namespace trainingd::daemon {

// The schema version this build writes and reads (the newest it can open).
int StoreSchemaVersionOfThisBuild();

// One migration of the schema: it takes version `to - 1` to `to`.
struct MigrationStep {
  int to = 0;
  std::string what;  // one line, for `trainingd db migrate --dry-run`
};

// The migrations this build runs on a store at `version`, in order (none when it is current or
// newer).
std::vector<MigrationStep> PendingMigrations(int64_t version);

// Creates an empty database at `path` with the schema of version `version` (1 to this build's),
// as the release that wrote that version left it: for tests and tools that need an older store.
// FailedPrecondition when `path` already holds a database with a schema.
engine::Status CreateStoreAtVersion(const std::string& path, int version);

// Reads PRAGMA user_version of the trainingd database at `path` without writing it (0 = an empty
// file). NotFound when there is no file; DataLoss when it is not an SQLite database;
// FailedPrecondition when it is another application's (PRAGMA application_id); IoError,
// Unavailable as SQLite reports them.
engine::Result<int64_t> ReadStoreSchemaVersion(const std::string& path);

// Checks that `path` is a trainingd store this build can open: an SQLite database with our
// application_id, a schema version from 1 to StoreSchemaVersionOfThisBuild() and a clean
// PRAGMA integrity_check. Returns its version. FailedPrecondition names what is wrong (a version
// newer than this build's says so: "newer than this trainingd supports").
engine::Result<int64_t> CheckStoreFile(const std::string& path);

// Writes a consistent copy of the database at `from` to `to` with VACUUM INTO: into
// `<to>.tmp` first (a leftover one is removed), fsynced, then renamed, so `to` is either absent
// or complete. Reads one snapshot: it works while another connection or process writes `from`,
// without stopping it. FailedPrecondition when `to` exists; the errors of SQLite otherwise
// (ResourceExhausted on a full disk), and no file is left behind.
engine::Status BackupStoreFile(const std::string& from, const std::string& to);

// The pre-migration backups the store keeps of one database: the newest this many.
inline constexpr int kKeptMigrationBackups = 3;

// The name of the backup of `db_path` taken before migrating it to schema version `to`, at
// `now`: "<db_path>.before-v<to>-<YYYYMMDDTHHMMSSZ>" (UTC). It holds version `to - 1` or older.
std::string MigrationBackupName(const std::string& db_path, int to, std::time_t now);

// The pre-migration backups of `db_path` on disk, oldest first (by modification time).
std::vector<std::string> ListMigrationBackups(const std::string& db_path);

// Deletes the pre-migration backups of `db_path` beyond the newest `keep`, and the temporary
// files of backups that were interrupted. Best effort: a file that cannot be deleted stays.
void PruneMigrationBackups(const std::string& db_path, int keep);

}  // namespace trainingd::daemon
