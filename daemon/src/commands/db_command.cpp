#include "trainingd/daemon/commands/db_command.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <string>

#include "commands/client/client.h"
#include "trainingd/daemon/service/data_dir_format.h"
#include "trainingd/daemon/service/data_dir_lock.h"
#include "trainingd/daemon/service/flags.h"
#include "trainingd/daemon/store/store.h"
#include "trainingd/daemon/store/store_file.h"

namespace trainingd::daemon {
namespace fs = std::filesystem;
namespace {

using client::kExitFailed;
using client::kExitNewerData;
using client::kExitUsage;
using engine::Status;
using engine::StatusCode;

constexpr char kUsage[] =
    "usage: trainingd db <verb> [--data-dir DIR]\n"
    "The data directory's database (DIR/trainingd.db) without a daemon serving it\n"
    "(docs/operations.md#upgrading):\n"
    "  backup FILE         a consistent copy of the database in FILE, also while the daemon runs\n"
    "  restore FILE        the database replaced by FILE, a trainingd store this build can open;\n"
    "                      the daemon must be stopped; the replaced database is kept beside it\n"
    "  migrate [--dry-run] back up the database, then migrate it to this build's schema\n"
    "                      without serving; --dry-run says what would run\n"
    "  status              the versions of the directory, its database and this build, and\n"
    "                      the pre-migration backups kept\n"
    "--data-dir DIR: the daemon's data directory (var). Exit codes: trainingd help exit-codes\n";

int Fail(const std::string& verb, const std::string& message, int code = kExitFailed) {
  std::fprintf(stderr, "trainingd db %s: %s\n", verb.c_str(), message.c_str());
  return code;
}

// A database or file newer than this build exits kExitNewerData, anything else kExitFailed.
int FailStatus(const std::string& verb, const Status& st, bool newer) {
  return Fail(verb, st.message(), newer ? kExitNewerData : kExitFailed);
}

bool IsNewer(const Status& st) {
  return st.code() == StatusCode::kFailedPrecondition &&
         st.message().find("newer than this trainingd") != std::string::npos;
}

std::string DbPath(const std::string& dir) { return dir + "/trainingd.db"; }

std::string Stamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
  return stamp;
}

// The data directory's format and the database's version, each checked against this build's:
// kExitNewerData with the message when either is newer, kExitFailed when unreadable; 0 when both
// can be used. *version is 0 when there is no database yet.
int CheckDataDir(const std::string& verb, const std::string& dir, int64_t* version) {
  auto format = ReadDataDirFormat(dir);
  if (!format.ok()) return FailStatus(verb, format.status(), IsNewer(format.status()));
  std::error_code ec;
  *version = 0;
  if (!fs::exists(DbPath(dir), ec)) return 0;
  auto v = ReadStoreSchemaVersion(DbPath(dir));
  if (!v.ok()) return FailStatus(verb, v.status(), false);
  if (*v > StoreSchemaVersionOfThisBuild()) {
    return Fail(verb,
                DbPath(dir) + ": database schema version " + std::to_string(*v) +
                    " is newer than this trainingd supports (" +
                    std::to_string(StoreSchemaVersionOfThisBuild()) +
                    "); use a newer trainingd, or restore a backup",
                kExitNewerData);
  }
  *version = *v;
  return 0;
}

int Backup(const std::string& dir, const std::string& file) {
  const std::string db = DbPath(dir);
  auto version = ReadStoreSchemaVersion(db);
  if (!version.ok()) return FailStatus("backup", version.status(), false);
  if (Status st = BackupStoreFile(db, file); !st.ok()) return FailStatus("backup", st, false);
  std::error_code ec;
  const auto bytes = fs::file_size(file, ec);
  std::printf("%s: a copy of %s (schema version %lld, %llu bytes)\n", file.c_str(), db.c_str(),
              static_cast<long long>(*version), static_cast<unsigned long long>(ec ? 0 : bytes));
  return 0;
}

int Restore(const std::string& dir, const std::string& file) {
  auto file_version = CheckStoreFile(file);
  if (!file_version.ok()) {
    return FailStatus("restore", file_version.status(), IsNewer(file_version.status()));
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Fail("restore", "cannot create the data directory " + dir + ": " + ec.message());
  auto lock = LockDataDir(dir);  // held until the process exits
  if (!lock.ok()) return Fail("restore", lock.status().message() + "; stop it first");
  int64_t current = 0;
  if (int code = CheckDataDir("restore", dir, &current); code != 0) return code;
  const std::string db = DbPath(dir);
  std::string kept;
  if (fs::exists(db, ec)) {
    kept = db + ".before-restore-" + Stamp();
    if (Status st = BackupStoreFile(db, kept); !st.ok()) {
      return Fail("restore", "cannot keep a copy of the current database first: " + st.message() +
                                 "; move " + db + " and its -wal file aside and restore again");
    }
  }
  // The copy is made with VACUUM INTO, so that a FILE with a WAL of its own is copied whole, and
  // goes in under another name, renamed over the database once it is on disk; the old
  // database's WAL and shared-memory files go first (they would be applied to the new file). A
  // crash in between leaves the old database without its WAL (the copy kept above holds
  // everything) or the new one.
  const std::string tmp = db + ".restore";
  fs::remove(tmp, ec);
  if (Status st = BackupStoreFile(file, tmp); !st.ok()) {
    return Fail("restore", "cannot copy " + file + ": " + st.message());
  }
  fs::remove(db + "-wal", ec);
  fs::remove(db + "-shm", ec);
  fs::rename(tmp, db, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return Fail("restore", db + ": cannot rename the copy into place: " + ec.message());
  }
  const int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
  std::printf("%s: restored from %s (schema version %lld)%s\n", db.c_str(), file.c_str(),
              static_cast<long long>(*file_version),
              kept.empty() ? "" : ("; the database it replaced is in " + kept).c_str());
  if (*file_version < StoreSchemaVersionOfThisBuild()) {
    std::printf(
        "trainingd serve (or trainingd db migrate) migrates it to schema version %d, "
        "after a backup\n",
        StoreSchemaVersionOfThisBuild());
  }
  std::printf("jobs/ is not touched: restore the job directories of the same time alongside\n");
  return 0;
}

int Migrate(const std::string& dir, bool dry_run) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Fail("migrate", dir + ": no such data directory");
  auto lock = LockDataDir(dir);
  if (!lock.ok()) return Fail("migrate", lock.status().message() + "; stop it first");
  int64_t version = 0;
  if (int code = CheckDataDir("migrate", dir, &version); code != 0) return code;
  const std::string db = DbPath(dir);
  if (!fs::exists(db, ec)) {
    std::printf("%s: no database; trainingd serve creates one\n", db.c_str());
    return 0;
  }
  const std::vector<MigrationStep> steps = PendingMigrations(version);
  if (steps.empty()) {
    std::printf("%s: schema version %lld, up to date\n", db.c_str(),
                static_cast<long long>(version));
    if (!dry_run) {
      if (Status st = WriteDataDirFormat(dir, static_cast<int>(version)); !st.ok()) {
        return Fail("migrate", st.message());
      }
    }
    return 0;
  }
  const int to = StoreSchemaVersionOfThisBuild();
  std::printf("%s: schema version %lld; %s %d migration(s) to version %d in one transaction\n",
              db.c_str(), static_cast<long long>(version), dry_run ? "would run" : "running",
              static_cast<int>(steps.size()), to);
  for (const MigrationStep& s : steps) std::printf("  %d: %s\n", s.to, s.what.c_str());
  if (dry_run) {
    std::printf("after a backup in %s (the newest %d such backups are kept)\n",
                MigrationBackupName(db, to, std::time(nullptr)).c_str(), kKeptMigrationBackups);
    return 0;
  }
  {
    auto store = Store::Open(db);
    if (!store.ok()) return FailStatus("migrate", store.status(), IsNewer(store.status()));
  }
  if (Status st = WriteDataDirFormat(dir, to); !st.ok()) return Fail("migrate", st.message());
  const std::vector<std::string> backups = ListMigrationBackups(db);
  std::printf("%s: migrated to schema version %d; the database before is in %s\n", db.c_str(), to,
              backups.empty() ? "(no backup found)" : backups.back().c_str());
  return 0;
}

int StatusVerb(const std::string& dir) {
  int64_t version = 0;
  if (int code = CheckDataDir("status", dir, &version); code != 0) return code;
  auto format = ReadDataDirFormat(dir);
  std::printf("data directory %s: format %d (this build reads up to %d)\n", dir.c_str(),
              format.ok() ? *format : 0, kDataDirFormat);
  const std::string db = DbPath(dir);
  std::error_code ec;
  if (!fs::exists(db, ec)) {
    std::printf("%s: none yet\n", db.c_str());
    return 0;
  }
  std::printf("%s: schema version %lld (this build: %d)\n", db.c_str(),
              static_cast<long long>(version), StoreSchemaVersionOfThisBuild());
  for (const MigrationStep& s : PendingMigrations(version)) {
    std::printf("  pending migration %d: %s\n", s.to, s.what.c_str());
  }
  for (const std::string& b : ListMigrationBackups(db)) {
    std::printf("pre-migration backup: %s\n", b.c_str());
  }
  return 0;
}

}  // namespace

int DbCommand(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "-h" || args[0] == "--help") {
    std::fputs(kUsage, args.empty() ? stderr : stdout);
    return args.empty() ? kExitUsage : 0;
  }
  const std::string verb = args[0];
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  std::string dir = "var";
  bool dry_run = false;
  std::vector<std::string> files;
  const bool takes_file = verb == "backup" || verb == "restore";
  Flags flags("db " + verb, takes_file ? "FILE [--data-dir DIR]" : "[--data-dir DIR]");
  flags.String("--data-dir", "DIR", "the daemon's data directory (var)", &dir);
  if (verb == "migrate") flags.Switch("--dry-run", "say what would run, change nothing", &dry_run);
  flags.Positionals(takes_file ? "file" : "", takes_file ? 1 : 0, &files);
  if (!takes_file && verb != "migrate" && verb != "status") {
    std::fprintf(stderr, "trainingd db: unknown verb '%s'\n%s", verb.c_str(), kUsage);
    return kExitUsage;
  }
  return RunWithFlags(flags, rest, [&]() -> int {
    if (takes_file && files.empty()) {
      std::fprintf(stderr, "trainingd db %s: no file given\n%s", verb.c_str(),
                   flags.Usage().c_str());
      return kExitUsage;
    }
    if (dir.empty()) return Fail(verb, "--data-dir: must not be empty", kExitUsage);
    if (verb == "backup") return Backup(dir, files[0]);
    if (verb == "restore") return Restore(dir, files[0]);
    if (verb == "migrate") return Migrate(dir, dry_run);
    return StatusVerb(dir);
  });
}

}  // namespace trainingd::daemon
